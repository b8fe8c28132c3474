"""Cross-check against dpkt over a generated corpus of varied packets.

Addresses, VLAN ids, protocols, lengths, ports, TCP flags/sequence numbers, ICMP kinds, ARP
fields, the DNS question and the TLS SNI must agree for every packet.
"""

from __future__ import annotations

import random
import socket
import struct

import pytest
from _decoder_util import (
    ah,
    arp,
    client_hello,
    dns,
    dns_name,
    eth,
    ext,
    frag6,
    icmp,
    ipv4,
    ipv6,
    tag,
    tcp,
    udp,
)

import paclo

dpkt = pytest.importorskip("dpkt")

TPIDS = (0x8100, 0x88A8, 0x9100, 0x9200)
NAMES = ["example.com", "a.b.c.d.example.org", "x.io", "mail.example.net", "_sip._udp.example.com"]


def rand_mac(r):
    return bytes([r.randrange(256) & 0xFE] + [r.randrange(256) for _ in range(5)])


def rand_ip4(r):
    return bytes([r.randrange(1, 224), r.randrange(256), r.randrange(256), r.randrange(1, 255)])


def rand_ip6(r):
    groups = [r.choice([0, 0, r.randrange(1, 0x10000)]) for _ in range(8)]
    groups[0] = r.choice([0x2001, 0xFE80, 0xFD00])
    return struct.pack("!8H", *groups)


def tcp_options(r):
    opts = b""
    for _ in range(r.randrange(4)):
        opts += r.choice([b"\x02\x04\x05\xb4", b"\x01", b"\x04\x02", b"\x03\x03\x07",
                          b"\x08\x0a" + bytes(r.randrange(256) for _ in range(8))])
    return opts + b"\x00" * (-len(opts) % 4)


def dns_message(r):
    name = r.choice(NAMES)
    qtype = r.choice([1, 28, 5, 15, 16, 33, 65, 12, 99])
    if r.random() < 0.5:
        return dns(r.randrange(65536), 0x0100, [(dns_name(name), qtype, 1)]), name, qtype
    # A response: the answer's owner name is a compression pointer to the question name, and
    # a CNAME target compresses the question name's suffix.
    qname = dns_name(name)
    suffix = 12 + len(qname) - len(dns_name(name.partition(".")[2] or name))
    rdata = b"\x03www" + struct.pack("!H", 0xC000 | suffix)
    answer = b"\xc0\x0c" + struct.pack("!HHIH", 5, 1, 60, len(rdata)) + rdata
    msg = dns(r.randrange(65536), 0x8180 | r.choice([0, 3]), [(qname, qtype, 1)], an=1, tail=answer)
    return msg, name, qtype


def l4_segment(r, v6: bool):
    kind = r.choice(["tcp", "udp", "dns", "icmp", "tls"])
    if kind == "tcp":
        return 6, tcp(r.randrange(1, 65536), r.randrange(1, 65536), r.randrange(256),
                      bytes(r.randrange(40)), options=tcp_options(r), seq=r.randrange(2**32),
                      ack=r.randrange(2**32), window=r.randrange(65536))
    if kind == "tls":
        sni = r.choice(NAMES)
        return 6, tcp(r.randrange(1024, 65536), 443, 0x18, client_hello(sni, r.choice([[], ["h2"]])))
    if kind == "udp":
        return 17, udp(r.randrange(1, 65536), r.choice([123, 5300, 4789]), bytes(r.randrange(60)))
    if kind == "dns":
        msg, _, _ = dns_message(r)
        return 17, (udp(r.randrange(1024, 65536), 53, msg) if r.random() < 0.5 else udp(53, 5353, msg))
    if v6:
        t, c = r.choice([(128, 0), (129, 0), (1, 4), (2, 0), (3, 0), (4, 1), (135, 0), (136, 0), (133, 0)])
        return 58, icmp(t, c, bytes(r.randrange(4, 24)))
    t, c = r.choice([(8, 0), (0, 0), (3, 3), (3, 1), (11, 0), (5, 1), (12, 0), (13, 0)])
    return 1, icmp(t, c, bytes(r.randrange(4, 24)))


def l3_packet(r):
    kind = r.choice(["ipv4", "ipv4", "ipv4-frag", "ipv6", "ipv6", "ipv6-ext", "ipv6-frag", "arp"])
    if kind == "arp":
        return 0x0806, arp(r.choice([1, 2]), rand_mac(r), rand_ip4(r), rand_mac(r), rand_ip4(r))
    if kind.startswith("ipv4"):
        proto, seg = l4_segment(r, False)
        options = r.choice([b"", b"\x01\x01\x01\x00", b"\x07\x07\x04" + bytes(4) + b"\x00"])
        flags_frag = r.choice([0, 0x4000])
        if kind == "ipv4-frag":
            flags_frag = r.choice([0x2000, 0x2000 | r.randrange(1, 8192), r.randrange(1, 8192)])
        return 0x0800, ipv4(proto, seg, options=options, flags_frag=flags_frag, ident=r.randrange(65536),
                            ttl=r.randrange(1, 256), src=rand_ip4(r), dst=rand_ip4(r))
    proto, seg = l4_segment(r, True)
    chain, nh = b"", proto
    if kind == "ipv6-frag":
        chain, nh = frag6(proto, r.randrange(1, 8192), r.random() < 0.5, r.randrange(2**32)), 44
    if kind == "ipv6-ext":
        headers = r.sample(["hbh", "dst", "rt", "frag", "ah"], r.randrange(1, 4))
        if "hbh" in headers:
            headers.remove("hbh")
            headers.insert(0, "hbh")
        if headers[0] == "frag" and len(headers) > 1:
            # dpkt reads the first extension's frag_off only when the chain starts with a
            # Fragment header; keep it last there so dpkt can parse the chain.
            headers.append(headers.pop(0))
        for h in reversed(headers):
            if h == "hbh":
                chain, nh = ext(nh, b"\x01\x02\x00\x00") + chain, 0
            elif h == "dst":
                chain, nh = ext(nh, b"\x01\x04" + bytes(4)) + chain, 60
            elif h == "rt":
                chain, nh = ext(nh, b"\x00\x00" + bytes(4)) + chain, 43
            elif h == "frag":
                chain, nh = frag6(nh, 0, True, r.randrange(2**32)) + chain, 44
            else:
                chain, nh = ah(nh) + chain, 51
    return 0x86DD, ipv6(nh, chain + seg, src=rand_ip6(r), dst=rand_ip6(r), hop=r.randrange(256))


def corpus(n=600, seed=7):
    r = random.Random(seed)
    frames = []
    for _ in range(n):
        ethertype, body = l3_packet(r)
        tags = r.choice([[], [], [(0x8100, r.randrange(4096))],
                         [(r.choice(TPIDS), r.randrange(4096)), (0x8100, r.randrange(4096))]])
        src, dst = rand_mac(r), rand_mac(r)
        if tags:
            raw = b""
            for i, (_, vid) in enumerate(tags):
                nxt = tags[i + 1][0] if i + 1 < len(tags) else ethertype
                raw += tag(r.randrange(8), r.randrange(2), vid, nxt)
            frame = dst + src + struct.pack("!H", tags[0][0]) + raw + body
        else:
            frame = eth(ethertype, body, dst=dst, src=src)
        frames.append(frame)
    return frames


def mac(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def flag_bits(f: dict) -> int:
    order = ["fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr"]
    return sum(1 << i for i, k in enumerate(order) if f[k])


def from_paclo(m: dict) -> dict:
    d = m["decoded"]
    out = {"src": d["src"], "dst": d["dst"], "eth": d["eth"],
           "vlans": [(t["vid"], t["pcp"], int(t["dei"])) for t in d.get("vlan_tags", [])]}
    l3 = d["l3"]
    out["l3"] = l3["type"]
    if l3["type"] == "arp":
        out.update(op=l3["op"], sha=l3["sha"], spa=l3["spa"], tha=l3["tha"], tpa=l3["tpa"])
        return out
    if l3["type"] == "ipv4":
        out.update(ip_src=l3["src"], ip_dst=l3["dst"], proto=l3["protocol"], ip_len=l3["total_length"],
                   ttl=l3["ttl"], id=l3["id"], offset=l3["flags_frag"] & 0x1FFF,
                   mf=bool(l3["flags_frag"] & 0x2000), hl=l3["ihl"])
    else:
        out.update(ip_src=l3["src_compact"], ip_dst=l3["dst_compact"], proto=l3["next_header"],
                   ip_len=l3["payload_length"], ttl=l3["hop_limit"])
    l4 = l3["l4"]
    out["l4"] = l4["type"]
    if l4["type"] in ("tcp", "udp"):
        out.update(sport=l4["src_port"], dport=l4["dst_port"], data=l4["payload"])
    if l4["type"] == "tcp":
        out.update(flags=flag_bits(l4["flags"]), seq=l4["seq"], ack=l4["ack"], win=l4["window"],
                   off=l4["header_len"])
        if "app" in l4:
            out["sni"] = l4["app"].get("sni")
    if l4["type"] == "udp":
        out["ulen"] = l4["length"]
        app = l4.get("app")
        if app:
            out.update(dns_id=app["id"], qd=app["qdcount"], an=app["ancount"], qname=app["qname"],
                       qtype=app["qtype"], qr=app["qr"], rcode=app["rcode"])
    if l4["type"] in ("icmpv4", "icmpv6"):
        out.update(icmp=(l4["icmp_type"], l4["code"]))
    if l4["type"].endswith("_fragment"):
        out["data"] = l4["payload"]
    return out


def sni_from_dpkt(payload: bytes):
    try:
        rec = dpkt.ssl.TLSRecord(payload)
        hs = dpkt.ssl.TLSHandshake(rec.data)
    except (dpkt.UnpackError, dpkt.NeedData):
        return None
    hello = hs.data
    for ext_type, data in getattr(hello, "extensions", []):
        if ext_type == 0:
            (name_len,) = struct.unpack("!H", data[3:5])
            return data[5:5 + name_len].decode()
    return None


def from_dpkt(frame: bytes) -> dict:
    e = dpkt.ethernet.Ethernet(frame)
    ip = e.data
    # dpkt keeps the outer TPID in .type; the final EtherType follows from the payload class.
    final = {dpkt.ip.IP: 0x0800, dpkt.ip6.IP6: 0x86DD, dpkt.arp.ARP: 0x0806}[type(ip)]
    out = {"src": mac(e.src), "dst": mac(e.dst), "eth": final,
           "vlans": [(t.id, t.pri, t.cfi) for t in getattr(e, "vlan_tags", [])]}
    if isinstance(ip, dpkt.arp.ARP):
        out.update(l3="arp", op={1: "request", 2: "reply"}[ip.op], sha=mac(ip.sha), spa=socket.inet_ntoa(ip.spa),
                   tha=mac(ip.tha), tpa=socket.inet_ntoa(ip.tpa))
        return out
    if isinstance(ip, dpkt.ip.IP):
        out.update(l3="ipv4", ip_src=socket.inet_ntoa(ip.src), ip_dst=socket.inet_ntoa(ip.dst), proto=ip.p,
                   ip_len=ip.len, ttl=ip.ttl, id=ip.id, offset=ip.offset, mf=bool(ip.mf), hl=ip.hl * 4)
        fragment = ip.offset > 0
    else:
        out.update(l3="ipv6", ip_src=socket.inet_ntop(socket.AF_INET6, ip.src),
                   ip_dst=socket.inet_ntop(socket.AF_INET6, ip.dst), proto=ip.p, ip_len=ip.plen, ttl=ip.hlim)
        frag = ip.extension_hdrs.get(44)
        fragment = frag is not None and frag.frag_off > 0
    l4 = ip.data
    if fragment:
        out["l4"] = f"{out['l3']}_fragment"
        out["data"] = bytes(l4)
        return out
    if isinstance(l4, dpkt.tcp.TCP):
        out.update(l4="tcp", sport=l4.sport, dport=l4.dport, data=bytes(l4.data), flags=l4.flags, seq=l4.seq,
                   ack=l4.ack, win=l4.win, off=l4.off * 4)
        sni = sni_from_dpkt(bytes(l4.data)) if l4.data[:1] == b"\x16" else None
        if sni is not None:
            out["sni"] = sni
    elif isinstance(l4, dpkt.udp.UDP):
        out.update(l4="udp", sport=l4.sport, dport=l4.dport, data=bytes(l4.data), ulen=l4.ulen)
        if 53 in (l4.sport, l4.dport) and l4.data:
            msg = dpkt.dns.DNS(bytes(l4.data))
            q = msg.qd[0]
            out.update(dns_id=msg.id, qd=len(msg.qd), an=len(msg.an), qname=q.name, qtype=q.type,
                       qr=bool(msg.qr), rcode=msg.rcode)
    elif isinstance(l4, (dpkt.icmp.ICMP, dpkt.icmp6.ICMP6)):
        out.update(l4="icmpv4" if isinstance(l4, dpkt.icmp.ICMP) else "icmpv6", icmp=(l4.type, l4.code))
    return out


def test_corpus_is_varied():
    kinds = {(from_paclo(paclo.decode(f))["l3"], from_paclo(paclo.decode(f)).get("l4")) for f in corpus()}
    assert {("arp", None), ("ipv4", "tcp"), ("ipv4", "udp"), ("ipv4", "icmpv4"), ("ipv4", "ipv4_fragment"),
            ("ipv6", "tcp"), ("ipv6", "udp"), ("ipv6", "icmpv6"), ("ipv6", "ipv6_fragment")} <= kinds


def test_agrees_with_dpkt_on_every_packet():
    frames = corpus()
    checked = {"sni": 0, "qname": 0, "vlans": 0, "ext": 0}
    for i, frame in enumerate(frames):
        m = paclo.decode(frame)
        assert "decode_error" not in m, (i, m["decode_error"])
        ours, theirs = from_paclo(m), from_dpkt(frame)
        assert ours == theirs, (i, frame.hex())
        checked["sni"] += "sni" in ours
        checked["qname"] += "qname" in ours
        checked["vlans"] += bool(ours["vlans"])
        e = dpkt.ethernet.Ethernet(frame)
        checked["ext"] += isinstance(e.data, dpkt.ip6.IP6) and bool(e.data.all_extension_headers)
    assert min(checked.values()) > 20, checked
