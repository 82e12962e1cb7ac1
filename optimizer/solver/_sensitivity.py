"""INT8 accuracy-sensitivity files: a simple CSV or rknn-toolkit2's accuracy_analysis table."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from optimizer.errors import BadInputError
from optimizer.ir import Graph

_RKNN_ROW = re.compile(r"^\[(?P<op>[^\]]+)\]\s+(?P<tensor>\S+)\s+(?P<entire>[-\d.eE+]+)\s*\|\s*\S+"
                       r"(?:\s+(?P<single>[-\d.eE+]+)\s*\|\s*\S+)?")


def load_sensitivity(path: str | Path, graph: Graph) -> dict[str, float]:
    """node -> accuracy cost of running it in INT8 (1 - cosine for the toolkit's table)."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError("sensitivity file not found", file=str(path))
    text = path.read_text(encoding="utf-8", errors="replace")
    scores: dict[str, float] = {}
    rows = [m for m in (_RKNN_ROW.match(line.strip()) for line in text.splitlines()) if m]
    if rows:
        for m in rows:
            producer = graph.producer(m.group("tensor"))
            if producer is None:
                continue
            cos = float(m.group("single") or m.group("entire"))
            scores[producer.name] = max(0.0, 1.0 - cos)
        return scores
    for line_no, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or row[0].startswith("#") or (line_no == 1 and row[0].strip().lower() in ("node", "name")):
            continue
        if len(row) < 2:
            raise BadInputError(f"line {line_no}: expected 'node,score'", file=str(path))
        node = row[0].strip()
        try:
            score = float(row[1])
        except ValueError:
            raise BadInputError(f"line {line_no}: score '{row[1]}' is not a number", file=str(path)) from None
        if not graph.has_node(node):
            raise BadInputError(f"line {line_no}: '{node}' is not a node of the model", file=str(path))
        scores[node] = score
    return scores
