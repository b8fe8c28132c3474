"""Reductions: the ``Reduced`` stop signal and the one native fold, over a file or a device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import _paclo

__all__ = ["Reduced", "fold"]


class Reduced:
    """Wrap an accumulator to stop a reduction at once: ``return paclo.Reduced(acc)``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Reduced({self.value!r})"


def fold(fn: Callable[[Any, Any], Any], init: Any, source: Any, **options: Any) -> tuple[Any, dict[str, Any]]:
    """Fold ``fn(acc, packet)`` natively over ``source`` (a path, or a live source from
    ``_options.live_source``); ``(acc, stats)``. ``options`` are validated already."""
    return _paclo.reduce(fn, init, source, reduced_type=Reduced, **options)
