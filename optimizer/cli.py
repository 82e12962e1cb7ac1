"""Command line: a thin layer over the public API. Only this module prints or exits."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from optimizer import __version__
from optimizer._progress import Progress
from optimizer.catalog import family_files, load_catalog
from optimizer.check import check_graph, check_json, render_table
from optimizer.enums import PRECISIONS
from optimizer.errors import BadInputError, EdgeplanError
from optimizer.fileio import dumps_json, write_user_file
from optimizer.ir import Graph, load_model, parse_input_shapes
from optimizer.solver import OBJECTIVES, PlanRequest, parse_assignments
from optimizer.solver._multi import MULTI_ONLY

log = logging.getLogger("edgeplan")


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after each option that has one; the example in the epilog kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default in (None, False, argparse.SUPPRESS) or "%(default)" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


class _Levels(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        return f"edgeplan: {level}{record.getMessage()}"


def _setup_logging(verbosity: int) -> None:
    """-q: warnings and errors only; default: progress and notes; -v: what each stage did and took."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Levels())
    level = logging.WARNING if verbosity < 0 else logging.DEBUG if verbosity > 0 else logging.INFO
    for name in ("edgeplan", "optimizer"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(level)
        logger.propagate = False


def _progress(args: argparse.Namespace, what: str) -> Progress:
    return Progress(what, enabled=getattr(args, "verbosity", 0) >= 0)


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2, like every other bad input."""

    def error(self, message: str) -> NoReturn:
        raise BadInputError(f"usage: {message} (see 'edgeplan {self.prog.split()[-1]} --help')")


def _targets(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    rows: list[dict[str, Any]] = []
    for target in catalog.targets.values():
        figures = {name: {"value": f.value, "unit": f.unit, "source": f.source,
                          **({"derived": True} if f.derived else {}), **({"assumed": True} if f.assumed else {})}
                   for name, f in target.figures.items()}
        rows.append({"id": target.id, "name": target.name, "family": target.family,
                     "generation": target.generation, "accelerator": target.accelerator,
                     "fallback": target.fallback, "devices": list(target.devices),
                     "accelerator_cores": target.cores,
                     "precisions": {k: list(v) for k, v in target.precisions.items()},
                     "variant_of": target.base or None, "power_mode": target.features.get("power_mode"),
                     "calibration": target.calibration, "figures": figures})
    if args.json:
        sys.stdout.write(dumps_json({"schema": "edgeplan.targets/v1", "catalog_sha256": catalog.sha256,
                                     "targets": rows}))
        return 0
    peaks = [_peak_text(row) for row in rows]
    width, peak_width = max(14, *(len(row["id"]) for row in rows)), max(26, *(len(p) for p in peaks))
    print(f"{'target':<{width}} {'devices':<16} {'accelerator peak':<{peak_width}} {'DRAM':>9}  {'profile':<8} name")
    for row, peak in zip(rows, peaks):
        print(f"{row['id']:<{width}} {','.join(row['devices']):<16} {peak:<{peak_width}} "
              f"{row['figures']['dram_gbps']['value']:>6g} GB/s  {row['calibration']:<8} {row['name']}")
    print("\nper-core figures; a variant (power mode, module size) shares its base's rules; 'profile' is the key"
          " of its fitted latency constants; sources: edgeplan targets --json")
    return 0


def _peak_text(row: dict[str, Any]) -> str:
    """The accelerator's per-core peaks; a target without it (GPU-only Jetson) shows its fallback's."""
    fig = row["figures"]
    acc = row["accelerator"] if row["accelerator_cores"] else row["fallback"]
    peak = f"{fig[f'{acc}_int8_tops']['value']:g} TOPS int8"
    if f"{acc}_fp16_tops" in fig:
        peak += f" / {fig[f'{acc}_fp16_tops']['value']:g} fp16"
    return peak if row["accelerator_cores"] else f"no {row['accelerator'].upper()}: {acc} {peak}"


def _load(args: argparse.Namespace) -> Graph:
    return load_model(args.model, parse_input_shapes(args.input_shape or []))


def _check(args: argparse.Namespace) -> int:
    catalog = load_catalog(tensorrt=args.trt)
    catalog.target(args.target)
    report = check_graph(_load(args), catalog, args.target)
    if args.json:
        write_user_file(args.json, dumps_json(check_json(report)))
    if args.json != "-":  # '-': the JSON alone is stdout
        sys.stdout.write(render_table(report))
    return 0


def _optimize(args: argparse.Namespace) -> int:
    from optimizer.plan import optimize, write_plan_files
    from optimizer.plan._report import terminal_summary
    from optimizer.solver._sensitivity import load_sensitivity

    shapes = parse_input_shapes(args.input_shape or [])
    allowed = frozenset(p.strip() for p in args.allow_precisions.split(",") if p.strip())
    from optimizer.multi import wants_multi

    if wants_multi(args):
        return _optimize_multi(args, shapes, allowed)
    args.model = args.model[0]
    args.latency_cap = _one_cap(args.latency_cap)
    sensitivity = {}
    if args.sensitivity:
        sensitivity = load_sensitivity(args.sensitivity, load_model(args.model, shapes))
    request = PlanRequest(
        objective=args.objective or "latency", time_limit_s=args.time_limit, seed=args.seed, workers=args.workers,
        deterministic_limit_s=args.deterministic_limit,
        allowed_precisions=allowed, pins=parse_assignments(args.pin, "--pin"),
        precision_pins=parse_assignments(args.precision, "--precision"), sensitivity=sensitivity,
        int8_budget=args.int8_budget, latency_cap_ms=args.latency_cap, dla_standalone=args.dla_standalone,
        sram_bytes=args.sram_bytes, max_loadables=args.max_loadables, sparsity=args.sparsity,
        with_edits=args.with_edits, sram_per_loadable=_byte_list(args.loadable_sram, "--loadable-sram"),
        tensorrt=args.trt,
    )
    progress = _progress(args, "optimize")
    try:
        planned = optimize(args.model, args.target, request, input_shapes=shapes, profile_path=args.profile,
                           explain=args.explain, started=args.started,
                           progress=lambda step, steps, phase: progress(step, steps, phase))
    finally:
        progress.close()
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadInputError("--out exists and is not a directory", file=str(out))
    write_plan_files(planned, out)
    sys.stdout.write(terminal_summary(planned, str(out)))
    return 0


def _one_cap(values: list[str] | None) -> float | None:
    if not values:
        return None
    if len(values) > 1:
        raise BadInputError("--latency-cap MS is given once for one model (NAME=MS caps one of several)")
    try:
        return float(values[0])
    except ValueError:
        raise BadInputError(f"--latency-cap takes milliseconds, got '{values[0]}'") from None


def _optimize_multi(args: argparse.Namespace, shapes: dict[str, tuple[int, ...]], allowed: frozenset[str]) -> int:
    """Several models in one plan (or one model under energy, makespan, weighted or a GPU budget)."""
    from optimizer.fileio import write_file_set
    from optimizer.multi import MERGED_NAME, multi_request, multi_summary, optimize_multi

    for flag in ("sensitivity", "int8_budget", "precision", "explain", "dla_standalone"):
        if getattr(args, flag, None):
            raise BadInputError(f"--{flag.replace('_', '-')} is not offered with several models or the "
                                f"{args.objective} objective yet")
    request = PlanRequest(objective="latency", time_limit_s=args.time_limit, seed=args.seed, workers=args.workers,
                          deterministic_limit_s=args.deterministic_limit, allowed_precisions=allowed,
                          sram_bytes=args.sram_bytes, max_loadables=args.max_loadables, sparsity=args.sparsity,
                          pins=parse_assignments(args.pin, "--pin"),
                          sram_per_loadable=_byte_list(args.loadable_sram, "--loadable-sram"), tensorrt=args.trt)
    multi = multi_request(args)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BadInputError("--out exists and is not a directory", file=str(out))
    planned = optimize_multi(args.model, args.target, request, multi, input_shapes=shapes,
                             profile_path=args.profile, started=args.started,
                             merged_path=str(out / MERGED_NAME))
    write_file_set(out, planned.files())
    sys.stdout.write(multi_summary(planned.plan, str(out)))
    return 0


def _byte_list(text: str | None, flag: str) -> tuple[int, ...]:
    if not text:
        return ()
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise BadInputError(f"{flag} takes comma-separated byte counts, got '{text}'") from None


def _export(args: argparse.Namespace) -> int:
    from optimizer.export import export_plan

    manifest = export_plan(args.plan, args.out, args.model, tensorrt=args.trt)
    print(f"edgeplan export: {len(manifest['engines'])} engine(s) for {manifest['target']} in {args.out}")
    for engine in manifest["engines"]:
        print(f"  {engine['id']}: {engine['device']:<5} {engine['onnx']}  in {','.join(engine['inputs'])[:60]}")
    print(f"build files: {', '.join(manifest['build'])}")
    if "replication" in manifest:  # the plan chose whole copies: copies.sh builds one engine per copy
        copies = manifest["replication"]["copies"]
        print("replicated copies (copies.sh): " + ", ".join(f"{c['copy']} {c['frames_per_cycle']} of every "
                                                            f"{manifest['replication']['cycle_frames']} frames"
                                                            for c in copies))
    return 0


def _verify_rknn(args: argparse.Namespace) -> int:
    from optimizer.backends import backend_of
    from optimizer.export import read_plan
    from optimizer.export._verify_rknn import verify_rknn
    from optimizer.plan import Plan

    document = read_plan(Path(args.plan))
    plan = Plan.from_json(document, file=args.plan)
    if backend_of(load_catalog().target(plan.target)).name != "rknn":
        raise BadInputError(f"verify-rknn needs an RKNN plan; this one is for {plan.target}", file=args.plan)
    comparison = verify_rknn(document, args.model or plan.model.path, args.rknn_python)
    print("\n".join(comparison.lines()))
    return 0 if comparison.built and not comparison.disagreements else 1


def _predict(args: argparse.Namespace) -> int:
    from optimizer.calibrate import Situation, predict

    situation = Situation(accelerator=args.accelerator, precision=args.precision, batch=args.batch,
                          cores=args.cores, metric=args.metric, sparse=args.sparse, gpu_batch=args.gpu_batch,
                          io_included=not args.no_io, tf32=not args.no_tf32, nms=args.nms,
                          separate_runs=args.separate_runs, host_timed=not args.engine_time,
                          default_formats=args.default_formats)
    prediction = predict(args.model, args.target, situation, profile_path=args.profile,
                         input_shapes=parse_input_shapes(args.input_shape or []))
    if args.json:
        sys.stdout.write(dumps_json(prediction.to_json(args.model)))
        return 0
    figure = prediction.figure
    print(f"{args.model} on {args.target}, {situation.describe()} (profile {prediction.profile}):")
    band = prediction.band
    likely = (f" (likely {figure.latency_s * 1e3 * band.low:.4g}-{figure.latency_s * 1e3 * band.high:.4g} ms)"
              if band else " (no error band: the profile was calibrated without cross-validation)")
    print(f"  latency    {figure.latency_s * 1e3:.4f} ms per batch of {situation.batch}{likely}")
    print(f"  throughput {figure.throughput:.2f} frames/s")
    if band:
        print(f"  band from {band.describe()}")
    print(f"  accelerator runs {prediction.scenario.accelerator_share:.1%} of the MACs")
    return 0


def _calibrate(args: argparse.Namespace) -> int:
    from optimizer.calibrate._run import LayerInput, run_calibration
    from optimizer.latency import profile_family

    priors = {profile_family(path): path for path in args.prior or []}
    layers = []
    if args.trtexec_profile or args.rknn_perf:
        if not (args.model and args.target):
            raise BadInputError("per-layer timings need --model MODEL and --target T (the model they were timed on)")
        layers.append(LayerInput(model=args.model, target=args.target, trtexec_profile=args.trtexec_profile,
                                 trtexec_layers=args.trtexec_layers, rknn_perf=args.rknn_perf,
                                 precision=args.precision))
    if args.csv and not args.models:
        raise BadInputError("--csv needs --models DIR (the folder its onnx column is relative to)")
    document = run_calibration(args.csv, args.models, args.out, families=args.family or (), priors=priors,
                               cross=not args.no_cv, layer_inputs=layers)
    def pct(summary: dict[str, Any] | None, field: str = "median_abs_pct_error") -> str:
        return format(summary[field], ".1%") if summary else "-"

    print(f"{'family':<14} {'rows':>5} {'LOSO MdAPE':>11} {'LOSO p90':>9} {'LOFO MdAPE':>11} {'prior MdAPE':>12} "
          f"{'fit MdAPE':>10}  profile   (LOSO/LOFO = each publishing source / model family held out)")
    for family, entry in document["families"].items():
        loso, cv = entry["source_cross_validation"], entry["cross_validation"]
        print(f"{family:<14} {entry['fit']['rows']:>5} {pct(loso):>11} {pct(loso, 'p90_abs_pct_error'):>9} "
              f"{pct(cv):>11} {entry['prior']['median_abs_pct_error']:>12.1%} "
              f"{entry['fit']['median_abs_pct_error']:>10.1%}  {Path(args.out) / entry['profile']}")
    print(f"{len(document['skipped'])} rows skipped (reasons in {Path(args.out) / 'calibration.json'}); "
          f"use a profile with: edgeplan optimize MODEL --target T --profile FILE")
    return 0


def _suggest(args: argparse.Namespace) -> int:
    from optimizer.edits import suggest

    shapes = parse_input_shapes(args.input_shape or [])
    base, suggestions = suggest(args.model, args.target, input_shapes=shapes)
    if args.json:
        write_user_file(args.json, dumps_json({
            "schema": "edgeplan.suggest/v1", "model": args.model, "target": args.target, "base_latency_ms": base,
            "edits": [s.edit.json() | {"gain_ms": s.gain_ms} for s in suggestions]}))
        if args.json == "-":
            return 0
    if not suggestions:
        print(f"no edits to suggest for {args.model} on {args.target}")
        return 0
    print(f"{'edit id':<48} {'rule':<24} {'gain (ms)':>10}  rationale")
    for s in suggestions:
        gain = "advice" if not s.edit.applicable else ("-" if s.gain_ms is None else f"{s.gain_ms:.4f}")
        print(f"{s.edit.id:<48} {s.edit.rule:<24} {gain:>10}  {s.edit.rationale}")
    given = "".join(f" --input-shape {spec}" for spec in args.input_shape or [])
    print(f"base plan: {base} ms; apply with: edgeplan edit {args.model} --apply ID[,ID...]{given} --out NEW.onnx")
    return 0


def _edit(args: argparse.Namespace) -> int:
    from optimizer.edits import edit

    ids = [i.strip() for i in args.apply.split(",") if i.strip()]
    result = edit(args.model, ids, args.out, target=args.target,
                  input_shapes=parse_input_shapes(args.input_shape or []))
    print(f"wrote {result['out']} with {', '.join(result['edits'])}")
    print(f"verified: {result['verification']['numerical']}; rules cleared: "
          + ", ".join(f"{r['rule']} ({r['id']})" for r in result["verification"]["rules"]))
    return 0


def _study(args: argparse.Namespace) -> int:
    from optimizer.study import reproduce_study, resume_study, run_study
    from optimizer.study._pareto import is_pareto_config, reproduce_pareto, run_pareto_study

    progress = _progress(args, "trials")

    def trials(done: int, total: int) -> None:
        progress(done, total)

    if args.trt is not None and args.action in ("reproduce", "resume"):
        raise BadInputError(f"--trt applies when a study starts; {args.action} uses the study folder's config.toml "
                            "(which keeps the TensorRT major it ran with)")
    pareto_folder = args.action == "reproduce" and args.folder and (Path(args.folder) / "front.json").exists()
    if pareto_folder:
        try:
            same, diff = reproduce_pareto(args.folder, progress=trials)
        finally:
            progress.close()
        print(f"{args.folder}: the rerun's front and plan are byte-identical" if same else
              f"{args.folder}: the rerun {diff}", file=sys.stdout if same else sys.stderr)
        return 0 if same else 1
    if args.action not in ("reproduce", "resume") and is_pareto_config(args.action):
        if args.trt is not None:
            raise BadInputError("--trt is not supported for a Pareto (several-model) study config yet",
                                file=args.action)
        try:
            pareto = run_pareto_study(args.action, args.out, command=["edgeplan", *sys.argv[1:]], progress=trials)
        finally:
            progress.close()
        front = json.loads((pareto.folder / "front.json").read_text(encoding="utf-8"))
        print(f"study {pareto.folder}: {pareto.trials} trials, a Pareto front of {len(front['points'])} plan(s) "
              f"over {', '.join(front['objectives'])}:")
        for point in front["points"]:
            values = ", ".join(f"{k} {v:.4g}" for k, v in point["values"].items())
            params = ", ".join(f"{k}={v}" for k, v in sorted(point["params"].items()))
            print(f"  trial {point['trial']}: {values}; DLA: {', '.join(point['dla']) or 'none'} ({params})")
        print(f"wrote plan.json, front.json, front/, trials.csv, manifest.json, report.html in {pareto.folder}")
        return 0

    if args.action == "reproduce":
        if not args.folder:
            raise BadInputError("usage: edgeplan study reproduce DIR")
        try:
            same, diff = reproduce_study(args.folder, progress=trials)
        finally:
            progress.close()
        if same:
            print(f"{args.folder}: the rerun's best plan is byte-identical")
            return 0
        print(f"{args.folder}: the rerun's best plan differs:\n{diff}", file=sys.stderr)
        return 1
    if args.action == "resume":
        if not args.folder:
            raise BadInputError("usage: edgeplan study resume DIR")
        try:
            outcome = resume_study(args.folder, args.storage, progress=trials)
        finally:
            progress.close()
    else:
        if args.folder:
            raise BadInputError("usage: edgeplan study CONFIG.toml [--out DIR] [--storage URL]")
        try:
            outcome = run_study(args.action, args.out, args.storage, command=["edgeplan", *sys.argv[1:]],
                                new_study=args.new_study, progress=trials, tensorrt=args.trt)
        finally:
            progress.close()
    gain = (outcome.baseline_value - outcome.best_value) / outcome.baseline_value if outcome.baseline_value else 0.0
    print(f"study {outcome.folder}: {outcome.trials} trials, best trial {outcome.best_trial} "
          f"{outcome.best_value:.4f} ms vs planner alone {outcome.baseline_value:.4f} ms ({gain:.1%} better)")
    print(f"wrote plan.json, trials.csv, manifest.json, report.html in {outcome.folder}")
    return 0


def _batch(args: argparse.Namespace) -> int:
    from optimizer.batch import run_batch
    from optimizer.batch_multi import batch_options, parse_groups

    groups = parse_groups(args.group)
    if not args.models and not groups:
        raise BadInputError("batch needs MODEL files or a --group")
    multi = batch_options(args)
    bar = _progress(args, "batch jobs")

    def progress(done: int, total: int, row: dict[str, Any]) -> None:
        bar(done, total, f"{row.get('group') or Path(row['model']).name} {row['target']}: {row['status']}")

    try:
        rows = run_batch(args.models, args.target, args.out, workers=args.workers, dask_address=args.dask,
                         time_limit_s=args.time_limit, objective=args.objective, profiles=args.profile or (),
                         progress=progress, groups=groups, multi=multi, tensorrt=args.trt)
    finally:
        bar.close()
    ok = sum(r["status"] == "ok" for r in rows)
    shapes = sum(r["status"] == "needs-shapes" for r in rows)
    refused = sum(r["status"] == "refused" for r in rows)
    skipped = sum(bool(r.get("skipped")) for r in rows)
    print(f"edgeplan batch: {len(rows)} jobs, {ok} ok, {len(rows) - ok - shapes - refused} failed or infeasible, "
          + (f"{shapes} needs-shapes, " if shapes else "")
          + (f"{refused} refused by the converter, " if refused else "")
          + f"{skipped} skipped (already done); wrote {args.out}/summary.csv and summary.html")
    unproven = [r for r in rows if r.get("note") and r["status"] == "ok"]
    for row in unproven:  # a group's plan that is the solver's best or a baseline says so
        print(f"edgeplan: note: {row.get('group') or row['model']} on {row['target']}: {row['note']}", file=sys.stderr)
    for row in rows:
        if row["status"] == "needs-shapes":
            print(f"edgeplan: needs-shapes: {row['model']} on {row['target']}: planned on unknown sizes "
                  f"({row.get('unknown_sizes', '')}); fix its inputs with edgeplan edit --apply fix-dims@INPUT",
                  file=sys.stderr)
        elif row["status"] != "ok":
            print(f"edgeplan: {row['status']}: {row['error']}", file=sys.stderr)
    # a pipeline must notice: 2 if any job failed on bad input, 1 if any request was infeasible or its model
    # would be refused by the vendor converter
    statuses = {r["status"] for r in rows}
    return 2 if "failed" in statuses else 1 if statuses & {"infeasible", "refused"} else 0


EXAMPLES = {
    "targets": "edgeplan targets --json > targets.json",
    "check": "edgeplan check examples/resnet18.onnx --target orin-agx --json check.json",
    "optimize": "edgeplan optimize examples/yolov8n.onnx --target orin-agx --objective throughput --time-limit 10 "
                "--out plan/",
    "export": "edgeplan export plan/plan.json --out build/",
    "verify-rknn": "edgeplan verify-rknn plan/plan.json --rknn-python /opt/rknn-venv/bin/python",
    "study": "edgeplan study studies/yolov8n-orin.toml   (then: edgeplan study reproduce studies/yolov8n-orin)",
    "batch": "edgeplan batch 'models/*.onnx' --target orin-agx --target rk3588 --workers 2 --out runs/",
    "predict": "edgeplan predict examples/resnet18.onnx --target orin-agx --accelerator dla --precision int8",
    "calibrate": "edgeplan calibrate --csv measurements.csv --models models/ --out profiles/",
    "suggest": "edgeplan suggest examples/yolov8n.onnx --target orin-agx",
    "edit": "edgeplan edit model.onnx --apply ID1,ID2 --out edited.onnx --target orin-agx",
}


def _multi_args(p: argparse.ArgumentParser) -> None:
    """batch: the per-model requests of groups (optimize takes the same flags with several models)."""
    p.add_argument("--rate", action="append", metavar="NAME=FPS",
                   help="--objective throughput: frames/s model NAME (a file stem) of a --group must sustain")
    p.add_argument("--latency-cap", action="append", metavar="NAME=MS", help="cap on model NAME of a --group")
    p.add_argument("--weight", action="append", metavar="NAME=W", help="weight of model NAME (--objective weighted)")
    p.add_argument("--gpu-budget", type=float, metavar="SHARE",
                   help="the GPU may be busy at most this share of each frame (every job is planned as a group)")
    p.add_argument("--makespan-cap", type=float, metavar="MS", help="cap on the makespan of one frame of a group")
    p.add_argument("--no-contention", action="store_true",
                   help="leave shared-DRAM contention (PCCS) out of the groups' objective")


def _common() -> _Parser:
    common = _Parser(add_help=False)
    loud = common.add_mutually_exclusive_group()
    loud.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const=-1, default=0,
                      help="warnings and errors only, no progress")
    loud.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const=1,
                      help="also what each stage did and how long it took")
    return common


def _input_shape_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input-shape", action="append", metavar="NAME=1x3x224x224",
                   help="fix a dynamic input's dims (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="edgeplan", description="Deployment plans for ONNX models on edge accelerators.",
                     formatter_class=_Help, epilog="example:\n  " + EXAMPLES["optimize"])
    parser.add_argument("--version", action="version", version=f"edgeplan {__version__}")
    parser.set_defaults(verbosity=0)
    common = _common()
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, parents=[common], formatter_class=_Help,
                              epilog=f"example:\n  {EXAMPLES[name]}")

    p = command("targets", "list the known targets and their key figures")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(run=_targets)

    def trt_arg(p: argparse.ArgumentParser, default: str | None = "10", more: str = "") -> None:
        p.add_argument("--trt", default=default, choices=("10", "11"),
                       help="TensorRT major whose DLA rules apply (Jetson targets; 10 is the seed's set)" + more)

    p = command("check", "which node can run where, and why not")
    p.add_argument("model", help="ONNX model file")
    p.add_argument("--target", required=True, help="target ID (see 'edgeplan targets')")
    p.add_argument("--json", metavar="FILE", help="also write the check JSON here ('-': stdout, instead of the table)")
    trt_arg(p)
    _input_shape_arg(p)
    p.set_defaults(run=_check)

    p = command("optimize", "solve for the best deployment plan and write DIR/plan.json")
    p.add_argument("model", nargs="+", help="ONNX model file (several: one plan for all, sharing the engines)")
    p.add_argument("--target", required=True, help="target ID (see 'edgeplan targets')")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for plan.json, run.json, report.md")
    p.add_argument("--objective", default=None, choices=OBJECTIVES + MULTI_ONLY,
                   help="latency of one frame; throughput (busiest engine); dual-stream (two DLA cores, two "
                        "streams); makespan (one frame of every model, the default for several); weighted (sum "
                        "of weight x model latency); energy (mJ per frame, with --makespan-cap or --latency-cap)")
    p.add_argument("--rate", action="append", metavar="NAME=FPS",
                   help="several models, --objective throughput: frames/s model NAME must sustain (all or none)")
    p.add_argument("--weight", action="append", metavar="NAME=W", help="weight of model NAME (--objective weighted)")
    p.add_argument("--gpu-budget", type=float, metavar="SHARE",
                   help="the GPU may be busy at most this share of each frame (0.5 leaves half of it free)")
    p.add_argument("--makespan-cap", type=float, metavar="MS", help="cap on the makespan of one frame of every model")
    p.add_argument("--no-contention", action="store_true",
                   help="leave shared-DRAM contention (PCCS) out of the multi-model objective")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="seconds for the whole command, as a deterministic solver budget (the same plan under "
                        "any load); past it the best plan found (or the best baseline) is written; the wall clock "
                        "cuts the solver only at 4x, and the plan then says so")
    p.add_argument("--deterministic-limit", type=float, metavar="D",
                   help="CP-SAT deterministic seconds (work, not time: the same plan under any load); default: "
                        "derived from --time-limit")
    p.add_argument("--seed", type=int, default=0, help="CP-SAT random seed (same seed, same plan)")
    p.add_argument("--workers", type=int, default=1, help="CP-SAT workers (1 is deterministic and fastest here)")
    p.add_argument("--pin", action="append", metavar="NODE=DEVICE", help="force a node onto gpu/dla/dla0/dla1/npu/cpu")
    p.add_argument("--precision", action="append", metavar="NODE=PREC", help="force a node's precision")
    p.add_argument("--allow-precisions", default="int8,fp16,fp32", metavar="LIST",
                   help="precisions the accelerator and GPU may use (CPU fallback stays fp32)")
    p.add_argument("--sensitivity", metavar="FILE", help="INT8 sensitivity: CSV node,score or rknn accuracy_analysis")
    p.add_argument("--int8-budget", type=float, metavar="X", help="max summed sensitivity of INT8 nodes")
    p.add_argument("--latency-cap", action="append", metavar="MS|NAME=MS",
                   help="latency cap for --objective throughput; NAME=MS caps model NAME of several")
    p.add_argument("--dla-standalone", action="store_true", help="whole network as DLA loadables (seed 000 12.5)")
    p.add_argument("--sram-bytes", type=int, metavar="B", help="DLA managed SRAM pool per loadable (power of two)")
    p.add_argument("--loadable-sram", metavar="B0,B1,..",
                   help="DLA managed SRAM of each loadable in order (DLA-SRAM-PER-LOADABLE; Xavier: they share 4 MiB)")
    p.add_argument("--max-loadables", type=int, metavar="N",
                   help="override DLA-LOADABLES (default 4; 16 per core with --trt 11)")
    p.add_argument("--sparsity", default="allow", choices=("allow", "off"),
                   help="RKNN sparse weight modes on RK3576/RV1126B (needs sparse-trained weights)")
    p.add_argument("--with-edits", action="store_true",
                   help="let the planner choose model edits (explicit pad, pool split, kernel split) too")
    p.add_argument("--profile", metavar="FILE", help="latency profile TOML (edgeplan calibrate)")
    p.add_argument("--explain", action="store_true", help="add every option's modelled cost to plan.json")
    trt_arg(p)
    _input_shape_arg(p)
    p.set_defaults(run=_optimize)

    p = command("export", "sub-models, manifest and build files for a plan")
    p.add_argument("plan", help="plan.json from edgeplan optimize")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the engines' ONNX files and build files")
    p.add_argument("--model", help="the ONNX model (default: the path recorded in the plan)")
    trt_arg(p, None, "; the build files' flags follow it too (11: strongly typed ONNX with Q/DQ and Cast "
                     "nodes; default: the plan's rule set, else 10)")
    p.set_defaults(run=_export)

    p = command("verify-rknn", "convert with rknn-toolkit2 and compare its placement with the plan")
    p.add_argument("plan", help="plan.json for an RKNN target")
    p.add_argument("--rknn-python", required=True, metavar="PATH", help="python of rknn-toolkit2's own venv")
    p.add_argument("--model", help="the ONNX model (default: the path recorded in the plan)")
    p.set_defaults(run=_verify_rknn)

    p = command("study", "Optuna study of SRAM pools and partitions: CONFIG.toml | resume DIR | "
                                       "reproduce DIR")
    p.add_argument("action", metavar="CONFIG.toml|resume|reproduce",
                   help="a study config to run, or resume/reproduce a study folder")
    p.add_argument("folder", nargs="?", metavar="DIR", help="the study folder (resume, reproduce)")
    p.add_argument("--out", metavar="DIR", help="study folder (default: studies/<name>/ beside the config)")
    p.add_argument("--storage", metavar="URL", help="shared storage, e.g. postgresql+psycopg://user@host/db")
    p.add_argument("--new-study", action="store_true",
                   help="replace a stored study of the same name that ran with another config (else refused)")
    trt_arg(p, default=None, more="; default: the config's `tensorrt`, else 10; kept in the folder's config.toml "
                                  "and manifest.json")
    p.set_defaults(run=_study)

    p = command("batch", "many models x targets in one job, with a summary")
    p.add_argument("models", nargs="*", metavar="MODEL", help="ONNX files, globs, or .txt lists of paths")
    p.add_argument("--group", action="append", metavar="A.onnx,B.onnx",
                   help="models planned together on each target, sharing its engines (repeatable; see optimize "
                        "with several models)")
    p.add_argument("--target", action="append", required=True, help="target ID (repeatable)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for summary.csv, summary.html and the plans")
    p.add_argument("--workers", type=int, default=1, help="local worker processes")
    p.add_argument("--dask", metavar="tcp://HOST:PORT", help="run the jobs on an existing Dask cluster")
    p.add_argument("--time-limit", type=float, default=60.0, metavar="S",
                   help="wall-clock seconds per job (see optimize --time-limit)")
    p.add_argument("--objective", default="latency", choices=OBJECTIVES + MULTI_ONLY,
                   help="see optimize --objective (a --group under latency is planned for its makespan)")
    p.add_argument("--profile", action="append", metavar="FILE",
                   help="calibrated latency profile (edgeplan calibrate); one per target family, repeatable")
    _multi_args(p)
    trt_arg(p, more="; in summary.csv as tensorrt_rules")
    p.set_defaults(run=_batch)

    p = command("predict", "the predicted figure of one fixed configuration (no optimisation)")
    p.add_argument("model", help="ONNX model file")
    p.add_argument("--target", required=True, help="target ID, power modes included (see 'edgeplan targets')")
    p.add_argument("--accelerator", required=True, choices=("gpu", "dla", "npu", "cpu", "auto"),
                   help="gpu only; dla with GPU fallback; npu with CPU fallback; cpu = the whole model on an RKNN "
                        "SoC's CPU (fp32); auto = the planner's best plan")
    p.add_argument("--precision", required=True, choices=PRECISIONS)
    p.add_argument("--batch", type=int, default=1, help="frames per inference")
    p.add_argument("--cores", type=int, default=1,
                   help="DLA cores (one engine each, all fed) or NPU cores one inference is split over")
    p.add_argument("--metric", default="latency", choices=("latency", "throughput"))
    p.add_argument("--gpu-batch", type=int, default=0, metavar="N",
                   help="with --accelerator dla: a GPU engine at batch N runs beside the DLA engines")
    p.add_argument("--sparse", action="store_true", help="RKNN sparse-weight build (RK3576, RV1126B)")
    p.add_argument("--no-io", action="store_true",
                   help="leave model input/output layout conversion out (rknn eval_perf, NPU-only figures)")
    p.add_argument("--noTF32", "--no-tf32", dest="no_tf32", action="store_true",
                   help="the TensorRT engine is built with --noTF32: FP32 layers on CUDA cores (Ampere GPUs)")
    p.add_argument("--nms", action="store_true",
                   help="the timed region also runs box decoding + NMS on the GPU over the model's outputs")
    p.add_argument("--separate-runs", action="store_true",
                   help="with --accelerator dla --cores K --metric throughput: each core's engine was timed on its "
                        "own and the K rates added (no shared DRAM or GPU between them)")
    p.add_argument("--engine-time", action="store_true",
                   help="TensorRT targets: the engine's GPU-side time alone (trtexec's GPU latency / GPU compute), "
                        "without the per-inference host enqueue and stream sync")
    p.add_argument("--default-formats", action="store_true",
                   help="TensorRT's default I/O formats (trtexec without --inputIOFormats/--outputIOFormats): FP32 "
                        "linear model I/O reformatted on the GPU (a GPU engine below FP32, a DLA engine) and "
                        "kDLA_LINEAR hand-overs")
    p.add_argument("--profile", metavar="FILE", help="latency profile TOML (edgeplan calibrate)")
    p.add_argument("--json", action="store_true", help="print edgeplan.predict/v1 JSON")
    _input_shape_arg(p)
    p.set_defaults(run=_predict)

    p = command("calibrate", "fit the latency model's constants to measurements; writes profiles")
    p.add_argument("--csv", help="whole-model measurements in the published-calibration CSV format")
    p.add_argument("--models", metavar="DIR", help="folder the CSV's onnx column is relative to")
    p.add_argument("--trtexec-profile", metavar="JSON", help="per-layer times: trtexec --exportProfile")
    p.add_argument("--trtexec-layers", metavar="JSON", help="trtexec --exportLayerInfo (layer precisions)")
    p.add_argument("--rknn-perf", metavar="TXT", help="per-layer times: rknn-toolkit2 eval_perf table")
    p.add_argument("--model", help="the ONNX model the per-layer times were measured on")
    p.add_argument("--target", help="the target the per-layer times were measured on")
    p.add_argument("--precision", default="fp16", choices=PRECISIONS,
                   help="precision of trtexec layers when --trtexec-layers does not say")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for latency_<family>.toml and calibration.json")
    p.add_argument("--family", action="append", choices=tuple(family_files()),
                   help="fit only this family (repeatable; default: every family with rows)")
    p.add_argument("--prior", action="append", metavar="PROFILE", help="start from this profile (per family)")
    p.add_argument("--no-cv", action="store_true", help="skip leave-one-family-out cross-validation")
    p.set_defaults(run=_calibrate)

    p = command("suggest", "model edits that remove vendor violations, with predicted gains")
    p.add_argument("model", help="ONNX model file")
    p.add_argument("--target", required=True, help="target ID (see 'edgeplan targets')")
    p.add_argument("--json", metavar="FILE", help="also write the suggestions as JSON here")
    _input_shape_arg(p)
    p.set_defaults(run=_suggest)

    p = command("edit", "apply suggested edits and verify the edited model")
    p.add_argument("model", help="ONNX model file")
    p.add_argument("--apply", required=True, metavar="ID[,ID...]", help="edit IDs from 'edgeplan suggest'")
    p.add_argument("--out", required=True, metavar="NEW.onnx", help="where the edited model goes")
    p.add_argument("--target", help="target whose check must no longer report the rules")
    _input_shape_arg(p)
    p.set_defaults(run=_edit)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()  # --time-limit counts from here: the whole command, not only the solver
    try:
        args = build_parser().parse_args(argv)
        args.started = started
        _setup_logging(args.verbosity)
        return int(args.run(args))
    except EdgeplanError as exc:
        print(f"edgeplan: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("edgeplan: interrupted", file=sys.stderr)
        return 130
    except (OSError, json.JSONDecodeError, RecursionError, MemoryError) as exc:
        print(f"edgeplan: error: {type(exc).__name__}: {' '.join(str(exc).split())[:300]}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug must still end as one line, never a traceback in a batch log
        where = getattr(locals().get("args"), "model", None) or getattr(locals().get("args"), "plan", None) or ""
        print(f"edgeplan: error: {where + ': ' if where else ''}internal error {type(exc).__name__}: "
              f"{' '.join(str(exc).split())[:300]} (please report)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
