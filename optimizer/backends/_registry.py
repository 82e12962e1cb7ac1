"""Backends by the name a family file declares (`backend = "..."`): the catalog says which toolchain a family
uses, this table says which class implements it. A new family registers its class here once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import MappingProxyType

from optimizer.backends._base import Backend
from optimizer.backends._jetson import JetsonBackend
from optimizer.backends._rknn import RknnBackend
from optimizer.catalog import Target
from optimizer.errors import BadInputError

_BACKENDS: dict[str, Backend] = {cls.name: cls() for cls in (JetsonBackend, RknnBackend)}


def register(backend: type[Backend]) -> type[Backend]:
    """Adds a backend class under its `name` (usable as a class decorator); a name is registered once."""
    if backend.name in _BACKENDS and type(_BACKENDS[backend.name]) is not backend:
        raise ValueError(f"backend '{backend.name}' is already registered ({type(_BACKENDS[backend.name]).__name__})")
    _BACKENDS[backend.name] = backend()
    return backend


def unregister(name: str) -> None:
    _BACKENDS.pop(name, None)


@contextmanager
def registered(backend: type[Backend]) -> Iterator[Backend]:
    """A backend registered for the length of a `with` block (tests, plug-ins tried out)."""
    register(backend)
    try:
        yield _BACKENDS[backend.name]
    finally:
        unregister(backend.name)


def backends() -> MappingProxyType[str, Backend]:
    return MappingProxyType(_BACKENDS)


def backend_of(target: Target) -> Backend:
    """The backend of a target's family, as its family file names it."""
    found = _BACKENDS.get(target.backend)
    if found is None and not target.backend:
        raise BadInputError(f"family {target.family} names no backend (backend = \"...\" in its catalog file; "
                            f"known: {', '.join(sorted(_BACKENDS))})")
    if found is None:
        raise BadInputError(f"family {target.family} names backend '{target.backend}', which is not registered "
                            f"(known: {', '.join(sorted(_BACKENDS))})")
    return found
