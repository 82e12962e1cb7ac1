"""Parse rknn-toolkit2's verbose build log: the layer table, the error lines, and layer -> ONNX node mapping.

Pure Python (no toolkit import), so tests and any interpreter can use it on captured logs.
The table is the "Network Layer Information Table" that `RKNN(verbose=True).build()` prints, with
columns found from its header (ID OpType DataType Target InputShape OutputShape Cycles(DDR/NPU/Total)
RW(KB) FullName, plus SparseRatio on some builds). FullName is `OnnxOpType:name`, where the name is the
ONNX node name for layers kept as they were and a derived name for layers the toolkit rewrote.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PREFIX = re.compile(r"^[DIWE] RKNN: \[[0-9:.]+\] ?")
TITLE = "Network Layer Information Table"


@dataclass(frozen=True)
class Layer:
    index: int
    op_type: str
    data_type: str
    target: str
    input_shapes: str
    output_shapes: str
    cycles_ddr: int
    cycles_npu: int
    cycles_total: int
    rw_kb: str
    full_name: str
    extra: str = ""  # columns beyond the standard ones (e.g. SparseRatio), as "Name=value;..."

    @property
    def onnx_op_type(self) -> str:
        return self.full_name.partition(":")[0]

    @property
    def derived_name(self) -> str:
        return self.full_name.partition(":")[2]


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def _body(line: str) -> str | None:
    match = PREFIX.match(line)
    return line[match.end():] if match else None


def parse_layer_table(text: str) -> list[Layer]:
    """Rows of the last complete layer table in the log (a log may hold several builds' tables)."""
    lines = strip_ansi(text).splitlines()
    tables: list[list[Layer]] = []
    i = 0
    while i < len(lines):
        body = _body(lines[i])
        if body is None or TITLE not in body:
            i += 1
            continue
        header: list[tuple[str, int]] | None = None
        rows: list[Layer] = []
        i += 1
        while i < len(lines):
            body = _body(lines[i])
            if body is None:
                break
            stripped = body.strip()
            if TITLE in stripped:
                break
            if stripped.startswith("ID ") and "OpType" in stripped:
                header = [(m.group(), m.start()) for m in re.finditer(r"\S+", body)]
            elif set(stripped) <= {"-", "+"} and stripped:
                if header is not None and rows:
                    i += 1
                    break
            elif header is not None and stripped[:1].isdigit():
                rows.append(_row(header, body.rstrip()))
            elif header is not None and stripped:
                break
            i += 1
        if rows:
            tables.append(rows)
    return tables[-1] if tables else []


def _row(header: list[tuple[str, int]], line: str) -> Layer:
    """Columns are fixed-width and left-aligned under their header, and may be empty (SparseRatio on
    non-conv layers), so values are cut at the header's offsets; a row whose values do not line up with
    them (an overlong cell) falls back to splitting on whitespace."""
    names = [name for name, _ in header]
    starts = [start for _, start in header]
    aligned = all(start == 0 or (start <= len(line) and line[start - 1] == " ") for start in starts)
    if aligned:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line)], strict=True)]
    else:
        cells = line.split(None, len(names) - 1)
        cells += [""] * (len(names) - len(cells))
    values = dict(zip(names, cells, strict=True))
    cycles = values.get("Cycles(DDR/NPU/Total)", "0/0/0").split("/")
    ddr, npu, total = (int(c) if c.isdigit() else 0 for c in [*cycles, "0", "0", "0"][:3])
    known = {"ID", "OpType", "DataType", "Target", "InputShape", "OutputShape", "Cycles(DDR/NPU/Total)", "RW(KB)",
             "FullName"}
    extra = ";".join(f"{k}={v}" for k, v in values.items() if k not in known)
    return Layer(int(values["ID"]), values.get("OpType", ""), values.get("DataType", ""), values.get("Target", ""),
                 values.get("InputShape", ""), values.get("OutputShape", ""), ddr, npu, total,
                 values.get("RW(KB)", ""), values.get("FullName", "").strip(), extra)


def error_lines(text: str) -> list[str]:
    """Distinct `E ...` lines (the toolkit's errors, e.g. `E RKNN: ... exceeds the limit`), in order."""
    seen: dict[str, None] = {}
    for line in strip_ansi(text).splitlines():
        stripped = line.strip()
        if stripped.startswith("E "):
            seen.setdefault(re.sub(r"\[[0-9:.]+\] ", "", stripped), None)
    return list(seen)


def map_to_onnx(derived: str, nodes: dict[str, str], outputs: dict[str, str]) -> tuple[str, str]:
    """(ONNX node name, how it was found) for a layer's derived name.

    nodes: node name -> op type; outputs: output tensor name -> node name ("" for a graph input, which
    gives `graph-input`: a layer the toolkit added on an input, e.g. a layout Reshape). Methods, in order:
    `exact` (the name is a node name), `tensor` (the name is a node's output tensor), `prefix` (the
    longest node name that the derived name starts with, followed by `_`, as in `Conv_2conv0` or
    `Gemm_output_0_mm_tp`), `tensor-prefix` (the same on output tensor names), else `unmapped`.
    """
    if not derived:
        return "", "unmapped"
    if derived in nodes:
        return derived, "exact"
    if derived in outputs:
        return (outputs[derived], "tensor") if outputs[derived] else ("", "graph-input")
    cuts = [m.start() for m in re.finditer(r"[_.#-]", derived)]
    for cut in reversed(cuts):
        if derived[:cut] in nodes:
            return derived[:cut], "prefix"
    for cut in reversed(cuts):
        if derived[:cut] in outputs:
            node = outputs[derived[:cut]]
            return (node, "tensor-prefix") if node else ("", "graph-input")
    return "", "unmapped"


_ADVICE = re.compile(r"disable_rules=\[['\"]([A-Za-z0-9_]+)['\"]\]")
_EXC = re.compile(r"^(?:E \w+: )?([A-Z][A-Za-z]*(?:Error|Exception)): (.*)$")
_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')


def disable_rule_advice(text: str) -> str:
    """The rule the toolkit suggests disabling after a failed build ("You can add disable_rules=[...]")."""
    found = _ADVICE.findall(strip_ansi(text))
    return found[-1] if found else ""


def error_summary(text: str) -> str:
    """One line for a failed build: the last exception with the toolkit frame that raised it, else the last
    `E` line that is not the version banner."""
    lines = strip_ansi(text).splitlines()
    for i in range(len(lines) - 1, -1, -1):
        match = _EXC.match(lines[i].strip())
        if match and not match.group(2).startswith("Traceback"):
            frame = next((_FRAME.search(lines[j]) for j in range(i - 1, max(i - 30, -1), -1)
                          if _FRAME.search(lines[j])), None)
            where = f" (in {frame.group(2)})" if frame else ""
            return f"{match.group(1)}: {match.group(2).strip()}{where}"[:500]
    errors = [e for e in error_lines(text) if "rknn-toolkit2 version" not in e and "Traceback" not in e]
    return errors[-1][:500] if errors else ""


_ABORT = re.compile(r"^(terminate called .*|\s*what\(\):.*|Floating point exception.*|Segmentation fault.*)$")


def abort_lines(text: str) -> list[str]:
    """The C++ runtime's last words before the toolkit process died (uncaught exception, SIGFPE, SIGSEGV):
    the only record of why a crashed conversion crashed."""
    return [line.strip() for line in text.splitlines() if _ABORT.match(line)][-3:]
