"""Atomic, deterministic, confined file output.

Every file edgeplan writes goes through here. Two kinds of destination:

- an output folder (`--out DIR`): files are named by edgeplan, never by a model or plan. Each name is a
  plain file name (`safe_name`), the resolved path stays inside the folder, nothing inside it that is a
  symlink is followed, and a set of files is written all-or-nothing (`write_file_set`): everything is
  rendered first, written into a temporary folder inside DIR, then renamed into place, so a failure
  (ENOSPC, SIGKILL, a bad value found late) leaves the previous set as it was.
- a single file the user named (`--json FILE`, `write_user_file`): `-` is stdout; a regular file is
  replaced atomically; a symlink, device or FIFO is written through (opened, never renamed over); a
  directory is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from optimizer.errors import BadInputError

_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]")
MAX_NAME_CHARS = 100
_TMP_PREFIX = ".edgeplan-tmp-"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def safe_name(text: str, fallback: str = "model") -> str:
    """A file-name stem made from untrusted text: ASCII letters, digits and `._+-` only, never starting
    with a dot or a dash (no hidden files, no `..`, nothing a shell or trtexec reads as an option)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    cleaned = _UNSAFE.sub("_", ascii_text).lstrip(".-")[:MAX_NAME_CHARS]
    return cleaned or fallback


def one_line(text: str, limit: int = 200) -> str:
    """Untrusted text for a comment or a log line: printable ASCII on one line."""
    shown = "".join(c if c.isprintable() and c.isascii() else "?" for c in str(text))
    return shown[:limit]


def _check_plain(name: str) -> None:
    if (not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name
            or any(not c.isprintable() for c in name)):
        raise BadInputError(f"refused to write '{one_line(name)}': not a plain file name")


def confined(out: Path, *parts: str) -> Path:
    """out/part/... after checking that it stays inside `out`: every part a plain name, no existing
    component below `out` a symlink (so nothing placed in the folder can redirect a write)."""
    base = Path(out)
    if base.exists() and not base.is_dir():
        raise BadInputError("the output folder exists and is not a directory", file=str(base))
    path = base
    for part in parts:
        _check_plain(part)
        path = path / part
        if path.is_symlink():
            raise BadInputError("refused to write through a symlink inside the output folder", file=str(path))
    resolved_base = base.resolve()
    resolved = path.parent.resolve() / path.name if parts else resolved_base
    if resolved != resolved_base and resolved_base not in resolved.parents:
        raise BadInputError("refused: the path leaves the output folder", file=str(path))
    return path


def _ensure_dir(out: Path) -> None:
    out = Path(out)
    if out.is_symlink() and not out.is_dir():
        raise BadInputError("the output folder is a dangling symlink", file=str(out))
    if out.exists() and not out.is_dir():
        raise BadInputError("the output folder exists and is not a directory", file=str(out))
    out.mkdir(parents=True, exist_ok=True)


def _fsync_write(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(path, mode)


FileData = bytes | str | tuple[bytes | str, int]


def _encoded(value: FileData) -> tuple[bytes, int]:
    data, mode = value if isinstance(value, tuple) else (value, 0o644)
    return (data.encode("utf-8") if isinstance(data, str) else data), mode


def write_file_set(out: Path, files: Mapping[str, FileData], subdir: tuple[str, ...] = ()) -> list[Path]:
    """Writes every file of `files` (name -> text, bytes, or (data, mode)) into out/subdir, all or none.

    Names are refused unless plain and distinct (also case-insensitively: one set must unpack on any
    file system); an existing destination that is a symlink, directory, device or FIFO is refused."""
    out = Path(out)
    lowered: dict[str, str] = {}
    for name in files:
        _check_plain(name)
        if name.lower() in lowered:
            raise BadInputError(f"two output files would share the name '{one_line(name)}' "
                                f"(with '{one_line(lowered[name.lower()])}')", file=str(out))
        lowered[name.lower()] = name
    _ensure_dir(out)
    folder = confined(out, *subdir)
    if subdir:
        folder.mkdir(parents=True, exist_ok=True)
        confined(out, *subdir)  # re-checked after creating: a symlink raced in is still refused
    encoded = {name: _encoded(value) for name, value in files.items()}
    for name in encoded:
        refuse_unless_replaceable(folder / name)
    staging = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=folder))
    try:
        for name, (data, mode) in encoded.items():
            try:
                _fsync_write(staging / name, data, mode)
            except OSError as exc:
                raise BadInputError(f"could not write the output set ({exc.strerror or exc}); the previous files "
                                    "are unchanged", file=str(folder / name)) from None
        written = []
        for name in encoded:
            os.replace(staging / name, folder / name)
            written.append(folder / name)
        _fsync_dir(folder)
        return written
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def refuse_unless_replaceable(target: Path) -> None:
    """A file about to be renamed over must be a regular file (or absent): never a symlink, directory,
    device or FIFO (`--out /dev/null` as root must not replace /dev/null)."""
    if target.is_symlink() or (target.exists() and not target.is_file()):
        raise BadInputError("refused to replace something that is not a regular file "
                            "(symlink, directory, device or FIFO)", file=str(target))


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    """One file inside an output folder the caller chose (its parent): confined like a set of one."""
    path = Path(path)
    write_file_set(path.parent, {path.name: (data, mode)})


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def write_user_file(target: str | Path, text: str) -> None:
    """A file the user named on the command line (`--json FILE`): `-` is stdout; symlinks, devices and
    FIFOs are written through, never replaced; a directory is refused; a regular file is replaced
    atomically."""
    if str(target) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(target)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise BadInputError(f"cannot write here: {exc.strerror or exc}", file=str(path)) from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise BadInputError("is a directory; name a file (or '-' for stdout)", file=str(path))
    if path.is_symlink() or (info is not None and not stat.S_ISREG(info.st_mode)):
        flags = os.O_WRONLY | (os.O_TRUNC if info is not None and stat.S_ISREG(info.st_mode) else 0)
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            raise BadInputError(f"cannot write through: {exc.strerror or exc}", file=str(path)) from None
        with os.fdopen(fd, "wb") as handle:
            handle.write(text.encode("utf-8"))
        return
    if path.parent != Path("") and not path.parent.is_dir():
        raise BadInputError("the folder of this file does not exist", file=str(path))
    write_file_set(path.parent if str(path.parent) else Path("."), {path.name: text})


def redact_url(text: str) -> str:
    """A storage URL (or any text holding one) with its password replaced by ***."""
    def one(match: re.Match[str]) -> str:
        url = match.group(0)
        try:
            parts = urlsplit(url)
        except ValueError:
            return re.sub(r"//[^@/]*@", "//***@", url)
        if parts.password is None and "@" not in parts.netloc:
            return url
        user = parts.username or ""
        host = parts.netloc.rsplit("@", 1)[-1]
        netloc = f"{user}:***@{host}" if parts.password is not None else f"{user}@{host}"
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))

    redacted = re.sub(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"]+", one, str(text))
    return re.sub(r"(?i)(password|passwd|pwd)=[^&\s'\"]+", r"\1=***", redacted)


def _plain(value: Any) -> Any:
    """Floats are rounded so that byte-identical reruns do not hinge on the last ulp."""
    if isinstance(value, float):
        return round(value, 6) if value == value and abs(value) != float("inf") else None
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def json_values(document: Any) -> Any:
    """What dumps_json writes, as values (floats rounded, tuples as lists), without the text round trip."""
    return _plain(document)


def dumps_json(document: Any) -> str:
    return json.dumps(_plain(document), indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_json(path: Path, document: Any) -> None:
    atomic_write_text(path, dumps_json(document))
