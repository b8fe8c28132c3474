"""The full packet map."""

from __future__ import annotations

__all__ = ["decode"]


def decode(data, *, linktype="ethernet"):
    raise NotImplementedError("paclo.decode")
