"""Deterministic perf datasets (reference §4.4), generated in Rust.

Cases: ``udp-64`` (64-byte UDP frames), ``tcp-512`` (512-byte TCP SYN frames), ``mixed``
(alternating, starting with UDP). Files are classic little-endian microsecond pcap,
link type 1, snaplen 65536; packet ``i`` has timestamp second 1,700,000,000 and
microsecond ``i % 1_000_000``. The file size is ``24 + sum(16 + frame)``.
"""

from __future__ import annotations

import os
from typing import Any

from .. import _paclo
from .._progress import Display, Progress

__all__ = ["CASES", "LINKTYPE", "SNAPLEN", "expected_bytes", "expected_file_size", "frame", "generate"]

CASES = ("udp-64", "tcp-512", "mixed")
SNAPLEN = 65536
LINKTYPE = 1


def _check(case: object, count: object, what: str = "count") -> None:
    if case not in CASES:
        raise ValueError(f"case must be 'udp-64', 'tcp-512' or 'mixed', not {case!r}")
    if isinstance(count, bool) or not isinstance(count, int):
        raise TypeError(f"{what} must be a non-negative integer, not {type(count).__name__}")
    if count < 0:
        raise ValueError(f"{what} must be a non-negative integer, not {count}")


def generate(case: str, count: int, path: str | os.PathLike[str], *, progress: bool | Display = False) -> dict[str, Any]:
    """Write ``count`` packets of ``case`` to ``path`` (replacing it) and check its size.

    ``progress=True`` draws paclo's progress line on stderr when it is a terminal (packets
    written of ``count``, rate, time left); a display object (``update(done, total)``,
    ``close()``) is told the same instead. Returns ``{"path", "packets", "bytes",
    "file_size"}``.
    """
    _check(case, count)
    display: Display | None
    if isinstance(progress, bool):
        bar = Progress(unit="packets", label=f"generate {case}") if progress else None
        display = bar if bar is not None and bar.enabled else None
    elif callable(getattr(progress, "update", None)) and callable(getattr(progress, "close", None)):
        display = progress
    else:
        raise TypeError(f"progress must be True, False or an object with update() and close(), not {progress!r}")
    p = os.fsdecode(os.fspath(path))
    packets, nbytes, size = _paclo.generate_dataset(case, count, p, progress=display)
    return {"path": p, "packets": packets, "bytes": nbytes, "file_size": size}


def expected_bytes(case: str, count: int) -> int:
    """Captured bytes of ``count`` packets of ``case``."""
    _check(case, count)
    return _paclo.dataset_expected(case, count)[0]


def expected_file_size(case: str, count: int) -> int:
    """Size in bytes of the file ``generate(case, count, path)`` writes."""
    _check(case, count)
    return _paclo.dataset_expected(case, count)[1]


def frame(case: str, index: int) -> bytes:
    """The frame bytes of packet ``index`` of ``case``."""
    _check(case, index, "index")
    return _paclo.dataset_frame(case, index)
