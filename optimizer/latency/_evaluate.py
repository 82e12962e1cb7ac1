"""Scores a complete assignment with exactly the accounting the CP-SAT objective uses.

Attribution for throughput: copies and reformats at device boundaries are GPU work on Jetson
(TensorRT runs them as GPU copy/reformat nodes) and CPU work on RKNN (cache sync and layout
conversion); a loadable's launch is its DLA core's work.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from optimizer.backends import backend_of
from optimizer.catalog import Target
from optimizer.latency._model import LatencyModel, Option


@dataclass(frozen=True)
class Placement:
    option: Option
    core: int = 0  # DLA core (Jetson) or unused
    loadable: int = -1  # DLA loadable slot, -1 elsewhere

    @property
    def engine(self) -> str:
        if self.option.device == "dla":
            return f"dla{self.core}#{self.loadable}"
        return self.option.device

    @property
    def device(self) -> str:
        return f"dla{self.core}" if self.option.device == "dla" else self.option.device


@dataclass(frozen=True)
class Transfer:
    tensor: str
    src_group: int
    src_device: str
    dst_device: str
    dst_engine: str
    precision: str
    fmt: str
    ns: int


@dataclass(frozen=True)
class Breakdown:
    group_ns: tuple[int, ...]
    transfers: tuple[Transfer, ...]
    precision_changes: tuple[tuple[str, int, int], ...]  # (tensor, consumer group, ns)
    loadables: tuple[int, ...]
    launch_ns: int
    total_ns: int
    busy_ns: Mapping[str, int]
    inference_ns: int = 0  # the per-inference enqueue/submit overhead, in total_ns (host work, on no engine)

    @property
    def transfer_ns(self) -> int:
        return sum(t.ns for t in self.transfers)


def transfer_engine(target: Target) -> str:
    return backend_of(target).transfer_engine


def reformat_engine(target: Target) -> str:
    return backend_of(target).reformat_engine


def tensor_routes(model: LatencyModel) -> list[tuple[str, int, tuple[int, ...]]]:
    """(tensor, producing group, consumer groups) for every tensor crossing a group boundary."""
    by_tensor: dict[tuple[str, int], set[int]] = {}
    for edge in model.groups.edges:
        by_tensor.setdefault((edge.tensor, edge.src), set()).add(edge.dst)
    return [(t, src, tuple(sorted(dst))) for (t, src), dst in sorted(by_tensor.items())]


def evaluate(model: LatencyModel, placements: tuple[Placement, ...], default_formats: bool = False) -> Breakdown:
    """default_formats scores TensorRT's defaults (kDLA_LINEAR everywhere) instead of the best formats."""
    groups = model.groups.groups
    group_ns = tuple(model.option_ns(g, p.option, default_formats,
                                     model.sram_of(p.loadable) if p.option.device == "dla" else None)
                     for g, p in zip(groups, placements))
    busy: dict[str, int] = {}
    for p, ns in zip(placements, group_ns):
        busy[p.device] = busy.get(p.device, 0) + ns
    copier = transfer_engine(model.target)
    reformatter = reformat_engine(model.target)
    transfers = []
    changes = []
    for tensor, src, consumers in tensor_routes(model):
        if src < 0:
            continue
        producer = placements[src]
        seen = set()
        for dst in consumers:
            consumer = placements[dst]
            if consumer.engine != producer.engine and consumer.engine not in seen:
                seen.add(consumer.engine)
                fmt, ns = model.transfer(tensor, producer.option.device, consumer.option.device,
                                         producer.option.precision, default_formats)
                transfers.append(Transfer(tensor, src, producer.device, consumer.device, consumer.engine,
                                          producer.option.precision, fmt, ns))
                busy[copier] = busy.get(copier, 0) + ns
            if consumer.option.precision != producer.option.precision:
                ns = model.precision_change_ns(tensor)
                changes.append((tensor, dst, ns))
                busy[reformatter] = busy.get(reformatter, 0) + ns
    loadables = tuple(sorted({p.loadable for p in placements if p.loadable >= 0}))
    launch = model.launch_ns() if model.backend.loadables else 0
    for slot in loadables:
        core = next(p.device for p in placements if p.loadable == slot)
        busy[core] = busy.get(core, 0) + launch
    inference = model.inference_ns()
    total = (sum(group_ns) + sum(t.ns for t in transfers) + sum(c[2] for c in changes) + launch * len(loadables)
             + inference)
    return Breakdown(group_ns=group_ns, transfers=tuple(transfers), precision_changes=tuple(changes),
                     loadables=loadables, launch_ns=launch * len(loadables), total_ns=total,
                     busy_ns=MappingProxyType(dict(sorted(busy.items()))), inference_ns=inference)


def group_options(model: LatencyModel, group_index: int, allowed: frozenset[str]) -> tuple[Option, ...]:
    """Every way a group may run on this target under the allowed precisions."""
    target = model.target
    group = model.groups.groups[group_index]
    options = []
    for device in ("dla", "npu", "gpu", "cpu"):
        if device not in target.precisions:
            continue
        for precision in target.precisions[device]:
            if (device, precision) not in group.support:
                continue
            if device != "cpu" and precision not in allowed:
                continue
            if device == "npu":
                cores = int(target.features.get("npu_cores", 1))
                for k in range(1, (cores if group.multicore else 1) + 1):
                    options.append(Option(device, precision, cores=k))
                if precision == "int8":
                    options.extend(Option(device, precision, 1, mode) for mode in group.sparsity_modes
                                   if mode != "dense")
            else:
                options.append(Option(device, precision))
    options += [o for (g, o) in model.edited if g == group_index
                and (o.precision in allowed or o.device == "cpu")]
    return tuple(options)
