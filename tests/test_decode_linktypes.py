"""Every supported link type, linktype option validation, and the read path."""

from __future__ import annotations

import pytest
from _decoder_util import eth, ipv4, ipv6, tcp, udp, write_pcap

import paclo

IP4 = ipv4(17, udp(1000, 53, b""))
IP6 = ipv6(6, tcp(1, 2, 0x02))


@pytest.mark.parametrize("linktype,frame,expect", [
    ("raw", IP4, {"type": "raw", "src": None, "dst": None, "eth": 0x0800}),
    (101, IP6, {"type": "raw", "src": None, "dst": None, "eth": 0x86DD}),
    (12, IP4, {"type": "raw", "src": None, "dst": None, "eth": 0x0800}),
    (14, IP6, {"type": "raw", "src": None, "dst": None, "eth": 0x86DD}),
    ("linux_sll", bytes.fromhex("0000 0001 0006 0a0b0c0d0e0f 0000 0800") + IP4,
     {"type": "linux_sll", "src": "0a:0b:0c:0d:0e:0f", "dst": None, "eth": 0x0800, "pkttype": 0, "hatype": 1}),
    (113, bytes.fromhex("0004 0304 0002 abcd 000000000000 86dd") + IP6,
     {"type": "linux_sll", "src": "ab:cd", "dst": None, "eth": 0x86DD, "pkttype": 4, "hatype": 0x304}),
    ("linux_sll2", bytes.fromhex("0800 0000 00000007 0001 01 06 0a0b0c0d0e0f 0000") + IP4,
     {"type": "linux_sll2", "src": "0a:0b:0c:0d:0e:0f", "dst": None, "eth": 0x0800, "pkttype": 1,
      "hatype": 1, "ifindex": 7}),
    ("null", b"\x02\x00\x00\x00" + IP4, {"type": "null", "src": None, "dst": None, "eth": 0x0800, "family": 2}),
    (0, b"\x00\x00\x00\x18" + IP6, {"type": "null", "src": None, "dst": None, "eth": 0x86DD, "family": 24}),
    ("null", b"\x1e\x00\x00\x00" + IP6, {"type": "null", "src": None, "dst": None, "eth": 0x86DD, "family": 30}),
    ("loop", b"\x00\x00\x00\x02" + IP4, {"type": "loop", "src": None, "dst": None, "eth": 0x0800, "family": 2}),
    (108, b"\x00\x00\x00\x0a" + IP6, {"type": "loop", "src": None, "dst": None, "eth": 0x86DD, "family": 10}),
])
def test_link_types(linktype, frame, expect):
    m = paclo.decode(frame, linktype=linktype)
    assert "decode_error" not in m, m["decode_error"]
    dec = m["decoded"]
    assert {k: dec[k] for k in expect} == expect
    assert set(dec) == set(expect) | {"l3"}
    assert dec["l3"]["type"] == ("ipv4" if expect["eth"] == 0x0800 else "ipv6")
    assert dec["l3"]["flow_key"]["proto"] in ("udp", "tcp")


def test_unknown_family_and_ip_version():
    m = paclo.decode(b"\x07\x00\x00\x00abc", linktype="null")
    assert m["decoded"]["l3"] == {"type": "unknown_l3", "eth": None}
    m = paclo.decode(b"\x50" + bytes(30), linktype="raw")
    assert m["decode_error"] == "invalid IP header: IP version 5 at offset 0"
    assert m["decoded"]["l3"] == {"type": "unknown_l3", "eth": None}


def test_unsupported_link_type_is_an_error_not_an_exception():
    m = paclo.decode(b"\x00" * 30, linktype=147)
    assert m["decode_error"] == "unsupported link type 147"
    assert "decoded" not in m


@pytest.mark.parametrize("bad", ["ether", "RAW", "", "sll"])
def test_linktype_names_validated(bad):
    with pytest.raises(ValueError, match="linktype must be one of 'null', 'ethernet', 'raw', 'loop', "
                                         "'linux_sll', 'linux_sll2', 'raw_ipv4', 'raw_ipv6' "
                                         "or an int"):
        paclo.decode(b"", linktype=bad)


def test_linktype_and_data_types():
    with pytest.raises(TypeError, match="linktype"):
        paclo.decode(b"", linktype=1.0)
    with pytest.raises(TypeError, match="linktype"):
        paclo.decode(b"", linktype=True)
    with pytest.raises(ValueError, match="linktype must be between"):
        paclo.decode(b"", linktype=-1)
    with pytest.raises(TypeError, match="data must be bytes"):
        paclo.decode("abc")
    frame = eth(0x0800, IP4)
    assert paclo.decode(bytearray(frame)) == paclo.decode(frame)
    assert paclo.decode(memoryview(frame))["decoded"]["l3"]["src"] == "10.0.0.1"


def test_read_decode_full_matches_decode(tmp_path):
    frames = [eth(0x0800, ipv4(17, udp(1, 2, bytes([i]) * i))) for i in range(1, 6)]
    frames.append((eth(0x0800, ipv4(6, tcp(1, 2, 0x02)))[:40], 54))
    path = tmp_path / "t.pcap"
    write_pcap(path, frames)
    maps = list(paclo.read(str(path), decode="full"))
    assert len(maps) == 6
    for i, m in enumerate(maps):
        data = frames[i][0] if isinstance(frames[i], tuple) else frames[i]
        ref = paclo.decode(data)
        assert m["ts_sec"] == 1_700_000_000 + i and m["ts_usec"] == 250 * i
        assert m["ts_ns"] == (1_700_000_000 + i) * 10**9 + 250_000 * i
        assert m["caplen"] == len(data)
        for key in ("data", "decoded", "decode_error"):
            assert m.get(key) == ref.get(key)
    assert maps[5]["len"] == 54
    assert maps[5]["decode_error"] == "truncated TCP header: need 20 bytes, have 6 at offset 34"
