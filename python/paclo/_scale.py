"""What the Parquet export and the Dask readers share: which captures a source names,
what each is called, and the per-capture table of each kind with its ``capture`` column.

A capture's *name* is its path relative to the common directory of everything the
source names, with ``/`` separators (``day1/trace.pcap``): it is the value of the
``capture`` column and, plus ``.parquet``, the path of its Parquet output, so the two
agree and outputs of captures that share a file name in different directories do not
collide.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pyarrow as pa

from . import _flows

__all__ = ["CAPTURE_COLUMN", "KINDS", "Kind", "Options", "Source", "captures"]

Kind = Literal["flows", "projection", "packets"]
KINDS: tuple[Kind, ...] = ("flows", "projection", "packets")
CAPTURE_COLUMN = "capture"

# A directory contributes the files with these extensions, and any other file that starts
# with a pcap or pcapng magic number (tcpdump -C rotates to trace.pcap1, trace.pcap2, ...).
_EXTENSIONS = (".pcap", ".pcapng", ".cap")
_MAGICS = (
    b"\xd4\xc3\xb2\xa1",  # classic, microseconds, little-endian
    b"\xa1\xb2\xc3\xd4",  # classic, microseconds, big-endian
    b"\x4d\x3c\xb2\xa1",  # classic, nanoseconds, little-endian
    b"\xa1\xb2\x3c\x4d",  # classic, nanoseconds, big-endian
    b"\x0a\x0d\x0d\x0a",  # pcapng section header block
)
_PACKET_BATCH_ROWS = 1 << 18


@dataclass(frozen=True)
class Source:
    """One capture: its absolute ``path`` and its ``name`` (see the module doc)."""

    path: str
    name: str


def _is_capture(path: str) -> bool:
    if path.lower().endswith(_EXTENSIONS):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) in _MAGICS
    except OSError:
        return False


def _walk(directory: str, exclude: str | None) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(directory):
        # Hidden directories and the output directory are not inputs.
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and (exclude is None or os.path.realpath(os.path.join(root, d)) != exclude)
        )
        for f in sorted(files):
            p = os.path.join(root, f)
            if not f.startswith(".") and os.path.isfile(p) and _is_capture(p):
                found.append(p)
    return found


def captures(sources: Any, *, exclude: str | os.PathLike[str] | None = None) -> list[Source]:
    """The captures ``sources`` names, in order, each once.

    ``sources`` is a path or a list of paths; a file is taken whatever its name, a
    directory contributes its capture files (recursively, sorted, hidden entries
    skipped), ``exclude`` (the output directory) is never walked. A path that does not
    exist raises ``FileNotFoundError`` naming it, before anything is read.
    """
    if isinstance(sources, (str, os.PathLike)):
        items: Sequence[Any] = [sources]
    elif isinstance(sources, (list, tuple)):
        items = sources
    else:
        raise TypeError(f"sources must be a path or a list of paths, not {type(sources).__name__}")
    if not items:
        raise ValueError("sources must name at least one capture file or directory, got an empty list")
    skip = None if exclude is None else os.path.realpath(os.fspath(exclude))
    files: list[str] = []
    roots: list[str] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise TypeError(f"sources list items must be paths (str or os.PathLike), not {type(item).__name__}")
        p = os.path.abspath(os.fsdecode(os.fspath(item)))
        if os.path.isdir(p):
            roots.append(p)
            files.extend(_walk(p, skip))
        elif os.path.exists(p):
            roots.append(os.path.dirname(p))
            files.append(p)
        else:
            raise FileNotFoundError(2, f"capture not found: {p}", p)
    root = os.path.commonpath(roots)
    seen: set[str] = set()
    out: list[Source] = []
    for p in files:
        real = os.path.realpath(p)
        if real in seen:
            continue
        seen.add(real)
        out.append(Source(p, os.path.relpath(p, root).replace(os.sep, "/")))
    return out


@dataclass(frozen=True)
class Options:
    """What to make of each capture: the ``kind`` of table and paclo's options for it.

    Built with :meth:`make`, which checks every value (through paclo itself, on an empty
    capture, so an invalid BPF filter fails before any capture is read).
    """

    kind: Kind
    filter: str | None = None
    bidirectional: bool = False
    idle_timeout: float | None = None
    active_timeout: float | None = None

    @classmethod
    def make(
        cls,
        kind: str,
        *,
        filter: str | None = None,
        bidirectional: bool = False,
        idle_timeout: float | None = None,
        active_timeout: float | None = None,
    ) -> Options:
        if kind not in KINDS:
            raise ValueError(f"kind must be 'flows', 'projection' or 'packets', not {kind!r}")
        if kind != "flows":
            for name, value, unset in (
                ("bidirectional", bidirectional, False),
                ("idle_timeout", idle_timeout, None),
                ("active_timeout", active_timeout, None),
            ):
                if value is not unset:
                    raise ValueError(f"{name} applies to kind='flows' only, not kind={kind!r}")
        opts = cls(kind, filter, bidirectional, idle_timeout, active_timeout)
        opts.schema()
        return opts

    def as_dict(self) -> dict[str, Any]:
        """The options as JSON-able values (recorded in the manifest and the files)."""
        d: dict[str, Any] = {"kind": self.kind, "filter": self.filter}
        if self.kind == "flows":
            d.update(bidirectional=self.bidirectional, idle_timeout=self.idle_timeout, active_timeout=self.active_timeout)
        return d

    def batches(self, path: str) -> Iterator[pa.RecordBatch]:
        """The table of one capture, batch by batch (packets are read lazily)."""
        if self.kind == "packets":
            yield from _flows.read_batches(path, batch_size=_PACKET_BATCH_ROWS, filter=self.filter)
            return
        yield from self.table(path).to_batches()

    def table(self, path: str) -> pa.Table:
        """The whole table of one capture."""
        if self.kind == "flows":
            return _flows.flows(
                path,
                bidirectional=self.bidirectional,
                idle_timeout=self.idle_timeout,
                active_timeout=self.active_timeout,
                filter=self.filter,
            )
        if self.kind == "projection":
            return _flows.project(path, filter=self.filter)
        batches = list(self.batches(path))
        return pa.Table.from_batches(batches, schema=self.schema()) if batches else self.schema().empty_table()

    def schema(self) -> pa.Schema:
        """paclo's schema for these options, without its per-table metadata."""
        return _schema(self)

    def schema_with_capture(self) -> pa.Schema:
        """The schema of the tables with the ``capture`` column first."""
        return self.schema().insert(0, pa.field(CAPTURE_COLUMN, pa.string(), nullable=False))

    def with_capture(self, batch: pa.RecordBatch, name: str, schema: pa.Schema | None = None) -> pa.RecordBatch:
        """``batch`` with the ``capture`` column (``name`` in every row) in front, with
        ``schema`` (default: :meth:`schema_with_capture` and the batch's metadata)."""
        if schema is None:
            schema = self.schema_with_capture().with_metadata(batch.schema.metadata)
        return pa.RecordBatch.from_arrays([_constant(name, batch.num_rows), *batch.columns], schema=schema)


def _constant(text: str, rows: int) -> pa.Array:
    """A string column with ``text`` in every row, built from buffers: converting Python
    values (``pa.array``, ``pa.scalar``) makes pyarrow import pandas."""
    raw = text.encode()
    if rows * len(raw) >= 2**31:
        raise ValueError(f"capture name too long for a string column of {rows} rows: {text!r}")
    offsets = np.arange(rows + 1, dtype=np.int32) * np.int32(len(raw))
    buffers = [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(raw * rows)]
    return pa.Array.from_buffers(pa.string(), rows, buffers)


@functools.lru_cache(maxsize=64)
def _schema(options: Options) -> pa.Schema:
    # paclo's own schema: the table it makes of an empty capture with these options.
    from ._io import write_pcap

    with tempfile.TemporaryDirectory(prefix="paclo-schema-") as d:
        empty = os.path.join(d, "empty.pcap")
        write_pcap(empty, [])
        table = options.table(empty) if options.kind != "packets" else None
        schema = table.schema if table is not None else pa.schema(_flows.read_batches(empty, filter=options.filter))
    return schema.remove_metadata()
