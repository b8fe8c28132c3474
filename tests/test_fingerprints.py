"""paclo.fingerprints: the table's shape, the options and their errors, bad input, the
packet map's ja4, and flow-topn --fingerprints."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from _decoder_util import client_hello, eth, ipv4, tcp, udp, write_pcap

import paclo

HELLO = client_hello("example.org", ["h2", "http/1.1"])
JA4 = "t12d0102h2_0f2cb44170f4_000000000000"  # cipher 1301; SNI and ALPN only


def _syn(sport: int) -> bytes:
    # tcp() builds a 20-byte header without options: JA4T 65535_00_00_00 or the window it sets.
    return eth(0x0800, ipv4(6, tcp(sport, 443, 0x02)))


def _pcap(tmp_path: Path, frames: list[bytes], name: str = "t.pcap") -> Path:
    p = tmp_path / name
    write_pcap(p, frames)
    return p


def test_default_is_ja4_only(tmp_path: Path) -> None:
    p = _pcap(tmp_path, [_syn(1000), eth(0x0800, ipv4(6, tcp(1000, 443, 0x18, HELLO)))])
    t = paclo.fingerprints(p)
    assert t.column_names == ["ts_ns", "method", "value", "raw", "ip_version", "protocol", "src_ip", "dst_ip",
                              "src_port", "dst_port"]
    assert t.schema.field("src_ip").type == pa.binary(16)
    assert t.column("method").to_pylist() == ["ja4"]
    assert t.column("value").to_pylist() == [JA4]
    assert t.column("raw").to_pylist() == ["t12d0102h2_1301_"]
    assert t.column("src_port").to_pylist() == [1000]
    assert paclo.ip_to_str(t.column("dst_ip")).to_pylist() == [paclo.ip_to_str(t.column("dst_ip")[0].as_py())]
    both = paclo.fingerprints(p, methods=["ja4", "ja4t"])
    assert sorted(both.column("method").to_pylist()) == ["ja4", "ja4t"]
    assert both.filter(pa.compute.equal(both.column("method"), "ja4t")).column("raw").to_pylist() == [None]
    assert set(paclo.fingerprints(p, methods="all").column("method").to_pylist()) == {"ja4", "ja4_o", "ja4t"}
    assert set(paclo.JA4_PLUS_METHODS) == set(paclo.FINGERPRINT_METHODS) - {"ja4", "ja4_o"}


def test_sources_and_filter(tmp_path: Path) -> None:
    a = _pcap(tmp_path, [eth(0x0800, ipv4(6, tcp(1000, 443, 0x18, HELLO)))], "a.pcap")
    b = _pcap(tmp_path, [eth(0x0800, ipv4(6, tcp(2000, 8443, 0x18, HELLO)))], "b.pcap")
    assert paclo.fingerprints([a, b]).column("src_port").to_pylist() == [1000, 2000]
    assert paclo.fingerprints([a, b], filter="tcp port 8443").column("src_port").to_pylist() == [2000]
    with paclo.read(a) as r:
        assert paclo.fingerprints(r).num_rows == 1


def test_bad_options_raise(tmp_path: Path) -> None:
    p = _pcap(tmp_path, [_syn(1)])
    with pytest.raises(ValueError, match=r"unknown method 'ja5'.*ja4s"):
        paclo.fingerprints(p, methods=["ja5"])
    with pytest.raises(ValueError, match="at least one"):
        paclo.fingerprints(p, methods=[])
    with pytest.raises(TypeError, match="methods"):
        paclo.fingerprints(p, methods=4)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="device"):
        paclo.fingerprints(device="lo")
    with pytest.raises(FileNotFoundError):
        paclo.fingerprints(tmp_path / "missing.pcap")
    with pytest.raises(ValueError, match="syntax error"):
        paclo.fingerprints(p, filter="not a filter ((")


def test_truncated_and_malformed_handshakes_give_nothing(tmp_path: Path) -> None:
    rng = random.Random(16)
    frames = []
    for cut in range(5, len(HELLO)):
        frames.append(eth(0x0800, ipv4(6, tcp(3000 + cut, 443, 0x18, HELLO[:cut]))))
    for _ in range(300):
        junk = bytearray(HELLO)
        for _ in range(rng.randint(1, 6)):
            junk[rng.randrange(len(junk))] = rng.randrange(256)
        frames.append(eth(0x0800, ipv4(6, tcp(9000, 443, 0x18, bytes(junk)))))
        frames.append(eth(0x0800, ipv4(17, udp(68, 67, bytes(rng.randrange(256) for _ in range(rng.randrange(300)))))))
    frames.append(eth(0x0800, ipv4(17, udp(40000, 443, b"\xc0\x00\x00\x00\x01" + bytes(1300)))))
    t = paclo.fingerprints(_pcap(tmp_path, frames), methods="all")
    cut = t.filter(pa.compute.greater(t.column("src_port"), 3000))
    cut = cut.filter(pa.compute.less(cut.column("src_port"), 9000))
    assert cut.num_rows == 0
    for v in t.column("value").to_pylist():
        assert v and v.isascii()


def test_packet_map_carries_ja4() -> None:
    m = paclo.decode(eth(0x0800, ipv4(6, tcp(1, 443, 0x18, HELLO))))
    assert m["decoded"]["l3"]["l4"]["app"]["ja4"] == JA4


def test_flow_topn_fingerprints(tmp_path: Path) -> None:
    p = _pcap(tmp_path, [_syn(1000), eth(0x0800, ipv4(6, tcp(1000, 443, 0x18, HELLO)))])
    run = subprocess.run(
        [sys.executable, "-m", "paclo", "flow-topn", str(p), "--format", "jsonl", "--fingerprints", "ja4,ja4t"],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, run.stderr
    row = json.loads(run.stdout.splitlines()[0])
    assert JA4 in " ".join(row["fingerprints"]) and any(x.startswith("ja4t=") for x in row["fingerprints"])
    bad = subprocess.run(
        [sys.executable, "-m", "paclo", "flow-topn", str(p), "--fingerprints", "nope"],
        capture_output=True, text=True, timeout=60,
    )
    assert bad.returncode == 3 and "unknown method" in bad.stderr
    plain = subprocess.run([sys.executable, "-m", "paclo", "flow-topn", str(p), "--format", "jsonl"],
                           capture_output=True, text=True, timeout=60)
    assert "fingerprints" not in plain.stdout


def test_quic_initial_alone_is_not_in_the_map() -> None:
    # The packet map reads no QUIC: JA4 of a QUIC Initial comes from paclo.fingerprints.
    here = Path(__file__).resolve().parents[1] / "src" / "fingerprint" / "testdata" / "rfc9001_a2_client_initial.hex"
    pkt = bytes.fromhex(here.read_text().replace("\n", ""))
    m = paclo.decode(eth(0x0800, ipv4(17, udp(50000, 443, pkt))))
    assert "app" not in m["decoded"]["l3"]["l4"]
