"""Offline scenarios: each reads a whole dataset through paclo's public API.

A scenario is a function `(path, count) -> callable`; the callable does one full pass and
returns the scenario fields: `packets`, `bytes` (captured bytes), `decode_errors` and, for
the flow scenarios, `unique_flows`. The worker times the callable. `probe` (an
AllocationProbe, given only for the untimed Python-allocation pass) is called once per packet
where the scenario has a per-packet Python step.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NotRequired, Protocol, TypedDict, TypeVar

if TYPE_CHECKING:
    from .metrics import AllocationProbe

_T = TypeVar("_T")
_A = TypeVar("_A")


class ScenarioFields(TypedDict):
    """What one pass of a scenario returns; the worker adds the timing and resource metrics."""

    packets: int
    bytes: int
    decode_errors: int
    unique_flows: NotRequired[int]
    written_bytes: NotRequired[int]
    threads: NotRequired[int]


#: The ``threads=`` of the scenarios that call ``paclo.project`` / ``paclo.flows``: one,
#: so that they measure the loop's cost per packet (a single file is otherwise read by
#: every core); recorded in each of their runs.
THREADS = 1


class Scenario(Protocol):
    """``(path, count, probe=None) -> callable``: the callable does one full pass."""

    def __call__(self, path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]: ...


def _iter(iterable: Iterable[_T], probe: AllocationProbe | None) -> Iterable[_T]:
    """The iterable itself, or wrapped by the allocation probe (untimed pass only)."""
    return iterable if probe is None else probe.iter(iterable)


def _step(step: Callable[[_A, _T], _A], probe: AllocationProbe | None) -> Callable[[_A, _T], _A]:
    """The reducer step itself, or wrapped by the allocation probe (untimed pass only)."""
    return step if probe is None else probe.fn(step)


def _flow_key(m: dict[str, Any]) -> tuple[tuple[str, Any], ...] | None:
    """A hashable form of a packet map's `decoded.l3.flow_key` (None when there is none)."""
    decoded = m.get("decoded")
    if decoded is None:
        return None
    l3 = decoded.get("l3")
    if l3 is None:
        return None
    key = l3.get("flow_key")
    if key is None:
        return None
    return tuple(key.items())


def raw_seq(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def run() -> ScenarioFields:
        n = 0
        nbytes = 0
        for pkt in _iter(paclo.read(path), probe):
            n += 1
            nbytes += pkt.caplen
        return {"packets": n, "bytes": nbytes, "decode_errors": 0}

    return run


def sync_loop(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    """The native loop probe: the whole read in Rust, no Python per packet."""
    from paclo import _paclo

    def run() -> ScenarioFields:
        packets, nbytes = _paclo.count_packets(path)
        return {"packets": packets, "bytes": nbytes, "decode_errors": 0}

    return run


def raw_reduce(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def step(acc: list[int], pkt: paclo.Packet) -> list[int]:
        acc[0] += 1
        acc[1] += pkt.caplen
        return acc

    def run() -> ScenarioFields:
        acc = paclo.reduce(_step(step, probe), [0, 0], path=path)
        return {"packets": acc[0], "bytes": acc[1], "decode_errors": 0}

    return run


def full_decode(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def run() -> ScenarioFields:
        n = nbytes = errors = 0
        for m in _iter(paclo.read(path, decode="full"), probe):
            n += 1
            nbytes += m["caplen"]
            if "decode_error" in m:
                errors += 1
        return {"packets": n, "bytes": nbytes, "decode_errors": errors}

    return run


def full_reduce(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def step(acc: list[int], m: dict[str, Any]) -> list[int]:
        acc[0] += 1
        acc[1] += m["caplen"]
        if "decode_error" in m:
            acc[2] += 1
        return acc

    def run() -> ScenarioFields:
        acc = paclo.reduce(_step(step, probe), [0, 0, 0], path=path, decode="full")
        return {"packets": acc[0], "bytes": acc[1], "decode_errors": acc[2]}

    return run


def flow_aggregate(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def run() -> ScenarioFields:
        n = nbytes = errors = 0
        counts: dict[tuple[tuple[str, Any], ...], int] = {}
        for m in _iter(paclo.read(path, decode="full"), probe):
            n += 1
            nbytes += m["caplen"]
            if "decode_error" in m:
                errors += 1
            key = _flow_key(m)
            if key is not None:
                counts[key] = counts.get(key, 0) + 1
        return {"packets": n, "bytes": nbytes, "decode_errors": errors, "unique_flows": len(counts)}

    return run


def flow_reduce(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def step(acc: list[Any], m: dict[str, Any]) -> list[Any]:
        acc[0] += 1
        acc[1] += m["caplen"]
        if "decode_error" in m:
            acc[2] += 1
        key = _flow_key(m)
        if key is not None:
            counts = acc[3]
            counts[key] = counts.get(key, 0) + 1
        return acc

    def run() -> ScenarioFields:
        init: list[Any] = [0, 0, 0, {}]
        acc = paclo.reduce(_step(step, probe), init, path=path, decode="full")
        return {"packets": acc[0], "bytes": acc[1], "decode_errors": acc[2], "unique_flows": len(acc[3])}

    return run


def _column_sum(table: Any, name: str) -> int:
    import pyarrow.compute as pc

    total = pc.sum(table.column(name)).as_py()
    return int(total or 0)


def flow_project(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def run() -> ScenarioFields:
        table = paclo.project(path, threads=THREADS)
        return {
            "threads": THREADS,
            "packets": table.num_rows,
            "bytes": _column_sum(table, "caplen"),
            # Rows without an IP protocol: on the perf datasets (all TCP/UDP over IPv4),
            # each one is a packet the projection failed to decode.
            "decode_errors": table.column("protocol").null_count,
        }

    return run


def write_pipeline(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def run() -> ScenarioFields:
        fd, out = tempfile.mkstemp(prefix="paclo-perf-write-", suffix=".pcap")
        os.close(fd)
        try:
            n = nbytes = 0
            with paclo.PcapWriter(out) as writer:
                for pkt in _iter(paclo.read(path), probe):
                    writer.write(pkt)
                    n += 1
                    nbytes += pkt.caplen
            written = os.path.getsize(out)
        finally:
            os.unlink(out)
        # A classic pcap of the same packets: 24-byte header + 16 per record + the bytes.
        if written != 24 + 16 * n + nbytes:
            raise RuntimeError(
                f"write-pipeline wrote {written} bytes, expected {24 + 16 * n + nbytes} for {n} packets"
            )
        return {"packets": n, "bytes": nbytes, "decode_errors": 0, "written_bytes": written}

    return run


def flow_table(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import paclo

    def run() -> ScenarioFields:
        table = paclo.flows(path, threads=THREADS)
        return {
            "threads": THREADS,
            "packets": _column_sum(table, "packets"),
            "bytes": _column_sum(table, "bytes"),
            # Packets left out of the table (no IP layer or no known protocol): decode
            # failures on the perf datasets.
            "decode_errors": int(table.schema.metadata[b"paclo.packets_not_aggregated"]),
            "unique_flows": table.num_rows,
        }

    return run


def arrow_batches(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import pyarrow.compute as pc

    import paclo

    def run() -> ScenarioFields:
        n = nbytes = 0
        for batch in _iter(paclo.read_batches(path), probe):
            n += batch.num_rows
            nbytes += int(pc.sum(batch.column("caplen")).as_py() or 0)
        return {"packets": n, "bytes": nbytes, "decode_errors": 0}

    return run


SCENARIOS: dict[str, Scenario] = {
    "raw-seq": raw_seq,
    "sync-loop": sync_loop,
    "raw-reduce": raw_reduce,
    "full-decode": full_decode,
    "full-reduce": full_reduce,
    "flow-aggregate": flow_aggregate,
    "flow-reduce": flow_reduce,
    "flow-project": flow_project,
    "write-pipeline": write_pipeline,
    "flow-table": flow_table,
    "arrow-batches": arrow_batches,
}
