"""Tunnels are not decoded: a GRE, VXLAN, IP-in-IP or 6in4 packet counts in the flow of its
outer header (as docs/flows.md says), and the inner 5-tuple appears nowhere; VLAN ids are
kept."""

from __future__ import annotations

import struct

from _flows_util import eth, ipv4, ipv6, tcp, udp, write_pcap

import paclo

T0 = 1_700_000_000_000_000_000


def test_tunnelled_packets_count_in_their_outer_flow(tmp_path):
    inner = ipv4(6, "192.168.7.1", "192.168.7.2", tcp(1111, 2222, 0x18, 40))
    gre = struct.pack("!HH", 0, 0x0800) + inner
    vxlan = struct.pack("!BxxxI", 0x08, 42 << 8) + eth(0x0800, inner)
    frames = [
        eth(0x0800, ipv4(47, "10.0.0.1", "10.0.0.2", gre)),
        eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", struct.pack("!HHHH", 40000, 4789, 8 + len(vxlan), 0) + vxlan)),
        eth(0x0800, ipv4(4, "10.0.0.1", "10.0.0.2", inner)),
        eth(0x0800, ipv4(41, "10.0.0.1", "10.0.0.2", ipv6("2001:db8::1", "2001:db8::2", 6, tcp(1111, 2222, 0x18)))),
        eth(0x0800, ipv4(17, "10.0.0.3", "10.0.0.4", udp(5000, 6000)), tags=[(0x8100, 7)]),
    ]
    path = write_pcap(tmp_path / "tunnels.pcap", [(T0 + i, f) for i, f in enumerate(frames)])
    rows = paclo.flows(path).to_pylist()
    got = sorted(
        (paclo.ip_to_str(r["src_ip"]), paclo.ip_to_str(r["dst_ip"]), r["protocol"], r["src_port"], r["dst_port"], r["vlan_id"])
        for r in rows
    )
    assert got == [
        ("10.0.0.1", "10.0.0.2", 4, None, None, None),
        ("10.0.0.1", "10.0.0.2", 17, 40000, 4789, None),
        ("10.0.0.1", "10.0.0.2", 41, None, None, None),
        ("10.0.0.1", "10.0.0.2", 47, None, None, None),
        ("10.0.0.3", "10.0.0.4", 17, 5000, 6000, 7),
    ]
    assert all(r["packets"] == 1 for r in rows)
