"""Reading, reducing and writing capture files."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Literal, Self, TypeAlias, TypeVar, overload

from . import _paclo
from ._options import check_bool, check_decode, check_limit, check_one_source, check_step, fspath, normalize_filter
from ._progress import Progress
from ._reduce import Reduced
from .bpf import FilterArg

__all__ = ["PcapWriter", "Reduced", "read", "reduce", "write_pcap"]

@overload
def read(
    path: str | os.PathLike[str],
    *,
    filter: FilterArg = None,
    decode: None = None,
    limit: int | None = None,
    progress: bool = False,
    strict: bool = False,
) -> _paclo.Reader[_paclo.Packet]: ...
@overload
def read(
    path: str | os.PathLike[str],
    *,
    filter: FilterArg = None,
    decode: Literal["full", "flow"],
    limit: int | None = None,
    progress: bool = False,
    strict: bool = False,
) -> _paclo.Reader[dict[str, Any]]: ...
def read(
    path: str | os.PathLike[str],
    *,
    filter: FilterArg = None,
    decode: Literal["full", "flow"] | None = None,
    limit: int | None = None,
    progress: bool = False,
    strict: bool = False,
) -> _paclo.Reader[_paclo.Packet] | _paclo.Reader[dict[str, Any]]:
    """Open a pcap or pcapng file: an iterator of packets and a context manager.

    ``filter`` is a BPF string or a DSL form (see :func:`paclo.bpf`), compiled once for
    the file's link type; an invalid one raises ``ValueError`` before any packet is read.
    ``decode`` is None (``Packet`` objects), ``"full"`` (packet map dicts) or ``"flow"``
    (flat flow dicts). ``limit`` stops after that many packets. ``progress=True`` draws
    paclo's progress line on stderr when it is a terminal (bytes read of the file's size,
    rate, time left). A truncated last record warns with
    ``TruncatedCaptureWarning`` after every complete packet; ``strict=True`` raises
    ``PcapFormatError`` instead.
    """
    check_decode(decode)
    check_limit(limit)
    check_bool("progress", progress)
    check_bool("strict", strict)
    bar = Progress(unit="bytes", label="read") if progress else None
    return _paclo.read(
        fspath(path),
        filter=normalize_filter(filter),
        decode=decode,
        limit=limit,
        # Nothing to report to when the line is not drawn (stderr is not a terminal).
        progress=bar if bar is not None and bar.enabled else None,
        strict=strict,
    )


_A = TypeVar("_A")
# A reduction step: the next accumulator, or Reduced(acc) to stop.
_Step: TypeAlias = Callable[[_A, _paclo.Packet], "_A | Reduced[_A]"]
_DictStep: TypeAlias = Callable[[_A, dict[str, Any]], "_A | Reduced[_A]"]


@overload
def reduce(
    fn: _Step[_A],
    init: _A,
    *,
    path: str | os.PathLike[str] | None = None,
    device: str | None = None,
    decode: None = None,
    filter: FilterArg = None,
    limit: int | None = None,
    report: Literal[False] = False,
    **options: Any,
) -> _A: ...
@overload
def reduce(
    fn: _Step[_A],
    init: _A,
    *,
    path: str | os.PathLike[str] | None = None,
    device: str | None = None,
    decode: None = None,
    filter: FilterArg = None,
    limit: int | None = None,
    report: Literal[True],
    **options: Any,
) -> tuple[_A, dict[str, Any]]: ...
@overload
def reduce(
    fn: _DictStep[_A],
    init: _A,
    *,
    path: str | os.PathLike[str] | None = None,
    device: str | None = None,
    decode: Literal["full", "flow"],
    filter: FilterArg = None,
    limit: int | None = None,
    report: Literal[False] = False,
    **options: Any,
) -> _A: ...
@overload
def reduce(
    fn: _DictStep[_A],
    init: _A,
    *,
    path: str | os.PathLike[str] | None = None,
    device: str | None = None,
    decode: Literal["full", "flow"],
    filter: FilterArg = None,
    limit: int | None = None,
    report: Literal[True],
    **options: Any,
) -> tuple[_A, dict[str, Any]]: ...
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
    check_step(fn)
    check_one_source("reduce", path=path, device=device)
    check_decode(decode)
    check_limit(limit)
    check_bool("report", report)
    if device is not None:
        # The device side validates the live options (it is also paclo._capture.reduce_device).
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
    check_bool("strict", strict)
    if options:
        names = ", ".join(sorted(options))
        raise TypeError(f"reduce(path=...) got unexpected options: {names} (live options need device=)")
    # Called here, not through a helper: the truncation warning names the caller's line.
    acc, stats = _paclo.reduce(
        fn,
        init,
        fspath(path),
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
    check_bool("nanosecond", nanosecond)


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
        return super().__new__(cls, fspath(path), linktype=linktype, snaplen=snaplen, nanosecond=nanosecond)

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
