"""Layer groups: what the vendor compilers fuse, and regions with one possible device, become one unit.

The CP-SAT model decides per group, so fewer groups means faster proofs. Two merges are made:
- a fusable follower (activation, BN, constant-operand element-wise, Q/DQ) whose inputs all come
  from one group joins it when both run in exactly the same places, as TensorRT and rknn-toolkit2
  fuse Conv+BN+activation (x*sigmoid(x) included); a pure layout op joins its producer whenever it
  could run wherever the producer can, since it costs nothing anywhere;
- on TensorRT targets, a residual element-wise sum of two same-shape activations joins the convolution
  that produces one of them (TensorRT Developer Guide, "Types of Fusions": a Convolution followed by a
  simple sum in an ElementWise layer fuses into the Convolution; DLA's SDP adds the second operand on the
  fly), when both run in the same places and no path leads from that convolution to the other operand;
- adjacent groups that can only run on the fallback device (GPU or CPU) merge along edges that no
  other path bypasses (out-degree 1 or in-degree 1), which keeps every group convex.
Folded constants and weight-only nodes (e.g. DequantizeLinear of a weight) join their consumer.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from optimizer.backends import backend_of
from optimizer.check import CheckReport
from optimizer.errors import InfeasibleError
from optimizer.ir import Graph, Node

LAYOUT = frozenset({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"})
FOLLOWERS = frozenset({
    "Relu", "Clip", "LeakyRelu", "Sigmoid", "Tanh", "HardSigmoid", "HardSwish", "Elu", "PRelu", "Softplus",
    "BatchNormalization", "Add", "Sub", "Mul", "Div", "Identity", "Dropout", "Reshape", "Flatten", "Squeeze",
    "Unsqueeze", "QuantizeLinear", "DequantizeLinear", "Cast",
})

Support = frozenset[tuple[str, str]]  # of (accelerator, precision)
RESIDUAL_SUMS = frozenset({"Add", "Sum"})


@dataclass(frozen=True)
class LayerGroup:
    index: int
    anchor: str  # the member that does the main work (the first compute node)
    members: tuple[str, ...]  # runtime nodes in topological order
    attached: tuple[str, ...]  # folded constants and weight-only nodes reported with this group
    support: Support
    fused: bool  # members run as one kernel (internal tensors stay on chip)
    multicore: bool  # RKNN: every member may be split over NPU cores
    sparsity_modes: tuple[str, ...]  # RKNN sparse modes the anchor allows ("dense" first), else ()


@dataclass(frozen=True)
class Edge:
    tensor: str
    src: int  # producing group, -1 for a model input
    dst: int


@dataclass(frozen=True)
class GroupGraph:
    graph: Graph
    groups: tuple[LayerGroup, ...]
    edges: tuple[Edge, ...]
    node_group: Mapping[str, int]  # every ONNX node -> its group (-1: a constant nobody consumes)
    outputs: Mapping[str, int]  # model output tensor -> producing group (-1 when it is a model input)

    def consumers(self, tensor: str) -> tuple[int, ...]:
        return tuple(sorted({e.dst for e in self.edges if e.tensor == tensor}))

    def group_edges(self) -> list[tuple[int, int]]:
        """Distinct (producer group, consumer group) pairs; edges from model inputs are left out."""
        return sorted({(e.src, e.dst) for e in self.edges if e.src >= 0})


def topological_order(groups: GroupGraph) -> list[int]:
    """Group indices in a topological order, smallest index first among the ready ones (deterministic)."""
    n = len(groups.groups)
    succ: dict[int, list[int]] = {}
    indegree = [0] * n
    for a, b in groups.group_edges():
        succ.setdefault(a, []).append(b)
        indegree[b] += 1
    ready = [g for g in range(n) if indegree[g] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        g = heapq.heappop(ready)
        order.append(g)
        for b in succ.get(g, ()):
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, b)
    if len(order) != n:
        raise InfeasibleError("the layer-group graph has a cycle, so it has no topological order")
    return order


class Contraction:
    """Union-find over nodes with the quotient graph's edges kept up to date on every merge."""

    def __init__(self, n: int, edges: list[tuple[int, int]]) -> None:
        self.parent = list(range(n))
        self.succ: dict[int, set[int]] = {i: set() for i in range(n)}
        self.pred: dict[int, set[int]] = {i: set() for i in range(n)}
        for a, b in edges:
            if a != b:
                self.succ[a].add(b)
                self.pred[b].add(a)

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def merge(self, a: int, b: int) -> int:
        """Contracts the edge a-b; the caller guarantees no other path joins them (convexity)."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        root, gone = min(a, b), max(a, b)
        self.parent[gone] = root
        for x in self.succ.pop(gone):
            self.pred[x].discard(gone)
            if x != root:
                self.pred[x].add(root)
                self.succ[root].add(x)
        for x in self.pred.pop(gone):
            self.succ[x].discard(gone)
            if x != root:
                self.succ[x].add(root)
                self.pred[root].add(x)
        self.succ[root].discard(root)
        self.pred[root].discard(root)
        return root


def other_path(c: Contraction, a: int, b: int) -> bool:
    """Is b reachable from a other than by the direct edge? Unbounded: only for a contracted graph with a
    cycle (a non-convex loadable makes one), where no topological order exists."""
    stack = [n for n in c.succ[a] if n != b]
    seen: set[int] = set()
    while stack:
        n = stack.pop()
        if n == b:
            return True
        if n not in seen:
            seen.add(n)
            stack.extend(c.succ[n])
    return False


def merge_if_convex(c: Contraction, pos: dict[int, int] | None, a: int, b: int) -> int | None:
    """Contracts the edge a->b unless another path joins them (the merged unit would not be convex): the new
    root, or None. With positions the search stays between a and b and the positions stay topological."""
    if pos is None:
        return None if other_path(c, a, b) else c.merge(a, b)
    forward = reach_before(c, pos, a, b)
    return None if forward is None else merge_ordered(c, pos, a, b, forward)


def topological_positions(c: Contraction, units: list[int]) -> dict[int, int] | None:
    """A topological position per unit (smallest index first among the ready ones), None on a cycle."""
    indeg = {u: len(c.pred[u]) for u in units}
    ready = [u for u in units if indeg[u] == 0]
    heapq.heapify(ready)
    pos: dict[int, int] = {}
    while ready:
        u = heapq.heappop(ready)
        pos[u] = len(pos)
        for v in c.succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                heapq.heappush(ready, v)
    return pos if len(pos) == len(units) else None


def reach_before(c: Contraction, pos: dict[int, int], a: int, b: int) -> set[int] | None:
    """The units reachable from a that sit before b; None when one of them leads to b (another path).

    Only units placed before b can lie on a path to b, so the search stays between a and b."""
    limit = pos[b]
    seen: set[int] = set()
    stack = [s for s in c.succ[a] if s != b and pos[s] < limit]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        for y in c.succ[x]:
            if y == b:
                return None
            if pos[y] < limit and y not in seen:
                stack.append(y)
    return seen


def merge_ordered(c: Contraction, pos: dict[int, int], a: int, b: int, forward: set[int]) -> int:
    """Contracts a->b and keeps pos topological: b's ancestors after a first, the merged unit, then the
    units reachable from a (`forward`, from reach_before), in the slots these units held."""
    low = pos[a]
    backward: set[int] = set()
    stack = [p for p in c.pred[b] if pos[p] > low]
    while stack:
        x = stack.pop()
        if x not in backward:
            backward.add(x)
            stack.extend(p for p in c.pred[x] if pos[p] > low and p not in backward)
    slots = sorted([low, pos[b], *(pos[x] for x in backward), *(pos[x] for x in forward)])
    first = sorted(backward, key=pos.__getitem__)
    last = sorted(forward, key=pos.__getitem__)
    root = c.merge(a, b)
    del pos[b if root == a else a]
    for slot, x in zip(slots, first):
        pos[x] = slot
    pos[root] = slots[len(first)]
    for slot, x in zip(slots[len(slots) - len(last):], last):
        pos[x] = slot
    return root


def _support(report: CheckReport, node: Node) -> Support:
    verdict = report.verdicts[node.index]
    return frozenset((acc, p) for acc, per in verdict.supported.items() for p, ok in per.items() if ok)


def _weight_only(graph: Graph, node: Node) -> bool:
    return not node.folded and not node.opaque and bool(node.inputs) and not graph.runtime_inputs(node)


def _fuse_residual_sums(graph: Graph, runtime: list[Node], support: list[Support], uf: Contraction,
                        fused_with: set[int]) -> None:
    """Conv + residual Add (TensorRT's convolution/element-wise fusion): the sum joins the latest
    convolution group feeding it, when that keeps the group convex."""
    producer_of = {out: i for i, n in enumerate(runtime) for out in n.outputs if out}
    pos = topological_positions(uf, [r for r in range(len(runtime)) if uf.find(r) == r])
    for i, n in enumerate(runtime):
        inputs = graph.runtime_inputs(n)
        if n.op_type not in RESIDUAL_SUMS or len(inputs) != 2 or i in fused_with:
            continue
        shapes = [graph.shape(t) for t in inputs]
        if shapes[0] is None or shapes[0] != shapes[1] or not all(t in producer_of for t in inputs):
            continue
        preds = sorted({uf.find(producer_of[t]) for t in inputs}, reverse=True)
        if len(preds) != 2:
            continue
        for u in preds:
            anchor = runtime[u]
            if anchor.op_type not in ("Conv", "ConvTranspose") or support[u] != support[i]:
                continue
            # The sum's group is fed by u and the other operand's group only, so "u reaches the other
            # operand" is "another path leads from u to the sum".
            if merge_if_convex(uf, pos, u, uf.find(i)) is not None:
                fused_with.add(i)
                break


def build_groups(report: CheckReport) -> GroupGraph:
    graph = report.graph
    nodes = graph.nodes
    runtime = [n for n in nodes if not n.folded and not _weight_only(graph, n)]
    position = {n.index: i for i, n in enumerate(runtime)}
    support = [_support(report, n) for n in runtime]
    fallback = report.target.fallback
    producer_of = {out: position[n.index] for n in runtime for out in n.outputs if out}
    edges = [(producer_of[t], i) for i, n in enumerate(runtime)
             for t in graph.runtime_inputs(n) if t in producer_of]
    uf = Contraction(len(runtime), edges)
    fused_with: set[int] = set()

    for i, n in enumerate(runtime):  # followers join the one group that feeds them
        if n.op_type not in FOLLOWERS:
            continue
        preds = uf.pred[uf.find(i)]
        if len(preds) != 1:
            continue
        u = next(iter(preds))
        if support[u] == support[i]:
            fused_with.add(i)
            uf.merge(u, i)
        elif n.op_type in LAYOUT and support[u] <= support[i]:
            fused_with.add(i)  # a free layout op simply goes where its producer goes
            support[i] = support[u]
            uf.merge(u, i)

    if backend_of(report.target).residual_sum_fusion:
        _fuse_residual_sums(graph, runtime, support, uf, fused_with)

    only_fallback = [all(acc == fallback for acc, _ in s) for s in support]
    queue = sorted(i for i in range(len(runtime)) if only_fallback[i])
    while queue:  # fallback-only regions contract along edges no other path bypasses
        a = uf.find(queue.pop())
        for b in sorted(uf.succ.get(a, ())):
            if only_fallback[b] and support[b] == support[a] and (len(uf.succ[a]) == 1 or len(uf.pred[b]) == 1):
                queue.append(uf.merge(a, b))
                break

    roots = sorted({uf.find(i) for i in range(len(runtime))})
    root_index = {r: k for k, r in enumerate(roots)}
    members: dict[int, list[int]] = {}
    for i in range(len(runtime)):
        members.setdefault(root_index[uf.find(i)], []).append(i)

    node_group = {n.name: root_index[uf.find(position[n.index])] for n in runtime}
    attached: dict[int, list[str]] = {}
    for n in reversed(nodes):  # constants join their first consumer's group
        if n.name in node_group:
            continue
        group = -1
        for out in n.outputs:
            for consumer in graph.consumers(out):
                if consumer.name in node_group:
                    group = node_group[consumer.name] if group < 0 else min(group, node_group[consumer.name])
        node_group[n.name] = group
        if group >= 0:
            attached.setdefault(group, []).append(n.name)

    groups = []
    for k in range(len(roots)):
        idx = members[k]
        group_nodes = [runtime[i] for i in idx]
        anchor = next((n for n in group_nodes if n.macs), group_nodes[0])
        verdicts = [report.verdicts[n.index] for n in group_nodes]
        multicore = all(v.extra.get("multicore", False) for v in verdicts)
        anchor_modes = report.verdicts[anchor.index].extra.get("sparsity_modes", ())
        groups.append(LayerGroup(
            index=k, anchor=anchor.name, members=tuple(n.name for n in group_nodes),
            attached=tuple(sorted(attached.get(k, []), key=lambda name: graph.node(name).index)),
            support=frozenset.intersection(*(support[i] for i in idx)),
            fused=len(idx) == 1 or all(i in fused_with for i in idx[1:]),
            multicore=multicore, sparsity_modes=tuple(anchor_modes),
        ))

    group_edges: set[Edge] = set()
    for k, layer_group in enumerate(groups):
        for name in layer_group.members:
            node = graph.node(name)
            for t in dict.fromkeys(graph.runtime_inputs(node)):
                src = _group_of(graph, node_group, t)
                if src != k:
                    group_edges.add(Edge(tensor=t, src=src, dst=k))
    ordered = sorted(group_edges, key=lambda e: (e.dst, e.src, e.tensor))
    outputs = {t: _group_of(graph, node_group, t) for t in graph.outputs}
    return GroupGraph(graph=graph, groups=tuple(groups), edges=tuple(ordered),
                      node_group=MappingProxyType(node_group), outputs=MappingProxyType(outputs))


def _group_of(graph: Graph, node_group: Mapping[str, int], tensor: str) -> int:
    """The layer group producing a tensor; -1 for a graph input or a weight."""
    producer = graph.producer(tensor)
    return -1 if producer is None else node_group[producer.name]
