"""Captures made by real tools on real traffic, read by paclo and by tshark, compared packet
by packet: addresses, ports, protocol, TCP flags, ICMP type, DNS qname, TLS SNI and ALPN,
in the packet map and in the flow projection.

The traffic (``_real_traffic.py``) runs in a network namespace of its own, so the files
hold nothing else; tcpdump writes classic pcap (Ethernet), dumpcap pcapng, and
``tcpdump -i any`` Linux cooked v2. Needs root, ``ip``, tcpdump, dumpcap, tshark and
openssl (``.ci/run`` installs them).
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from _captures_util import tshark_fields

import paclo

TOOLS = ("ip", "tcpdump", "dumpcap", "tshark", "openssl")
pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root for a network namespace"),
    pytest.mark.skipif(any(shutil.which(t) is None for t in TOOLS), reason=f"needs {', '.join(TOOLS)} (.ci/run)"),
]

FIELDS = (
    "frame.cap_len", "frame.len", "ip.src", "ip.dst", "ipv6.src", "ipv6.dst", "ip.proto", "ipv6.nxt",
    "tcp.srcport", "tcp.dstport", "tcp.flags", "udp.srcport", "udp.dstport", "icmp.type", "icmpv6.type",
    "dns.qry.name", "tls.handshake.type", "tls.handshake.extensions_server_name",
    "tls.handshake.extensions_alpn_str",
)


@pytest.fixture(scope="module")
def capture_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("real")
    ns = f"paclo-captures-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    try:
        script = Path(__file__).with_name("_real_traffic.py")
        r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, str(script), str(out)],
                           capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
    finally:
        subprocess.run(["ip", "netns", "del", ns], timeout=30)
    return out, json.loads((out / "manifest.json").read_text())


def tshark_rows(path: Path, manifest: dict) -> list[dict[str, str]]:
    decode_as = []
    for p in manifest["tls_ports"]:
        decode_as += ["-d", f"tcp.port=={p},tls"]
    rows = tshark_fields(str(path), *FIELDS, extra=("-o", "tcp.desegment_tcp_streams:FALSE", *decode_as))
    return [dict(zip(FIELDS, r, strict=True)) for r in rows]


def first(v: str) -> str:
    return v.split(",")[0]


def tshark_view(t: dict[str, str]) -> dict:
    """What tshark says, in the comparison's terms (first value of each field: the outer
    header of an ICMP error)."""
    v6 = bool(t["ipv6.src"])
    proto = first(t["ipv6.nxt"] if v6 else t["ip.proto"])
    sport = first(t["tcp.srcport"] or t["udp.srcport"])
    dport = first(t["tcp.dstport"] or t["udp.dstport"])
    hello = "1" in t["tls.handshake.type"].split(",")
    return {
        "caplen": int(t["frame.cap_len"]),
        "len": int(t["frame.len"]),
        "src": first(t["ipv6.src"] or t["ip.src"]) or None,
        "dst": first(t["ipv6.dst"] or t["ip.dst"]) or None,
        "proto": int(proto) if proto else None,
        "sport": int(sport) if sport else None,
        "dport": int(dport) if dport else None,
        "tcp_flags": int(first(t["tcp.flags"]), 16) & 0xFF if t["tcp.flags"] else None,
        "icmp_type": int(first(t["icmpv6.type"] or t["icmp.type"])) if (t["icmpv6.type"] or t["icmp.type"]) else None,
        "qname": first(t["dns.qry.name"]) or None,
        "sni": (t["tls.handshake.extensions_server_name"] or None) if hello else None,
        "alpn": (t["tls.handshake.extensions_alpn_str"].split(",") if t["tls.handshake.extensions_alpn_str"] else None)
        if hello else None,
    }


FLAG_BITS = {"fin": 0x01, "syn": 0x02, "rst": 0x04, "psh": 0x08, "ack": 0x10, "urg": 0x20, "ece": 0x40, "cwr": 0x80}


def paclo_view(m: dict) -> dict:
    """The packet map in the comparison's terms."""
    l3 = m.get("decoded", {}).get("l3", {})
    l4 = l3.get("l4") or {}
    app = l4.get("app") or {}
    v6 = l3.get("type") == "ipv6"
    return {
        "caplen": m["caplen"],
        "len": m["len"],
        "src": l3.get("src_compact" if v6 else "src"),
        "dst": l3.get("dst_compact" if v6 else "dst"),
        "proto": l3.get("next_header" if v6 else "protocol"),
        "sport": l4.get("src_port"),
        "dport": l4.get("dst_port"),
        "tcp_flags": sum(b for k, b in FLAG_BITS.items() if l4["flags"][k]) if l4.get("type") == "tcp" else None,
        "icmp_type": l4.get("icmp_type"),
        "qname": app.get("qname") if app.get("type") == "dns" else None,
        "sni": app.get("sni") if app.get("type") == "tls" else None,
        "alpn": app.get("alpn") if app.get("type") == "tls" else None,
    }


def projection_view(row: dict) -> dict:
    def ip(b: bytes | None) -> str | None:
        if b is None:
            return None
        a = ipaddress.IPv6Address(b)
        return str(a.ipv4_mapped) if row["ip_version"] == 4 else str(a)

    return {
        "src": ip(row["src_ip"]),
        "dst": ip(row["dst_ip"]),
        "proto": row["protocol"],
        "sport": row["src_port"],
        "dport": row["dst_port"],
        "tcp_flags": row["tcp_flags"],
    }


@pytest.fixture(scope="module", params=["tcpdump.pcap", "dumpcap.pcapng", "any.pcap"])
def compared(request, capture_dir):
    out, manifest = capture_dir
    path = out / request.param
    theirs = [tshark_view(t) for t in tshark_rows(path, manifest)]
    r = paclo.read(path, decode="full")
    ours = [paclo_view(m) for m in r]
    proj = pa.table(paclo.project(path)).to_pylist()
    return request.param, manifest, theirs, ours, proj, r.stats()


def test_every_capture_tool_reported_no_drop(capture_dir):
    _, manifest = capture_dir
    tcpdump, dumpcap, anyd = manifest["capture_reports"]
    assert "0 packets dropped by kernel" in tcpdump and "0 packets dropped by kernel" in anyd
    assert "/0 (" in dumpcap


def test_the_traffic_is_all_there(compared):
    _, manifest, theirs, ours, proj, stats = compared
    assert manifest["ping_replies"] == 4
    assert len(ours) == len(theirs) == len(proj) == stats["packets"]["processed"] > 60
    assert stats["packets"]["decode_errors"] == 0 and stats["oversized_records"] == 0
    kinds = {(p["proto"], p["icmp_type"]) for p in ours}
    assert {(1, 8), (1, 0), (58, 128), (58, 129)} <= kinds, kinds
    assert {p["qname"] for p in ours} >= set(manifest["qnames"])
    assert {p["sni"] for p in ours} >= {manifest["sni"], manifest["openssl"]["sni"]}
    alpns = [p["alpn"] for p in ours if p["alpn"]]
    assert manifest["alpn"] in alpns and manifest["openssl"]["alpn"] in alpns
    assert {p["src"] for p in ours} == {"127.0.0.1", "::1"}
    # Six connections (TCP over IPv4 and IPv6, TLS twice from ssl and once from openssl,
    # HTTP), each opened and closed (with FIN, or RST where a TLS peer closes first).
    syn = [p for p in ours if p["tcp_flags"] == 0x02]
    closing = [p for p in ours if p["tcp_flags"] is not None and p["tcp_flags"] & 0x05]
    assert len(syn) >= 6 and len(closing) >= 6


def test_packet_map_agrees_with_tshark(compared):
    name, _, theirs, ours, _, _ = compared
    diffs = [(i + 1, k, a[k], b[k]) for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for k in a if a[k] != b[k]]
    assert diffs == [], f"{name}: {len(diffs)} disagreements, first {diffs[:10]}"


def test_projection_agrees_with_tshark(compared):
    name, _, theirs, _, proj, _ = compared
    keys = ("src", "dst", "proto", "sport", "dport", "tcp_flags")
    diffs = []
    for i, (row, t) in enumerate(zip(proj, theirs, strict=True)):
        p = projection_view(row)
        diffs += [(i + 1, k, p[k], t[k]) for k in keys if p[k] != t[k]]
        assert row["caplen"] == t["caplen"] and row["len"] == t["len"]
    assert diffs == [], f"{name}: {len(diffs)} disagreements, first {diffs[:10]}"
