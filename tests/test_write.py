"""paclo.write_pcap and paclo.PcapWriter: items, timestamps, read-after-write."""

from __future__ import annotations

import time

import pytest
from _foundation_util import Rec, classic, tcp_frame, udp_frame

import paclo


def rows(path):
    return [(p.ts_ns, p.caplen, p.wirelen, p.linktype, p.data) for p in paclo.read(path)]


@pytest.mark.parametrize("nanosecond", [False, True])
def test_round_trip_keeps_packets_and_timestamps(tmp_path, nanosecond):
    src = tmp_path / "src.pcap"
    recs = [Rec(1_700_000_000_000_000_000 + i * 1_234_567, udp_frame(53, bytes([i]) * i), wirelen=200 + i) for i in range(50)]
    src.write_bytes(classic(recs, nanosecond=True))
    out = tmp_path / "out.pcap"
    n = paclo.write_pcap(out, paclo.read(src), nanosecond=nanosecond)
    assert n == 50
    got = rows(out)
    want = rows(src)
    if not nanosecond:
        want = [(ts // 1000 * 1000, *rest) for ts, *rest in want]
    assert got == want
    assert got[3][2] == 203  # wirelen kept


def test_header_fields(tmp_path):
    out = tmp_path / "h.pcap"
    paclo.write_pcap(out, [], linktype=101, snaplen=1000, nanosecond=True)
    assert out.read_bytes() == classic([], nanosecond=True, snaplen=1000, linktype=101)
    assert len(list(paclo.read(out))) == 0


def test_items_bytes_dicts_and_buffers(tmp_path):
    out = tmp_path / "items.pcap"
    before = time.time_ns()
    n = paclo.write_pcap(
        out,
        [
            b"\x01" * 10,
            bytearray(b"\x02" * 11),
            memoryview(b"\x03" * 12),
            {"data": b"\x04" * 13, "ts_ns": 5_000_000_123},
            {"data": b"\x05" * 14, "ts_sec": 7, "ts_usec": 9, "len": 100},
            {"data": bytearray(b"\x06" * 15), "ts_ns": 1, "wirelen": 60},
        ],
        nanosecond=True,
    )
    after = time.time_ns()
    assert n == 6
    got = rows(out)
    assert [g[4] for g in got] == [bytes([i]) * (9 + i) for i in range(1, 7)]
    for g in got[:3]:
        assert before <= g[0] <= after  # no timestamp given: the current time
    assert [g[0] for g in got[3:]] == [5_000_000_123, 7_000_009_000, 1]
    assert [g[2] for g in got[3:]] == [13, 100, 60]


def test_writer_context_manager_and_ts_override(tmp_path):
    src = tmp_path / "src.pcap"
    src.write_bytes(classic([Rec(42_000, tcp_frame())]))
    (pkt,) = list(paclo.read(src))
    out = tmp_path / "w.pcap"
    with paclo.PcapWriter(out, nanosecond=True) as w:
        w.write(pkt)
        w.write(pkt, ts_ns=99)
        w.write(b"abc", ts_ns=1_000)
        assert w.count == 3 and not w.closed
    assert w.closed
    assert [(r[0], r[4]) for r in rows(out)] == [(42_000, pkt.data), (99, pkt.data), (1_000, b"abc")]
    with pytest.raises(ValueError, match="closed"):
        w.write(b"x")
    w.close()


def test_snaplen_cuts_records_and_keeps_wirelen(tmp_path):
    out = tmp_path / "cut.pcap"
    paclo.write_pcap(out, [{"data": b"z" * 100, "ts_ns": 0}], snaplen=64)
    ((_ts, caplen, wirelen, _, data),) = rows(out)
    assert (caplen, wirelen, data) == (64, 100, b"z" * 64)


def test_bad_items_and_options(tmp_path):
    out = tmp_path / "bad.pcap"
    with pytest.raises(TypeError, match="bytes-like"):
        paclo.write_pcap(out, [123])
    with pytest.raises(ValueError, match="missing the key 'data'"):
        paclo.write_pcap(out, [{"ts_ns": 1}])
    with pytest.raises(TypeError, match="'ts_ns' must be an integer"):
        paclo.write_pcap(out, [{"data": b"x", "ts_ns": "now"}])
    with pytest.raises(ValueError, match="outside the range of a pcap file"):
        paclo.write_pcap(out, [{"data": b"x", "ts_ns": -5}])
    with pytest.raises(ValueError, match="'wirelen' must be between 0 and 4294967295, not -5"):
        paclo.write_pcap(out, [{"data": b"x", "ts_ns": 1, "wirelen": -5}])
    with pytest.raises(ValueError, match="'len' must be between 0 and 4294967295, not 4294967296"):
        paclo.write_pcap(out, [{"data": b"x", "ts_ns": 1, "len": 2**32}])
    with pytest.raises(ValueError, match="snaplen must be between 1 and 262144"):
        paclo.write_pcap(out, [], snaplen=0)
    with pytest.raises(ValueError, match="linktype must be between 0 and 65535"):
        paclo.PcapWriter(out, linktype=-1)
    with pytest.raises(TypeError, match="nanosecond must be True or False"):
        paclo.PcapWriter(out, nanosecond="yes")
    with pytest.raises(FileNotFoundError):
        paclo.write_pcap(tmp_path / "no" / "such" / "dir.pcap", [])


def test_packet_linktype_must_match(tmp_path):
    src = tmp_path / "raw.pcap"
    src.write_bytes(classic([Rec(1, udp_frame()[14:])], linktype=101))
    with pytest.raises(ValueError, match="packet linktype 101 differs from the file's linktype 1"):
        paclo.write_pcap(tmp_path / "o.pcap", paclo.read(src))
    assert paclo.write_pcap(tmp_path / "o.pcap", paclo.read(src), linktype=101) == 1


def test_writes_what_libpcap_reads(tmp_path):
    from _foundation_util import libpcap_read

    out = tmp_path / "lp.pcap"
    items = [{"data": udp_frame(53, bytes([i])), "ts_ns": 1_700_000_000_000_000_000 + i * 1_001} for i in range(20)]
    paclo.write_pcap(out, items, nanosecond=True)
    pkts, dlt = libpcap_read(str(out))
    assert dlt == 1
    assert pkts == [(it["ts_ns"], len(it["data"]), len(it["data"]), it["data"]) for it in items]


def test_overwrite_the_file_being_read(tmp_path):
    p = tmp_path / "same.pcap"
    recs = [Rec(i * 1000, udp_frame(53, bytes([i]) * 30)) for i in range(200)]
    p.write_bytes(classic(recs))
    before = rows(p)
    r = paclo.read(p)
    first = next(r)  # the old file stays mapped while the new one is written
    n = paclo.write_pcap(p, r)
    assert n == 199
    assert first.data == recs[0].data
    assert rows(p) == before[1:]


def test_write_all_is_interruptible(tmp_path):
    """Ctrl-C (a SIGALRM handler raising KeyboardInterrupt) stops write_all over a native
    iterator (a Reader), where no Python code runs between packets. ``list.extend`` over
    ``map`` calls write_all from C, so a copy that ran to the end before the interrupt
    surfaced would leave its count in ``out``."""
    from _foundation_util import keyboard_interrupt_after

    from paclo.perf import datasets

    src = tmp_path / "src.pcap"
    datasets.generate("udp-64", 1_000_000, src)
    out: list = []
    with paclo.PcapWriter(tmp_path / "copy.pcap") as w, pytest.raises(KeyboardInterrupt), keyboard_interrupt_after(0.005):
        out.extend(map(w.write_all, [paclo.read(src)]))
    assert out == []
    assert 0 < w.count < 1_000_000


def test_write_all_count_includes_items_written_before_an_error(tmp_path):
    p = tmp_path / "partial.pcap"
    w = paclo.PcapWriter(p)
    with pytest.raises(TypeError, match="bytes-like"):
        w.write_all([{"data": b"a", "ts_ns": 1}, {"data": b"b", "ts_ns": 2}, 123])
    assert w.count == 2
    w.close()
    assert [x.data for x in paclo.read(p)] == [b"a", b"b"]
