"""The graph IR: what every later stage needs to know about a model, and nothing else."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeGuard

import numpy as np

Dim = int | str  # a static size, or the name of a symbolic dimension
Shape = tuple[Dim, ...] | None  # None when not even the rank is known


def is_static(shape: Shape) -> TypeGuard[tuple[int, ...]]:
    """Every dim known and non-negative."""
    return shape is not None and all(isinstance(d, int) and d >= 0 for d in shape)

BYTES_PER_ELEMENT: Mapping[str, int] = MappingProxyType({"int8": 1, "fp16": 2, "fp32": 4})


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str
    shape: tuple[Dim, ...] | None  # None when not even the rank is known
    is_constant: bool = False  # an initializer, a Constant output or a folded value

    @property
    def is_static(self) -> bool:
        return self.shape is not None and all(isinstance(d, int) and d >= 0 for d in self.shape)

    @property
    def num_elements(self) -> int | None:
        if not self.is_static:
            return None
        return math.prod(d for d in self.shape if isinstance(d, int)) if self.shape else 1


@dataclass(frozen=True)
class Node:
    """One ONNX node with its attributes normalised (defaults filled, auto_pad made explicit)."""

    index: int
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping[str, Any]
    opaque: bool = False  # control flow: its body is not looked into, never DLA/NPU
    outer_inputs: tuple[str, ...] = ()  # control flow: tensors of this graph its bodies read (real inputs too)
    folded: bool = False  # computes only build-time constants (shape arithmetic, Constant)
    macs: int = 0  # multiply-accumulates (conv, gemm, matmul) at the model's batch
    elementwise_ops: int = 0  # other arithmetic: one per output element times the window
    weight_elements: int = 0  # elements of constant inputs (weights, biases, scales)


@dataclass(frozen=True)
class Graph:
    path: str
    sha256: str
    opset: int
    nodes: tuple[Node, ...]
    tensors: Mapping[str, TensorInfo]
    inputs: tuple[str, ...]  # runtime inputs only (initializers excluded)
    outputs: tuple[str, ...]
    constants: Mapping[str, np.ndarray]  # values known at build time (small ones only)
    dynamic_dims: tuple[tuple[str, int, str], ...]  # (tensor, axis, symbol) of graph inputs
    converted_from_opset: int | None = None  # the file's opset when onnx.version_converter raised it to 7
    fixed_dims: tuple[tuple[str, int, str], ...] = ()  # symbolic input dims of the file that --input-shape set
    # tensor -> why its shape is not concrete: "dynamic" (follows from a symbolic input dim),
    # "data-dependent" (NonZero, NMS, a size computed from run-time values) or "unresolved"
    shape_causes: Mapping[str, str] = field(default_factory=dict)
    shape_origins: Mapping[str, str] = field(default_factory=dict)  # tensor -> node (or input) the cause starts at
    _producer: Mapping[str, int] = field(repr=False, compare=False, default_factory=dict)
    _consumers: Mapping[str, tuple[int, ...]] = field(repr=False, compare=False, default_factory=dict)
    _by_name: Mapping[str, int] = field(repr=False, compare=False, default_factory=dict)

    @staticmethod
    def build(path: str, sha256: str, opset: int, nodes: tuple[Node, ...],
              tensors: Mapping[str, TensorInfo], inputs: tuple[str, ...], outputs: tuple[str, ...],
              constants: Mapping[str, np.ndarray],
              dynamic_dims: tuple[tuple[str, int, str], ...],
              fixed_dims: tuple[tuple[str, int, str], ...] = (),
              converted_from_opset: int | None = None,
              shape_causes: Mapping[str, str] | None = None,
              shape_origins: Mapping[str, str] | None = None) -> Graph:
        producer = {out: n.index for n in nodes for out in n.outputs if out}
        consumers: dict[str, list[int]] = {}
        for n in nodes:
            for name in dict.fromkeys((*n.inputs, *n.outer_inputs)):
                if name:
                    consumers.setdefault(name, []).append(n.index)
        return Graph(
            path=path, sha256=sha256, opset=opset, nodes=nodes,
            tensors=MappingProxyType(dict(tensors)), inputs=inputs, outputs=outputs,
            constants=MappingProxyType(dict(constants)), dynamic_dims=dynamic_dims, fixed_dims=fixed_dims,
            converted_from_opset=converted_from_opset,
            shape_causes=MappingProxyType(dict(shape_causes or {})),
            shape_origins=MappingProxyType(dict(shape_origins or {})),
            _producer=MappingProxyType(producer),
            _consumers=MappingProxyType({k: tuple(v) for k, v in consumers.items()}),
            _by_name=MappingProxyType({n.name: n.index for n in nodes}),
        )

    def node(self, name: str) -> Node:
        return self.nodes[self._by_name[name]]

    def has_node(self, name: str) -> bool:
        return name in self._by_name

    def producer(self, tensor: str) -> Node | None:
        index = self._producer.get(tensor)
        return None if index is None else self.nodes[index]

    def consumers(self, tensor: str) -> tuple[Node, ...]:
        return tuple(self.nodes[i] for i in self._consumers.get(tensor, ()))

    @property
    def batch_size(self) -> int:
        """The leading dim of the first input: the batch the model was exported at (1 when unknown)."""
        shape = self.shape(self.inputs[0]) if self.inputs else None
        return shape[0] if shape and isinstance(shape[0], int) and shape[0] > 0 else 1

    def shape(self, tensor: str) -> tuple[Dim, ...] | None:
        info = self.tensors.get(tensor)
        return None if info is None else info.shape

    def is_constant(self, tensor: str) -> bool:
        info = self.tensors.get(tensor)
        return bool(info and info.is_constant)

    def batch_statistics(self, node: Node) -> bool:
        """A BatchNormalization in training mode (training_mode=1, opset 14 on): it normalises by the statistics
        of its own input. The five-output form of opsets 9-13 is not read as training mode: evaluators differ on
        it and the toolkit was not measured on it."""
        return node.op_type == "BatchNormalization" and bool(node.attrs.get("training_mode", 0))

    def runtime_inputs(self, node: Node) -> tuple[str, ...]:
        """Inputs that carry activations, not weights or folded constants."""
        return tuple(t for t in (*node.inputs, *node.outer_inputs) if t and not self.is_constant(t))

    def activation_elements(self, node: Node) -> int:
        """Elements read and written at run time; unknown shapes count as zero."""
        total = 0
        for name in (*self.runtime_inputs(node), *node.outputs):
            info = self.tensors.get(name)
            if info is not None and info.num_elements is not None:
                total += info.num_elements
        return total

    def weight_bytes(self, node: Node, precision: str) -> int:
        return node.weight_elements * BYTES_PER_ELEMENT[precision]

    def activation_bytes(self, node: Node, precision: str) -> int:
        return self.activation_elements(node) * BYTES_PER_ELEMENT[precision]
