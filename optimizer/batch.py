"""Batch jobs: many models x targets, each planned in a worker; finished jobs skipped by content hash.

A failing model is recorded with its error and never stops the batch. Workers are local processes
(spawn: the solver's native threads must not be forked), each fed one job at a time over its own pipe, or
an existing Dask distributed cluster. A worker that dies (kill -9, out of memory) fails the job it held,
with the reason, and is replaced for the rest; a worker whose parent dies ends itself; the summary is
written however the batch ends.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import io
import json
import logging
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from optimizer import __version__
from optimizer.batch_job import failure, finish
from optimizer.batch_multi import (
    MULTI_FIELDS,
    GroupJob,
    MultiOptions,
    check_options,
    plan_group_jobs,
    refusal_status,
    run_group_job,
    single_notes,
)
from optimizer.batch_summary import summary_html
from optimizer.enums import Device
from optimizer.errors import BadInputError
from optimizer.fileio import atomic_write_text, safe_name, sha256_file

if TYPE_CHECKING:  # run_job imports the plan stage where it runs
    from optimizer.plan import Plan

log = logging.getLogger(__name__)
PARENT_POLL_S = 1.0  # how often a worker checks that the batch that started it is still alive
SUMMARY_FIELDS = ("model", "target", "status", "error", "unknown_sizes", "nodes", "groups", "accelerator_coverage",
                  "latency_ms", "baseline", "baseline_ms", "speedup", "solver_status", "solve_s", "wall_s", "plan",
                  "tensorrt_rules", *MULTI_FIELDS)


@dataclass(frozen=True)
class Job:
    model: str
    target: str
    folder: str
    key: str
    time_limit_s: float
    objective: str
    profile: str | None = None  # a calibrated latency profile for this target's family
    tensorrt: str = "10"  # the TensorRT major whose DLA rules apply (--trt; Jetson targets)


def expand_models(specs: Sequence[str]) -> list[Path]:
    """Files, globs, or list files (.txt/.list: one path per line, relative to the list)."""
    out: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.suffix in (".txt", ".list") and path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    entry = Path(line)
                    out.append(entry if entry.is_absolute() else path.parent / entry)
        elif any(c in spec for c in "*?["):
            matches = sorted(Path(p) for p in glob.glob(spec, recursive=True))
            if not matches:
                raise BadInputError(f"no file matches '{spec}'")
            out.extend(matches)
        else:
            out.append(path)
    return list(dict.fromkeys(out))


def _profiles_by_family(paths: Sequence[str]) -> dict[str, str]:
    from optimizer.latency import profile_family

    out: dict[str, str] = {}
    for path in paths:
        family = profile_family(path)
        if family in out:
            raise BadInputError(f"two --profile files for family {family}: {out[family]} and {path}", file=path)
        out[family] = str(path)
    return out


def plan_jobs(models: Sequence[Path], targets: Sequence[str], out: Path, time_limit_s: float,
              objective: str, profiles: Sequence[str] = (), tensorrt: str = "10") -> list[Job]:
    from optimizer.backends import backend_of
    from optimizer.catalog import load_catalog

    catalog = load_catalog(tensorrt=tensorrt)
    for target in targets:
        catalog.target(target)
    by_family = _profiles_by_family(profiles)
    stems: dict[str, Path] = {}
    jobs = []
    for model in models:
        stem = safe_name(model.stem)  # a model named '...onnx' (stem '..') must not choose the folder
        if stem in stems and stems[stem] != model:
            stem = f"{stem}-{hashlib.sha256(str(model).encode()).hexdigest()[:8]}"
        stems[stem] = model
        content = sha256_file(model) if model.is_file() else f"missing:{model}"
        for target in targets:
            profile = by_family.get(catalog.target(target).family)
            profile_hash = sha256_file(Path(profile)) if profile else "shipped"
            rules = backend_of(catalog.target(target)).tensorrt_rules(catalog)  # "" where TensorRT is not used
            key = hashlib.sha256(json.dumps([content, target, time_limit_s, objective, __version__,
                                             catalog.sha256, profile_hash, *([rules] if rules else [])]
                                            ).encode()).hexdigest()
            jobs.append(Job(str(model), target, str(out / stem / target), key, time_limit_s, objective, profile,
                            tensorrt))
    return jobs


def run_job(job: Job | GroupJob) -> dict[str, Any]:
    """One model (or one group of models, optimizer/batch_multi.py) on one target; never raises, the outcome
    is the row."""
    if isinstance(job, GroupJob):
        return run_group_job(job)
    from optimizer.plan import optimize
    from optimizer.plan._report import plan_files
    from optimizer.solver import PlanRequest

    started = time.monotonic()
    folder = Path(job.folder)
    row: dict[str, Any] = {"model": job.model, "target": job.target, "status": "ok", "error": ""}
    files: dict[str, str] = {}
    try:
        planned = optimize(job.model, job.target, PlanRequest(objective=job.objective, time_limit_s=job.time_limit_s,
                                                              tensorrt=job.tensorrt),
                           profile_path=job.profile)
        files = plan_files(planned)
        plan = planned.plan
        layers = [layer for layer in plan.layers if layer.role != "constant"]
        accelerated = sum(layer.device not in (Device.GPU, Device.CPU) for layer in layers)
        name, base = min(plan.baselines.items(), key=lambda kv: kv[1].latency_ms)
        row.update(nodes=plan.model.num_nodes, groups=plan.solver.groups,
                   accelerator_coverage=round(accelerated / len(layers), 4) if layers else 0.0,
                   latency_ms=plan.predicted.latency_ms, baseline=name, baseline_ms=base.latency_ms,
                   speedup=base.speedup, solver_status=plan.solver.status,
                   solve_s=round(planned.run["timings"]["solve_s"], 3), plan=str(folder / "plan.json"),
                   tensorrt_rules=plan.tensorrt_rules or "")
        row.update(_size_status(plan))
        row.update(refusal_status(row["status"], plan.warnings))
        row.update(single_notes(plan))
    except Exception as exc:  # every failure, a library crash included, is the row's status
        row.update(failure(job.model, exc))
    return finish(job.key, row, files, folder, started)


def _size_status(plan: Plan) -> dict[str, str]:
    """A plan that rests on dynamic or unresolved dims is not plainly ok: its status is needs-shapes."""
    from optimizer.check import size_note
    from optimizer.plan._types import as_json

    sizes = plan.unknown_sizes
    out = {"unknown_sizes": size_note(as_json(sizes))}
    if sizes.needs_shapes:
        out["status"] = "needs-shapes"
    return out


def _finished(job: Job | GroupJob) -> dict[str, Any] | None:
    path = Path(job.folder) / "job.json"
    try:
        record = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    return record["row"] if record.get("key") == job.key else None


def run_batch(models: Sequence[str], targets: Sequence[str], out: str, *, workers: int = 1,
              dask_address: str | None = None, time_limit_s: float = 60.0, objective: str = "latency",
              profiles: Sequence[str] = (), progress: Callable[[int, int, dict[str, Any]], None] | None = None,
              groups: Sequence[Sequence[Path]] = (), multi: MultiOptions | None = None, tensorrt: str = "10"
              ) -> list[dict[str, Any]]:
    """Plans every model on every target into `out`/<stem>/<target>/ and writes summary.csv and
    summary.html; returns the summary rows in job order. Jobs finished earlier (same content hash) are
    skipped; a failing job is a row with its error, never an exception; `progress(done, total, row)`.
    `groups`: sets of models each planned together on every target, under `multi` (optimizer/batch_multi.py)."""
    if workers < 1:
        raise BadInputError(f"--workers must be >= 1, got {workers}")
    out_dir = Path(out)
    multi = multi or MultiOptions(objective=objective)
    singles = expand_models(models)
    together = [tuple(g) for g in groups]
    if multi.whole_request():  # a multi-only objective or budget: every model is a group (of one, or more)
        together = [(m,) for m in singles] + together
        singles = []
    check_options(multi, together)
    jobs: list[Job | GroupJob] = list(plan_jobs(singles, targets, out_dir, time_limit_s, objective, profiles,
                                                tensorrt))
    if together:
        jobs += plan_group_jobs(together, targets, out_dir, time_limit_s, multi, _profiles_by_family(profiles),
                                {Path(j.folder).parent.name for j in jobs}, tensorrt)
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    todo = []
    for job in jobs:
        done = _finished(job)
        if done is not None:
            rows[(job.model, job.target)] = done | {"skipped": True}
        else:
            todo.append(job)
    count = len(rows)

    def record(row: dict[str, Any]) -> None:
        nonlocal count
        count += 1
        rows[(row["model"], row["target"])] = row
        if progress:
            progress(count, len(jobs), row)

    try:
        if dask_address:
            try:
                from distributed import Client
            except ImportError:
                raise BadInputError("--dask needs the 'distributed' package: pip install 'edgeplan[dask]'") from None
            with Client(dask_address) as client:  # type: ignore[no-untyped-call]
                for future in client.map(run_job, todo, pure=False):
                    record(future.result())
        elif workers == 1 or len(todo) <= 1:
            for job in todo:
                record(run_job(job))
        else:
            # biggest models first (longest-processing-time order) keeps every worker busy to the end
            largest_first = sorted(todo, key=lambda j: -_size(j))
            run_pool(largest_first, workers, record)
    except BaseException as exc:  # interrupted or broken: the summary still says what was done and what was not
        reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"[:200]
        for job in jobs:
            rows.setdefault((job.model, job.target), {"model": job.model, "target": job.target, "status": "failed",
                                                      "error": f"{job.model}: not run: the batch ended ({reason})"})
        write_summaries(out_dir, [rows[(job.model, job.target)] for job in jobs])
        raise
    ordered = [rows[(job.model, job.target)] for job in jobs]
    write_summaries(out_dir, ordered)
    return ordered


def _size(job: Job | GroupJob) -> int:
    if isinstance(job, GroupJob):
        return job.size()
    return Path(job.model).stat().st_size if Path(job.model).is_file() else 0


def _watch_parent(parent: int) -> None:
    """Ends this worker when the batch that started it is gone (kill -9 of the parent included)."""
    while True:
        time.sleep(PARENT_POLL_S)
        if os.getppid() != parent:
            os._exit(3)


def _worker(conn: Connection, parent: int) -> None:
    """A batch worker: jobs in, rows out, one at a time; None or a closed pipe ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    threading.Thread(target=_watch_parent, args=(parent,), name="edgeplan-watch-parent", daemon=True).start()
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        conn.send(run_job(job))


def _death(process: BaseProcess) -> str:
    code = process.exitcode
    if code is not None and code < 0:
        try:
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


def run_pool(jobs: Sequence[Job | GroupJob], workers: int, record: Callable[[dict[str, Any]], None]) -> None:
    """Runs the jobs on `workers` local processes; a dead worker's job becomes a failed row and the worker
    is replaced, so every other job still runs."""
    context = get_context("spawn")
    pending = deque(jobs)
    held: dict[Connection, tuple[BaseProcess, Job | GroupJob]] = {}

    def start(job: Job | GroupJob) -> None:
        parent_end, child_end = context.Pipe()
        process = context.Process(target=_worker, args=(child_end, os.getpid()), daemon=True,
                                  name="edgeplan-batch-worker")
        process.start()
        child_end.close()
        parent_end.send(job)
        held[parent_end] = (process, job)

    def next_job(conn: Connection, process: BaseProcess) -> None:
        if pending:
            job = pending.popleft()
            try:
                conn.send(job)
            except OSError:  # it died right after its last row: the job never reached it
                conn.close()
                process.join(timeout=5)
                start(job)
                return
            held[conn] = (process, job)
        else:
            conn.send(None)
            conn.close()
            process.join(timeout=10)

    try:
        for _ in range(min(workers, len(pending))):
            start(pending.popleft())
        while held:
            sentinels = {process.sentinel: conn for conn, (process, _) in held.items()}
            for ready in wait([*held, *sentinels]):
                conn = ready if isinstance(ready, Connection) else sentinels[int(ready)]  # type: ignore[arg-type]
                if conn not in held:
                    continue  # both its pipe and its sentinel were ready; handled already
                process, job = held.pop(conn)
                row = None
                try:
                    if conn.poll():
                        row = conn.recv()
                except (EOFError, OSError):
                    row = None
                if row is not None:
                    record(row)
                    next_job(conn, process)
                    continue
                process.join(timeout=5)
                reason = _death(process)
                log.warning("batch worker for %s on %s %s; its job is failed and the worker replaced",
                            job.model, job.target, reason)
                record({"model": job.model, "target": job.target, "status": "failed",
                        "error": f"{job.model}: the worker process died while planning it on {job.target} "
                                 f"({reason})"})
                conn.close()
                if pending:
                    start(pending.popleft())
    finally:
        for conn, (process, _) in held.items():
            process.kill()
            conn.close()
        for process, _ in held.values():
            process.join(timeout=5)


def write_summaries(out: Path, rows: Sequence[dict[str, Any]]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SUMMARY_FIELDS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in SUMMARY_FIELDS})
    atomic_write_text(out / "summary.csv", buffer.getvalue())
    atomic_write_text(out / "summary.html", summary_html(rows, out))
