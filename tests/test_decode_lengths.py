"""Length fields smaller than the header they cover: reported in decode_error (the layers
that parsed are kept) and counted; the offloaded-segmentation zeros are presumed and marked."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from _captures_util import tshark_fields
from _decoder_util import dns, dns_name, eth, ipv4, ipv6, tcp, udp

import paclo

DNS = udp(40000, 53, dns(0xBEEF, 0x0100, [(dns_name("example.com"), 1, 1)]))
BAD_TOTAL = eth(0x0800, ipv4(17, DNS, total_length=19))


def _with_udp_length(n: int, *, v6: bool = False) -> bytes:
    u = udp(1000, 2000, b"abcdefgh", length=n)
    return eth(0x86DD, ipv6(17, u)) if v6 else eth(0x0800, ipv4(17, u))


def test_ipv4_total_length_below_header(tmp_path):
    m = paclo.decode(BAD_TOTAL)
    assert m["decode_error"] == "invalid IPv4 header: total length 19 (below the header length 20) at offset 14"
    l3 = m["decoded"]["l3"]
    assert l3["type"] == "ipv4" and l3["total_length"] == 19 and "presumed_total_length" not in l3
    assert l3["l4"]["type"] == "udp" and l3["l4"]["dst_port"] == 53
    assert l3["l4"]["app"]["qname"] == "example.com"
    # Counted when read from a file, in the full map and in the flow dicts alike.
    p = tmp_path / "bad.pcap"
    paclo.write_pcap(p, [BAD_TOTAL, eth(0x0800, ipv4(17, DNS))])
    r = paclo.read(p, decode="full")
    maps = list(r)
    assert ["decode_error" in x for x in maps] == [True, False]
    assert r.stats()["packets"]["decode_errors"] == 1
    r = paclo.read(p, decode="flow")
    flat = list(r)
    assert flat[0]["decode_error"] == maps[0]["decode_error"] and flat[0]["dst_port"] == 53
    assert "decode_error" not in flat[1]
    assert r.stats()["packets"]["decode_errors"] == 1
    t = pa.table(paclo.project(p))
    assert t.column("dst_port").to_pylist() == [53, 53]


def test_ipv4_total_length_zero_is_presumed():
    m = paclo.decode(eth(0x0800, ipv4(6, tcp(1, 2, 0x18, b"x" * 30), total_length=0)))
    assert "decode_error" not in m
    l3 = m["decoded"]["l3"]
    assert l3["total_length"] == 0 and l3["presumed_total_length"] == 20 + 20 + 30
    assert l3["l4"]["data_len"] == 30


@pytest.mark.parametrize("n,v6", [(0, False), (3, False), (7, True), (0, True)])
def test_udp_length_below_header(n, v6):
    m = paclo.decode(_with_udp_length(n, v6=v6))
    at = 54 if v6 else 34
    assert m["decode_error"] == f"invalid UDP header: length {n} (below 8) at offset {at}"
    l4 = m["decoded"]["l3"]["l4"]
    assert (l4["type"], l4["src_port"], l4["dst_port"], l4["length"]) == ("udp", 1000, 2000, n)
    assert l4["payload"] == b"abcdefgh"


def test_ipv6_payload_length_zero_is_presumed():
    frame = bytearray(ipv6(17, udp(1000, 2000, b"abcdefgh", length=0)))
    frame[4:6] = b"\0\0"
    m = paclo.decode(bytes(frame), linktype="raw")
    assert "decode_error" not in m, m["decode_error"]
    l3 = m["decoded"]["l3"]
    assert l3["payload_length"] == 0 and l3["presumed_payload_length"] == 16
    assert l3["l4"]["length"] == 0 and l3["l4"]["payload"] == b"abcdefgh"
    # A real payload length is used as given and nothing is presumed.
    assert "presumed_payload_length" not in paclo.decode(ipv6(17, udp(1, 2, b"")), linktype="raw")["decoded"]["l3"]


def test_tcp_data_offset_below_five_is_invalid():
    t = bytearray(tcp(1000, 2000, 0x02, b"x" * 8))
    t[12] = 4 << 4
    m = paclo.decode(eth(0x0800, ipv4(6, bytes(t))))
    assert m["decode_error"] == "invalid TCP header: data offset 4 (below 5) at offset 34"
    assert m["decoded"]["l3"]["l4"]["type"] == "unknown_l4"
    assert m["decoded"]["l3"]["flow_key"]["src_port"] is None


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is installed by .ci/run")
def test_tshark_flags_the_same_frames(tmp_path):
    """tshark calls the same frames bogus (its expert info), and reads the zero lengths as
    offloaded segmentation."""
    zero_total = eth(0x0800, ipv4(6, tcp(1, 2, 0x18, b"x" * 30), total_length=0))
    frames = [BAD_TOTAL, _with_udp_length(3), _with_udp_length(0), zero_total]
    p = tmp_path / "lengths.pcap"
    paclo.write_pcap(p, frames)
    rows = tshark_fields(str(p), "_ws.expert.message")
    assert "Bogus IP length" in rows[0][0]
    assert "Bad length value 3 < 8" in rows[1][0]
    assert "Bad length value 0 < 8" in rows[2][0]
    assert rows[3] == [""]
    ours = [paclo.decode(f).get("decode_error") for f in frames]
    assert [e is not None for e in ours] == [True, True, True, False]
