"""Cross-check: paclo reads the same packets as libpcap's own reader, including files
written by other tools (editcap, tshark, tcpdump) when they are installed."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from _foundation_util import Ng, Rec, classic, libpcap_read, tcp_frame, udp_frame

import paclo
from paclo.perf import datasets

# libpcap reports DLT values; files hold LINKTYPE values (equal except a few, e.g. RAW).
_LINKTYPE_TO_DLT = {101: 12}


def paclo_rows(path):
    out = []
    for p in paclo.read(path):
        out.append((p.ts_ns, p.caplen, p.wirelen, p.data))
        linktype = p.linktype
    return out, _LINKTYPE_TO_DLT.get(linktype, linktype) if out else None


def assert_same(path):
    ours, dlt = paclo_rows(path)
    theirs, their_dlt = libpcap_read(str(path))
    assert len(ours) == len(theirs) > 0
    assert ours == theirs
    assert dlt == their_dlt


def recs(n=40):
    out = []
    for i in range(n):
        frame = udp_frame(53 + i, bytes([i]) * i) if i % 3 else tcp_frame(443 + i)
        out.append(Rec(1_700_000_000_000_000_000 + i * 987_654_321 + i, frame, wirelen=len(frame) + (i % 2) * 100))
    return out


@pytest.mark.parametrize("big_endian", [False, True])
@pytest.mark.parametrize("nanosecond", [False, True])
def test_classic_files_match_libpcap(tmp_path, big_endian, nanosecond):
    p = tmp_path / "c.pcap"
    p.write_bytes(classic(recs(), big_endian=big_endian, nanosecond=nanosecond))
    assert_same(p)


@pytest.mark.parametrize("big_endian", [False, True])
def test_modified_pcap_matches_libpcap(tmp_path, big_endian):
    p = tmp_path / "modified.pcap"
    p.write_bytes(classic(recs(), big_endian=big_endian, modified=True))
    assert_same(p)


def test_raw_ip_linktype_matches_libpcap(tmp_path):
    p = tmp_path / "raw.pcap"
    p.write_bytes(classic([Rec(1_000, udp_frame()[14:]), Rec(2_000, udp_frame(54)[14:])], linktype=101))
    assert_same(p)


@pytest.mark.parametrize("big_endian", [False, True])
def test_pcapng_matches_libpcap(tmp_path, big_endian):
    ng = Ng(big_endian=big_endian).shb().idb(1).idb(1, tsresol=9, tsoffset=3).idb(1, tsresol=0x80 | 20)
    for i, r in enumerate(recs(30)):
        units = r.ts_ns // 1000 if i % 3 == 0 else (r.ts_ns if i % 3 == 1 else (r.ts_ns << 20) // 1_000_000_000)
        ng.epb(i % 3, units, r.data, r.wirelen)
    ng.block(0x0BAD, b"skipped")
    ng.spb(udp_frame(99))
    p = tmp_path / "x.pcapng"
    p.write_bytes(ng.bytes())
    assert_same(p)


def test_dataset_matches_libpcap(tmp_path):
    for case in datasets.CASES:
        p = tmp_path / f"{case}.pcap"
        datasets.generate(case, 1000, p)
        assert_same(p)


def _tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (apt-get install tshark tcpdump)")
    return path


@pytest.mark.parametrize("fmt", ["pcapng", "nsecpcap", "pcap"])
def test_files_written_by_editcap(tmp_path, fmt):
    editcap = _tool("editcap")
    src = tmp_path / "src.pcap"
    src.write_bytes(classic(recs(), nanosecond=True))
    out = tmp_path / f"out.{fmt}"
    subprocess.run([editcap, "-F", fmt, str(src), str(out)], check=True, capture_output=True)
    assert_same(out)
    ours, _ = paclo_rows(out)
    expected, _ = paclo_rows(src)
    if fmt == "pcap":
        expected = [(ts // 1000 * 1000, *rest) for ts, *rest in expected]
    assert ours == expected


def test_pcapng_with_packet_comments_from_editcap(tmp_path):
    editcap = _tool("editcap")
    src = tmp_path / "src.pcap"
    src.write_bytes(classic(recs(10), nanosecond=True))
    out = tmp_path / "comments.pcapng"
    subprocess.run(
        [editcap, "-F", "pcapng", "-a", "2:a packet comment", "-a", "7:another one", str(src), str(out)],
        check=True,
        capture_output=True,
    )
    assert_same(out)
    assert [p.data for p in paclo.read(out)] == [p.data for p in paclo.read(src)]


def test_pcapng_written_by_tshark_with_two_linktypes(tmp_path):
    mergecap = _tool("mergecap")
    eth = tmp_path / "eth.pcap"
    eth.write_bytes(classic(recs(10), nanosecond=True))
    raw = tmp_path / "raw.pcap"
    raw.write_bytes(classic([Rec(1_700_000_000_500_000_000 + i, udp_frame(i + 1)[14:]) for i in range(5)], linktype=101, nanosecond=True))
    out = tmp_path / "merged.pcapng"
    subprocess.run([mergecap, "-F", "pcapng", "-w", str(out), str(eth), str(raw)], check=True, capture_output=True)
    pkts = list(paclo.read(out))
    assert sorted({p.linktype for p in pkts}) == [1, 101]
    got = sorted((p.ts_ns, p.linktype, p.data) for p in pkts)
    want = sorted(
        [(p.ts_ns, 1, p.data) for p in paclo.read(eth)] + [(p.ts_ns, 101, p.data) for p in paclo.read(raw)]
    )
    assert got == want
    # Cross-check the packet count and order with tshark's own reading.
    tshark = _tool("tshark")
    res = subprocess.run(
        [tshark, "-r", str(out), "-T", "fields", "-e", "frame.time_epoch", "-e", "frame.cap_len"],
        check=True, capture_output=True, text=True,
    )
    lines = [line.split("\t") for line in res.stdout.splitlines()]
    assert [int(c) for _, c in lines] == [p.caplen for p in pkts]
    def ns(text):
        sec, _, frac = text.partition(".")
        return int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])

    assert [ns(t) for t, _ in lines] == [p.ts_ns for p in pkts]


def test_file_rewritten_by_tcpdump(tmp_path):
    tcpdump = _tool("tcpdump")
    src = tmp_path / "src.pcap"
    src.write_bytes(classic(recs()))
    out = tmp_path / "td.pcap"
    subprocess.run([tcpdump, "-r", str(src), "-w", str(out), "udp"], check=True, capture_output=True)
    assert_same(out)
    assert [p.data for p in paclo.read(out)] == [p.data for p in paclo.read(src, filter="udp")]


def test_pcapng_captured_by_dumpcap(tmp_path):
    """A real capture file: dumpcap on the loopback device writes pcapng with interface
    options, packet options and statistics blocks; paclo must read what libpcap reads."""
    import os
    import socket
    import time

    dumpcap = _tool("dumpcap")
    if os.geteuid() != 0:
        pytest.skip("capturing on lo needs root or CAP_NET_RAW")
    out = tmp_path / "lo.pcapng"
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [dumpcap, "-i", "lo", "-f", f"udp port {port}", "-c", "5", "-a", "duration:20", "-w", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # dumpcap says "Capturing on ..." once the capture (and its filter) is active.
        deadline = time.monotonic() + 15
        line = ""
        while "Capturing on" not in line and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
        if "Capturing on" not in line:
            proc.kill()
            pytest.skip(f"dumpcap could not capture on lo: {line or proc.stderr.read()}")
        time.sleep(0.2)
        for i in range(5):
            sock.sendto(bytes([i]) * (10 + i), ("127.0.0.1", port))
        proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
        sock.close()
    assert_same(out)
    pkts = list(paclo.read(out))
    assert len(pkts) == 5
    assert [p.data[-(10 + i):] for i, p in enumerate(pkts)] == [bytes([i]) * (10 + i) for i in range(5)]
