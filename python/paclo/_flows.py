"""Flow projection and flow tables as Arrow tables.

Every table is built natively (the GIL released) and crosses into Python through the
Arrow PyCapsule interface, so pyarrow, polars and duckdb read it without a copy. The
native loops check for signals between chunks of records: Ctrl-C raises
KeyboardInterrupt mid-file.
Addresses are ``fixed_size_binary(16)``: IPv6 as is, IPv4 as IPv4-mapped IPv6
(``::ffff:a.b.c.d``); ``ip_to_str`` turns such a column into text.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Literal, cast

import pyarrow as pa

from . import _paclo
from ._analysis import address_strings, analysis_view
from ._options import LiveSource, check_bool, check_int, check_seconds, live_source
from ._progress import Progress

__all__ = ["flow_stream", "flow_topn", "flows", "ip_to_str", "project", "read_batches"]


def _paths(source: Any) -> list[str]:
    """The file paths a ``source`` names: a path, a list of paths, or an open Reader."""
    if isinstance(source, (str, os.PathLike)):
        return [os.fspath(source)]
    if isinstance(source, (list, tuple)):
        if not source:
            raise ValueError("source must name at least one capture file, got an empty list")
        out = []
        for item in source:
            if not isinstance(item, (str, os.PathLike)):
                raise TypeError(f"source list items must be paths (str or os.PathLike), not {type(item).__name__}")
            out.append(os.fspath(item))
        return out
    if isinstance(source, _paclo.Reader):
        # The Reader names its file; the file is read from its start, with this call's
        # filter (the Reader's own filter and limit do not carry over).
        path = (source.stats().get("source") or {}).get("path")
        if isinstance(path, str):
            return [path]
        raise TypeError("this Reader does not read from a file")
    raise TypeError(
        "source must be a path, a list of paths or an open paclo.Reader, "
        f"not {type(source).__name__}"
    )


_LIVE_OPTIONS = ("snaplen", "promisc", "timeout_ms", "buffer_size", "immediate", "on_ready")


def _source(
    what: str,
    source: Any,
    device: Any,
    *,
    duration: Any,
    limit: Any,
    live: dict[str, Any],
    bounded: bool = True,
) -> list[str] | LiveSource:
    """What the native functions read: the paths ``source`` names, or the description of
    the live ``device`` (with its stop conditions and live options)."""
    unknown = sorted(set(live) - set(_LIVE_OPTIONS))
    if unknown:
        raise TypeError(f"{what}() got unexpected options: {', '.join(unknown)}")
    if device is None:
        if source is None:
            raise ValueError(f"{what} requires a source (a path, a list of paths or a Reader) or device=")
        given = [k for k, v in (("duration", duration), ("limit", limit)) if v is not None] + sorted(live)
        if given:
            raise TypeError(f"{what}(source) got live options: {', '.join(given)} (they need device=)")
        return _paths(source)
    if source is not None:
        raise ValueError(f"{what} takes either a source or device=, not both")
    if bounded and duration is None and limit is None:
        raise ValueError(f"{what}(device=...) needs duration= or limit= to know when the capture ends")
    return live_source(device, duration=duration, limit=limit, **live)


def _check_filter(filter: Any) -> str | None:
    if filter is None or isinstance(filter, str):
        return filter
    raise TypeError(f"filter must be a BPF expression (str) or None, not {type(filter).__name__}")


View = Literal["numeric", "analysis"]


def _check_view(view: Any) -> None:
    if view not in ("numeric", "analysis"):
        raise ValueError(f"view must be 'numeric' (lossless) or 'analysis', not {view!r}")


def _view(table: pa.Table, view: View) -> pa.Table:
    """``table`` as it is (``"numeric"``, lossless) or as its analysis view."""
    return analysis_view(table) if view == "analysis" else table


def _progress(progress: Any, source: list[str] | LiveSource, label: str) -> Progress:
    """The progress line of a call given ``progress=``: paclo's line (bytes read of the
    files' total size) when ``progress`` is True and stderr is a terminal, off otherwise.
    Pass it to the native call only when it is ``enabled`` (the loop then reports
    nothing)."""
    check_bool("progress", progress)
    if progress and isinstance(source, dict):
        raise ValueError(f"{label}(device=...) has no progress line: progress= counts the bytes read of capture files")
    return Progress(unit="bytes", label=label, enabled=None if progress else False)


def _table(stream: _paclo.ArrowStream) -> pa.Table:
    # Not pa.table(stream): it asks pandas whether the stream is a DataFrame, and so
    # imports pandas (a second or more) on the first call of a process.
    return pa.RecordBatchReader.from_stream(stream).read_all()


def _features(features: Any) -> list[str]:
    """The feature names ``features`` gives (a name or a list of names); the native side
    checks the names."""
    if isinstance(features, str):
        return [features]
    if isinstance(features, (list, tuple)) and all(isinstance(f, str) for f in features):
        return list(features)
    raise TypeError(f"features must be a feature name or a list of names, not {features!r}")


MAX_SPLT = 65535
MAX_THREADS = 1024


def _threads(threads: Any) -> int | None:
    """The ``threads=`` of a call, checked: ``None`` (every core) or a positive integer."""
    return check_int("threads", threads, 1, MAX_THREADS, optional=True)


def _meter_options(
    bidirectional: Any, idle_timeout: Any, active_timeout: Any, max_flows: Any
) -> dict[str, Any]:
    return {
        "bidirectional": check_bool("bidirectional", bidirectional),
        "idle_timeout": check_seconds("idle_timeout", idle_timeout),
        "active_timeout": check_seconds("active_timeout", active_timeout),
        "max_flows": check_int("max_flows", max_flows, 1, 2**63 - 1, optional=True),
    }


def project(
    source: Any = None,
    *,
    device: str | None = None,
    filter: str | None = None,
    flow_id: bool = False,
    bidirectional: bool = False,
    idle_timeout: float | None = None,
    active_timeout: float | None = None,
    max_flows: int | None = None,
    duration: float | None = None,
    limit: int | None = None,
    view: View = "numeric",
    progress: bool = False,
    threads: int | None = None,
    **live: Any,
) -> pa.Table:
    """One row per packet: ``ts_ns, caplen, len, ip_version, protocol, src_ip, dst_ip,
    src_port, dst_port, vlan_id, tcp_flags`` (see docs/flows.md for the column dictionary).

    ``source`` is a path, a list of paths (projected in parallel, rows in file order) or
    an open ``Reader`` (its file is projected from the start). ``device=`` captures live
    instead, until ``duration`` seconds or ``limit`` packets, with the live options of
    :func:`paclo.capture` (``snaplen``, ``promisc``, ``timeout_ms``, ``buffer_size``,
    ``immediate``, ``on_ready``). ``view="analysis"`` returns the analysis view (text
    addresses, time types, protocol names: ``paclo.analysis_view``).

    ``flow_id=True`` adds a ``flow_id`` column: the id of each packet's flow, as in the
    ``flow_id`` column of ``flows(source, flow_id=True, ...)`` with the same ``bidirectional``,
    ``idle_timeout``, ``active_timeout`` and ``max_flows`` (null for packets in no flow).
    Those options apply only with ``flow_id=True``.

    ``progress=True`` draws paclo's progress line on stderr when it is a terminal: the
    bytes read of the files' total size (files only).

    ``threads`` reads one classic pcap file with that many threads (``None``: every core;
    ``1``: one thread); the rows and flow ids are those of one thread (see docs/flows.md,
    "Threads"). A pcapng file, a list of files, and ``flow_id=True`` with timeouts or
    ``max_flows`` are read as with one thread.
    """
    _check_view(view)
    check_bool("flow_id", flow_id)
    nthreads = _threads(threads)
    options = _meter_options(bidirectional, idle_timeout, active_timeout, max_flows)
    if not flow_id:
        given = [k for k, v in options.items() if v not in (None, False)]
        if given:
            raise TypeError(f"project() options {', '.join(given)} apply only with flow_id=True")
    src = _source("project", source, device, duration=duration, limit=limit, live=live)
    flt = _check_filter(filter)
    with _progress(progress, src, "project") as bar:
        stream = _paclo.flow_project(
            src, filter=flt, flow_id=flow_id, progress=bar if bar.enabled else None, threads=nthreads, **options
        )
    return _view(_table(stream), view)


def flows(
    source: Any = None,
    *,
    device: str | None = None,
    bidirectional: bool = False,
    idle_timeout: float | None = None,
    active_timeout: float | None = None,
    features: str | list[str] = "basic",
    splt: int = 10,
    max_flows: int | None = None,
    flow_id: bool = False,
    filter: str | None = None,
    duration: float | None = None,
    limit: int | None = None,
    view: View = "numeric",
    progress: bool = False,
    threads: int | None = None,
    **live: Any,
) -> pa.Table:
    """The flow table: one row per flow, aggregated natively.

    ``idle_timeout``/``active_timeout`` are seconds (int or float); a flow is split when
    no packet arrived for ``idle_timeout`` or when it has lasted ``active_timeout``, and
    the table then has an ``expiration_reason`` column. ``bidirectional=True`` keys flows
    by the canonical endpoint pair (the smaller endpoint first) and adds per-direction
    counters. A list of paths is aggregated as one capture. ``device=`` captures live
    instead, as for :func:`project` (on a device, flows also expire on the wall clock).
    ``view="analysis"`` returns the analysis view.

    ``features`` adds column groups: ``"statistical"`` (packet size and inter-arrival
    statistics, per-flag counts), ``"splt"`` (the first ``splt`` packets' sizes,
    directions and gaps), ``"mac"``, ``"app"`` (application protocol, server name, user
    agent, ALPN), ``"all"`` (those four), ``"fingerprints"`` (the first ``ja4``, ``ja4s``,
    ``ja4h``, ``ja4t``, ``ja4ts``, ``ja4l_c``, ``ja4l_s``, ``ja4ssh``, ``ja4x`` of each
    flow; JA4+ methods are FoxIO-licensed and computed only when named), or one of those
    column names; a name or a list. ``max_flows`` bounds the live flows: a
    new flow beyond it evicts the least recently active one (``expiration_reason``
    ``"evicted"``, counted in the schema metadata ``paclo.flows_evicted``).
    ``flow_id=True`` adds a first column ``flow_id``: the flow's number in the order flows
    began, which ``project(..., flow_id=True)`` gives each packet. ``progress=True`` draws
    a progress line as for :func:`project`. ``threads`` reads one classic pcap file with
    that many threads (``None``: every core), the table that of one thread; with timeouts,
    ``max_flows`` or feature groups the file is read on one thread (docs/flows.md, "Threads").
    """
    options = _meter_options(bidirectional, idle_timeout, active_timeout, max_flows)
    nthreads = _threads(threads)
    features = _features(features)
    splt = check_int("splt", splt, 1, MAX_SPLT)
    check_bool("flow_id", flow_id)
    _check_view(view)
    src = _source("flows", source, device, duration=duration, limit=limit, live=live)
    flt = _check_filter(filter)
    with _progress(progress, src, "flows") as bar:
        stream = _paclo.flow_table(
            src,
            filter=flt,
            features=features,
            splt=splt,
            flow_id=flow_id,
            progress=bar if bar.enabled else None,
            threads=nthreads,
            **options,
        )
    return _view(_table(stream), view)


def flow_stream(
    source: Any = None,
    *,
    device: str | None = None,
    bidirectional: bool = False,
    idle_timeout: float | None = 120,
    active_timeout: float | None = 1800,
    features: str | list[str] = "basic",
    splt: int = 10,
    max_flows: int | None = None,
    filter: str | None = None,
    batch_rows: int = 65536,
    duration: float | None = None,
    limit: int | None = None,
    **live: Any,
) -> _paclo.FlowStream:
    """Flows as they expire: an iterator of pyarrow RecordBatches (the schema of
    ``flows(flow_id=True)`` with ``expiration_reason``), then the flows still live at the
    end.

    A flow expires ``idle_timeout`` seconds after its last packet (as soon as a later
    packet's time, or on a device the wall clock, passes that), at its first packet
    ``active_timeout`` seconds or more after it began, or when ``max_flows`` live flows
    are reached and it is the least recently active (``"evicted"``). Memory is
    proportional to the live flows. The options are those of :func:`flows`;
    ``batch_rows`` bounds the rows of a batch. On files the concatenated batches hold the
    rows of ``flows()`` with the same options. ``device=`` meters a live device, until
    ``duration`` seconds, ``limit`` packets or ``.stop()`` (the live flows then come as
    the last batches); the live options are those of :func:`paclo.capture`. ``.stats()``
    gives the counters, ``.close()`` ends the stream at once.
    """
    options = _meter_options(bidirectional, idle_timeout, active_timeout, max_flows)
    features = _features(features)
    splt = check_int("splt", splt, 1, MAX_SPLT)
    batch_rows = check_int("batch_rows", batch_rows, 1, 2**63 - 1)
    src = _source("flow_stream", source, device, duration=duration, limit=limit, live=live, bounded=False)
    return _paclo.flow_stream(
        src, filter=_check_filter(filter), features=features, splt=splt, batch_rows=batch_rows, **options
    )


def flow_topn(
    source: Any = None,
    n: int = 10,
    *,
    device: str | None = None,
    by: Literal["packets", "bytes"] = "packets",
    bidirectional: bool = False,
    filter: str | None = "udp or tcp",
    duration: float | None = None,
    limit: int | None = None,
    progress: bool = False,
    threads: int | None = None,
    **live: Any,
) -> list[dict[str, Any]]:
    """The ``n`` largest flows: ``[{"flow": {"proto", "src", "dst"}, "packets", "bytes"}]``.

    Sorted by ``by`` descending, ties by flow key ascending, so the output is
    deterministic. ``src``/``dst`` are ``"ip:port"`` (``"[v6]:port"`` for IPv6, RFC 5952
    text), or the address alone without ports. ``bytes`` sums wire lengths. ``device=``
    captures live instead, as for :func:`project`. ``progress=True`` draws a progress line
    as for :func:`project`; ``threads`` as for :func:`flows`.
    """
    src = _source("flow_topn", source, device, duration=duration, limit=limit, live=live)
    return _topn(src, n, by=by, bidirectional=bidirectional, filter=filter, progress=progress, threads=threads)[0]


def _topn(
    source: Any,
    n: int,
    *,
    by: str,
    bidirectional: bool,
    filter: str | None,
    progress: bool = False,
    threads: int | None = None,
) -> tuple[list[dict[str, Any]], int, int]:
    """``flow_topn`` plus the number of flows and of packets aggregated; ``source`` is
    what :func:`_source` returns, or anything :func:`_paths` takes."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, not {n!r}")
    if by not in ("packets", "bytes"):
        raise ValueError(f"by must be 'packets' or 'bytes', not {by!r}")
    check_bool("bidirectional", bidirectional)
    nthreads = _threads(threads)
    src: list[str] | LiveSource = cast(LiveSource, source) if isinstance(source, dict) else _paths(source)
    flt = _check_filter(filter)
    with _progress(progress, src, "flow_topn") as bar:
        rows, nflows, npackets = _paclo.flow_topn(
            src,
            n,
            by_bytes=by == "bytes",
            bidirectional=bidirectional,
            filter=flt,
            progress=bar if bar.enabled else None,
            threads=nthreads,
        )
    return rows, nflows, npackets


def read_batches(
    path: str | os.PathLike[str] | None = None,
    *,
    device: str | None = None,
    batch_size: int = 65536,
    filter: str | None = None,
    duration: float | None = None,
    limit: int | None = None,
    **live: Any,
) -> Iterator[pa.RecordBatch]:
    """Raw packets as pyarrow RecordBatches (``ts_ns, caplen, wirelen, data``), read lazily.

    A truncated last record raises after the batches before it were yielded. Ctrl-C
    raises KeyboardInterrupt while a batch is read; the iterator stays usable. ``device=``
    reads a live device instead (until ``duration``, ``limit``, or the end of iteration),
    with the live options of :func:`paclo.capture`.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, not {batch_size!r}")
    if device is None and path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, not {type(path).__name__}")
    src = _source("read_batches", path, device, duration=duration, limit=limit, live=live, bounded=False)
    source = src[0] if isinstance(src, list) else src
    stream = _paclo.read_batches(source, batch_size=batch_size, filter=_check_filter(filter))
    # Iterating the native stream yields pyarrow batches; it checks for signals itself.
    return stream


def _as_arrow(column: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        return column
    if hasattr(column, "__arrow_c_stream__") and not hasattr(column, "dtype"):
        return pa.chunked_array(column)
    dtype = getattr(column, "dtype", None)
    if getattr(dtype, "kind", None) == "S" and getattr(dtype, "itemsize", None) == 16:
        # NumPy strips trailing NUL bytes of S16 items on conversion: use the raw buffer.
        import numpy as np

        raw = np.ascontiguousarray(column)
        return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), len(raw), [None, pa.py_buffer(raw.tobytes())])
    values = column.tolist() if hasattr(column, "tolist") else list(column)
    return pa.array(values, type=pa.binary(16))


def ip_to_str(column: Any, version: Any = None) -> Any:
    """Addresses as text: dotted IPv4, RFC 5952 IPv6.

    ``column`` holds 16-byte addresses (IPv4-mapped for IPv4) as a pyarrow Array or
    ChunkedArray, a NumPy array (``S16`` or object), a pandas Series, a list, or one
    ``bytes`` value. The result has the input's kind: a pyarrow string array, a NumPy
    object array, a pandas Series (same index), a list, or a ``str``; nulls stay null.

    An IPv4-mapped address is printed as IPv4; pass the ``ip_version`` column as
    ``version`` to print rows whose version is 6 as IPv6 (``::ffff:a.b.c.d``) instead.
    """
    if isinstance(column, (bytes, bytearray)):
        if len(column) != 16:
            raise ValueError(f"an address is 16 bytes, got {len(column)}")
        v = None if version is None else pa.array([version], type=pa.uint8())
        return address_strings(pa.array([bytes(column)], type=pa.binary(16)), v)[0].as_py()
    ver = None if version is None else _as_arrow_version(version)
    kind = type(column).__module__.split(".")[0]
    arrow = _as_arrow(column)
    text = address_strings(arrow, ver)
    out: Any = text if isinstance(arrow, pa.ChunkedArray) else text.combine_chunks()
    if kind == "pyarrow" or isinstance(column, (pa.Array, pa.ChunkedArray)):
        return out
    if kind == "pandas":
        import pandas as pd

        return pd.Series(out.to_pylist(), index=column.index, name=getattr(column, "name", None), dtype=object)
    if kind == "numpy":
        import numpy as np

        return np.array(out.to_pylist(), dtype=object)
    if kind == "polars":
        import polars as pl

        return pl.Series(getattr(column, "name", ""), out.to_pylist(), dtype=pl.String)
    return out.to_pylist()


def _as_arrow_version(version: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(version, (pa.Array, pa.ChunkedArray)):
        return version
    if hasattr(version, "__arrow_c_stream__") and not hasattr(version, "dtype"):
        return pa.chunked_array(version)
    values = version.tolist() if hasattr(version, "tolist") else list(version)
    return pa.array(values, type=pa.uint8())
