"""What every batch job (one model, or a group of models) does around its planner call: an error becomes the
row's status, and the job's folder is written as one set confined to the batch folder."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optimizer.errors import EdgeplanError, InfeasibleError
from optimizer.fileio import dumps_json, write_file_set


def failure(model: str, exc: Exception) -> dict[str, str]:
    """The row fields of a job that raised: infeasible, a one-line edgeplan error, or a library crash (which
    must not stop the batch)."""
    if isinstance(exc, InfeasibleError):
        return {"status": "infeasible", "error": exc.one_line()}
    if isinstance(exc, EdgeplanError):
        return {"status": "failed", "error": exc.one_line()}
    return {"status": "failed", "error": f"{model}: internal error {type(exc).__name__}: {exc}"[:300]}


def finish(key: str, row: dict[str, Any], files: Mapping[str, str | bytes], folder: Path,
           started: float) -> dict[str, Any]:
    """Stamps the wall time, writes job.json beside the plan files, and returns the row."""
    row["wall_s"] = round(time.monotonic() - started, 3)
    written = {**files, "job.json": dumps_json({"key": key, "row": row})}
    try:
        write_file_set(folder.parent.parent, written, subdir=(folder.parent.name, folder.name))
    except EdgeplanError as exc:
        row.update(status="failed", error=exc.one_line(), plan="")
    return row
