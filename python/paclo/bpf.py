"""The BPF filter DSL."""

from __future__ import annotations

__all__ = ["bpf"]


def bpf(form):
    raise NotImplementedError("paclo.bpf")
