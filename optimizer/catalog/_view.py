"""The one layer a check looks at, in its graph and for one target and precision (its own module so that the
per-family check modules and the check table can both name it without importing each other)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optimizer.catalog._schema import Family, Target
    from optimizer.ir import Graph, Node
    from optimizer.ir._graph import Shape


@dataclass(frozen=True)
class LayerView:
    graph: Graph
    node: Node
    family: Family
    target: Target
    precision: str
    kind: str

    def per_target(self, table: Mapping[str, Any]) -> Any:
        """A rule parameter given per target and precision ({rk3588 = {fp16 = 8, int8 = 16}}); None where absent."""
        return table.get(self.target.rules_id, {}).get(self.precision)

    def attr(self, name: str) -> Any:
        return self.node.attrs.get(name)

    def in_shape(self, i: int = 0) -> Shape:
        names = self.graph.runtime_inputs(self.node)
        return self.graph.shape(names[i]) if len(names) > i else None

    def input_shape(self, i: int) -> Shape:
        return self.graph.shape(self.node.inputs[i]) if len(self.node.inputs) > i else None

    def out_shape(self, i: int = 0) -> Shape:
        return self.graph.shape(self.node.outputs[i]) if len(self.node.outputs) > i else None
