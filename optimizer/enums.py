"""Engines and precisions, defined once for every stage.

str-valued, so a member is the JSON string itself: plan.json, check JSON and the catalog stay as they are,
and `Device.GPU == "gpu"` holds wherever a plain string still flows.
"""

from __future__ import annotations

from enum import StrEnum


class Device(StrEnum):
    """An engine a layer runs on (a plan's `device`); DLA cores are numbered."""

    GPU = "gpu"
    DLA0 = "dla0"
    DLA1 = "dla1"
    NPU = "npu"
    CPU = "cpu"


class Precision(StrEnum):
    INT8 = "int8"
    FP16 = "fp16"
    FP32 = "fp32"


PRECISIONS: tuple[str, ...] = tuple(p.value for p in Precision)  # ("int8", "fp16", "fp32")
DEVICES: tuple[str, ...] = tuple(d.value for d in Device)
