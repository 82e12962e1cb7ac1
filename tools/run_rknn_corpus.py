"""Convert every weighted corpus model with the real rknn-toolkit2 2.5.0, per SoC and precision, and keep
its layer table.

Run with the toolkit's own interpreter (../shared/spec/rknn-toolkit.md), under nice:
    nice -n 10 /work/main/.ci/rknn-venv/bin/python tools/run_rknn_corpus.py --build-dir /work/corpus-build
    /work/main/.ci/rknn-venv/bin/python tools/run_rknn_corpus.py --collect   # writes corpus/rknn/*.csv*

Conversions run in long-lived worker processes (at most --jobs, default 2), since a conversion in a warm
process is far cheaper than a fresh interpreter. Each (model, soc, precision) result lands in
BUILD_DIR/rknn/<model>/<soc>-<precision>.json with the raw log beside it; done results are skipped, so
the run resumes. A worker that crashes or exceeds --timeout is recorded as the toolkit's failure and
replaced; one the kernel kills (SIGKILL: out of memory) is the machine's limit, so nothing is recorded and a
rerun retries it; a worker grown past WORKER_RSS_LIMIT after a conversion is replaced. `--collect` maps
layers back to ONNX nodes (using the committed structure-only models) and writes the committed tables
deterministically.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import queue
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import rknn_log

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "corpus"
SOCS = ("rk3588", "rk3576", "rk3566", "rk3562", "rv1126b")
PRECISIONS = ("fp16", "int8")
TOOLKIT = "rknn-toolkit2 2.5.0"
RUN_COLUMNS = ["model", "family", "soc", "precision", "status", "error", "disabled_rules", "default_build_error",
               "seconds", "cpu_seconds", "layers", "npu_layers", "cpu_layers", "e_lines"]
LAYER_COLUMNS = ["model", "soc", "precision", "layer", "op_type", "data_type", "target", "input_shapes",
                 "output_shapes", "cycles_ddr", "cycles_npu", "cycles_total", "rw_kb", "full_name", "onnx_op_type",
                 "onnx_nodes", "mapping", "extra"]


# ---- worker side (runs inside the toolkit's venv) -----------------------------------------------------------

def _dataset(model: Path, shapes: list[list[int]], work: Path) -> Path:
    import numpy as np

    paths = []
    for i, shape in enumerate(shapes):
        path = work / f"{model.stem}_in{i}.npy"
        np.save(path, np.random.default_rng(i).normal(0, 1, shape).astype(np.float32))
        paths.append(str(path))
    listing = work / f"{model.stem}_dataset.txt"
    listing.write_text(" ".join(paths) + "\n")
    return listing


def _build_once(task: dict, work: Path, disabled: list[str]) -> tuple[str, str]:
    from rknn.api import RKNN

    rknn = RKNN(verbose=True)
    try:
        rknn.config(target_platform=task["soc"], **({"disable_rules": disabled} if disabled else {}))
        if rknn.load_onnx(model=task["model"]) != 0:
            return "failed", "load_onnx returned non-zero"
        if task["precision"] == "int8" and not task.get("prequantized"):
            code = rknn.build(do_quantization=True, dataset=str(_dataset(Path(task["model"]), task["shapes"], work)))
        else:
            code = rknn.build(do_quantization=False)
        return ("ok", "") if code == 0 else ("failed", "build returned non-zero")
    except Exception as exc:  # the toolkit's own exception is a result
        return "failed", f"{type(exc).__name__}: {exc}"
    finally:
        rknn.release()


def _convert(task: dict, work: Path) -> dict:
    """One conversion with the toolkit's output (fd 1 and 2) captured to a log file.

    When the toolkit fails and names a rule to disable (its own advice: "You can add disable_rules=[...]"),
    the build is retried with that rule off, up to 3 rules; the first failure is kept in the result, so both
    facts (the default build fails; this workaround builds) are recorded.
    """
    log_path = Path(task["log"])
    start, cpu = time.monotonic(), time.process_time()
    disabled: list[str] = list(task.get("disable", []))
    first_error = task.get("default_build_error", "")
    with open(log_path, "w") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:  # fd-level only: the toolkit's log handlers keep sys.stdout, which must stay one open object
            while True:
                offset = log.tell()
                status, error = _build_once(task, work, disabled)
                sys.stdout.flush()
                log.flush()
                if status == "ok" or len(disabled) >= 3:
                    break
                with open(log_path, errors="replace") as reread:
                    reread.seek(offset)
                    attempt = reread.read()
                advice = rknn_log.disable_rule_advice(attempt)
                if not advice or advice in disabled:
                    break
                first_error = first_error or rknn_log.error_summary(attempt) or error
                disabled.append(advice)
                print(f"\n=== retry with disable_rules={disabled} ===\n", flush=True)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    return {"status": status, "error": error[:2000], "seconds": round(time.monotonic() - start, 2),
            "cpu_seconds": round(time.process_time() - cpu, 2),
            "disabled_rules": disabled, "default_build_error": first_error[:500]}


def worker() -> int:
    """Reads one JSON task per line on stdin, answers one JSON line on the original stdout."""
    reply = os.fdopen(os.dup(1), "w", buffering=1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    with tempfile.TemporaryDirectory() as tmp:
        for line in sys.stdin:
            task = json.loads(line)
            result = _convert(task, Path(tmp))
            reply.write(json.dumps(result) + "\n")
    return 0


# ---- driver side ------------------------------------------------------------------------------------------

WORKER_RSS_LIMIT = 6 * 2**30  # a long-lived worker grows over many conversions (one reached 18 GB)


def _rss_bytes(pid: int) -> int:
    """Resident memory of a process (Linux /proc), 0 when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class Worker:
    def __init__(self, scratch: str) -> None:
        self.proc: subprocess.Popen | None = None
        self.scratch = scratch

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
                                     cwd=self.scratch)  # the toolkit drops check*.onnx files in its cwd

    def run(self, task: dict, timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc and self.proc.stdin and self.proc.stdout
        start = time.monotonic()
        try:
            self.proc.stdin.write(json.dumps(task) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        if line:
            if _rss_bytes(self.proc.pid) > WORKER_RSS_LIMIT:
                self.stop()  # the next task starts a fresh worker: memory the toolkit kept is returned
                self.proc = None
            return json.loads(line)
        seconds = round(time.monotonic() - start, 2)
        if not ready:
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            return {"status": "timeout", "error": f"no result after {timeout:.0f} s", "seconds": seconds}
        code = self.proc.wait()
        self.proc = None
        if code == -9:  # SIGKILL, which this driver sends only on a timeout: the kernel's out-of-memory killer
            return {"status": "killed", "error": "worker killed (SIGKILL: out of memory?)", "seconds": seconds}
        how = f"signal {-code}" if code < 0 else f"exit code {code}"
        return {"status": "crashed", "error": f"toolkit process died ({how})", "seconds": seconds}

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.stdin.close()  # type: ignore[union-attr]
            self.proc.wait(timeout=60)


def _manifest(corpus: Path = CORPUS) -> list[dict[str, str]]:
    with (corpus / "MANIFEST.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


QDQ_OPS = frozenset({"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul"})


def _prequantized(name: str, corpus: Path = CORPUS) -> bool:
    """A QDQ model carries its own scales: rknn-toolkit2 refuses to quantize it again ("If a quantized
    model has been import, please set do_quantization = False") and builds it in INT8 from those scales, so
    its INT8 cell is built with do_quantization=False, as `edgeplan export` does."""
    import onnx

    model = onnx.load(str(corpus / "models" / f"{name}.onnx"), load_external_data=False)
    return any(node.op_type in QDQ_OPS for node in model.graph.node)


def _committed(out_dir: Path) -> tuple[dict[tuple[str, str, str], dict], dict[tuple[str, str, str], list[dict]]]:
    """The committed tables, per (model, soc, precision): a collect on a machine whose build dir holds only
    some conversions keeps every other cell as committed instead of dropping it."""
    runs: dict[tuple[str, str, str], dict] = {}
    layers: dict[tuple[str, str, str], list[dict]] = {}
    if (out_dir / "runs.csv").exists():
        with (out_dir / "runs.csv").open(newline="") as handle:
            for row in csv.DictReader(handle):
                runs[(row["model"], row["soc"], row["precision"])] = row
    if (out_dir / "layers.csv.gz").exists():
        with gzip.open(out_dir / "layers.csv.gz", "rt", newline="") as handle:
            for row in csv.DictReader(handle):
                layers.setdefault((row["model"], row["soc"], row["precision"]), []).append(row)
    return runs, layers


def _result_path(build: Path, model: str, soc: str, precision: str) -> Path:
    return build / "rknn" / model / f"{soc}-{precision}.json"


def _known_rules(build: Path, names: list[str]) -> dict[str, tuple[list[str], str]]:
    """Rules a model's default build needed disabling, from its finished runs (first SoC/precision wins).

    The failing rules are graph-level fusions that run before SoC-specific passes, so the default build is
    tried once per model; later conversions start with the rules off and say so.
    """
    known: dict[str, tuple[list[str], str]] = {}
    for name in names:
        for soc in SOCS:
            for precision in PRECISIONS:
                path = _result_path(build, name, soc, precision)
                if name in known or not path.exists():
                    continue
                record = json.loads(path.read_text())
                if record.get("disabled_rules") and not record.get("default_build_error", "").startswith(
                        "default build not retried"):
                    known[name] = (record["disabled_rules"],
                                   f"failed on {soc} {precision} with {record['default_build_error']}")
    return known


def drive(build: Path, models: list[dict[str, str]], socs: list[str], precisions: list[str], jobs: int,
          timeout: float) -> int:
    tasks: queue.Queue = queue.Queue()
    for row in models:
        weighted = build / "models" / f"{row['name']}.onnx"
        if not weighted.exists():
            print(f"skip {row['name']}: no weighted file", file=sys.stderr)
            continue
        shapes = [[int(d) for d in s.split("x")] for s in row["input_shapes"].split(";")]
        prequantized = _prequantized(row["name"])
        for soc in socs:
            for precision in precisions:
                out = _result_path(build, row["name"], soc, precision)
                if out.exists():
                    continue
                out.parent.mkdir(parents=True, exist_ok=True)
                tasks.put({"model": str(weighted), "soc": soc, "precision": precision, "shapes": shapes,
                           "log": str(out.with_suffix(".log")), "out": str(out), "name": row["name"],
                           "prequantized": prequantized})
    total = tasks.qsize()
    done = [0]
    lock = threading.Lock()
    known = _known_rules(build, [row["name"] for row in models])
    scratch = build / "scratch"
    scratch.mkdir(parents=True, exist_ok=True)

    def loop() -> None:
        me = Worker(tempfile.mkdtemp(prefix="worker-", dir=scratch))  # own cwd: runners may share a build dir
        while True:
            try:
                task = tasks.get_nowait()
            except queue.Empty:
                break
            with lock:
                if task["name"] in known:  # the default build already failed on another SoC/precision
                    rules, where = known[task["name"]]
                    task = {**task, "disable": rules, "default_build_error": f"default build not retried: {where}"}
            result = me.run(task, timeout)
            log = Path(task["log"])
            if result["status"] == "killed":  # the machine's limit, not the toolkit's: nothing recorded, a rerun retries
                log.unlink(missing_ok=True)
                with lock:
                    done[0] += 1
                    print(f"[{done[0]}/{total}] {task['name']} {task['soc']} {task['precision']}: not recorded, "
                          f"{result['error']}; rerun it with fewer --jobs", file=sys.stderr, flush=True)
                continue
            text = log.read_text(errors="replace") if log.exists() else ""
            layers = rknn_log.parse_layer_table(text)
            errors = rknn_log.error_lines(text)
            if result["status"] == "ok" and not layers:
                result["status"], result["error"] = "failed", "build returned 0 but printed no layer table"
            if result["status"] != "ok":
                result["error"] = rknn_log.error_summary(text) or result["error"] or (errors[-1] if errors else "")
            if result["status"] == "ok" and result.get("disabled_rules"):
                result["status"] = "ok-with-disable_rules"
            record = {**result, "model": task["name"], "soc": task["soc"], "precision": task["precision"],
                      "toolkit": TOOLKIT, "e_lines": errors[:50], "layers": [vars(layer) for layer in layers]}
            if result["status"] != "ok" and text:
                record["log_tail"] = rknn_log.strip_ansi(text)[-3000:]
            with gzip.open(log.with_suffix(".log.gz"), "wt") as handle:
                handle.write(text)
            log.unlink(missing_ok=True)
            tmp = Path(task["out"] + ".tmp")
            tmp.write_text(json.dumps(record))
            tmp.replace(task["out"])
            with lock:
                if result.get("disabled_rules") and task["name"] not in known:
                    known[task["name"]] = (result["disabled_rules"], f"failed on {task['soc']} {task['precision']} "
                                           f"with {result.get('default_build_error', '')}")
                done[0] += 1
                print(f"[{done[0]}/{total}] {task['name']} {task['soc']} {task['precision']}: {result['status']} "
                      f"{result['seconds']} s, {len(layers)} layers {result['error'][:160]}", file=sys.stderr,
                      flush=True)
        me.stop()
        shutil.rmtree(me.scratch, ignore_errors=True)

    threads = [threading.Thread(target=loop) for _ in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return 0


# ---- collect: the committed tables ------------------------------------------------------------------------

def _onnx_names(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    nodes = {n.name: n.op_type for n in model.graph.node if n.name}
    outputs = {o: n.name for n in model.graph.node for o in n.output if o}
    outputs.update({i.name: "" for i in model.graph.input})
    return nodes, outputs


_LOST = "I/O operation on closed file"


def _repair_default_errors(records: dict[tuple[str, str], dict]) -> None:
    """Early runs lost the default build's error text to a log-capture fault (the toolkit's log handler
    wrote to a closed file; the layer tables, printed by its C library, were unaffected). Say so, and
    point skipped default builds at the model's first real failure."""
    real = next(((key, r["default_build_error"]) for key, r in records.items()
                 if r.get("default_build_error") and _LOST not in r["default_build_error"]
                 and not r["default_build_error"].startswith("default build not retried")), None)
    for record in records.values():
        text = record.get("default_build_error", "")
        if _LOST not in text:
            continue
        if text.startswith("default build not retried") and real:
            record["default_build_error"] = f"default build not retried: failed on {real[0][0]} {real[0][1]} " \
                                            f"with {real[1]}"
        else:
            rules = ";".join(record.get("disabled_rules", []))
            record["default_build_error"] = (f"default build failed and the toolkit advised disabling {rules}; "
                                             "its error text was lost to a log-capture fault of an early runner")


def collect(build: Path, corpus: Path = CORPUS) -> int:
    rows = _manifest(corpus)
    families = {r["name"]: r["family"] for r in rows}
    out_dir = corpus / "rknn"
    out_dir.mkdir(parents=True, exist_ok=True)
    kept_runs, kept_layers = _committed(out_dir)
    carried = 0
    runs: list[dict] = []
    layers_text = io.StringIO()
    writer = csv.DictWriter(layers_text, LAYER_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in sorted(rows, key=lambda r: r["name"]):
        name = row["name"]
        nodes, outputs = _onnx_names(corpus / "models" / f"{name}.onnx")
        records = {(soc, precision): json.loads(_result_path(build, name, soc, precision).read_text())
                   for soc in SOCS for precision in PRECISIONS
                   if _result_path(build, name, soc, precision).exists()}
        _repair_default_errors(records)
        for soc in SOCS:
            for precision in PRECISIONS:
                path = _result_path(build, name, soc, precision)
                if (soc, precision) not in records:
                    if (name, soc, precision) in kept_runs:
                        runs.append({**kept_runs[(name, soc, precision)], "family": families[name]})
                        writer.writerows(kept_layers.get((name, soc, precision), []))
                        carried += 1
                    continue
                record = records[(soc, precision)]
                log = path.with_suffix(".log.gz")
                error = record["error"]
                if log.exists():  # re-parse, so parser fixes reach every run without reconverting
                    with gzip.open(log, "rt", errors="replace") as handle:
                        text = handle.read()
                    layers = [vars(la) for la in rknn_log.parse_layer_table(text)]
                    if record["status"] == "crashed":
                        error = " ".join([error, *rknn_log.abort_lines(text)])
                else:
                    layers = record["layers"]
                runs.append({"model": name, "family": families[name], "soc": soc, "precision": precision,
                             "status": record["status"], "error": " ".join(error.split()),
                             "disabled_rules": ";".join(record.get("disabled_rules", [])),
                             "default_build_error": " ".join(record.get("default_build_error", "").split()),
                             "seconds": f"{record['seconds']:.2f}",
                             "cpu_seconds": f"{record['cpu_seconds']:.2f}" if "cpu_seconds" in record else "",
                             "layers": len(layers),
                             "npu_layers": sum(1 for la in layers if la["target"] == "NPU"),
                             "cpu_layers": sum(1 for la in layers if la["target"] == "CPU"),
                             "e_lines": " | ".join(" ".join(e.split()) for e in record["e_lines"])[:2000]})
                for la in layers:
                    derived = la["full_name"].partition(":")[2]
                    node, how = rknn_log.map_to_onnx(derived, nodes, outputs)
                    if la["op_type"] in ("InputOperator", "OutputOperator") and derived in outputs:
                        node, how = "", "io-tensor"
                    writer.writerow({"model": name, "soc": soc, "precision": precision, "layer": la["index"],
                                     "op_type": la["op_type"], "data_type": la["data_type"], "target": la["target"],
                                     "input_shapes": la["input_shapes"], "output_shapes": la["output_shapes"],
                                     "cycles_ddr": la["cycles_ddr"], "cycles_npu": la["cycles_npu"],
                                     "cycles_total": la["cycles_total"], "rw_kb": la["rw_kb"],
                                     "full_name": la["full_name"], "onnx_op_type": nodes.get(node, ""),
                                     "onnx_nodes": node, "mapping": how, "extra": la["extra"]})
    with (out_dir / "runs.csv").open("w", newline="") as handle:
        run_writer = csv.DictWriter(handle, RUN_COLUMNS, lineterminator="\n")
        run_writer.writeheader()
        run_writer.writerows(runs)
    data = layers_text.getvalue().encode()
    with open(out_dir / "layers.csv.gz", "wb") as raw, \
            gzip.GzipFile(filename="layers.csv", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as handle:
        handle.write(data)
    print(f"{len(runs)} runs ({carried} carried over as committed), {len(data.splitlines()) - 1} layer rows",
          file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", type=Path, default=Path("/work/corpus-build"))
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--families", help="comma-separated families (manifest 'family' column)")
    parser.add_argument("--socs", default=",".join(SOCS))
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--collect", action="store_true")
    args = parser.parse_args()
    if args.worker:
        return worker()
    if args.collect:
        return collect(args.build_dir)
    rows = _manifest()
    if args.only:
        wanted = args.only.split(",")
        rows = sorted((r for r in rows if r["name"] in wanted), key=lambda r: wanted.index(r["name"]))
    if args.families:
        order = args.families.split(",")
        rows = sorted((r for r in rows if r["family"] in order), key=lambda r: (order.index(r["family"]), r["name"]))
    return drive(args.build_dir, rows, args.socs.split(","), args.precisions.split(","), args.jobs, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
