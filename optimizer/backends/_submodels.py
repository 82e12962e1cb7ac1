"""One ONNX sub-model per plan subgraph, cut at the plan's boundary tensors.

Build-time constants a sub-model reads are emitted as initializers (copied, external data references
kept as they are, so structure-only models give structure-only sub-models); folded shape arithmetic
becomes its folded value, so no sub-model needs another's shapes at run time.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
from onnx import helper, numpy_helper

from optimizer.errors import BadInputError
from optimizer.ir import CONTROL_FLOW, node_names, outer_refs


@dataclass(frozen=True)
class SubModel:
    index: int
    device: str
    name: str  # file name
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    nodes: tuple[str, ...]
    precision: str
    model: onnx.ModelProto


def value_infos(model: onnx.ModelProto) -> dict[str, onnx.ValueInfoProto]:
    inferred = onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    infos: dict[str, onnx.ValueInfoProto] = {}
    for value in (*inferred.graph.input, *inferred.graph.value_info, *inferred.graph.output):
        infos.setdefault(value.name, value)
    return infos


def split_model(model: onnx.ModelProto, plan: Mapping[str, Any], constants: Mapping[str, Any],
                folded: set[str]) -> list[SubModel]:
    """folded: nodes whose outputs are build-time constants (their values are in `constants`)."""
    names = node_names(model)
    by_name = {name: node for name, node in zip(names, model.graph.node)}
    producer = {o: name for name, node in by_name.items() for o in node.output if o}
    initializers = {t.name: t for t in model.graph.initializer}
    infos = value_infos(model)
    out = []
    for sub in plan["subgraphs"]:
        missing = [n for n in sub["nodes"] if n not in by_name]
        if missing:
            raise BadInputError(f"plan subgraph {sub['id']} names node '{missing[0]}', which the model lacks")
        runtime = [n for n in sub["nodes"] if n not in folded]
        boundary = set(sub["inputs"])
        graph_inits: dict[str, onnx.TensorProto] = {}
        pending = list(runtime)
        while pending:  # weight-only producers (e.g. DequantizeLinear of a weight) come along where needed
            n = pending.pop()
            produced = {o for m in runtime for o in by_name[m].output if o}
            node = by_name[n]
            reads = (*node.input, *sorted(outer_refs(node))) if node.op_type in CONTROL_FLOW else node.input
            for t in reads:
                if not t or t in produced or t in boundary or t in graph_inits:
                    continue
                if t in initializers:
                    graph_inits[t] = initializers[t]
                elif t in constants:
                    graph_inits[t] = numpy_helper.from_array(constants[t], t)
                elif t in producer and producer[t] not in runtime:
                    runtime.append(producer[t])
                    pending.append(producer[t])
                else:
                    raise BadInputError(f"sub-model {sub['id']}: tensor '{t}' is neither an input, an initializer "
                                        "nor a build-time constant", node=n)
        order = {name: i for i, name in enumerate(names)}
        runtime.sort(key=order.__getitem__)
        inputs = [_info(infos, t) for t in sub["inputs"]]
        made = {o for n in runtime for o in by_name[n].output} | boundary
        kept = [t for t in sub["outputs"] if t in made]  # a build-time constant is no run-time boundary
        outputs = [_info(infos, t) for t in kept]
        graph = helper.make_graph([by_name[n] for n in runtime], f"{model.graph.name or 'model'}_{sub['id']}",
                                  inputs, outputs, list(graph_inits.values()))
        sub_model = helper.make_model(graph, opset_imports=list(model.opset_import),
                                      producer_name="edgeplan", ir_version=model.ir_version)
        sub_model.functions.extend(model.functions)
        name = f"engine_{sub['id']}_{sub['device']}.onnx"
        out.append(SubModel(index=sub["id"], device=sub["device"], name=name, inputs=tuple(sub["inputs"]),
                            outputs=tuple(kept), nodes=tuple(runtime),
                            precision=sub.get("precision", "mixed"), model=sub_model))
    return out


def _info(infos: Mapping[str, onnx.ValueInfoProto], tensor: str) -> onnx.ValueInfoProto:
    if tensor in infos:
        value = onnx.ValueInfoProto()
        value.CopyFrom(infos[tensor])
        return value
    return helper.make_tensor_value_info(tensor, onnx.TensorProto.FLOAT, None)


def run_chain(submodels: Sequence[tuple[str, Path]], feeds: Mapping[str, Any], outputs: Sequence[str]
              ) -> dict[str, Any]:
    """Runs the sub-models in order with onnxruntime, passing tensors by name (tests and verification)."""
    import onnxruntime as ort

    values = dict(feeds)
    for _name, path in submodels:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        wanted = [o.name for o in session.get_outputs()]
        results = session.run(wanted, {i.name: values[i.name] for i in session.get_inputs()})
        values.update(zip(wanted, results))
    return {o: values[o] for o in outputs}


def link_external_data(src_dir: Path, out: Path, model: onnx.ModelProto) -> None:
    """External weights stay where they are: the sub-model points at them through a relative path."""
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        for entry in tensor.external_data:
            if entry.key == "location":
                source = (src_dir / entry.value).resolve()
                entry.value = os.path.relpath(source, out.resolve()) if source.exists() else entry.value
