"""TensorRT 10/11 export sweep: every static zoo model planned on orin-agx (the default profile and one in which
DLA is cheap, so plans split into many engines) under each rule set, exported for that major, and read back.

One command:  python benchmarks/trt_export_zoo.py [--zoo ../shared/zoo]
Per plan: every engine output has a producer; each boundary tensor has one IOFormats entry on every side; for 11
each sub-model passes strict ONNX type inference and every planned node's precision is recovered from its types
and Q/DQ (the reader of tests/export/test_tensorrt.py). Prints one row per plan and a total per major.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from _zoo import REPO, zoo_parser

sys.path.insert(0, str(REPO))

import onnx

from optimizer.export import export_plan
from optimizer.fileio import write_json
from optimizer.plan import optimize
from optimizer.solver import PlanRequest
from tests.export.test_tensorrt import _commands, _precision_problems, _sides
from tests.solver.conftest import FAVOUR_DLA

DLA_ONLY = ("dla_linear", "dla_hwc4")


def _one(model: Path, root: Path, profile: str | None, major: str) -> tuple[str, int, int, int]:
    planned = optimize(str(model), "orin-agx", PlanRequest(time_limit_s=20, tensorrt=major), profile_path=profile)
    plan_path = root / "plan.json"
    write_json(plan_path, planned.plan.to_json())
    out = root / "out"
    manifest = export_plan(plan_path, out)
    bad, checked = [], 0
    for engine in manifest["engines"]:
        sub = onnx.load(out / engine["onnx"], load_external_data=False)
        known = {v.name for v in sub.graph.input} | {o for n in sub.graph.node for o in n.output}
        bad += [f"{engine['onnx']}: output {o.name} has no producer" for o in sub.graph.output if o.name not in known]
        if major == "11":
            onnx.shape_inference.infer_shapes(sub, check_type=True, strict_mode=True)
            problems, count = _precision_problems(sub, planned.plan.to_json())
            bad += problems
            checked += count
    sides = _sides(manifest, _commands(out))
    bad += [f"{t}: {sorted(set(v.values()))}" for t, v in sides.items() if len(set(v.values())) > 1]
    gpu = {e["id"] for e in manifest["engines"] if e["device"] == "gpu"}
    dla_only_on_gpu = sum(1 for v in sides.values() for (engine, _), entry in v.items()
                          if engine in gpu and any(f in entry for f in DLA_ONLY))
    return ("ok" if not bad else f"{len(bad)} problem(s), e.g. {bad[0]}"), len(manifest["engines"]), checked, \
        dla_only_on_gpu


def main() -> int:
    args = zoo_parser().parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        favour = Path(tmp) / "favour.toml"
        favour.write_text(FAVOUR_DLA)
        for model in sorted(Path(args.zoo).glob("*.onnx")):
            if "dyn" in model.stem:
                continue  # free dims: planned with --input-shape elsewhere
            for label, profile in (("default", None), ("favour-dla", str(favour))):
                for major in ("10", "11"):
                    root = Path(tmp) / f"{model.stem}-{label}-{major}"
                    root.mkdir()
                    started = time.monotonic()
                    try:
                        status, engines, checked, dla_only = _one(model, root, profile, major)
                    except Exception as exc:  # a row, not a crash: the sweep reports every model
                        status, engines, checked, dla_only = f"ERROR {type(exc).__name__}: {str(exc)[:160]}", 0, 0, 0
                    rows.append((model.stem, label, major, status, engines, checked, dla_only))
                    print(f"{model.stem:<40} {label:<10} trt{major} {engines:>3} engines {checked:>5} nodes read "
                          f"{time.monotonic() - started:6.1f} s  {status}", flush=True)
    for major in ("10", "11"):
        mine = [r for r in rows if r[2] == major]
        print(f"TensorRT {major}: {sum(r[3] == 'ok' for r in mine)}/{len(mine)} plans exported and read back, "
              f"{sum(r[5] for r in mine)} planned nodes' precision recovered, {sum(r[4] for r in mine)} engines; "
              f"GPU-side boundary entries in a DLA-only format: {sum(r[6] for r in mine)}")
    return 0 if all(r[3] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
