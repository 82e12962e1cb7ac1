"""TensorRT 10/11 export sweep: every static zoo model planned on orin-agx (the default profile and one in which
DLA is cheap, so plans split into many engines) under each rule set, exported for that major, and read back.

One command:  python benchmarks/trt_export_zoo.py [--zoo ../shared/zoo]   (add --accuracy for the second part)
Per plan: every engine output has a producer; each boundary tensor has one IOFormats entry on every side; for 11
each sub-model passes strict ONNX type inference and every planned node's precision is recovered from its types
and Q/DQ (the reader of tests/export/test_tensorrt.py). Prints one row per plan and a total per major.
--accuracy: the branch/skip graph of tests/export planned all-FP16 and mixed INT8/FP16/FP32, exported for 11, run
as a chain in onnxruntime against the original: max |chain - original| / max |original| per output, with the
placeholder INT8 scales and after calibrate_qdq.py on two samples.
"""

from __future__ import annotations

import subprocess
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


def accuracy() -> None:
    import numpy as np
    import onnxruntime as ort

    from optimizer.export import run_chain
    from tests.export.test_export import _branchy
    from tests.export.test_tensorrt import FP16, MIXED

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "favour.toml").write_text(FAVOUR_DLA)
        model = _branchy(root)
        feeds = {"x": np.random.default_rng(0).normal(0, 1, (1, 8, 16, 16)).astype(np.float32)}
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        want = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
        for label, pins in (("fp16", FP16), ("mixed", MIXED)):
            planned = optimize(str(model), "orin-agx", PlanRequest(precision_pins=pins),
                               profile_path=str(root / "favour.toml"))
            write_json(root / f"{label}.json", planned.plan.to_json())
            out = root / label
            manifest = export_plan(root / f"{label}.json", out, tensorrt="11")
            for stage in ("placeholder scales", "after calibrate_qdq.py"):
                if stage != "placeholder scales":
                    np.save(out / "s0.npy", feeds["x"])
                    np.save(out / "s1.npy", feeds["x"] * 0.9)
                    (out / "samples.txt").write_text("s0.npy\ns1.npy\n")
                    subprocess.run([sys.executable, str(out / "calibrate_qdq.py"), str(out / "samples.txt")],
                                   check=True, capture_output=True)
                got = run_chain([(e["onnx"], out / e["onnx"]) for e in manifest["engines"]], feeds,
                                manifest["outputs"])
                errors = {k: f"{float(np.max(np.abs(got[k] - want[k])) / np.abs(want[k]).max()):.3%}"
                          for k in manifest["outputs"]}
                print(f"{label:<6} {stage:<24} max |chain - original| / max |original|: {errors}")


def main() -> int:
    if "--accuracy" in sys.argv:
        accuracy()
        return 0
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
