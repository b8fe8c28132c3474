"""paclo.read: formats, options, Packet objects, stats, reduce."""

from __future__ import annotations

import os
import pathlib
import warnings

import pytest
from _foundation_util import Ng, Rec, classic, keyboard_interrupt_after, tcp_frame, udp_frame

import paclo
from paclo import _paclo

RECS = [
    Rec(1_700_000_000_123_456_789, udp_frame(53, b"abc")),
    Rec(1_700_000_001_000_000_001, tcp_frame(443), wirelen=1500),
    Rec(1_700_000_002_999_999_999, udp_frame(54)),
]


def write(tmp_path: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def rows(path, **kw):
    return [(p.ts_ns, p.caplen, p.wirelen, p.linktype, p.data) for p in paclo.read(path, **kw)]


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("nanosecond", [False, True])
def test_classic_byte_orders_and_precision(tmp_path, big_endian, nanosecond):
    p = write(tmp_path, "c.pcap", classic(RECS, big_endian=big_endian, nanosecond=nanosecond, linktype=1))
    got = rows(p)
    expect = []
    for r in RECS:
        ts = r.ts_ns if nanosecond else r.ts_ns // 1000 * 1000
        expect.append((ts, len(r.data), r.wirelen or len(r.data), 1, r.data))
    assert got == expect


def test_any_linktype_and_snaplen_from_header(tmp_path):
    ip = udp_frame()[14:]
    p = write(tmp_path, "raw.pcap", classic([Rec(5, ip)], linktype=101, snaplen=len(ip)))
    (pkt,) = list(paclo.read(p))
    assert (pkt.linktype, pkt.data) == (101, ip)


def test_pcapng_two_interfaces_tsresol_and_offset(tmp_path):
    ip = udp_frame(53)[14:]
    ng = (
        Ng()
        .shb()
        .idb(1)  # default microseconds
        .idb(101, tsresol=9, tsoffset=100)  # nanoseconds, +100 s
        .idb(1, tsresol=0x80 | 10)  # 2^-10 s
        .epb(0, 1_700_000_000_000_001, udp_frame(53), wirelen=99)
        .block(0x0BAD, b"ignored")
        .epb(1, 7, ip)
        .epb(2, 3 * 1024 + 256, udp_frame(54))
        .spb(b"\x01\x02\x03")
    )
    p = write(tmp_path, "two.pcapng", ng.bytes())
    got = rows(p)
    assert got == [
        (1_700_000_000_000_001_000, len(udp_frame(53)), 99, 1, udp_frame(53)),
        (100_000_000_007, len(ip), len(ip), 101, ip),
        (3_250_000_000, len(udp_frame(54)), len(udp_frame(54)), 1, udp_frame(54)),
        (0, 3, 3, 1, b"\x01\x02\x03"),
    ]


def test_pcapng_big_endian_and_two_sections(tmp_path):
    a = Ng(big_endian=True).shb().idb(1, tsresol=6).epb(0, 10, b"\xaa" * 20)
    b = Ng().shb().idb(101, tsresol=3).epb(0, 10, b"\x45" * 20)
    p = write(tmp_path, "two-sections.pcapng", a.bytes() + b.bytes())
    assert rows(p) == [(10_000, 20, 20, 1, b"\xaa" * 20), (10_000_000, 20, 20, 101, b"\x45" * 20)]


def test_packet_attributes_and_protocols(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS, nanosecond=True))
    pkt = next(iter(paclo.read(p)))
    assert pkt.ts_ns == 1_700_000_000_123_456_789
    assert (pkt.ts_sec, pkt.ts_usec) == (1_700_000_000, 123_456)
    assert pkt.ts == pytest.approx(1_700_000_000.123456789)
    assert bytes(pkt) == pkt.data == RECS[0].data
    assert len(pkt) == pkt.caplen == len(RECS[0].data)
    assert repr(pkt) == f"Packet(ts_ns=1700000000123456789, caplen={pkt.caplen}, wirelen={pkt.wirelen}, linktype=1)"
    again = next(iter(paclo.read(p)))
    assert pkt == again and hash(pkt) == hash(again)
    other = list(paclo.read(p))[1]
    assert pkt != other
    assert pkt != "not a packet"
    assert isinstance(pkt, paclo.Packet)


def test_packets_outlive_the_reader(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    with paclo.read(p) as r:
        pkts = list(r)
    assert r.closed
    assert [x.data for x in pkts] == [x.data for x in RECS]


def test_pathlike_and_str(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    assert len(list(paclo.read(str(p)))) == 3

    class P(os.PathLike):
        def __fspath__(self):
            return str(p)

    assert len(list(paclo.read(P()))) == 3
    with pytest.raises(TypeError, match=r"path must be a str or os\.PathLike"):
        paclo.read(42)


def test_limit(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    r = paclo.read(p, limit=2)
    assert [x.data for x in r] == [RECS[0].data, RECS[1].data]
    s = r.stats()
    assert s["stop_reason"] == "max_packets" and s["packets"]["processed"] == 2
    assert list(paclo.read(p, limit=0)) == []
    assert len(list(paclo.read(p, limit=10))) == 3
    with pytest.raises(ValueError, match="limit must be a non-negative integer"):
        paclo.read(p, limit=-1)
    with pytest.raises(TypeError, match="limit"):
        paclo.read(p, limit="3")
    with pytest.raises(ValueError, match="limit must be a non-negative integer up to 9223372036854775807"):
        paclo.read(p, limit=2**63)
    with pytest.raises(ValueError, match="limit must be a non-negative integer up to 9223372036854775807"):
        paclo.reduce(lambda a, x: a, 0, path=p, limit=2**64)
    assert len(list(paclo.read(p, limit=2**63 - 1))) == 3


def test_filter_string_and_dsl(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    assert [x.data for x in paclo.read(p, filter="udp port 53")] == [RECS[0].data]
    assert [x.data for x in paclo.read(p, filter=("and", "udp", ("port", 54)))] == [RECS[2].data]
    assert [x.data for x in paclo.read(p, filter="tcp")] == [RECS[1].data]
    # Length filters see the wire length (1500), as libpcap's do.
    assert [x.data for x in paclo.read(p, filter="greater 1000")] == [RECS[1].data]
    assert len(list(paclo.read(p, filter="   "))) == 3
    r = paclo.read(p, filter="udp")
    list(r)
    assert r.stats()["packets"] == {"captured": 2, "processed": 2, "decode_errors": 0}


def test_filter_on_pcapng_with_two_linktypes(tmp_path):
    ip = udp_frame(53)[14:]
    ng = Ng().shb().idb(1).idb(101).epb(0, 1, tcp_frame()).epb(1, 2, ip).epb(0, 3, udp_frame(53))
    p = write(tmp_path, "mix.pcapng", ng.bytes())
    assert [x.ts_ns for x in paclo.read(p, filter="udp port 53")] == [2000, 3000]


def test_invalid_filter_raises_before_any_packet(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    with pytest.raises(ValueError, match="syntax error") as e:
        paclo.read(p, filter="udp port")
    assert "udp port" in str(e.value)
    with pytest.raises(TypeError, match="invalid filter"):
        paclo.read(p, filter=53)
    with pytest.raises(ValueError, match="unknown op in bpf"):
        paclo.read(p, filter=("bogus", 1))


def test_decode_option_validated(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    with pytest.raises(ValueError, match="decode must be None, 'full' or 'flow'"):
        paclo.read(p, decode="fast")
    with pytest.raises(TypeError, match="progress must be True or False"):
        paclo.read(p, progress=1)


def test_stats_shape(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    r = paclo.read(p)
    s = r.stats()
    assert s["state"] == "running" and s["stop_reason"] is None
    n = sum(1 for _ in r)
    s = r.stats()
    assert n == 3
    assert set(s) == {
        "schema_version", "state", "source", "timing", "packets", "queue", "pcap",
        "stop_reason", "error", "truncated", "oversized_records", "bytes",
    }
    assert s["schema_version"] == 1
    assert s["state"] == "closed"
    assert s["source"] == {"type": "path", "path": str(p.resolve())}
    assert set(s["timing"]) == {"started_at_ms", "elapsed_ms"}
    assert s["timing"]["started_at_ms"] > 1_600_000_000_000 and s["timing"]["elapsed_ms"] >= 0
    assert s["packets"] == {"captured": 3, "processed": 3, "decode_errors": 0}
    assert s["queue"] is None and s["pcap"] is None and s["error"] is None
    assert s["stop_reason"] == "eof" and s["truncated"] is False and s["oversized_records"] == 0
    assert s["bytes"] == sum(len(x.data) for x in RECS)


def test_context_manager_and_close(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    with paclo.read(p) as r:
        first = next(r)
    assert first.data == RECS[0].data
    assert r.closed
    assert list(r) == []
    s = r.stats()
    assert s["stop_reason"] == "closed" and s["packets"]["processed"] == 1
    r.close()  # idempotent


def test_reduce_counts_and_reports(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    assert paclo.reduce(lambda acc, pkt: acc + pkt.caplen, 0, path=p) == sum(len(r.data) for r in RECS)
    acc, stats = paclo.reduce(lambda acc, pkt: [*acc, pkt.ts_ns], [], path=p, filter="udp", report=True)
    assert acc == [RECS[0].ts_ns // 1000 * 1000, RECS[2].ts_ns // 1000 * 1000]
    assert stats["stop_reason"] == "eof" and stats["packets"]["processed"] == 2
    acc, stats = paclo.reduce(lambda acc, pkt: acc + 1, 0, path=p, limit=1, report=True)
    assert (acc, stats["stop_reason"]) == (1, "max_packets")


def test_reduce_reduced_stops_at_once(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    seen = []

    def fn(acc, pkt):
        seen.append(pkt)
        return paclo.Reduced("stopped") if len(seen) == 2 else acc

    acc, stats = paclo.reduce(fn, None, path=p, report=True)
    assert acc == "stopped" and len(seen) == 2
    assert stats["stop_reason"] == "reduced" and stats["packets"]["processed"] == 2


def test_reduce_argument_errors(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    with pytest.raises(ValueError, match="requires either path= or device="):
        paclo.reduce(lambda a, b: a, 0)
    with pytest.raises(ValueError, match="either path= or device=, not both"):
        paclo.reduce(lambda a, b: a, 0, path=p, device="lo")
    with pytest.raises(TypeError, match="unexpected options: snaplen"):
        paclo.reduce(lambda a, b: a, 0, path=p, snaplen=100)
    with pytest.raises(TypeError, match="callable"):
        paclo.reduce(3, 0, path=p)
    with pytest.raises(ZeroDivisionError):
        paclo.reduce(lambda a, b: 1 / 0, 0, path=p)


def test_count_packets_probe(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    assert _paclo.count_packets(str(p)) == (3, sum(len(r.data) for r in RECS))
    assert _paclo.count_packets(str(p), filter="udp") == (2, len(RECS[0].data) + len(RECS[2].data))
    assert _paclo.count_packets(str(p), limit=1) == (1, len(RECS[0].data))
    with pytest.raises(ValueError, match=r"invalid filter \"nonsense here\""):
        _paclo.count_packets(str(p), filter="nonsense here")


def test_progress_draws_nothing_when_stderr_is_not_a_tty(tmp_path, capfd):
    p = write(tmp_path, "c.pcap", classic(RECS * 5000))
    assert sum(1 for _ in paclo.read(p, progress=True)) == 15000
    assert capfd.readouterr().err == ""


def test_decode_full_goes_through_the_decoder(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    pkt = next(iter(paclo.read(p)))
    via_packet = pkt.decode()
    via_reader = next(iter(paclo.read(p, decode="full")))
    assert via_packet == via_reader


def test_no_warning_on_a_complete_file(tmp_path):
    p = write(tmp_path, "c.pcap", classic(RECS))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(paclo.read(p))) == 3


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_progress_bar_on_a_tty(tmp_path):
    import sys

    from _pty_util import run_with_tty_stderr

    p = write(tmp_path, "c.pcap", classic(RECS * 10_000))
    code = (
        "import sys, time, paclo\n"
        "n = 0\n"
        "for pkt in paclo.read(sys.argv[1], progress=True):\n"
        "    n += 1\n"
        "    if n % 8192 == 0:\n"
        "        time.sleep(0.25)\n"
        "print(n)\n"
    )
    proc, text = run_with_tty_stderr([sys.executable, "-c", code, str(p)], timeout=60)
    assert proc.stdout.strip() == "30000"
    # paclo's shared progress line: bytes read of the file size, redrawn, ended by a newline.
    frames = [f for f in text.split("\r") if f.strip()]
    assert len(frames) >= 3 and all(f.startswith("read  [") and " of " in f for f in frames), text
    assert "\rread  [####################] 100.0%" in text and text.endswith("\n"), text


def test_packet_constructor_and_pickle(tmp_path):
    import pickle

    pkt = paclo.Packet(b"\x01\x02\x03", 1_500_000_000, wirelen=60, linktype=101)
    assert (pkt.ts_ns, pkt.caplen, pkt.wirelen, pkt.linktype, pkt.data) == (1_500_000_000, 3, 60, 101, b"\x01\x02\x03")
    assert paclo.Packet(bytearray(b"ab")).wirelen == 2
    with pytest.raises(TypeError, match="data must be bytes-like"):
        paclo.Packet("text")
    p = write(tmp_path, "c.pcap", classic(RECS))
    for read_pkt in paclo.read(p):
        again = pickle.loads(pickle.dumps(read_pkt))
        assert again == read_pkt and again.data == read_pkt.data
    assert pickle.loads(pickle.dumps(pkt)) == pkt


def test_reduce_device_delegates_to_live_capture(monkeypatch):
    from paclo import _capture

    calls = []

    def fake(fn, init, **kw):
        calls.append((fn, init, kw))
        return "acc"

    monkeypatch.setattr(_capture, "reduce_device", fake, raising=False)
    f = lambda a, p: a  # noqa: E731
    assert paclo.reduce(f, 0, device="lo", filter=("udp",), limit=5, snaplen=128) == "acc"
    assert calls == [
        (f, 0, {"device": "lo", "decode": None, "filter": "udp", "limit": 5, "report": False, "snaplen": 128})
    ]


def test_reader_file_attributes(tmp_path):
    p = write(tmp_path, "raw.pcap", classic(RECS, linktype=101, snaplen=2000))
    with paclo.read(p) as r:
        assert (r.format, r.linktype, r.snaplen) == ("pcap", 101, 2000)
    assert (r.format, r.linktype, r.snaplen) == (None, None, None)
    ng = write(tmp_path, "x.pcapng", Ng().shb().block(0x0BAD, b"x").idb(113).idb(1).epb(0, 1, b"a").bytes())
    r = paclo.read(ng)
    assert (r.format, r.linktype, r.snaplen) == ("pcapng", 113, 262144)
    out = tmp_path / "same-linktype.pcap"
    assert paclo.write_pcap(out, r, linktype=r.linktype) == 1


def test_packet_buffer_protocol(tmp_path):
    import numpy as np

    p = write(tmp_path, "c.pcap", classic(RECS))
    pkts = list(paclo.read(p))
    for pkt, rec in zip(pkts, RECS, strict=True):
        view = memoryview(pkt)
        assert view.readonly and view.format == "B" and view.nbytes == len(rec.data)
        assert view.tobytes() == rec.data
        assert np.frombuffer(pkt, dtype=np.uint8).tobytes() == rec.data
    with pytest.raises(ValueError, match="WRITEABLE"):
        np.frombuffer(pkts[0], dtype=np.uint8).setflags(write=True)
    import ctypes

    with pytest.raises(TypeError):
        ctypes.c_char.from_buffer(pkts[0])  # needs a writable buffer
    owned = paclo.Packet(b"xyz")
    assert bytes(memoryview(owned)) == b"xyz"
    view = memoryview(pkts[1])
    del pkts
    assert view.tobytes() == RECS[1].data  # the view keeps the packet and its map alive


def test_decode_errors_are_counted(tmp_path):
    p = write(tmp_path, "short.pcap", classic([Rec(1_000, b"\x01\x02\x03"), Rec(2_000, udp_frame(53))]))
    r = paclo.read(p, decode="full")
    maps = list(r)
    assert "decode_error" in maps[0] and "decoded" in maps[1]
    assert r.stats()["packets"] == {"captured": 2, "processed": 2, "decode_errors": 1}
    acc, stats = paclo.reduce(lambda a, m: a + ("decode_error" in m), 0, path=p, decode="full", report=True)
    assert acc == 1 and stats["packets"]["decode_errors"] == 1


def _many_rejected_then_one_tcp(tmp_path: pathlib.Path, n: int = 4_000_000) -> pathlib.Path:
    """A classic file of ``n`` one-byte records that ``filter="tcp"`` rejects, then one TCP frame."""
    import struct

    rec = struct.pack("<IIII", 0, 0, 1, 1) + b"\0"
    last = classic([Rec(0, tcp_frame(443))])[24:]
    return write(tmp_path, "scan.pcap", classic([]) + rec * n + last)


def test_signal_interrupts_a_reader_consumed_from_c(tmp_path):
    """``list(paclo.read(big))`` runs no Python code between packets, so the reader itself
    checks for signals now and then; the interrupted reader stays open and resumes."""
    from paclo.perf import datasets

    p = tmp_path / "big.pcap"
    datasets.generate("udp-64", 1_000_000, p)
    got: list = []
    r = paclo.read(p)
    with pytest.raises(KeyboardInterrupt), keyboard_interrupt_after(0.005):
        got.extend(r)
    assert 0 < len(got) < 1_000_000
    assert r.stats()["stop_reason"] is None
    n = len(got)
    del got
    assert sum(1 for _ in r) == 1_000_000 - n


@pytest.mark.parametrize("how", ["reader", "reduce", "count_packets"])
def test_signal_interrupts_a_long_filtered_scan(tmp_path, how):
    """A filter that rejects a long run of records does not hold off Ctrl-C until it finds a
    match: the scan checks for signals between chunks of rejected records. Consumers written
    in C (list.extend, list.append, map) observe whether the matching last packet was
    reached before the interrupt surfaced."""
    import functools

    p = _many_rejected_then_one_tcp(tmp_path)
    got: list = []
    r = paclo.read(p, filter="tcp")
    with pytest.raises(KeyboardInterrupt), keyboard_interrupt_after(0.005):
        if how == "reader":
            got.extend(r)
        elif how == "reduce":
            paclo.reduce(list.append, got, path=p, filter="tcp")
        else:
            got.extend(map(functools.partial(_paclo.count_packets, filter="tcp"), [str(p)]))
    assert got == []
    if how == "reader":
        # Interrupted mid-file, the reader is still open and can go on to the match.
        assert r.stats()["stop_reason"] is None
        assert [pkt.caplen for pkt in r] == [len(tcp_frame(443))]
        assert r.stats()["stop_reason"] == "eof"
