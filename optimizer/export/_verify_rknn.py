"""verify-rknn: convert the plan's model with the real rknn-toolkit2 (its own venv, as a subprocess) and
compare its per-layer NPU/CPU placement and any `E RKNN` hardware-limit lines with the plan."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from optimizer.catalog import load_catalog
from optimizer.errors import BadInputError

# A layer-table row: id, op type, data type, target, ..., FullName (OnnxOpType:onnx_node_name).
_ROW = re.compile(r"^(?:D RKNN: \[[^]]*\]\s*)?\d+\s+(\S+)\s+(\S+)\s+(NPU|CPU)\s.*?\s(\S+:\S+)\s*$")

_CONVERT = r"""
import json, os, sys
import numpy as np
from rknn.api import RKNN
model, soc, log_path = sys.argv[1], sys.argv[2], sys.argv[5]
quantize, shape = sys.argv[3] == "int8", json.loads(sys.argv[4])
folder = os.path.dirname(model)
np.save(os.path.join(folder, "x.npy"), np.random.default_rng(0).normal(0, 1, shape).astype(np.float32))
with open(os.path.join(folder, "dataset.txt"), "w") as handle:
    handle.write(os.path.join(folder, "x.npy") + "\n")
log = open(log_path, "w")
os.dup2(log.fileno(), 1)
os.dup2(log.fileno(), 2)
r = RKNN(verbose=True)
options = {"target_platform": soc}
if len(shape) == 4 and shape[1] == 3:
    options.update(mean_values=[[0, 0, 0]], std_values=[[1, 1, 1]])
r.config(**options)
dataset = os.path.join(folder, "dataset.txt")
ok = r.load_onnx(model=model) == 0 and r.build(do_quantization=quantize, dataset=dataset) == 0
r.release()
sys.stdout.flush()
os.write(1, ("\nEDGEPLAN-RESULT " + json.dumps({"ok": ok}) + "\n").encode())
"""


@dataclass(frozen=True)
class RknnComparison:
    built: bool
    agree: int
    disagreements: tuple[str, ...]
    hardware_errors: tuple[str, ...]

    def lines(self) -> list[str]:
        out = [f"rknn-toolkit2 build {'succeeded' if self.built else 'FAILED'}: {self.agree} layer(s) agree, "
               f"{len(self.disagreements)} disagree, {len(self.hardware_errors)} hardware-limit line(s)"]
        out += [f"  disagree: {d}" for d in self.disagreements]
        out += [f"  toolkit: {e}" for e in self.hardware_errors]
        return out


def _with_weights(source: Path, destination: Path) -> tuple[int, ...]:
    """The toolkit needs tensors: structure-only initializers get random values of their dims."""
    model = onnx.load(source, load_external_data=False)
    base = source.resolve().parent
    rng = np.random.default_rng(0)
    for tensor in model.graph.initializer:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        if location and (base / location).is_file():
            onnx.external_data_helper.load_external_data_for_tensor(tensor, str(base))
            tensor.data_location = onnx.TensorProto.DEFAULT
            del tensor.external_data[:]
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
        tensor.CopyFrom(numpy_helper.from_array(rng.normal(0, 0.05, tuple(tensor.dims)).astype(dtype), tensor.name))
    onnx.save(model, destination)
    first = model.graph.input[0].type.tensor_type.shape.dim
    return tuple(d.dim_value or 1 for d in first)


def verify_rknn(plan: Mapping[str, Any], model_path: str, rknn_python: str, timeout_s: float = 900
                ) -> RknnComparison:
    if not Path(rknn_python).is_file():
        raise BadInputError("rknn-toolkit2 interpreter not found", file=rknn_python)
    layers = {layer["node"]: layer for layer in plan["layers"] if layer.get("role") != "constant"}
    npu_precisions = {layer["precision"] for layer in layers.values() if layer["device"] == "npu"}
    precision = "int8" if "int8" in npu_precisions else "fp16"
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp) / "model.onnx"
        shape = _with_weights(Path(model_path), local)
        log_path = Path(tmp) / "build.log"
        platform = load_catalog().target(str(plan["target"])).toolkit_platform
        result = subprocess.run([rknn_python, "-c", _CONVERT, str(local), platform, precision,
                                 json.dumps(list(shape)), str(log_path)], capture_output=True, text=True,
                                timeout=timeout_s, cwd=tmp)  # the toolkit drops check*.onnx in its cwd
        text = re.sub(r"\x1b\[[0-9;]*m", "", log_path.read_text(errors="replace") if log_path.exists() else "")
    built = '"ok": true' in text
    if result.returncode != 0 and not built:
        tail = (result.stderr or text).strip().splitlines()[-1:] or ["no output"]
        raise BadInputError(f"rknn-toolkit2 failed to run: {tail[0][:200]}", file=rknn_python)
    placed: dict[str, set[str]] = {}
    for line in text.splitlines():
        match = _ROW.match(line.strip())
        if match:
            placed.setdefault(match.group(4).partition(":")[2], set()).add(match.group(3))
    agree, disagreements = 0, []
    for node, layer in layers.items():
        if node not in placed:
            continue
        mine = "NPU" if layer["device"] == "npu" else "CPU"
        if placed[node] == {mine}:
            agree += 1
        else:
            disagreements.append(f"{node} ({layer['op_type']}): plan {layer['device']}, toolkit "
                                 f"{'/'.join(sorted(placed[node]))}")
    errors = tuple(sorted({line.strip() for line in text.splitlines() if line.strip().startswith("E RKNN")}))
    return RknnComparison(built=built, agree=agree, disagreements=tuple(disagreements), hardware_errors=errors)
