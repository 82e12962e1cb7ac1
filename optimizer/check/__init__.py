"""`check`: which node can run on which accelerator and precision, and the rule behind every no."""

from optimizer.check._report import (
           CHECK_SCHEMA,
           REFUSAL_WARNING,
           CheckReport,
           check_graph,
           check_json,
           conversion_warnings,
           model_block,
           opset_conversion,
           refusal_warnings,
           refusals,
           render_table,
)
from optimizer.check._sizes import size_note, size_warnings, unknown_sizes
from optimizer.check._verdicts import NodeVerdict, Violation, layer_kind

__all__ = ["CHECK_SCHEMA", "REFUSAL_WARNING", "CheckReport", "NodeVerdict", "Violation", "check_graph", "check_json",
           "conversion_warnings", "layer_kind", "model_block", "opset_conversion", "refusal_warnings", "refusals",
           "render_table", "size_note", "size_warnings", "unknown_sizes"]
