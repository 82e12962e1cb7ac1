"""Per-node verdicts: which accelerator and precision each node can run in, and why not."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from optimizer.backends import backend_of
from optimizer.catalog import Catalog, Family, LayerView, Rule, Target
from optimizer.catalog._checks import CHECKS, sdpa_channels
from optimizer.ir import Graph, Node


@dataclass(frozen=True)
class Violation:
    rule: str
    accelerator: str
    precision: str
    message: str

    def line(self) -> str:
        return f"{self.rule}: {self.message}"


@dataclass(frozen=True)
class NodeVerdict:
    name: str
    op_type: str
    kind: str  # the accelerator's layer kind; "constant" for build-time folded nodes
    supported: Mapping[str, Mapping[str, bool]]
    violations: tuple[Violation, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)

    def runs_on(self, accelerator: str, precision: str) -> bool:
        return bool(self.supported.get(accelerator, {}).get(precision))


def layer_kind(family: Family, node: Node) -> str:
    if node.folded:
        return "constant"
    if node.opaque:
        return "none"
    return family.layer_kinds.get(node.op_type, family.default_kind)


# ops whose output is not a pure function of constant inputs, or that carry a quantised model's weights
_NOT_BUILD_TIME = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                             "Multinomial", "Bernoulli", "QuantizeLinear", "DequantizeLinear"})


def build_time_nodes(graph: Graph) -> frozenset[str]:
    """Nodes the RKNN toolkit folds while building: every input is a constant, directly or through
    other such nodes, whether or not edgeplan could compute the value (a structure-only model's weights
    are absent, and Sin/Cos are not folded here), except a training-mode BatchNormalization, which the loader
    refuses. Graph nodes are in topological order."""
    constant: set[str] = set()
    names: set[str] = set()
    for node in graph.nodes:
        inputs = [t for t in node.inputs if t]
        if node.folded or node.opaque or not inputs or node.op_type in _NOT_BUILD_TIME:
            continue
        if graph.batch_statistics(node):
            continue  # the toolkit's loader refuses it before anything is folded (RKNN-BN-TRAINING)
        if all(graph.is_constant(t) or t in constant for t in inputs) or _gathers_constant_part(graph, node, constant):
            names.add(node.name)
            constant.update(o for o in node.outputs if o)
    return frozenset(names)


def _gathers_constant_part(graph: Graph, node: Node, constant: set[str]) -> bool:
    """A Gather with constant indices that picks only constant inputs of the Concat it reads, along the Concat's
    axis (torchvision's RoIAlign splits the batch-index column it built from zeros back off the boxes): its
    result is a constant the toolkit folds, although the Concat itself reads a run-time tensor."""
    if node.op_type != "Gather" or len(node.inputs) < 2 or node.inputs[1] not in graph.constants:
        return False
    concat = graph.producer(node.inputs[0])
    shape = graph.shape(node.inputs[0])
    if concat is None or concat.op_type != "Concat" or shape is None or not shape:
        return False
    rank = len(shape)
    axis = int(node.attrs.get("axis", 0)) % rank
    if axis != int(concat.attrs.get("axis", 0)) % rank:
        return False
    spans: list[tuple[int, int, bool]] = []
    start = 0
    for tensor in concat.inputs:
        part = graph.shape(tensor) if tensor else None
        width = part[axis] if part is not None and len(part) == rank else None
        if not isinstance(width, int):
            return False
        spans.append((start, start + width, graph.is_constant(tensor) or tensor in constant))
        start += width
    picked = [int(i) % start for i in graph.constants[node.inputs[1]].reshape(-1)] if start else []
    return bool(picked) and all(any(lo <= i < hi and const for lo, hi, const in spans) for i in picked)


def _node_rules(family: Family, target: Target, kind: str, precision: str,
                cache: dict[tuple[str, str], tuple[Rule, ...]] | None) -> tuple[Rule, ...]:
    """The node rules that apply to a layer kind in a precision on a target: the same for every node of
    that kind, so a 100,000-node graph filters the rule list once per kind, not once per node."""
    if cache is not None and (kind, precision) in cache:
        return cache[kind, precision]
    rules = tuple(r for r in family.rules if r.scope == "node" and r.check is not None  # (validated at load)
                  and r.applies(target, kind, precision))
    if cache is not None:
        cache[kind, precision] = rules
    return rules


def node_verdict(graph: Graph, node: Node, catalog: Catalog, target: Target,
                 rules_cache: dict[tuple[str, str], tuple[Rule, ...]] | None = None,
                 build_time: frozenset[str] = frozenset()) -> NodeVerdict:
    family = catalog.family_of(target)
    kind = "constant" if node.name in build_time else layer_kind(family, node)
    supported: dict[str, dict[str, bool]] = {}
    violations: list[Violation] = []
    for accelerator, precisions in target.precisions.items():
        supported[accelerator] = {}
        for precision in precisions:
            ok = True
            if accelerator == family.accelerator and kind != "constant":
                view = LayerView(graph=graph, node=node, family=family, target=target,
                                 precision=precision, kind=kind)
                for rule in _node_rules(family, target, kind, precision, rules_cache):
                    message = CHECKS[rule.check or ""](rule, view)
                    if message is not None:
                        ok = False
                        violations.append(Violation(rule.id, accelerator, precision, message))
            supported[accelerator][precision] = ok
    extra = _extras(graph, node, family, target, kind)
    return NodeVerdict(name=node.name, op_type=node.op_type, kind=kind,
                       supported=MappingProxyType({k: MappingProxyType(v) for k, v in supported.items()}),
                       violations=tuple(violations), extra=MappingProxyType(extra))


def _extras(graph: Graph, node: Node, family: Family, target: Target, kind: str) -> dict[str, Any]:
    """Facts the planner needs beyond yes/no: sparsity modes and multi-core eligibility on RKNN."""
    out: dict[str, Any] = {}
    if not backend_of(target).layer_extras or kind == "constant":
        return out
    support = family.op_support.get(node.op_type)
    cores = int(target.features.get("npu_cores", 1))
    out["multicore"] = bool(support and support.multicore and cores > 1)
    sdpa = sdpa_extra(graph, node, family, target, cores)
    if sdpa is not None:
        out["sdpa"] = sdpa
        out["multicore"] = sdpa["multicore"]
    if target.features.get("sparse") and sparse_eligible(graph, node, family):
        modes = family_rule_param(family, "RKNN-SPARSE-MODES", "modes")
        out["sparsity_modes"] = list(modes)
    return out


def sdpa_extra(graph: Graph, node: Node, family: Family, target: Target, cores: int) -> dict[str, Any] | None:
    """RKNN-SDPA: the P.V MatMul of an attention is fused into exSDPAttention when both channels are within
    the limit; multi-core only on the SoCs the rule lists (the seed's RK3576), never extrapolated."""
    rule = next((r for r in family.rules if r.id == "RKNN-SDPA"), None)
    if rule is None or (rule.targets and target.rules_id not in rule.targets):
        return None
    channels = sdpa_channels(graph, node)
    if channels is None:
        return None
    fused = all(0 < c <= rule.params["channel_max"] for c in channels)
    return {"fused": fused, "query_channel": channels[0], "value_channel": channels[1],
            "multicore": fused and target.rules_id in rule.params["multicore"] and cores > 1}


def family_rule_param(family: Family, rule_id: str, name: str) -> Any:
    for rule in family.rules:
        if rule.id == rule_id:
            return rule.params[name]
    raise KeyError(f"{rule_id}.{name}")


def sparse_eligible(graph: Graph, node: Node, family: Family) -> bool:
    """RKNN-SPARSE-OP: a 2-D Conv with group 1 and constant weights."""
    params = next(r.params for r in family.rules if r.id == "RKNN-SPARSE-OP")
    if node.op_type not in params["ops"] or node.attrs.get("group", 1) != params["group"]:
        return False
    kernel = node.attrs.get("kernel_shape")
    return (kernel is not None and len(kernel) == params["spatial"] and len(node.inputs) > 1
            and graph.is_constant(node.inputs[1]))
