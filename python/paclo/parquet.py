"""Many captures into Parquet: one file per capture, in parallel, resumable.

::

    report = paclo.to_parquet("captures/", "flows-parquet/", kind="flows", bidirectional=True)
    print(report.summary())            # 50 captures: 49 written, 0 skipped, 1 failed
    for r in report.failed:
        print(r.input, r.error)

    duckdb.sql("select protocol, sum(bytes) from 'flows-parquet/**/*.parquet' group by 1")

Each capture ``IN`` becomes ``OUT/<name>.parquet``, where ``name`` is the capture's path
relative to the common directory of the sources (``day1/trace.pcap``); its rows are the
table of the chosen ``kind`` (docs/flows.md's column dictionary) with a ``capture``
column (the name) in front, so a directory of outputs reads as one dataset in duckdb,
Dask, polars or pyarrow, and every row says where it came from.

Captures are converted by a pool of threads (paclo's native loops and pyarrow's writer
run without the GIL). An output is written under a hidden temporary name and renamed
when complete; ``OUT/_paclo_manifest.jsonl`` then records it with its input's size and
modification time and the options, so a re-run skips it, and an interrupted run leaves
nothing that a re-run takes as complete. A capture that fails (unreadable, not a
capture) is reported by path and the others are written.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import re
import threading
import time
import uuid
import warnings
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa

from . import _paclo
from ._progress import Progress
from ._scale import Options, Source, captures

__all__ = ["COMPRESSIONS", "MANIFEST", "CaptureResult", "ParquetReport", "read_manifest", "schema", "to_parquet"]

MANIFEST = "_paclo_manifest.jsonl"
COMPRESSIONS = ("zstd", "snappy", "lz4", "gzip", "brotli", "none")
_LOCK = "_paclo.lock"
_PARTIAL = re.compile(r"^\..+\.parquet\.[0-9a-f]{32}\.partial$")
_PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class CaptureResult:
    """What became of one capture.

    ``status`` is ``"written"``, ``"skipped"`` (its output was complete already) or
    ``"failed"`` (``error`` says why, as ``"ExceptionType: message"``). ``rows`` is the
    output's row count (None when failed); ``seconds`` the time spent converting it.
    """

    input: str
    output: str
    status: Literal["written", "skipped", "failed"]
    rows: int | None = None
    error: str | None = None
    seconds: float = 0.0


@dataclass(frozen=True)
class ParquetReport:
    """The outcome of :func:`to_parquet`: one :class:`CaptureResult` per capture, in the
    order of the sources."""

    out_dir: str
    results: list[CaptureResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def written(self) -> list[CaptureResult]:
        return [r for r in self.results if r.status == "written"]

    @property
    def skipped(self) -> list[CaptureResult]:
        return [r for r in self.results if r.status == "skipped"]

    @property
    def failed(self) -> list[CaptureResult]:
        return [r for r in self.results if r.status == "failed"]

    @property
    def ok(self) -> bool:
        """True when no capture failed."""
        return not self.failed

    def summary(self) -> str:
        n = len(self.results)
        return (
            f"{n} capture{'s' if n != 1 else ''}: {len(self.written)} written, "
            f"{len(self.skipped)} skipped, {len(self.failed)} failed"
        )


# ---- the manifest ------------------------------------------------------------------------


class _Manifest:
    """``OUT/_paclo_manifest.jsonl``: one JSON line per complete output, the last line of
    an output winning. A line cut short by a crash names nothing and is dropped."""

    def __init__(self, out_dir: str, *, compact: bool = False) -> None:
        self.out_dir = out_dir
        self.path = os.path.join(out_dir, MANIFEST)
        self.entries: dict[str, dict[str, Any]] = {}
        lines = 0
        try:
            with open(self.path, encoding="utf-8") as f:
                for line in f:
                    lines += 1
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(entry, dict) and isinstance(entry.get("output"), str):
                        self.entries[entry["output"]] = entry
        except FileNotFoundError:
            pass
        if compact and lines != len(self.entries):
            self._rewrite()

    def _rewrite(self) -> None:
        tmp = self.path + f".{uuid.uuid4().hex}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            for entry in self.entries.values():
                f.write(json.dumps(entry, sort_keys=True) + "\n")
        os.replace(tmp, self.path)

    def complete(self, output: str, st: os.stat_result, options: dict[str, Any]) -> dict[str, Any] | None:
        """The entry of ``output`` if it is complete for this input and these options."""
        e = self.entries.get(output)
        if e is None or e.get("size") != st.st_size or e.get("mtime_ns") != st.st_mtime_ns or e.get("options") != options:
            return None
        path = os.path.join(self.out_dir, *output.split("/"))
        try:
            if os.path.getsize(path) != e.get("output_size"):
                return None
            with open(path, "rb") as f:
                f.seek(-len(_PARQUET_MAGIC), os.SEEK_END)
                if f.read() != _PARQUET_MAGIC:
                    return None
        except OSError:
            return None
        return e

    def record(self, entry: dict[str, Any]) -> None:
        self.entries[entry["output"]] = entry
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


@contextmanager
def _locked(out_dir: str) -> Iterator[None]:
    """Hold ``OUT/_paclo.lock``: one export at a time writes to a directory."""
    fd = os.open(os.path.join(out_dir, _LOCK), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RuntimeError(f"another to_parquet run is writing to {out_dir}") from None
        yield
    finally:
        os.close(fd)


def _remove_partials(out_dir: str) -> None:
    """Delete the temporary files of runs that were killed (the lock is held)."""
    for root, _dirs, files in os.walk(out_dir):
        for f in files:
            if _PARTIAL.match(f):
                with suppress(FileNotFoundError):
                    os.unlink(os.path.join(root, f))


# ---- one capture -------------------------------------------------------------------------


class _Cancelled(Exception):
    pass


@dataclass(frozen=True)
class _Job:
    source: Source
    output: str  # relative to out_dir, "/"-separated
    stat: os.stat_result


def _convert(job: _Job, options: Options, out_dir: str, compression: str, cancel: threading.Event) -> tuple[int, int]:
    """Write ``job``'s output under a temporary name and rename it into place; return
    (rows, output size). On any exception (and on cancel) the temporary file is removed."""
    import pyarrow.parquet as pq  # here: importing it costs paclo's import ~0.1 s

    final = os.path.join(out_dir, *job.output.split("/"))
    directory = os.path.dirname(final)
    os.makedirs(directory, exist_ok=True)
    tmp = os.path.join(directory, f".{os.path.basename(final)}.{uuid.uuid4().hex}.partial")
    writer: Any = None
    rows = 0
    try:
        batches = options.batches(job.source.path)
        first = next(batches, None)
        meta: dict[bytes | str, bytes | str] = dict(first.schema.metadata or {}) if first is not None else {}
        meta.update({
            "paclo.capture": job.source.name,
            "paclo.options": json.dumps(options.as_dict(), sort_keys=True),
            "paclo.version": _paclo.__version__,
        })
        schema = options.schema_with_capture().with_metadata(meta)
        writer = pq.ParquetWriter(tmp, schema, compression=compression)
        if first is not None:
            writer.write_batch(options.with_capture(first, job.source.name, schema))
            rows += first.num_rows
            for batch in batches:
                if cancel.is_set():
                    raise _Cancelled
                writer.write_batch(options.with_capture(batch, job.source.name, schema))
                rows += batch.num_rows
        writer.close()
        writer = None
        if cancel.is_set():
            raise _Cancelled
        size = os.path.getsize(tmp)
        os.replace(tmp, final)
        return rows, size
    except BaseException:
        if writer is not None:
            with suppress(Exception):  # the original error is the one to raise
                writer.close()
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


# ---- the export --------------------------------------------------------------------------


def to_parquet(
    sources: Any,
    out_dir: str | os.PathLike[str],
    *,
    kind: Literal["flows", "projection", "packets"] = "flows",
    bidirectional: bool = False,
    idle_timeout: float | None = None,
    active_timeout: float | None = None,
    filter: str | None = None,
    workers: int | None = None,
    compression: str = "zstd",
    progress: bool = True,
) -> ParquetReport:
    """Convert each capture of ``sources`` to ``out_dir/<name>.parquet``; return a
    :class:`ParquetReport`.

    ``sources`` is a capture file, a directory (its ``*.pcap``, ``*.pcapng``, ``*.cap``
    files and other files with a capture's magic number, recursively) or a list of
    them. ``kind`` is ``"flows"`` (``paclo.flows`` of each capture, with
    ``bidirectional``, ``idle_timeout``, ``active_timeout``), ``"projection"``
    (``paclo.project``, one row per packet) or ``"packets"`` (``ts_ns, caplen, wirelen,
    data``, as ``paclo.read_batches``, streamed). ``filter`` is a BPF expression for
    every kind. ``workers`` is the number of captures converted at once (default: the
    number of CPUs, at most the number of captures). ``compression`` is the Parquet codec
    (one of ``COMPRESSIONS``). ``progress`` draws a progress line on stderr when it is a
    terminal.

    Outputs already complete for the same input size, modification time and options
    are skipped. A capture that fails is reported (``report.failed``, and a
    ``RuntimeWarning`` naming the first) and the others are written; invalid options,
    a missing source and a source with no captures raise before anything is written.
    Ctrl-C raises ``KeyboardInterrupt`` at once: captures being converted finish in the
    background and delete their temporary files; nothing incomplete is left under an
    output's name or in the manifest.
    """
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, not {progress!r}")
    options = Options.make(kind, filter=filter, bidirectional=bidirectional, idle_timeout=idle_timeout, active_timeout=active_timeout)
    report = _export(sources, out_dir, options, workers=workers, compression=compression, progress=progress)
    if report.failed:
        first = report.failed[0]
        more = f" (and {len(report.failed) - 1} more)" if len(report.failed) > 1 else ""
        warnings.warn(f"{report.summary()}: {first.input}: {first.error}{more}", RuntimeWarning, stacklevel=2)
    return report


def _export(
    sources: Any, out_dir: str | os.PathLike[str], options: Options, *, workers: int | None, compression: str, progress: bool
) -> ParquetReport:
    """:func:`to_parquet` with its options made, and without the warning (the command
    line reports failures itself)."""
    started = time.perf_counter()
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression must be one of {', '.join(COMPRESSIONS)}, not {compression!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be a positive integer or None, not {workers!r}")
    if not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir must be a str or os.PathLike, not {type(out_dir).__name__}")
    out = os.path.abspath(os.fsdecode(os.fspath(out_dir)))
    srcs = captures(sources, exclude=out)
    if not srcs:
        raise FileNotFoundError(2, f"no capture files in {sources!r}")
    os.makedirs(out, exist_ok=True)
    opts = options.as_dict()
    with _locked(out):
        _remove_partials(out)
        manifest = _Manifest(out, compact=True)
        results: dict[int, CaptureResult] = {}
        jobs: list[tuple[int, _Job]] = []
        for i, s in enumerate(srcs):
            output = s.name + ".parquet"
            out_path = os.path.join(out, *output.split("/"))
            try:
                st = os.stat(s.path)
            except OSError as e:
                results[i] = CaptureResult(s.path, out_path, "failed", error=_describe(e))
                continue
            entry = manifest.complete(output, st, opts)
            if entry is not None:
                results[i] = CaptureResult(s.path, out_path, "skipped", rows=entry.get("rows"))
            else:
                jobs.append((i, _Job(s, output, st)))
        n = min(workers or os.cpu_count() or 1, max(len(jobs), 1))
        total = sum(j.stat.st_size for _, j in jobs)
        bar = Progress(total=total, unit="bytes", label="to-parquet", enabled=None if progress else False)
        cancel = threading.Event()
        pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="paclo-parquet")
        try:
            pending: dict[Future[tuple[tuple[int, int], float]], tuple[int, _Job]] = {}
            for i, job in jobs:
                pending[pool.submit(_timed, job, options, out, compression, cancel)] = (i, job)
            finished = 0
            while pending:
                done, _ = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
                for fut in done:
                    i, job = pending.pop(fut)
                    out_path = os.path.join(out, *job.output.split("/"))
                    try:
                        (rows, size), seconds = fut.result()
                    except Exception as e:  # noqa: BLE001 - a failed capture is reported, the others go on
                        results[i] = CaptureResult(job.source.path, out_path, "failed", error=_describe(e))
                    else:
                        manifest.record({
                            "output": job.output,
                            "input": job.source.path,
                            "size": job.stat.st_size,
                            "mtime_ns": job.stat.st_mtime_ns,
                            "options": opts,
                            "rows": rows,
                            "output_size": size,
                            "paclo_version": _paclo.__version__,
                            "written_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                        })
                        results[i] = CaptureResult(job.source.path, out_path, "written", rows=rows, seconds=seconds)
                    finished += 1
                    failed = sum(1 for r in results.values() if r.status == "failed")
                    bar.status(f"{finished}/{len(jobs)} captures" + (f", {failed} failed" if failed else ""))
                    bar.advance(job.stat.st_size)
        except BaseException:
            cancel.set()
            pool.shutdown(wait=False, cancel_futures=True)
            bar.close()
            raise
        pool.shutdown(wait=True)
        bar.close()
    return ParquetReport(out, [results[i] for i in range(len(srcs))], time.perf_counter() - started)


def _timed(job: _Job, options: Options, out_dir: str, compression: str, cancel: threading.Event) -> tuple[tuple[int, int], float]:
    t = time.perf_counter()
    return _convert(job, options, out_dir, compression, cancel), time.perf_counter() - t


def read_manifest(out_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The manifest entries of ``out_dir`` (one per complete output), sorted by output."""
    return sorted(_Manifest(os.path.abspath(os.fspath(out_dir))).entries.values(), key=lambda e: str(e["output"]))


def schema(kind: Literal["flows", "projection", "packets"] = "flows", **options: Any) -> pa.Schema:
    """The schema of the Parquet outputs of ``kind`` with these options (``capture``
    first, then paclo's columns)."""
    return Options.make(kind, **options).schema_with_capture()
