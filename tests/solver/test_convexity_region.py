"""The convexity constraints sized to DLA-capable regions: exact for every connected loadable, and small on chains."""

from __future__ import annotations

import itertools
import random

from optimizer.solver._cpsat import components, convexity_region
from tests.conftest import reaches


def _neighbours(edges: list[tuple[int, int]]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for a, b in edges:
        out.setdefault(a, set()).add(b)
        out.setdefault(b, set()).add(a)
    return out


def _violators(members: set[int], nodes: set[int], edges: list[tuple[int, int]]) -> set[int]:
    """Groups outside `members` that lie on a path leaving and re-entering them, over `edges` only."""
    after = reaches(edges, members)
    before = reaches([(b, a) for a, b in edges], members)
    return {g for g in nodes if g not in members and g in after and g in before}


def _random_dag(rng: random.Random, n: int) -> list[tuple[int, int]]:
    edges = [(a, b) for a, b in itertools.combinations(range(n), 2) if rng.random() < 0.3]
    return edges + [(g, g + 1) for g in range(n - 1) if rng.random() < 0.5 and (g, g + 1) not in edges]


def test_every_connected_loadable_sees_the_same_violations_as_on_the_whole_graph() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(60):
        n = rng.randint(4, 9)
        edges = _random_dag(rng, n)
        dla = {g for g in range(n) if rng.random() < 0.6}
        neighbours = _neighbours(edges)
        nodes, kept = convexity_region(components(dla, neighbours), edges, list(range(n)))
        assert set(kept) <= set(edges)
        for size in range(1, len(dla) + 1):
            for members in map(set, itertools.combinations(sorted(dla), size)):
                if len(components(members, neighbours)) != 1:
                    continue
                whole = _violators(members, set(range(n)), edges)
                assert whole <= set(nodes)
                assert _violators(members, set(nodes), kept) == whole
                checked += 1
    assert checked > 300


def test_a_chain_of_dla_runs_keeps_only_the_runs() -> None:
    # 0-1 DLA, 2 GPU-only, 3-4-5 DLA, 6 GPU-only, 7 DLA: no path leaves a run and comes back
    edges = [(g, g + 1) for g in range(7)]
    dla = {0, 1, 3, 4, 5, 7}
    nodes, kept = convexity_region(components(dla, _neighbours(edges)), edges, list(range(8)))
    assert nodes == [0, 1, 3, 4, 5, 7]
    assert kept == [(0, 1), (3, 4), (4, 5)]


def test_a_gpu_group_on_a_path_back_into_the_run_is_in_its_region() -> None:
    # 0 -> 1 -> 3 and 0 -> 2 (GPU-only) -> 3: a loadable {0, 1, 3} would re-enter through 2
    edges = [(0, 1), (0, 2), (1, 3), (2, 3), (3, 4)]
    dla = {0, 1, 3}
    nodes, kept = convexity_region(components(dla, _neighbours(edges)), edges, list(range(5)))
    assert nodes == [0, 1, 2, 3]
    assert kept == [(0, 1), (0, 2), (1, 3), (2, 3)]
    assert _violators({0, 1, 3}, set(nodes), kept) == {2}
