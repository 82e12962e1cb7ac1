"""Subgraph building and TensorRT's default placement against plain references: the bounded search must
give the unbounded search's regions, and the one-pass spill the simple definition of TensorRT's rule."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest
from onnx import helper

from optimizer.check import check_graph
from optimizer.fusion import Contraction, build_groups, other_path
from optimizer.ir import load_model
from optimizer.latency import LatencyModel, Option, Placement, load_profile
from optimizer.plan import Subgraph, build_subgraphs, gpu_only, trt_default
from tests.conftest import reaches, save_model, value, weight


def _reference_subgraphs(groups, placements: tuple[Placement, ...]) -> tuple[Subgraph, ...]:
    """The greedy merge with an unbounded "another path?" search and a sorted-list topological order."""
    n = len(placements)
    c = Contraction(n, groups.group_edges())
    for slot in sorted({p.loadable for p in placements if p.loadable >= 0}):
        members = [g for g, p in enumerate(placements) if p.loadable == slot]
        for g in members[1:]:
            c.merge(members[0], g)

    queue = sorted(range(n), reverse=True)
    while queue:
        a = c.find(queue.pop())
        for b in sorted(c.succ[a]):
            same = placements[a].device == placements[b].device
            if placements[a].loadable < 0 and placements[b].loadable < 0 and same and not other_path(c, a, b):
                queue.append(c.merge(a, b))
                break
    members: dict[int, list[int]] = {}
    for g in range(n):
        members.setdefault(c.find(g), []).append(g)
    indeg = {u: len(c.pred[u]) for u in members}
    ready, order = sorted(u for u, d in indeg.items() if d == 0), []
    while ready:
        u = ready.pop(0)
        order.append(u)
        for v in c.succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready = sorted([*ready, v])
    order += sorted(set(members) - set(order))
    return tuple(Subgraph(k, placements[u].device, tuple(members[u]), placements[u].loadable)
                 for k, u in enumerate(order))


@dataclass(frozen=True)
class _Edges:
    edges: tuple[tuple[int, int], ...]

    def group_edges(self) -> list[tuple[int, int]]:
        return sorted(set(self.edges))


def _random_case(rng: random.Random, loadables: bool = True):
    n = rng.randint(2, 28)
    order = list(range(n))
    if rng.random() < 0.5:  # group indices need not be a topological order
        rng.shuffle(order)
    density = rng.choice([0.05, 0.12, 0.25, 0.45])
    edges = tuple((order[i], order[j]) for i in range(n) for j in range(i + 1, n) if rng.random() < density)
    devices = rng.choice([("gpu", "dla"), ("gpu", "dla", "cpu"), ("npu", "cpu")])
    placements = tuple(Placement(Option(rng.choice(devices), "fp16"), core=rng.choice((0, 0, 1)))
                       for _ in range(n))
    if loadables and rng.random() < 0.3:  # labelled loadables, convex or not (a non-convex one leaves a cycle to handle)
        placements = tuple(Placement(p.option, p.core, rng.choice((-1, 0, 1)) if p.option.device == "dla" else -1)
                           for p in placements)
    return _Edges(edges), placements


def test_bounded_search_gives_the_unbounded_regions():
    rng = random.Random(17)
    for _ in range(600):
        groups, placements = _random_case(rng)
        assert build_subgraphs(groups, placements) == _reference_subgraphs(groups, placements)


def test_regions_are_convex_connected_and_in_order():
    rng = random.Random(5)
    for _ in range(150):
        groups, placements = _random_case(rng, loadables=False)
        edges = groups.group_edges()
        subgraphs = build_subgraphs(groups, placements)
        assert sorted(g for s in subgraphs for g in s.groups) == list(range(len(placements)))
        position = {g: s.id for s in subgraphs for g in s.groups}
        assert all(position[a] <= position[b] for a, b in edges)  # the regions run in order
        for s in subgraphs:
            members = set(s.groups)
            assert {placements[g].device for g in members} == {s.device}
            outside = reaches(edges, members) - members
            assert not (reaches(edges, outside) & members)  # convex: no path leaves and re-enters
            inner = [(a, b) for a, b in edges if a in members and b in members]
            first = min(members)
            assert {first} | reaches(inner + [(b, a) for a, b in inner], {first}) == members  # connected


def _generated_dag(path, blocks: int, seed: int):
    """Residual, inception-like and non-DLA-branch blocks in a random order (the large-graph benchmark's kinds)."""
    rng = random.Random(seed)
    nodes, inits, last = [], [], "x"

    def conv(x: str, c_in: int, k: int, name: str) -> str:
        inits.append(weight(f"w_{name}", [8, c_in, k, k]))
        nodes.append(helper.make_node("Conv", [x, f"w_{name}"], [name], name=name, kernel_shape=[k, k],
                                      pads=[k // 2] * 4))
        return name

    def op(op_type: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    for i in range(blocks):
        kind = rng.choice(("residual", "inception", "gpu_branch", "gpu_op"))
        if kind == "residual":
            last = op("Relu", [op("Add", [conv(op("Relu", [conv(last, 8, 3, f"a{i}")], f"r{i}"), 8, 3, f"b{i}"),
                                          last], f"s{i}")], f"o{i}")
        elif kind == "inception":
            pool = op("MaxPool", [last], f"p{i}", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
            branches = [conv(last, 8, 1, f"a{i}"), conv(conv(last, 8, 1, f"b{i}"), 8, 3, f"c{i}"),
                        conv(pool, 8, 1, f"d{i}")]
            last = conv(op("Concat", branches, f"k{i}", axis=1), 24, 1, f"e{i}")
        elif kind == "gpu_branch":
            last = op("Add", [conv(op("Sin", [conv(last, 8, 3, f"a{i}")], f"q{i}"), 8, 3, f"b{i}"), last], f"s{i}")
        else:
            last = op("Sin", [last], f"q{i}")
    return save_model(path, nodes, [value("x", [1, 8, 16, 16])], [value(last, [1, 8, 16, 16])], inits)


def _reference_trt_default(model: LatencyModel, limit: int) -> tuple[Placement, ...]:
    """TensorRT's rule said plainly: every DLA-capable group on DLA core 0, the DLA regions formed once,
    the first `limit` of them (in order) loadables, the rest on the GPU."""
    gpu = gpu_only(model)
    placements = []
    for g, group in enumerate(model.groups.groups):
        dla = [p for p in ("int8", "fp16") if ("dla", p) in group.support]
        placements.append(Placement(Option("dla", dla[0])) if dla else gpu[g])
    regions = [s for s in _reference_subgraphs(model.groups, placements) if s.device == "dla0"]
    label = {g: k for k, region in enumerate(regions) for g in region.groups}
    return tuple(gpu[g] if label.get(g, -1) >= limit else Placement(p.option, 0, label.get(g, -1))
                 for g, p in enumerate(placements))


@pytest.mark.parametrize(("target", "seed"), [("orin-agx", 1), ("orin-agx", 2), ("xavier-agx", 3)])
def test_trt_default_on_a_generated_dag_equals_the_reference(catalog, tmp_path, target, seed):
    graph = load_model(_generated_dag(tmp_path / "dag.onnx", blocks=120, seed=seed))  # > 300 groups with residual sums fused
    report = check_graph(graph, catalog, target)
    groups = build_groups(report)
    spec = catalog.target(target)
    model = LatencyModel(groups, catalog, spec, load_profile(spec.family, None), io=report.io)
    assert len(groups.groups) > 300
    for limit in (4, 2, 1):
        placements = trt_default(model, limit)
        assert placements == _reference_trt_default(model, limit)
        assert sorted({p.loadable for p in placements if p.loadable >= 0}) == list(range(limit))
        spilled = [g for g, group in enumerate(groups.groups)
                   if ("dla", "int8") in group.support and placements[g].option.device == "gpu"]
        assert spilled  # more DLA regions than loadables: the rest fell back to the GPU
        regions = [s for s in build_subgraphs(groups, placements) if s.device.startswith("dla")]
        assert [s.loadable for s in regions] == list(range(limit))  # labelled in topological order
