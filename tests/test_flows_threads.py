"""``threads=``: one classic pcap file read by several threads gives the single-threaded
project, flows and flow_topn results, row by row; the option is checked, Ctrl-C stops
every thread, and what is not split (timeouts, pcapng, devices) says so or runs on one
thread."""

from __future__ import annotations

import pathlib
import struct

import pyarrow as pa
import pytest
from _foundation_util import Ng, keyboard_interrupt_after

import paclo
from paclo import _paclo
from paclo.perf import datasets


def _frame(src: int, dst: int, sport: int, dport: int, proto: int, pad: int) -> bytes:
    """An Ethernet/IPv4 frame, UDP or TCP, with ``pad`` payload bytes."""
    if proto == 17:
        l4 = struct.pack("!HHHH", sport, dport, 8 + pad, 0) + bytes(pad)
    else:
        l4 = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x18 if pad else 0x02, 512, 0, 0) + bytes(pad)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0, 64, proto, 0, src.to_bytes(4, "big"), dst.to_bytes(4, "big"))
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + l4


@pytest.fixture(scope="module")
def spanning(tmp_path_factory) -> pathlib.Path:
    """About 3 MB: 300 conversations (both directions, UDP and TCP) with packets all
    through the file, 100 more that begin in its second half, and ARP frames."""
    path = tmp_path_factory.mktemp("threads") / "spanning.pcap"
    early = []
    for i in range(150):
        a, b = 0x0A000000 + i, 0xC0A80101
        early += [_frame(a, b, 20000 + i, 53, 17, 20 + i % 9), _frame(b, a, 53, 20000 + i, 17, 48),
                  _frame(a, b, 20000 + i, 443, 6, 0), _frame(b, a, 443, 20000 + i, 6, 30)]
    late = [_frame(0x0B000000 + i, 0xC0A80102, 30000 + i, 80, 6, 10) for i in range(100)]
    early.append(b"\xff" * 6 + b"\x04" * 6 + b"\x08\x06" + bytes(28))
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    size, i, ts = 24, 0, 1_700_000_000 * 1_000_000
    while size < 3_200_000:
        f = late[i % len(late)] if size > 1_600_000 and i % 4 == 0 else early[i % len(early)]
        ts += 3_000_000 if i % 9973 == 0 else 7
        out.append(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(f), len(f) + 4) + f)
        size += 16 + len(f)
        i += 1
    path.write_bytes(b"".join(out))
    return path


@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("filter", [None, "tcp or arp"])
def test_flows_of_threads_equal_one_thread(spanning, bidirectional, filter):
    want = paclo.flows(spanning, bidirectional=bidirectional, filter=filter, flow_id=True, threads=1)
    assert want.num_rows >= 150
    for threads in (2, 3, 4, None):
        got = paclo.flows(spanning, bidirectional=bidirectional, filter=filter, flow_id=True, threads=threads)
        assert got.equals(want), threads
        assert got.schema.metadata == want.schema.metadata


def test_flows_with_timeouts_equal_one_thread(spanning):
    # Rows that depend on the whole order: read on one thread whatever threads= says.
    for options in ({"idle_timeout": 1.0}, {"active_timeout": 2.0, "bidirectional": True}, {"max_flows": 50},
                    {"features": "statistical"}):
        want = paclo.flows(spanning, threads=1, **options)
        assert paclo.flows(spanning, threads=2, **options).equals(want), options


def test_project_of_threads_equals_one_thread(spanning):
    want = paclo.project(spanning, threads=1)
    for threads in (2, 3, 4):
        got = paclo.project(spanning, threads=threads)
        assert got.num_rows == want.num_rows
        assert got.equals(want), threads
    ids = paclo.project(spanning, flow_id=True, bidirectional=True, threads=1)
    assert paclo.project(spanning, flow_id=True, bidirectional=True, threads=2).equals(ids)


def test_flow_topn_of_threads_equals_one_thread(spanning):
    for by in ("packets", "bytes"):
        want = paclo.flow_topn(spanning, 25, by=by, threads=1)
        assert paclo.flow_topn(spanning, 25, by=by, threads=3) == want


def test_pcapng_and_lists_read_as_before(spanning, tmp_path):
    builder = Ng().shb().idb(1)
    for p in paclo.read(spanning):
        builder.epb(0, p.ts_ns // 1000, p.data, wirelen=p.wirelen)
    ng = tmp_path / "spanning.pcapng"
    ng.write_bytes(builder.bytes())
    assert paclo.flows(ng, threads=2).equals(paclo.flows(spanning, threads=1))
    assert paclo.flows([spanning, spanning], threads=2).equals(paclo.flows([spanning, spanning], threads=1))


@pytest.mark.parametrize("bad", [0, -1, -8])
@pytest.mark.parametrize("function", ["flows", "project", "flow_topn"])
def test_threads_below_one_is_a_value_error(spanning, function, bad):
    with pytest.raises(ValueError, match="threads"):
        getattr(paclo, function)(spanning, threads=bad)


@pytest.mark.parametrize("bad", ["2", 2.0, True])
def test_threads_of_another_type_is_a_type_error(spanning, bad):
    with pytest.raises(TypeError, match="threads"):
        paclo.flows(spanning, threads=bad)


def test_threads_on_a_device_is_a_value_error():
    with pytest.raises(ValueError, match="threads applies to capture files"):
        paclo.flows(device="lo", duration=0.01, threads=2)


class _Recorder:
    def __init__(self) -> None:
        self.updates: list[tuple[float, float | None]] = []

    def update(self, done: float, total: float | None = None) -> None:
        self.updates.append((done, total))

    def close(self) -> None:
        pass


@pytest.mark.parametrize("call", ["flow_table", "flow_project"])
def test_progress_of_threads_adds_up_to_the_file(spanning, call):
    # The parts report their own bytes (the first part's include the file header).
    rec = _Recorder()
    getattr(_paclo, call)([str(spanning)], progress=rec, threads=3)
    size = spanning.stat().st_size
    done = [d for d, _ in rec.updates]
    assert rec.updates and all(t == size for _, t in rec.updates)
    assert done == sorted(done) and done[-1] == size, done


@pytest.fixture(scope="module")
def trap(tmp_path_factory) -> pathlib.Path:
    """About 3 MB of equal records, each payload ending in one whole fake record: the
    split's candidate in the middle of the file is inside a record, a false boundary the
    reader of the first part proves false, so the file is read again on one thread."""
    path = tmp_path_factory.mktemp("threads") / "trap.pcap"
    fake = struct.pack("<IIII", 1_700_000_000, 5, 8, 8) + b"\xab" * 8
    payload = _frame(0x01010101, 0x02020202, 1, 2, 17, 30) + b"\x5a" * 180 + fake
    count = (3 * 2**20 // (16 + len(payload))) | 1
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
    for i in range(count):
        out.append(struct.pack("<IIII", 1_700_000_000 + i // 1_000_000, i % 1_000_000, len(payload), len(payload))
                   + payload)
    path.write_bytes(b"".join(out))
    return path


@pytest.mark.parametrize("call", ["flow_table", "flow_project"])
def test_progress_after_a_false_boundary_ends_at_the_file(trap, call):
    # The parts' bytes are taken back before the rerun: the line never passes the file.
    want = pa.table(getattr(_paclo, call)([str(trap)], threads=1))
    rec = _Recorder()
    got = pa.table(getattr(_paclo, call)([str(trap)], progress=rec, threads=2))
    size = trap.stat().st_size
    done = [d for d, _ in rec.updates]
    assert rec.updates and all(t == size for _, t in rec.updates)
    assert done[-1] == size and max(done) <= size, done
    assert got.equals(want)


def test_ctrl_c_interrupts_every_thread(tmp_path):
    big = tmp_path / "big.pcap"
    datasets.generate("udp-64", 2_000_000, big)
    for call in (lambda: paclo.flows(big, threads=2), lambda: paclo.project(big, threads=2)):
        result = None
        with pytest.raises(KeyboardInterrupt), keyboard_interrupt_after(0.005):
            result = call()
        assert result is None
    # The threads were joined: the file is read again, whole.
    assert paclo.flows(big, threads=2).column("packets").to_pylist() == [2_000_000]
    assert isinstance(paclo.project(big, threads=2), pa.Table)
