"""paclo.bpf: the filter DSL of reference §1.1, exact strings and errors."""

from __future__ import annotations

import re

import pytest

import paclo


@pytest.mark.parametrize(
    "form, expected",
    [
        (None, None),
        ("udp", "udp"),
        ("tcp", "tcp"),
        ("icmp", "icmp"),
        ("icmp6", "icmp6"),
        ("arp", "arp"),
        ("ip", "ip"),
        ("ipv4", "ip"),
        ("ip4", "ip"),
        ("ip6", "ip6"),
        ("ipv6", "ip6"),
        ("udp port 53 and host 1.2.3.4", "udp port 53 and host 1.2.3.4"),
        ("", ""),
        (("and", "udp", ("port", 53)), "(udp) and (port 53)"),
        (("and",), ""),
        (("and", "udp"), "(udp)"),
        (("or", "tcp", "udp", "icmp"), "(tcp) or (udp) or (icmp)"),
        (("not", ("port", 22)), "not (port 22)"),
        (("not", "udp", "ignored"), "not (udp)"),
        (("proto", "ipv6"), "ip6"),
        (("host", "10.0.0.1"), "host 10.0.0.1"),
        (("src-host", "a"), "src host a"),
        (("dst-host", "b"), "dst host b"),
        (("net", "10.0.0.0/8"), "net 10.0.0.0/8"),
        (("src-net", "10.0.0.0/8"), "src net 10.0.0.0/8"),
        (("dst-net", "10.0.0.0/8"), "dst net 10.0.0.0/8"),
        (("port", 53), "port 53"),
        (("port", "53"), "port 53"),
        (("port", 53.0), "port 53"),
        (("src-port", 1), "src port 1"),
        (("dst-port", "2"), "dst port 2"),
        (("port-range", 8000, 9000), "portrange 8000-9000"),
        (("port_range", 8000, 9000), "portrange 8000-9000"),
        (("src-port-range", 1, 2), "src portrange 1-2"),
        (("dst_port_range", "a", "b"), "dst portrange a-b"),
        (("src_host", "h"), "src host h"),
        (["and", ["udp"], ["ip6"]], "(udp) and (ip6)"),
        (("udp", "whatever", 1), "udp"),
        (("ipv6",), "ip6"),
        # The reference's documented examples.
        (("and", ("ipv6",), ("udp",), ("dst-port-range", 8000, 9000)), "(ip6) and (udp) and (dst portrange 8000-9000)"),
        (("and", ("net", "10.0.0.0/8"), ("not", ("port", 22))), "(net 10.0.0.0/8) and (not (port 22))"),
    ],
)
def test_forms(form, expected):
    assert paclo.bpf(form) == expected


@pytest.mark.parametrize(
    "form, message",
    [
        (("proto", "bogus"), "unknown proto keyword: 'bogus'"),
        (("proto", 5), "unknown proto keyword: 5"),
        (("frobnicate", 1), "unknown op in bpf: 'frobnicate'"),
        ((7, 1), "unknown op in bpf: 7"),
        (42, "unsupported bpf form: 42"),
        ({"port": 53}, "unsupported bpf form"),
        ((), "unsupported bpf form"),
        (("port",), "unsupported bpf form"),
        (("port-range", 1), "unsupported bpf form"),
        (("and", "udp", 3), "unsupported bpf form: 3"),
    ],
)
def test_errors(form, message):
    with pytest.raises(ValueError, match=re.escape(message)) as e:
        paclo.bpf(form)
    assert str(e.value).startswith(message)


@pytest.mark.parametrize("port", ["abc", "5x", "", " 53", True, None, "5.3", float("inf"), float("-inf"), float("nan")])
def test_bad_port(port):
    with pytest.raises(ValueError, match="invalid port"):
        paclo.bpf(("port", port))


def test_dsl_output_compiles_with_libpcap(tmp_path):
    from _foundation_util import Rec, classic, udp_frame

    p = tmp_path / "x.pcap"
    p.write_bytes(classic([Rec(0, udp_frame(53)), Rec(1000, udp_frame(8500))]))
    form = ("and", ("ipv4",), ("udp",), ("dst-port-range", 8000, 9000))
    assert [x.ts_ns for x in paclo.read(p, filter=form)] == [1000]
    assert [x.ts_ns for x in paclo.read(p, filter=paclo.bpf(form))] == [1000]
    assert [x.ts_ns for x in paclo.read(p, filter=["not", ["port", 53]])] == [1000]
