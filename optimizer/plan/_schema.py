"""The JSON Schema of plan.json, generated from the Plan types so the two cannot drift.

`python -m optimizer.plan._schema > schemas/edgeplan.plan.v1.schema.json` regenerates the published file;
a test checks the committed file is what this writes. Objects are closed (additionalProperties false):
a misspelt or unknown key fails validation, as a missing one does.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Mapping
from enum import Enum
from typing import Any

from optimizer.fileio import dumps_json
from optimizer.plan._types import PLAN_SCHEMA, Plan, _fields, _hints, json_key

SCHEMA_ID = "https://github.com/edgeplan/edgeplan/schemas/edgeplan.plan.v1.schema.json"


def _schema_of(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return {"anyOf": [_schema_of(args[0], defs), {"type": "null"}]}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # reserved first: the types nest but never recurse
            hints = _hints(tp)
            props = {json_key(f): _schema_of(hints[f.name], defs) for f in _fields(tp)}
            required = [json_key(f) for f in _fields(tp) if not f.metadata.get("optional")]
            entry: dict[str, Any] = {"type": "object", "properties": props, "required": required,
                                     "additionalProperties": False}
            if tp.__doc__ and not tp.__doc__.startswith(f"{name}("):
                entry["description"] = " ".join(tp.__doc__.split())
            defs[name] = entry
        return {"$ref": f"#/$defs/{name}"}
    if origin is tuple:
        return {"type": "array", "items": _schema_of(typing.get_args(tp)[0], defs)}
    if origin in (Mapping, dict):
        key_type, item = typing.get_args(tp)
        entry = {"type": "object", "additionalProperties": _schema_of(item, defs)}
        if isinstance(key_type, type) and issubclass(key_type, Enum):
            entry["propertyNames"] = {"enum": [m.value for m in key_type]}
        return entry
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"type": "string", "enum": [m.value for m in tp]}
    simple = {bool: "boolean", int: "integer", float: "number", str: "string"}
    if tp in simple:
        return {"type": simple[tp]}
    raise TypeError(f"no JSON Schema for {tp}")


def plan_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    _schema_of(Plan, defs)
    plan = defs.pop("Plan")
    plan.pop("description", None)
    plan["properties"]["schema"] = {"const": PLAN_SCHEMA}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": PLAN_SCHEMA, "description": "plan.json as edgeplan optimize writes it "
            "(../shared/spec/formats.md); generated from optimizer/plan/_types.py",
            **plan, "$defs": dict(sorted(defs.items()))}


if __name__ == "__main__":
    sys.stdout.write(dumps_json(plan_schema()))
