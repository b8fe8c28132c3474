"""One packet source for files and devices: ``capture(path=)`` reads like ``read``, and the
flow functions take a live device as they take a file."""

from __future__ import annotations

import socket
import struct
import threading
import time
import warnings

import pyarrow as pa
import pytest
from _live_util import LO, live, payload

import paclo

# --- files: capture(path=) and read(path) are one reader ------------------------------------


def _frame(i: int) -> bytes:
    return bytes([i % 251]) * (60 + i)


def _classic(frames: list[bytes]) -> bytes:
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
    for i, fr in enumerate(frames):
        out += struct.pack("<IIII", 1_700_000_000 + i, 250 * i, len(fr), len(fr) + i % 3) + fr
    return out


def _read_all(path) -> tuple[list, list[str], dict]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        r = paclo.read(path)
        packets = list(r)
        stats = r.stats()
    return packets, [f"{x.category.__name__}: {x.message}" for x in w], stats


def _capture_all(path, **kw) -> tuple[list, list[str], dict]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cap = paclo.capture(path=path, **kw)
        packets = list(cap)
        stats = cap.stats()
    return packets, [f"{x.category.__name__}: {x.message}" for x in w], stats


_SHARED = ("schema_version", "state", "source", "bytes", "pcap", "stop_reason", "error", "truncated", "oversized_records")


def _same_stats(a: dict, b: dict) -> None:
    assert {k: a[k] for k in _SHARED} == {k: b[k] for k in _SHARED}
    for k in ("captured", "processed", "decode_errors"):
        assert a["packets"][k] == b["packets"][k], k


def test_capture_path_and_read_agree_on_a_truncated_file(tmp_path):
    frames = [_frame(i) for i in range(40)]
    data = _classic(frames)
    path = tmp_path / "cut.pcap"
    path.write_bytes(data[:-7])  # the last record loses 7 bytes

    packets, warned, stats = _read_all(path)
    c_packets, c_warned, c_stats = _capture_all(path, queue_cap=8)

    assert len(packets) == 39 and [bytes(p.data) for p in packets] == frames[:39]
    assert c_packets == packets
    assert [p.ts_ns for p in c_packets] == [p.ts_ns for p in packets]
    assert len(warned) == 1 and warned[0].startswith("TruncatedCaptureWarning: ")
    assert "truncated record 39" in warned[0] and "39 packets were read before it" in warned[0]
    assert c_warned == warned
    _same_stats(stats, c_stats)
    assert (stats["state"], stats["stop_reason"], stats["truncated"]) == ("closed", "eof", True)
    assert c_stats["packets"]["delivered"] == 39 and c_stats["queue"]["enqueued"] == 39


def test_capture_path_and_read_agree_on_a_filter_and_a_whole_file(tmp_path):
    path = tmp_path / "whole.pcap"
    path.write_bytes(_classic([_frame(i) for i in range(30)]))
    p1, w1, s1 = _read_all(path)
    p2, w2, s2 = _capture_all(path)
    assert p1 == p2 and len(p1) == 30 and w1 == w2 == []
    _same_stats(s1, s2)
    assert (s1["truncated"], s1["stop_reason"]) == (False, "eof")
    # The same BPF program runs on both (pcap_offline_filter over the mapped records); it
    # tests the length on the wire, as libpcap does.
    r = list(paclo.read(path, filter="greater 80"))
    c = list(paclo.capture(path=path, filter="greater 80"))
    assert r == c and [p.wirelen for p in r] == [w for w in (p.wirelen for p in p1) if w >= 80]
    assert len(r) == 11


def test_capture_path_raises_the_format_error_read_raises(tmp_path):
    """A record that claims 1 MiB is corruption: both name the record index and offset, after
    delivering the packets before it."""
    frames = [_frame(i) for i in range(5)]
    data = bytearray(_classic(frames))
    at = 24 + sum(16 + len(f) for f in frames[:3])
    struct.pack_into("<I", data, at + 8, 1 << 20)
    path = tmp_path / "bad.pcap"
    path.write_bytes(bytes(data))

    r = paclo.read(path)
    got = []
    with pytest.raises(paclo.PcapFormatError) as e1:
        got.extend(r)
    cap = paclo.capture(path=path)
    c_got = []
    with pytest.raises(paclo.PcapFormatError) as e2:
        c_got.extend(cap)
    assert got == c_got and len(got) == 3
    assert str(e1.value) == str(e2.value) and "record 3" in str(e1.value)
    assert (e1.value.index, e1.value.offset) == (e2.value.index, e2.value.offset) == (3, at)
    _same_stats(r.stats(), cap.stats())
    assert cap.stats()["error"]["class"] == "PcapFormatError" and cap.state == "failed"


# --- devices: the flow functions over a live capture ----------------------------------------


class _Flows:
    """Senders on several ephemeral ports to one bound sink on 127.0.0.1."""

    def __init__(self, flows: int) -> None:
        self.sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.sink.bind(("127.0.0.1", 0))
        self.port = self.sink.getsockname()[1]
        self.filter = f"udp dst port {self.port}"
        self.senders = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(flows)]
        for s in self.senders:
            s.bind(("127.0.0.1", 0))

    def send(self, per_flow: int) -> None:
        for i in range(per_flow):
            for j, s in enumerate(self.senders):
                s.sendto(payload(i, 16 + 8 * j), ("127.0.0.1", self.port))
            if i % 20 == 19:
                time.sleep(0.002)

    def close(self) -> None:
        for s in [self.sink, *self.senders]:
            s.close()


def _sorted(t: pa.Table) -> pa.Table:
    keys = [(c, "ascending") for c in ("src_port", "dst_port", "first_ts_ns")]
    return t.sort_by(keys)


@live
@pytest.mark.parametrize("bidirectional", [False, True])
def test_flows_on_a_device_equal_flows_on_the_same_packets_written_to_a_file(tmp_path, bidirectional):
    """``flows(device="lo")`` and a managed capture of the same traffic run side by side
    (the kernel hands every packet to both, with one timestamp); the capture's packets go
    to a file through ``PcapWriter``; ``flows(path)`` on that file is the same table."""
    n_flows, per_flow = 6, 100
    path = tmp_path / "same.pcap"
    traffic = _Flows(n_flows)
    try:
        cap = paclo.capture(LO, filter=traffic.filter, duration=6, idle_timeout=1.5)
        written: list[int] = []

        def keep() -> None:
            with paclo.PcapWriter(path, linktype=1, nanosecond=True) as w:
                w.write_all(cap)
                written.append(w.count)

        writer = threading.Thread(target=keep)
        writer.start()
        sender = threading.Thread(target=traffic.send, args=(per_flow,))
        live_table = paclo.flows(
            device=LO,
            filter=traffic.filter,
            bidirectional=bidirectional,
            duration=1.5,
            on_ready=sender.start,
        )
        sender.join(10)
        writer.join(10)
        assert cap.stats()["queue"]["dropped"] == 0
    finally:
        traffic.close()
    assert written == [n_flows * per_flow]
    assert live_table.num_rows == n_flows
    file_table = paclo.flows(path, bidirectional=bidirectional)
    assert _sorted(live_table).equals(_sorted(file_table)), (live_table.to_pylist(), file_table.to_pylist())
    assert sum(live_table.column("bidirectional_packets" if bidirectional else "packets").to_pylist()) == 600


@live
def test_project_topn_and_read_batches_take_a_device(tmp_path):
    traffic = _Flows(3)
    try:
        def run(fn, **kw):
            sender = threading.Thread(target=traffic.send, args=(50,))
            out = fn(device=LO, filter=traffic.filter, on_ready=sender.start, **kw)
            sender.join(10)
            return out

        t = run(paclo.project, limit=150)
        assert t.num_rows == 150 and set(t.column("dst_port").to_pylist()) == {traffic.port}
        top = run(paclo.flow_topn, limit=150, n=2)
        assert [r["packets"] for r in top] == [50, 50]
        assert all(r["flow"]["dst"] == f"127.0.0.1:{traffic.port}" for r in top)
        batches = run(paclo.read_batches, limit=150, batch_size=64)
        rows = [b.num_rows for b in batches]
        assert sum(rows) == 150 and max(rows) <= 64
    finally:
        traffic.close()


@live
def test_a_device_flow_call_ends_on_its_duration_when_idle():
    t0 = time.monotonic()
    t = paclo.flows(device=LO, filter="udp port 9", duration=0.3)
    assert t.num_rows == 0
    assert 0.3 <= time.monotonic() - t0 < 3


def test_device_options_are_checked(tmp_path):
    path = tmp_path / "x.pcap"
    path.write_bytes(_classic([_frame(0)]))
    with pytest.raises(ValueError, match="needs duration= or limit="):
        paclo.flows(device=LO)
    with pytest.raises(ValueError, match="either a source or device="):
        paclo.project(path, device=LO, duration=1)
    with pytest.raises(TypeError, match="live options: duration"):
        paclo.flows(path, duration=1)
    with pytest.raises(TypeError, match="unexpected options: queue_cap"):
        paclo.flow_topn(device=LO, limit=1, queue_cap=3)
    with pytest.raises(ValueError, match="requires a source"):
        paclo.flows()
    with pytest.raises(ValueError, match="limit"):
        paclo.project(device=LO, limit=0)
