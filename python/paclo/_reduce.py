"""``Reduced``: the signal that stops a reduction (files and devices, one native fold)."""

from __future__ import annotations

from typing import Generic, TypeVar

__all__ = ["Reduced"]

_A = TypeVar("_A")


class Reduced(Generic[_A]):
    """Wrap an accumulator to stop a reduction at once: ``return paclo.Reduced(acc)``."""

    __slots__ = ("value",)

    def __init__(self, value: _A) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Reduced({self.value!r})"
