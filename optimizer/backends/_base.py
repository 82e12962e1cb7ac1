"""The protocol of a vendor family: what the stages ask of a toolchain, answered once per family.

Every stage from the check to the export is written against `Backend`, never against a family name: a
family file names its backend (`backend = "tensorrt"`), and the stages look it up (`backend_of(target)`).
Per target stay the engines it lists, its precisions and its core count (the catalog's data); per family
are how engines are built, fed and scored. This stage sits just above the catalog, so the stages that call
it (check, latency, solver, plan, export) see the cost model and sub-models through small structural
protocols instead of importing each other.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

import onnx

from optimizer.backends._submodels import SubModel
from optimizer.catalog import Catalog, Target
from optimizer.fileio import FileData
from optimizer.ir import Graph


class ProfileView(Protocol):
    """The transfer constants of a latency profile that the boundary costs read."""

    @property
    def sync_us(self) -> Mapping[str, float]: ...
    @property
    def reformat_us(self) -> float: ...
    @property
    def memsync_us(self) -> float: ...
    @property
    def layout_convert_gbps(self) -> float: ...
    @property
    def handover_us(self) -> float: ...


class OptionView(Protocol):
    @property
    def device(self) -> str: ...
    @property
    def precision(self) -> str: ...


class CostView(Protocol):
    """What a backend reads of the latency model (optimizer.latency.LatencyModel) to price a boundary."""

    graph: Graph
    formats: Mapping[str, Any]
    io: Mapping[str, Any]
    batch: int
    capability: str
    hwc4_stride: int
    pass_through: bool

    @property
    def profile(self) -> ProfileView: ...
    @property
    def bandwidth(self) -> float: ...
    def _node_compute_s(self, node: Any, device: str, precision: str) -> float: ...


@dataclass(frozen=True)
class BaselineSpec:
    """A vendor default the plan reports beside its own choice: `strategy` names an assignment rule of
    optimizer/plan/_baselines.py (STRATEGIES); `default_formats` scores it with the toolchain's default
    boundary formats instead of the cheapest ones."""

    name: str
    strategy: str
    default_formats: bool = False


@dataclass(frozen=True)
class ExportInputs:
    """What export hands a backend: the plan (validated), its sub-models and where the files go."""

    model: onnx.ModelProto
    plan: dict[str, Any]
    subs: list[SubModel]
    graph: Graph
    model_file: Path
    out: Path  # absolute
    catalog: Catalog
    target: Target
    tensorrt: str
    boundary_facts: Callable[[], Mapping[str, Any]]  # the check's `io` facts, computed only when asked


@dataclass(frozen=True)
class BuildFiles:
    """A backend's part of an export: the sub-models as written (a backend may retype them), the build files
    written after them, and the manifest keys it adds (in order, after `inputs`)."""

    subs: list[SubModel]
    files: list[tuple[str, FileData]]
    manifest: dict[str, Any]


class Backend(ABC):
    """One vendor family's toolchain. Flags say which mechanisms the family has; methods price and build."""

    name: ClassVar[str]  # what a family file's `backend` names
    host_device: ClassVar[str]  # the device kind that carries the per-inference overhead (enqueue, rknn_run)
    transfer_engine: ClassVar[str]  # the engine busy with copies between engines
    reformat_engine: ClassVar[str]  # the engine busy with precision reformats
    baselines: ClassVar[tuple[BaselineSpec, ...]]  # the vendor defaults a plan compares against
    static_rule: ClassVar[str]  # the rule a dynamic input dimension breaks (a fix-dims edit cites it)
    cores_are_engines: ClassVar[bool] = False  # each accelerator core is an engine of its own (dla0, dla1)
    loadables: ClassVar[bool] = False  # accelerator engines are loadables: a launch cost and a count limit
    managed_sram: ClassVar[bool] = False  # the accelerator has a per-engine managed SRAM pool to size
    monotone_precisions: ClassVar[bool] = False  # a faster precision never costs more anywhere (solver reduction)
    residual_sum_fusion: ClassVar[bool] = False  # the builder fuses conv + residual Add into one layer
    build_time_folding: ClassVar[bool] = False  # the toolkit folds constant subgraphs before placement
    layer_extras: ClassVar[bool] = False  # per-node facts beyond yes/no (NPU multi-core, sparsity modes)
    layer_edits: ClassVar[bool] = False  # the accelerator has per-layer model rewrites (edits)
    power_figures: ClassVar[bool] = False  # constraints/power.toml has engine power for its modules

    # ---- rules -----------------------------------------------------------------------------------
    def tensorrt_rules(self, catalog: Catalog) -> str:
        """The TensorRT major whose rules a check or plan used ("" where TensorRT is not the toolchain)."""
        return ""

    def loadable_limit(self, catalog: Catalog, target: Target) -> int:
        """Accelerator engines that can be in use at once (0: no such limit or no accelerator)."""
        return 0

    def hwc4_stride(self, catalog: Catalog, target: Target) -> int:
        """The row stride (bytes) of a packed image input format."""
        return 64

    def int8_upgrade_ops(self, catalog: Catalog) -> frozenset[str]:
        """Ops the accelerator runs in FP16 when asked for INT8."""
        return frozenset()

    def sub_layer_ops(self, catalog: Catalog, target: Target) -> tuple[frozenset[str], int]:
        """Ops the accelerator runs as several layers on this target, and how many."""
        return frozenset(), 1

    def boundary_facts(self, graph: Graph, catalog: Catalog, target: Target,
                       verdicts: Mapping[str, Any]) -> dict[str, Any]:
        """The check's `io` block: what the model's inputs and outputs need at the accelerator's edge."""
        return {"inputs": []}

    # ---- boundary formats and transfers --------------------------------------------------------------
    @abstractmethod
    def input_format(self, model: CostView, tensor: str, option: OptionView,
                     default_formats: bool = False) -> tuple[str, float]:
        """(format, seconds) of a model input read by an accelerator engine."""

    @abstractmethod
    def output_format(self, model: CostView, tensor: str, option: OptionView,
                      default_formats: bool = False) -> tuple[str, float]:
        """(format, seconds) of a model output an accelerator engine writes."""

    @abstractmethod
    def transfer(self, model: CostView, tensor: str, src: str, dst: str, precision: str,
                 default_formats: bool = False) -> tuple[str, float]:
        """(format, seconds) of a tensor moving from device kind `src` to `dst`."""

    # ---- export ----------------------------------------------------------------------------------
    @abstractmethod
    def export(self, inputs: ExportInputs) -> BuildFiles:
        """The build files of a plan (the sub-models are written by export itself)."""
