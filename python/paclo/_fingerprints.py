"""JA4-family fingerprints of captures as an Arrow table.

JA4 is BSD-3-Clause. JA4S, JA4H, JA4L, JA4SSH, JA4T, JA4TS, JA4X, JA4D and JA4D6 (JA4+)
are under the FoxIO License 1.1, which allows non-commercial use (personal, academic,
internal business use that is not monetized) and asks for a licence from FoxIO for
commercial use: they are computed only when ``methods`` names them (see
docs/fingerprints.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pyarrow as pa

from . import _paclo
from ._flows import _check_filter, _source

__all__ = ["FINGERPRINT_METHODS", "JA4_PLUS_METHODS", "fingerprints"]

#: Every method, in table order.
FINGERPRINT_METHODS: tuple[str, ...] = tuple(_paclo.fingerprint_methods())
#: The methods under the FoxIO License 1.1.
JA4_PLUS_METHODS: tuple[str, ...] = tuple(m for m in FINGERPRINT_METHODS if m not in ("ja4", "ja4_o"))


def _methods(methods: Any) -> list[str]:
    if isinstance(methods, str):
        if methods == "all":
            return list(FINGERPRINT_METHODS)
        names = [methods]
    elif isinstance(methods, Iterable):
        names = list(methods)
    else:
        raise TypeError(f"methods must be a method name, a list of names or 'all', not {type(methods).__name__}")
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"methods must hold method names (str), not {type(n).__name__}")
        if n not in FINGERPRINT_METHODS:
            raise ValueError(f"methods: unknown method {n!r}; allowed: 'all', {', '.join(FINGERPRINT_METHODS)}")
    if not names:
        raise ValueError("methods must name at least one method")
    return names


def fingerprints(
    source: Any = None,
    *,
    device: str | None = None,
    methods: str | Iterable[str] = "ja4",
    filter: str | None = None,
    duration: float | None = None,
    limit: int | None = None,
    **live: Any,
) -> pa.Table:
    """Fingerprint the packets of ``source``: one row per fingerprint.

    ``source`` is a path, a list of paths (read in order, one state machine across them)
    or an open Reader. ``device=`` captures live instead, until ``duration`` seconds or
    ``limit`` packets, with the live options of :func:`paclo.capture` (``snaplen``,
    ``promisc``, ``timeout_ms``, ``buffer_size``, ``immediate``, ``on_ready``).
    ``methods`` names the methods: ``"ja4"`` (the default, BSD-3-Clause), a list such as
    ``["ja4", "ja4s", "ja4t"]``, or ``"all"``; the JA4+ methods are under the FoxIO
    License 1.1 (non-commercial use). Columns: ``ts_ns``, ``method``, ``value``, ``raw``
    (the unhashed form, null for methods without one), ``ip_version``, ``protocol``,
    ``src_ip``, ``dst_ip`` (16 bytes, IPv4-mapped), ``src_port``, ``dst_port``: the
    packet that completed the fingerprint.
    """
    names = _methods(methods)
    src = _source("fingerprints", source, device, duration=duration, limit=limit, live=live)
    stream = _paclo.fingerprint_table(src, methods=names, filter=_check_filter(filter))
    return pa.table(stream)
