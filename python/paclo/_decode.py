"""The full packet map of raw bytes: ``paclo.decode``."""

from __future__ import annotations

from typing import Any

from . import _paclo

__all__ = ["LINKTYPES", "decode"]

#: Link-type names accepted by ``decode(..., linktype=...)`` and their LINKTYPE numbers.
LINKTYPES: dict[str, int] = {
    "null": 0,
    "ethernet": 1,
    "raw": 101,
    "loop": 108,
    "linux_sll": 113,
    "linux_sll2": 276,
    "raw_ipv4": 228,
    "raw_ipv6": 229,
}


def _linktype_number(linktype: str | int) -> int:
    if isinstance(linktype, bool):
        raise TypeError(f"linktype must be a name or an int, not {linktype!r}")
    if isinstance(linktype, int):
        if not 0 <= linktype <= 0xFFFFFFFF:
            raise ValueError(f"linktype must be between 0 and 4294967295, not {linktype}")
        return linktype
    if isinstance(linktype, str):
        try:
            return LINKTYPES[linktype]
        except KeyError:
            allowed = ", ".join(repr(n) for n in LINKTYPES)
            raise ValueError(f"linktype must be one of {allowed} or an int, not {linktype!r}") from None
    raise TypeError(f"linktype must be a name or an int, not {type(linktype).__name__}")


def decode(data: bytes | bytearray | memoryview, *, linktype: str | int = "ethernet") -> dict[str, Any]:
    """Decode one frame into the packet map (the same map as ``read(..., decode="full")``).

    The map's top level has ``ts_sec``, ``ts_usec``, ``ts_ns`` (all 0 here), ``caplen`` and
    ``len`` (both ``len(data)``), ``data``, then ``decoded`` and/or ``decode_error``.
    Never raises on malformed bytes; registered ``decode_ext`` hooks are applied.
    """
    number = _linktype_number(linktype)
    if not isinstance(data, bytes):
        if not isinstance(data, (bytearray, memoryview)):
            raise TypeError(f"data must be bytes, bytearray or memoryview, not {type(data).__name__}")
        data = bytes(data)
    return _paclo.decode_bytes(data, number)
