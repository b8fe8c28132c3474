"""Post-decode hooks applied to full packet maps.

A hook is a function ``map -> map``. Hooks run in registration order on every full map that
has no ``decode_error`` (from ``read``/``reduce``/``capture`` with ``decode="full"``,
``Packet.decode()`` and ``paclo.decode``). A hook that raises is skipped; a return value
that is not a dict is ignored (the map passed in, possibly mutated, is kept). The registry
is process-wide.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from . import _paclo

__all__ = ["installed", "register", "unregister"]

_lock = threading.Lock()
_hooks: dict[Hashable, Callable[[dict[str, Any]], Any]] = {}


def _publish() -> None:
    _paclo.set_decode_hooks(tuple(_hooks.values()))


def register(name: Hashable, fn: Callable[[dict[str, Any]], Any]) -> Hashable:
    """Register ``fn`` under ``name``; re-registering replaces it and moves it last."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, not {type(fn).__name__}")
    with _lock:
        _hooks.pop(name, None)
        _hooks[name] = fn
        _publish()
    return name


def unregister(name: Hashable) -> None:
    """Remove the hook registered under ``name`` (no error when there is none)."""
    with _lock:
        if _hooks.pop(name, None) is not None:
            _publish()


def installed() -> list[Hashable]:
    """The registered names, in execution order."""
    with _lock:
        return list(_hooks)
