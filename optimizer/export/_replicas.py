"""Replicated copies (optimizer/plan/_replicate.py): when a throughput plan chose replication, one engine build per
copy and the frame split, beside the pipelined plan's engines.

A copy is what the plan scored it as: the GPU copy is the whole model on the GPU; a DLA copy is TensorRT's
default on that core (every layer it can place on the DLA there, GPU fallback for the rest). Each is built
from the whole model; the runtime deals frames to the copies in the plan's split (`frames_per_cycle` gives
a whole-frame schedule of that split).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from optimizer.fileio import one_line

CYCLE_FRAMES = 100  # the split as whole frames out of this many
MIN_SHARE = 1e-6  # a copy with a smaller share is not built


def frames_per_cycle(split: Mapping[str, float], frames: int = CYCLE_FRAMES) -> dict[str, int]:
    """Whole frames per copy summing to `frames`, by largest remainder (ties to the copy name)."""
    used = {c: s for c, s in split.items() if s > MIN_SHARE}
    total = sum(used.values()) or 1.0
    exact = {c: frames * s / total for c, s in used.items()}
    out = {c: int(v) for c, v in exact.items()}
    left = frames - sum(out.values())
    for c in sorted(exact, key=lambda c: (-(exact[c] - out[c]), c))[:left]:
        out[c] += 1
    return dict(sorted(out.items()))


def copy_command(copy: str, model_file: str, precisions: Sequence[str], tensorrt: str) -> list[str]:
    """trtexec for one copy: the whole model, on the GPU or TensorRT's default on DLA core N."""
    cmd = ["trtexec", f"--onnx={model_file}", f"--saveEngine=copy_{copy}.engine"]
    if tensorrt == "10":
        cmd += [f"--{p}" for p in ("int8", "fp16") if p in precisions]
    if copy.startswith("dla"):
        cmd += [f"--useDLACore={int(copy[3:])}", "--allowGPUFallback", *(["--adjustForDLA"] if tensorrt == "11"
                                                                          else [])]
    return cmd


def replica_export(plan: Mapping[str, Any], model_file: str, tensorrt: str) -> tuple[dict[str, Any] | None, str]:
    """(manifest `replication` block, copies.sh) for a plan that chose replication, else (None, "")."""
    rep = plan.get("replication")
    if not isinstance(rep, Mapping) or rep.get("chosen") != "replication":
        return None, ""
    split = {str(c): float(s) for c, s in rep["split"].items()}
    precisions = sorted(p for p in plan.get("request", {}).get("allowed_precisions", ["int8", "fp16"])
                        if p in ("int8", "fp16"))
    frames = frames_per_cycle(split)
    copies = []
    lines = ["#!/usr/bin/env bash",
             f"# Replicated copies of {one_line(plan['model']['path'])} on {one_line(plan['target'])}: the plan found "
             "whole copies with a frame split faster than its pipelined plan.",
             "# Each copy is its own engine; deal the frames to them in the manifest's split (replication.copies).",
             "set -euo pipefail", 'cd "$(dirname "$0")"', 'TRTEXEC="${TRTEXEC:-trtexec}"', ""]
    for copy in sorted(c for c, s in split.items() if s > MIN_SHARE):
        cmd = copy_command(copy, model_file, precisions, tensorrt)
        calib = ' ${CALIB:+--calib="$CALIB"}' if "--int8" in cmd else ""
        lines += [f"# copy {one_line(copy)}: {split[copy]:.1%} of the frames",
                  '"$TRTEXEC" ' + " ".join(shlex.quote(c) for c in cmd[1:]) + calib, ""]
        copies.append({"copy": copy, "device": copy, "share": split[copy], "frames_per_cycle": frames[copy],
                       "onnx": model_file, "engine": f"copy_{copy}.engine", "command": cmd,
                       "placement": "whole model on the GPU" if copy == "gpu" else
                       f"TensorRT's default on DLA core {int(copy[3:])} with GPU fallback"})
    block = {"chosen": "replication", "fps": rep["fps"], "pipelined_fps": rep["pipelined_fps"],
             "cycle_frames": CYCLE_FRAMES, "copies": copies, "build": "copies.sh", "why": rep["why"]}
    return block, "\n".join(lines) + "\n"


__all__ = ["CYCLE_FRAMES", "copy_command", "frames_per_cycle", "replica_export"]
