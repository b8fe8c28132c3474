"""Reading, reducing and writing capture files."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Literal, Self

from . import _paclo
from .bpf import FilterArg, normalize_filter

__all__ = ["PcapWriter", "Reduced", "read", "reduce", "write_pcap"]

_DECODE_MODES = (None, "full", "flow")
_MAX_LIMIT = 2**63 - 1


def _check_decode(decode: object) -> None:
    if decode not in _DECODE_MODES:
        raise ValueError(f"decode must be None, 'full' or 'flow', not {decode!r}")


def _check_limit(limit: object) -> None:
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be a non-negative integer or None, not {type(limit).__name__}")
    if not 0 <= limit <= _MAX_LIMIT:
        raise ValueError(f"limit must be a non-negative integer up to {_MAX_LIMIT} or None, not {limit}")


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, not {value!r}")


def _fspath(path: object, what: str = "path") -> str:
    try:
        p = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{what} must be a str or os.PathLike, not {type(path).__name__}") from None
    return os.fsdecode(p)


def read(
    path: str | os.PathLike[str],
    *,
    filter: FilterArg = None,
    decode: Literal["full", "flow"] | None = None,
    limit: int | None = None,
    progress: bool = False,
    strict: bool = False,
) -> _paclo.Reader:
    """Open a pcap or pcapng file: an iterator of packets and a context manager.

    ``filter`` is a BPF string or a DSL form (see :func:`paclo.bpf`), compiled once for
    the file's link type; an invalid one raises ``ValueError`` before any packet is read.
    ``decode`` is None (``Packet`` objects), ``"full"`` (packet map dicts) or ``"flow"``
    (flat flow dicts). ``limit`` stops after that many packets. ``progress=True`` draws a
    progress bar on stderr when it is a terminal. A truncated last record warns with
    ``TruncatedCaptureWarning`` after every complete packet; ``strict=True`` raises
    ``PcapFormatError`` instead.
    """
    _check_decode(decode)
    _check_limit(limit)
    _check_bool("progress", progress)
    _check_bool("strict", strict)
    return _paclo.read(
        _fspath(path),
        filter=normalize_filter(filter),
        decode=decode,
        limit=limit,
        progress=progress,
        strict=strict,
    )


class Reduced:
    """Wrap an accumulator to stop a reduction at once: ``return paclo.Reduced(acc)``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"Reduced({self.value!r})"


def reduce(
    fn: Callable[[Any, Any], Any],
    init: Any,
    *,
    path: str | os.PathLike[str] | None = None,
    device: str | None = None,
    decode: Literal["full", "flow"] | None = None,
    filter: FilterArg = None,
    limit: int | None = None,
    report: bool = False,
    **options: Any,
) -> Any:
    """Fold ``fn(acc, packet)`` over a file (``path=``) or a live device (``device=``).

    For a file the loop runs natively; returning ``paclo.Reduced(x)`` from ``fn`` stops at
    once with ``x`` (stop reason ``"reduced"``). With ``report=True`` the result is
    ``(acc, stats)``, stats in the shape of ``Reader.stats()``. A file also takes
    ``strict=``; a device takes the live options of :func:`paclo.capture`.
    """
    if not callable(fn):
        raise TypeError(f"reduce needs a callable fn(acc, packet), not {type(fn).__name__}")
    if path is None and device is None:
        raise ValueError("reduce requires either path= or device=")
    if path is not None and device is not None:
        raise ValueError("reduce takes either path= or device=, not both")
    _check_decode(decode)
    _check_limit(limit)
    _check_bool("report", report)
    if device is not None:
        from . import _capture

        return _capture.reduce_device(
            fn,
            init,
            device=device,
            decode=decode,
            filter=normalize_filter(filter),
            limit=limit,
            report=report,
            **options,
        )
    strict = options.pop("strict", False)
    _check_bool("strict", strict)
    if options:
        names = ", ".join(sorted(options))
        raise TypeError(f"reduce(path=...) got unexpected options: {names} (live options need device=)")
    acc, stats = _paclo.reduce_path(
        fn,
        init,
        _fspath(path),
        reduced_type=Reduced,
        filter=normalize_filter(filter),
        decode=decode,
        limit=limit,
        strict=strict,
    )
    return (acc, stats) if report else acc


def _check_writer_options(linktype: object, snaplen: object, nanosecond: object) -> None:
    for name, v in (("linktype", linktype), ("snaplen", snaplen)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an integer, not {type(v).__name__}")
    if not 0 <= linktype <= 0xFFFF:  # type: ignore[operator]
        raise ValueError(f"linktype must be between 0 and 65535, not {linktype}")
    if not 1 <= snaplen <= 262144:  # type: ignore[operator]
        raise ValueError(f"snaplen must be between 1 and 262144, not {snaplen}")
    _check_bool("nanosecond", nanosecond)


class PcapWriter(_paclo.PcapWriter):
    """Write a classic pcap file: ``with paclo.PcapWriter(path) as w: w.write(pkt)``.

    ``write(item, ts_ns=None)`` takes a ``Packet``, a bytes-like object, or a dict with
    ``data`` and ``ts_ns`` (or ``ts_sec``/``ts_usec``; optional ``wirelen``/``len``).
    Timestamps given are kept (``ts_ns=`` overrides the item's); bytes without one get
    the current time. Records longer than ``snaplen`` are cut to it (wirelen kept).
    ``nanosecond=True`` writes a nanosecond-precision file.
    """

    def __new__(
        cls, path: str | os.PathLike[str], *, linktype: int = 1, snaplen: int = 262144, nanosecond: bool = False
    ) -> Self:
        _check_writer_options(linktype, snaplen, nanosecond)
        return super().__new__(cls, _fspath(path), linktype=linktype, snaplen=snaplen, nanosecond=nanosecond)

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<paclo.PcapWriter {state} count={self.count}>"


def write_pcap(
    path: str | os.PathLike[str],
    packets: Iterable[Any],
    *,
    linktype: int = 1,
    snaplen: int = 262144,
    nanosecond: bool = False,
) -> int:
    """Write ``packets`` (an iterable of the items :class:`PcapWriter` accepts) to a
    classic pcap file at ``path``; returns the number of packets written."""
    with PcapWriter(path, linktype=linktype, snaplen=snaplen, nanosecond=nanosecond) as w:
        return w.write_all(packets)
