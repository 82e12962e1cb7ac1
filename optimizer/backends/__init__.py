"""One backend per vendor family (TensorRT on Jetson, rknn-toolkit2 on Rockchip), behind one protocol."""

from optimizer.backends._base import Backend, BaselineSpec, BuildFiles, CostView, ExportInputs, OptionView
from optimizer.backends._jetson import JetsonBackend
from optimizer.backends._registry import backend_of, backends, register, registered, unregister
from optimizer.backends._rknn import RknnBackend

__all__ = ["Backend", "BaselineSpec", "BuildFiles", "CostView", "ExportInputs", "JetsonBackend", "OptionView",
           "RknnBackend", "backend_of", "backends", "register", "registered", "unregister"]
