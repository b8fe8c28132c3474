"""Post-decode hooks applied to full packet maps."""

from __future__ import annotations

__all__ = ["installed", "register", "unregister"]


def register(name, fn):
    raise NotImplementedError


def unregister(name):
    raise NotImplementedError


def installed():
    return []
