"""Fixtures: tiny ONNX graphs built with onnx.helper, and the shared zoo when it is present."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from optimizer.catalog import load_catalog
from optimizer.check import check_graph
from optimizer.ir import load_model

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EDGEPLAN_SHARED", REPO.parent / "shared"))
ZOO = SHARED / "zoo"
EXAMPLES = REPO / "examples"


def zoo_models() -> list[Path]:
    return sorted(ZOO.glob("*.onnx")) + sorted((ZOO / "with-weights").glob("*.onnx")) if ZOO.exists() else []


needs_zoo = pytest.mark.skipif(not ZOO.exists(), reason="../shared/zoo is not present")


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


def value(name: str, shape: Sequence | None, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def named(op_type: str, inputs: Sequence[str], outputs: Sequence[str], name: str, **attrs) -> onnx.NodeProto:
    return helper.make_node(op_type, list(inputs), list(outputs), name=name, **attrs)


def const(name: str, array: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(np.asarray(array), name)


def save_model(path: Path, nodes: list, inputs: list, outputs: list, initializers: Sequence = (),
               opset: int = 17) -> Path:
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def weight(name: str, shape: Sequence[int]) -> onnx.TensorProto:
    return const(name, np.zeros(shape, np.float32))


class Builder:
    """One-node models named 'n' (input 'x', output 'y') for rule boundary tests."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.count = 0

    def _path(self) -> Path:
        self.count += 1
        return self.tmp / f"m{self.count}.onnx"

    def model(self, node: onnx.NodeProto, x_shape: Sequence, inits: Sequence = (), extra_inputs: Sequence = (),
              opset: int = 17) -> Path:
        node.name = node.name or "n"
        return save_model(self._path(), [node], [value("x", x_shape), *extra_inputs], [value("y", None)],
                          inits, opset)

    def conv(self, c_in=8, h=16, w=16, c_out=8, kernel=(3, 3), pads=(1, 1, 1, 1), strides=(1, 1),
             dilations=(1, 1), group=1, **attrs) -> Path:
        node = helper.make_node("Conv", ["x", "w"], ["y"], name="n", kernel_shape=list(kernel), pads=list(pads),
                                strides=list(strides), dilations=list(dilations), group=group, **attrs)
        return self.model(node, [1, c_in, h, w], [weight("w", [c_out, c_in // group, *kernel])])

    def deconv(self, c_in=8, h=8, w=8, c_out=8, kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0), group=1,
               dilations=(1, 1)) -> Path:
        node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="n", kernel_shape=list(kernel),
                                strides=list(strides), pads=list(pads), group=group, dilations=list(dilations))
        return self.model(node, [1, c_in, h, w], [weight("w", [c_in, c_out // group, *kernel])])

    def op(self, op_type: str, x_shape: Sequence, inputs: Sequence[str] = ("x",), inits: Sequence = (),
           extra_inputs: Sequence = (), opset: int = 17, **attrs) -> Path:
        node = helper.make_node(op_type, list(inputs), ["y"], name="n", **attrs)
        return self.model(node, x_shape, inits, extra_inputs, opset)


@pytest.fixture
def build(tmp_path: Path) -> Builder:
    return Builder(tmp_path)


def violations(catalog, path: Path, target: str, precision: str | None = None, node: str = "n",
               input_shapes=None) -> set[str]:
    report = check_graph(load_model(path, input_shapes), catalog, target)
    verdict = report.verdict(node)
    return {v.rule for v in verdict.violations if precision is None or v.precision == precision}


def reaches(edges, start: set[int]) -> set[int]:
    """Brute-force reachability over directed edges: the groups some path from `start` arrives at."""
    succ: dict[int, list[int]] = {}
    for a, b in edges:
        succ.setdefault(a, []).append(b)
    seen, stack = set(), [b for a in start for b in succ.get(a, ())]
    while stack:
        x = stack.pop()
        if x not in seen:
            seen.add(x)
            stack.extend(succ.get(x, ()))
    return seen
