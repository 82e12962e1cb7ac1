"""Fits the latency model's free constants to measurements, robustly and within physical bounds.

Per (calibration key, device kind) ten numbers are free: the efficiency of each op class, the per-kernel
overhead, the bandwidth efficiency, the compute/memory overlap and the per-inference overhead (only the
family's host device carries it: the GPU on Jetson, the NPU on RKNN). Everything else (peaks, bandwidth,
transfers, formats) stays as the catalog and profile say. The residual is the log ratio of predicted to
observed figure, under a soft-L1 loss, plus a pull towards the prior profile, so a device with few rows
moves little and no constant is ever tuned to one model. The pull's width is PRIOR_SIGMA (log space) for an
assumed constant, and the prior's own `prior_sigma` for one whose value has a source (the DLA's dense-conv
efficiency from NVIDIA's NVDLA performance estimator, the GPU's full-wave conv efficiency): fitted on the rows
of one harness, the fit would otherwise move whichever constant that harness's models happen to stress, and
predict the next harness worse than the prior does (README, latency model fidelity). Transfers, launches and
the cost of a thin model input in DLA formats are held at the prior's values while fitting (they move a figure
by about 0.1%).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from optimizer.calibrate._situation import (
    GPU_SHARE_CAP,
    Scenario,
    Situation,
    Stage,
    concurrent,
    contention,
    running_together,
    streams_of,
)
from optimizer.latency import OP_CLASSES, DeviceConstants, Profile
from optimizer.latency._model import dram_bytes
from optimizer.latency._profile import FITTED_SCALARS

PRIOR_SIGMA = 4.0
LOSS_SCALE = 0.1  # soft-L1 turns linear past ~10% error, so one odd row cannot drag a device
EFFICIENCY_CAP = 0.85  # no accelerator sustains more of its peak over whole layers; keeps the fit physical
N_CLASSES = len(OP_CLASSES)
# efficiencies, layer overhead, bandwidth efficiency, compute/memory overlap, per-inference overhead
N_FREE = N_CLASSES + 4
INFERENCE = N_CLASSES + 3
LOWER = np.array([np.log(0.002)] * N_CLASSES + [np.log(0.1), np.log(0.05), np.log(0.01), np.log(1.0)])
UPPER = np.array([np.log(EFFICIENCY_CAP)] * N_CLASSES + [np.log(5000.0), 0.0, 0.0, np.log(5000.0)])


def _theta(const: DeviceConstants) -> np.ndarray:
    values = [const.efficiency[k] for k in OP_CLASSES] + [const.layer_overhead_us, const.bandwidth_efficiency,
                                                           max(const.overlap, 0.01),
                                                           max(const.inference_overhead_us, 1.0)]
    theta: np.ndarray = np.clip(np.log(np.array(values, dtype=float)), LOWER + 1e-9, UPPER - 1e-9)
    return theta


def constants_from(theta: np.ndarray, prior: DeviceConstants) -> DeviceConstants:
    values = np.exp(theta)
    return DeviceConstants(
        efficiency={k: float(v) for k, v in zip(OP_CLASSES, values[:N_CLASSES])},
        layer_overhead_us=float(values[N_CLASSES]), bandwidth_efficiency=float(values[N_CLASSES + 1]),
        overlap=float(values[N_CLASSES + 2]), sram_speedup=prior.sram_speedup,
        multicore_efficiency=prior.multicore_efficiency, multicore_overhead_us=prior.multicore_overhead_us,
        inference_overhead_us=float(values[INFERENCE]), multicore_split=prior.multicore_split)


@dataclass(frozen=True)
class Problem:
    """Every group of every stage as flat arrays, so one evaluation of all rows is a few numpy calls."""

    blocks: tuple[tuple[str, str], ...]  # (calibration key, device) per parameter block
    prior: np.ndarray  # (blocks, N_FREE)
    block: np.ndarray  # per group
    stage: np.ndarray
    unit: np.ndarray  # (groups, classes)
    weight_bytes: np.ndarray
    act_bytes: np.ndarray
    kernels: np.ndarray
    chunks: np.ndarray  # per group: pipelined pieces (the exposed overlap divides by them)
    cores: np.ndarray
    boundary: np.ndarray
    bandwidth: np.ndarray
    in_sram: np.ndarray
    sram_speedup: np.ndarray
    mc_eff: np.ndarray  # (groups, classes): split efficiency per op class
    mc_over: np.ndarray
    launches: np.ndarray
    on_gpu: np.ndarray
    stage_fixed: np.ndarray
    stage_fixed_gpu: np.ndarray
    primary: np.ndarray  # per row: its stage
    gpu_stage: np.ndarray  # per row: the concurrent GPU engine's stage, or -1
    streams: np.ndarray
    together: np.ndarray  # per row: DLA streams that run at the same time (running_together)
    batch: np.ndarray
    gpu_batch: np.ndarray
    is_latency: np.ndarray
    concurrent: np.ndarray  # per row: engines share the DRAM (contention)
    situations: tuple[Situation, ...]
    dram_bytes: np.ndarray  # per group: bytes through DRAM (dram_bytes)
    observed: np.ndarray
    sigma: np.ndarray  # (blocks, N_FREE): width of the pull towards the prior, log space


def build_problem(scenarios: Sequence[Scenario], observed: Sequence[float], profile: Profile) -> Problem:
    blocks: dict[tuple[str, str], int] = {}
    rows: dict[str, list[Any]] = {k: [] for k in ("block", "stage", "unit", "wb", "ab", "k", "chunks", "c", "b", "bw",
                                             "sram", "speed", "mce", "mco", "gpu", "launch", "dram")}
    stage_fixed: list[float] = []
    stage_fixed_gpu: list[float] = []

    def add_stage(stage: Stage) -> int:
        index = len(stage_fixed)
        stage_fixed.append(stage.fixed_s)
        stage_fixed_gpu.append(stage.fixed_busy_s.get("gpu", 0.0))
        for device, work in stage.works:
            key = (stage.key, device)
            blocks.setdefault(key, len(blocks))
            const = profile.constants(*key)
            rows["block"].append(blocks[key])
            rows["stage"].append(index)
            rows["unit"].append(work.unit_compute_s)
            rows["wb"].append(work.weight_bytes)
            rows["ab"].append(work.act_bytes)
            rows["k"].append(work.kernels)
            rows["chunks"].append(work.chunks)
            rows["c"].append(work.cores)
            rows["b"].append(work.boundary_s)
            rows["bw"].append(stage.bandwidth)
            rows["sram"].append(0 < work.act_bytes <= stage.sram_bytes)
            rows["speed"].append(const.sram_speedup)
            rows["mce"].append([const.split_efficiency(k) for k in OP_CLASSES])
            rows["mco"].append(const.multicore_overhead_us)
            rows["gpu"].append(device == "gpu" and not work.launches)
            rows["launch"].append(work.launches)
            rows["dram"].append(dram_bytes(work, const, stage.sram_bytes))
        return index

    primary, gpu_stage, streams, together, batch, gpu_batch, is_latency, shared = [], [], [], [], [], [], [], []
    for scenario in scenarios:
        s = scenario.situation
        primary.append(add_stage(scenario.stage))
        gpu_stage.append(add_stage(scenario.gpu_stage) if scenario.gpu_stage else -1)
        streams.append(streams_of(s))
        together.append(running_together(s))
        shared.append(concurrent(s))
        batch.append(s.batch)
        gpu_batch.append(s.gpu_batch)
        is_latency.append(s.metric == "latency")
    order = sorted(blocks, key=lambda block: blocks[block])
    return Problem(
        blocks=tuple(order), prior=np.array([_theta(profile.constants(*key)) for key in order]),
        block=np.array(rows["block"], dtype=int), stage=np.array(rows["stage"], dtype=int),
        unit=np.array(rows["unit"], dtype=float).reshape(-1, N_CLASSES), weight_bytes=np.array(rows["wb"]),
        act_bytes=np.array(rows["ab"]), kernels=np.array(rows["k"], dtype=float),
        chunks=np.array(rows["chunks"], dtype=float),
        cores=np.array(rows["c"], dtype=float), boundary=np.array(rows["b"]), bandwidth=np.array(rows["bw"]),
        in_sram=np.array(rows["sram"], dtype=bool), sram_speedup=np.array(rows["speed"]),
        mc_eff=np.array(rows["mce"], dtype=float).reshape(-1, N_CLASSES), mc_over=np.array(rows["mco"]),
        launches=np.array(rows["launch"], dtype=float), on_gpu=np.array(rows["gpu"], dtype=bool),
        stage_fixed=np.array(stage_fixed), stage_fixed_gpu=np.array(stage_fixed_gpu),
        primary=np.array(primary, dtype=int), gpu_stage=np.array(gpu_stage, dtype=int),
        streams=np.array(streams, dtype=float), together=np.array(together, dtype=float),
        batch=np.array(batch, dtype=float),
        gpu_batch=np.array(gpu_batch, dtype=float), is_latency=np.array(is_latency, dtype=bool),
        concurrent=np.array(shared, dtype=bool), situations=tuple(s.situation for s in scenarios),
        dram_bytes=np.array(rows["dram"], dtype=float),
        observed=np.array(observed, dtype=float),
        sigma=np.array([prior_sigmas(profile, device) for _, device in order]).reshape(-1, N_FREE))


def prior_sigmas(profile: Profile, device: str) -> np.ndarray:
    """The pull's width per fitted constant of a device (in theta's order): PRIOR_SIGMA unless the prior
    profile gives a sourced constant its own."""
    given = profile.prior_sigma.get(device, {})
    return np.array([given.get(name, PRIOR_SIGMA) for name in (*OP_CLASSES, *FITTED_SCALARS)], dtype=float)


def _stage_totals(p: Problem, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(latency, GPU-busy seconds) per stage, each on its own."""
    eff = values[:, :N_CLASSES]
    split = p.cores > 1
    divisor = np.where(split[:, None], p.cores[:, None] * p.mc_eff, 1.0)
    compute = (p.unit / eff / divisor).sum(axis=1)
    weight_bw = p.bandwidth * values[:, N_CLASSES + 1]
    act_bw = weight_bw * np.where(p.in_sram, p.sram_speedup, 1.0)
    memory = p.weight_bytes / weight_bw + p.act_bytes / act_bw
    overhead = values[:, N_CLASSES] * 1e-6 * p.kernels + np.where(split, p.mc_over * 1e-6, 0.0)
    exposed = (1.0 - values[:, N_CLASSES + 2]) * np.minimum(compute, memory) / p.chunks
    seconds = np.maximum(compute, memory) + exposed + overhead + p.boundary
    seconds = np.where(p.launches > 0, values[:, INFERENCE] * 1e-6 * p.launches, seconds)
    n_stages = len(p.stage_fixed)
    total = np.bincount(p.stage, seconds, minlength=n_stages) + p.stage_fixed
    gpu_busy = np.bincount(p.stage, np.where(p.on_gpu, seconds, 0.0), minlength=n_stages) + p.stage_fixed_gpu
    return total, gpu_busy


def predict_all(problem: Problem, theta: np.ndarray) -> np.ndarray:
    """The figure of every row (latency in ms or throughput per s), as score() and work_seconds() compute it."""
    p = problem
    values = np.exp(theta[p.block])
    n_stages = len(p.stage_fixed)
    total, gpu_busy = _stage_totals(p, values)
    single = total[p.primary]
    has_gpu = p.gpu_stage >= 0
    gpu_index = np.where(has_gpu, p.gpu_stage, 0)

    def figures(total: np.ndarray, gpu_busy: np.ndarray) -> np.ndarray:
        latency = total[p.primary]
        busy = gpu_busy[p.primary]
        period = np.maximum(latency, p.together * busy)
        gpu_latency = np.where(has_gpu, total[gpu_index], 1.0)
        dla_share = np.minimum(GPU_SHARE_CAP, p.together * busy / period)
        gpu_part: np.ndarray = np.where(has_gpu, (1.0 - dla_share) * p.gpu_batch / gpu_latency, 0.0)
        rate: np.ndarray = p.streams * p.batch / period + gpu_part
        return rate

    if p.concurrent.any():  # shared DRAM: PCCS slowdowns, as score() applies them
        own = np.bincount(p.stage, p.dram_bytes, minlength=n_stages)
        bandwidth = np.zeros(n_stages)
        bandwidth[p.stage] = p.bandwidth
        factor = np.ones(n_stages)
        for r in np.flatnonzero(p.concurrent):
            primary = p.primary[r]
            gpu_rate = own[p.gpu_stage[r]] / total[p.gpu_stage[r]] if has_gpu[r] else 0.0
            slow, gpu_slow = contention(p.situations[r], own[primary] / total[primary], gpu_rate, bandwidth[primary])
            factor[primary] = slow
            if has_gpu[r]:
                factor[p.gpu_stage[r]] = gpu_slow
        total, gpu_busy = total * factor, gpu_busy * factor
    throughput = figures(total, gpu_busy)
    result: np.ndarray = np.where(p.is_latency, single * 1e3, throughput)
    return result


def _residuals(problem: Problem, flat: np.ndarray) -> np.ndarray:
    theta = flat.reshape(problem.prior.shape)
    predicted = predict_all(problem, theta)
    errors = np.log(predicted / problem.observed)
    prior = ((theta - problem.prior) / problem.sigma).ravel()
    return np.concatenate([errors, prior])


def _jacobian_sparsity(problem: Problem) -> np.ndarray:
    """A row depends only on the blocks its stages use; prior terms only on their own parameter."""
    n_rows, n_params = len(problem.observed), problem.prior.size
    pattern = np.zeros((n_rows + n_params, n_params), dtype=bool)
    stage_blocks: dict[int, set[int]] = {}
    for stage, block in zip(problem.stage, problem.block):
        stage_blocks.setdefault(int(stage), set()).add(int(block))
    for r in range(n_rows):
        used = set(stage_blocks.get(int(problem.primary[r]), ()))
        if problem.gpu_stage[r] >= 0:
            used |= stage_blocks.get(int(problem.gpu_stage[r]), set())
        for block in used:
            pattern[r, block * N_FREE:(block + 1) * N_FREE] = True
    pattern[n_rows:, :] = np.eye(n_params, dtype=bool)
    return pattern


def fit(problem: Problem) -> np.ndarray:
    """The fitted parameters (blocks x N_FREE, log space); deterministic for the same problem."""
    from scipy.optimize import least_squares  # only calibration needs scipy

    lower = np.tile(LOWER, len(problem.blocks))
    upper = np.tile(UPPER, len(problem.blocks))
    result = least_squares(lambda x: _residuals(problem, x), problem.prior.ravel(), bounds=(lower, upper),
                           loss="soft_l1", f_scale=LOSS_SCALE, jac_sparsity=_jacobian_sparsity(problem),
                           method="trf", x_scale=1.0, max_nfev=200)
    fitted: np.ndarray = result.x.reshape(problem.prior.shape)
    return fitted
