"""Stand-ins for the vendor tools the generated scripts call (trtexec, tensorrt, rknn.api), written into
a temporary folder put first on PATH / PYTHONPATH. Each records what it was asked, as JSON lines, so a
test can check that every word arrived intact and nothing else ran; none of them runs anything.

The scripts themselves are executed for real: build.sh by bash, build_trt.py and convert.py by a
Python driver that runs many of them in one process (runpy, each in its own folder), which keeps a
corpus of hundreds of cases fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

TRTEXEC = r'''#!/usr/bin/env python3
import json, os, sys
with open(os.environ["EDGEPLAN_STUB_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps({"tool": "trtexec", "cwd": os.getcwd(), "argv": sys.argv[1:]}) + "\n")
for arg in sys.argv[1:]:
    if arg.startswith("--saveEngine="):
        with open(arg.split("=", 1)[1], "wb") as handle:
            handle.write(b"stub engine")
'''

TENSORRT = r'''"""A recording stand-in for the TensorRT Python API (only what build_trt.py touches)."""
import json, os
import onnx

def _log(**entry):
    with open(os.environ["EDGEPLAN_STUB_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": "tensorrt", **entry}) + "\n")

class _Enum:
    def __init__(self, prefix):
        self._prefix = prefix
    def __getattr__(self, name):
        return f"{self._prefix}.{name}"

class _Formats:
    DLA_LINEAR, DLA_HWC4, CHW16, CHW32, CHW4, LINEAR = 14, 9, 3, 4, 2, 0

TensorFormat = _Formats
BuilderFlag = _Enum("BuilderFlag")
OnnxParserFlag = _Enum("OnnxParserFlag")
DeviceType = _Enum("DeviceType")
MemoryPoolType = _Enum("MemoryPoolType")
int8, float16, float32 = "int8", "float16", "float32"

class Logger:
    INFO = 1
    def __init__(self, level):
        self.level = level

class _Tensor:
    def __init__(self, name):
        self.name, self.dtype, self.allowed_formats = name, None, 0

class _Layer:
    def __init__(self, name):
        self.name, self.precision = name, None

class _Network:
    def __init__(self):
        self.inputs, self.outputs, self.layers = [], [], []
    num_inputs = property(lambda self: len(self.inputs))
    num_outputs = property(lambda self: len(self.outputs))
    num_layers = property(lambda self: len(self.layers))
    def get_input(self, i): return self.inputs[i]
    def get_output(self, i): return self.outputs[i]
    def get_layer(self, i): return self.layers[i]

class OnnxParser:
    num_errors = 0
    def __init__(self, network, logger):
        self.network, self.flags = network, []
    def set_flag(self, flag): self.flags.append(flag)
    def parse(self, data):
        model = onnx.ModelProto()
        model.ParseFromString(data)
        inits = {t.name for t in model.graph.initializer}
        self.network.inputs = [_Tensor(v.name) for v in model.graph.input if v.name not in inits]
        self.network.outputs = [_Tensor(v.name) for v in model.graph.output]
        self.network.layers = [_Layer(n.name) for n in model.graph.node]
        return True
    def get_error(self, i): return ""

class _Config:
    def __init__(self):
        self.flags, self.pools, self.devices = [], {}, {}
        self.default_device_type, self.DLA_core = None, None
    def set_flag(self, flag): self.flags.append(flag)
    def set_memory_pool_limit(self, pool, size): self.pools[pool] = size
    def set_device_type(self, layer, device): self.devices[layer.name] = device

class Builder:
    def __init__(self, logger): pass
    def create_network(self, flags): return _Network()
    def create_builder_config(self): return _Config()
    def build_serialized_network(self, network, config):
        _log(layers={l.name: [l.precision, config.devices.get(l.name)] for l in network.layers},
             inputs={t.name: t.allowed_formats for t in network.inputs}, flags=config.flags,
             pools=config.pools, dla_core=config.DLA_core, cwd=os.getcwd())
        return b"stub engine"
'''

RKNN_API = r'''"""A recording stand-in for rknn-toolkit2's RKNN class (only what convert.py touches)."""
import json, os

def _log(**entry):
    with open(os.environ["EDGEPLAN_STUB_LOG"], "a", encoding="utf-8") as log:
        log.write(json.dumps({"tool": "rknn", **entry}) + "\n")

class RKNN:
    def __init__(self, verbose=False):
        self.model = None
    def config(self, **options):
        _log(call="config", options=options)
    def load_onnx(self, model):
        _log(call="load_onnx", model=model, exists=os.path.isfile(model))
        self.model = model
        return 0 if os.path.isfile(model) else -1
    def build(self, do_quantization=False, dataset=None):
        _log(call="build", do_quantization=do_quantization, dataset=dataset)
        return 0
    def hybrid_quantization_step1(self, dataset=None):
        stem = os.path.splitext(os.path.basename(self.model))[0]
        for suffix in (".model", ".data"):
            open(stem + suffix, "w").close()
        with open(stem + ".quantization.cfg", "w") as handle:
            json.dump({"custom_quantize_layers": {}}, handle)
        _log(call="step1", stem=stem, cwd=os.getcwd())
        return 0
    def hybrid_quantization_step2(self, model_input, data_input, model_quantization_cfg):
        with open(model_quantization_cfg) as handle:
            cfg = json.load(handle)
        _log(call="step2", cfg=cfg, inputs=[model_input, data_input])
        return 0
    def export_rknn(self, path):
        with open(path, "wb") as handle:
            handle.write(b"stub rknn")
        _log(call="export_rknn", path=path, cwd=os.getcwd())
        return 0
    def release(self):
        pass
'''

RUAMEL_YAML = r'''"""JSON is YAML: enough of ruamel.yaml for convert.py's merge_cfg."""
import json

class YAML:
    def load(self, handle):
        return json.load(handle)
    def dump(self, data, handle):
        json.dump(data, handle)
'''

DRIVER = r'''"""Runs each generated Python script given on the command line as __main__, in its own folder."""
import json, os, runpy, sys, traceback
results = []
for script in sys.argv[1:]:
    folder = os.path.dirname(os.path.abspath(script))
    os.chdir(folder)
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
        results.append([script, "ok"])
    except SystemExit as exc:
        results.append([script, f"exit {exc.code}"])
    except BaseException:
        results.append([script, "error " + traceback.format_exc()[-500:]])
print(json.dumps(results))
'''


def install(folder: Path) -> dict[str, str]:
    """Writes the stubs under `folder`; returns the environment the scripts run with."""
    bin_dir, lib = folder / "bin", folder / "lib"
    (lib / "rknn").mkdir(parents=True, exist_ok=True)
    (lib / "ruamel").mkdir(exist_ok=True)
    bin_dir.mkdir(exist_ok=True)
    trtexec = bin_dir / "trtexec"
    trtexec.write_text(TRTEXEC.replace("#!/usr/bin/env python3", f"#!{sys.executable}", 1))
    trtexec.chmod(0o755)
    (lib / "tensorrt.py").write_text(TENSORRT)
    (lib / "rknn" / "__init__.py").write_text("")
    (lib / "rknn" / "api.py").write_text(RKNN_API)
    (lib / "ruamel" / "__init__.py").write_text("")
    (lib / "ruamel" / "yaml.py").write_text(RUAMEL_YAML)
    (folder / "driver.py").write_text(DRIVER)
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("TRTEXEC", "CALIB", "SINGLE_ENGINE")}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(lib), HOME=str(home),
               EDGEPLAN_STUB_LOG=str(folder / "calls.jsonl"))
    return env


def calls(folder: Path) -> list[dict]:
    log = folder / "calls.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]


def run_shell_scripts(scripts: Sequence[Path], env: dict[str, str], cwd: Path, extra: dict[str, str] | None = None
                      ) -> subprocess.CompletedProcess:
    """Every build.sh in one bash process (each in a subshell, as a user would run it)."""
    lines = [f"bash {_quote(str(s))} || echo \"FAILED {s.parent.name}\" >&2" for s in scripts]
    return subprocess.run(["bash", "-c", "\n".join(lines)], cwd=cwd, env={**env, **(extra or {})},
                          capture_output=True, text=True, timeout=120)


def run_python_scripts(scripts: Sequence[Path], env: dict[str, str], cwd: Path, stub_dir: Path) -> list[list[str]]:
    result = subprocess.run([sys.executable, str(stub_dir / "driver.py"), *map(str, scripts)], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def snapshot(root: Path) -> set[str]:
    """Every path under root (symlinks not followed), for 'nothing was written outside the out dir'."""
    seen = set()
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            seen.add(os.path.join(folder, name))
    return seen
