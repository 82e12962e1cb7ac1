"""The latency model: roofline per layer group, transfers, reformats, launches; profiles of constants."""

from optimizer.latency._evaluate import (
    Breakdown,
    Placement,
    Transfer,
    evaluate,
    group_options,
    reformat_engine,
    tensor_routes,
    transfer_engine,
)
from optimizer.latency._model import SPARSE_KEEP, LatencyModel, Option, op_class
from optimizer.latency._profile import (
    OP_CLASSES,
    Band,
    DeviceConstants,
    Profile,
    load_profile,
    parse_profile,
    profile_family,
)

__all__ = ["OP_CLASSES", "SPARSE_KEEP", "Band", "Breakdown", "DeviceConstants", "LatencyModel", "Option", "Placement",
           "Profile", "Transfer", "evaluate", "group_options", "load_profile", "op_class", "parse_profile",
           "profile_family", "reformat_engine", "tensor_routes", "transfer_engine"]
