"""Helpers of the flow tests: a pcap writer, frame builders, and an independent pure-Python
projection and flow aggregation to compare the native results with."""

from __future__ import annotations

import random
import struct
from pathlib import Path

MAPPED = b"\x00" * 10 + b"\xff\xff"


def write_pcap(path: Path, packets, linktype: int = 1, snaplen: int = 65535) -> Path:
    """packets: iterable of (ts_ns, frame bytes[, wirelen])."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, linktype))
        for p in packets:
            ts_ns, data = p[0], p[1]
            wirelen = p[2] if len(p) > 2 else len(data)
            sec, rem = divmod(ts_ns, 1_000_000_000)
            f.write(struct.pack("<IIII", sec, rem // 1000, len(data), wirelen))
            f.write(data)
    return Path(path)


def eth(ethertype: int, payload: bytes, tags=()) -> bytes:
    types = [t for t, _ in tags] + [ethertype]
    out = bytes.fromhex("101112131415202122232425") + struct.pack("!H", types[0])
    for i, (_, vid) in enumerate(tags):
        out += struct.pack("!HH", vid, types[i + 1])
    return out + payload


def udp(sport: int, dport: int, n: int = 10) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + n, 0) + b"\xab" * n


def tcp(sport: int, dport: int, flags: int, n: int = 4, options: int = 0) -> bytes:
    doff = (20 + options) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, doff << 4, flags, 65535, 0, 0) + b"\x01" * options + b"d" * n


def icmp() -> bytes:
    return bytes([8, 0, 0, 0, 0, 1, 0, 1]) + b"ping"


def v4(a: str) -> bytes:
    return bytes(int(x) for x in a.split("."))


def v6(a: str) -> bytes:
    import ipaddress

    return ipaddress.IPv6Address(a).packed


def ipv4(proto: int, src: str, dst: str, payload: bytes, frag: int = 0) -> bytes:
    return struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(payload), 1, frag, 64, proto, 0, v4(src), v4(dst)) + payload


def ipv6(src: str, dst: str, proto: int, payload: bytes, exts=()) -> bytes:
    """exts: (number, body bytes without the next-header byte) in order."""
    body = b""
    for i, (_, ext) in enumerate(exts):
        nxt = exts[i + 1][0] if i + 1 < len(exts) else proto
        body += bytes([nxt]) + ext
    body += payload
    first = exts[0][0] if exts else proto
    return struct.pack("!IHBB16s16s", 0x60000000, len(body), first, 64, v6(src), v6(dst)) + body


def opts_ext(units: int = 1) -> bytes:
    """An options/routing header of `units` * 8 bytes, minus the next-header byte."""
    return bytes([units - 1]) + b"\x01\x04" + b"\x00" * (units * 8 - 4)


def frag_ext(offset8: int, more: bool) -> bytes:
    return b"\x00" + struct.pack("!HI", (offset8 << 3) | int(more), 77)


def arp() -> bytes:
    return bytes.fromhex("0001080006040001") + bytes(6) + v4("10.0.0.1") + bytes(6) + v4("10.0.0.2")


def mixed_packets(seed: int = 7, count: int = 600):
    """A deterministic mix: IPv4/IPv6 UDP and TCP both ways, IPv6 extension headers, VLAN
    and QinQ, IPv4 and IPv6 fragments, ARP, ICMP, ICMPv6, cut frames; (ts_ns, frame, wirelen)."""
    rnd = random.Random(seed)
    hosts4 = ["10.0.0.1", "10.0.0.2", "192.168.1.7", "8.8.8.8"]
    hosts6 = ["2001:db8::1", "2001:db8::2", "fe80::1", "2001:db8:0:1::53"]
    out = []
    ts = 1_700_000_000_000_000_000
    for _ in range(count):
        ts += rnd.choice([1_000, 50_000, 2_000_000, 700_000_000])
        k = rnd.randrange(13)
        a, b = rnd.sample(hosts4, 2)
        c, d = rnd.sample(hosts6, 2)
        sp, dp = rnd.choice([(40000, 53), (53, 40000), (51000, 443), (443, 51000), (1234, 1234)])
        if k == 0:
            frame = eth(0x0800, ipv4(17, a, b, udp(sp, dp)))
        elif k == 1:
            frame = eth(0x0800, ipv4(6, a, b, tcp(sp, dp, rnd.choice([0x02, 0x12, 0x10, 0x18, 0x11]), options=rnd.choice([0, 12]))))
        elif k == 2:
            frame = eth(0x86DD, ipv6(c, d, 17, udp(sp, dp)))
        elif k == 3:
            exts = rnd.choice([[(0, opts_ext())], [(0, opts_ext()), (43, opts_ext(2)), (60, opts_ext())], [(60, opts_ext(3))]])
            frame = eth(0x86DD, ipv6(c, d, 6, tcp(sp, dp, 0x18), exts))
        elif k == 4:
            frame = eth(0x0800, ipv4(17, a, b, udp(sp, dp)), tags=[(0x8100, rnd.choice([10, 20]))])
        elif k == 5:
            frame = eth(0x86DD, ipv6(c, d, 17, udp(sp, dp)), tags=[(0x88A8, 300), (0x8100, rnd.choice([10, 20]))])
        elif k == 6:
            frame = eth(0x0800, ipv4(17, a, b, udp(sp, dp, 40), frag=0x2000))
        elif k == 7:
            frame = eth(0x0800, ipv4(17, a, b, b"\xee" * 24, frag=rnd.choice([3, 0x2000 | 6])))
        elif k == 8:
            frame = eth(0x86DD, ipv6(c, d, 17, udp(sp, dp) if rnd.random() < 0.5 else b"\xcc" * 16,
                                     [(44, frag_ext(rnd.choice([0, 0, 9]), rnd.random() < 0.5))]))
        elif k == 9:
            frame = eth(0x0806, arp())
        elif k == 10:
            frame = eth(0x0800, ipv4(1, a, b, icmp())) if rnd.random() < 0.5 else eth(0x86DD, ipv6(c, d, 58, icmp()))
        elif k == 11:
            frame = eth(0x86DD, ipv6(c, d, 50, b"\x00" * 24, [(60, opts_ext())]))
        else:
            full = eth(0x0800, ipv4(6, a, b, tcp(sp, dp, 0x02)))
            frame = full[: rnd.choice([10, 14, 30, 40, 50])]
        wirelen = len(frame) + (rnd.choice([0, 0, 0, 100]))
        out.append((ts, frame, wirelen))
    return out


# ---- independent reference projection -------------------------------------------------


def ref_project(linktype: int, data: bytes) -> dict:
    """The projection of one frame, computed with struct, following docs/flows.md."""
    row = {"ip_version": None, "protocol": None, "src_ip": None, "dst_ip": None, "src_port": None, "dst_port": None,
               "vlan_id": None, "tcp_flags": None}
    if linktype == 1:
        if len(data) < 14:
            return row
        (et,) = struct.unpack_from("!H", data, 12)
        off, tags = 14, 0
        while et in (0x8100, 0x88A8, 0x9100, 0x9200):
            if tags == 3 or len(data) < off + 4:
                return row
            tci, et = struct.unpack_from("!HH", data, off)
            if tags == 0:
                row["vlan_id"] = tci & 0xFFF
            tags += 1
            off += 4
        if et not in (0x0800, 0x86DD):
            return row
        ip = data[off:]
    else:
        ip = data
    if not ip:
        return row
    version = ip[0] >> 4
    if version == 4:
        ihl = (ip[0] & 15) * 4
        if ihl < 20 or len(ip) < ihl:
            return row
        total, fr, proto = struct.unpack_from("!H", ip, 2)[0], struct.unpack_from("!H", ip, 6)[0], ip[9]
        row.update(ip_version=4, protocol=proto, src_ip=MAPPED + ip[12:16], dst_ip=MAPPED + ip[16:20])
        payload = ip[ihl:] if total < ihl or total > len(ip) else ip[ihl:total]
        if fr & 0x1FFF:
            return row  # a non-first fragment: no headers after the IP header
        if proto == 51:
            if len(payload) < 12 or payload[1] == 0 or len(payload) < (payload[1] + 2) * 4:
                return row
            row["protocol"] = proto = payload[0]
            payload = payload[(payload[1] + 2) * 4:]
    elif version == 6:
        if len(ip) < 40:
            return row
        plen, nxt = struct.unpack_from("!HB", ip, 4)
        row.update(ip_version=6, src_ip=ip[8:24], dst_ip=ip[24:40])
        rest = ip[40:]
        payload = rest if plen == 0 or len(rest) < plen else rest[:plen]
        count = 0
        while nxt in (0, 43, 60, 44, 51):
            if count == 16 or (nxt == 0 and count > 0):
                return row
            count += 1
            if nxt == 44:
                if len(payload) < 8:
                    return row
                if struct.unpack_from("!H", payload, 2)[0] & 0xFFF8:
                    row["protocol"] = payload[0]
                    return row
                nxt, payload = payload[0], payload[8:]
            elif nxt == 51:
                if len(payload) < 12 or payload[1] == 0 or len(payload) < (payload[1] + 2) * 4:
                    return row
                nxt, payload = payload[0], payload[(payload[1] + 2) * 4:]
            else:
                size = (payload[1] + 1) * 8 if len(payload) >= 8 else None
                if size is None or len(payload) < size:
                    return row
                if nxt != 43 and not _options_fit(payload[:size]):
                    return row
                nxt, payload = payload[0], payload[size:]
        row["protocol"] = nxt
    else:
        return row
    proto = row["protocol"]
    if proto == 17 and len(payload) >= 8:
        row["src_port"], row["dst_port"] = struct.unpack_from("!HH", payload, 0)
    elif proto == 6 and len(payload) >= 20 and (payload[12] >> 4) >= 5 and len(payload) >= (payload[12] >> 4) * 4:
        row["src_port"], row["dst_port"] = struct.unpack_from("!HH", payload, 0)
        row["tcp_flags"] = payload[13]
    return row


def _options_fit(h: bytes) -> bool:
    """Hop-by-hop/destination options: Pad1 is one byte, others are type, length, data."""
    i = 2
    while i < len(h):
        if h[i] == 0:
            i += 1
        elif i + 1 < len(h):
            i += 2 + h[i + 1]
        else:
            return False
    return i == len(h)


def ref_flows(packets, bidirectional=False, idle_ns=None, active_ns=None, linktype=1, flow_id=False):
    """Flow rows keyed as the native table: a list of dicts sorted by (first_ts_ns, key);
    with ``flow_id``, a first key numbering the flows in the order their first packet came."""
    live: dict = {}
    next_id = 0
    done = []
    last_capture = None
    for ts, frame, wirelen in packets:
        last_capture = ts if last_capture is None else max(last_capture, ts)
        r = ref_project(linktype, frame)
        if r["ip_version"] is None or r["protocol"] is None:
            continue
        a = (r["src_ip"], -1 if r["src_port"] is None else r["src_port"])
        b = (r["dst_ip"], -1 if r["dst_port"] is None else r["dst_port"])
        forward = True
        if bidirectional and a > b:
            a, b, forward = b, a, False
        key = (r["ip_version"], r["protocol"], a[0], a[1], b[0], b[1], r["vlan_id"])
        s = live.get(key)
        if s is not None:
            reason = None
            if idle_ns is not None and ts - s["last_ts_ns"] >= idle_ns:
                reason = "idle"
            elif active_ns is not None and ts - s["first_ts_ns"] >= active_ns:
                reason = "active"
            if reason:
                done.append((key, s, reason))
                s = None
        if s is None:
            s = live[key] = {"first_ts_ns": ts, "last_ts_ns": ts, "packets": 0, "bytes": 0, "tcp_flags": None,
                                 "src2dst_packets": 0, "src2dst_bytes": 0, "dst2src_packets": 0, "dst2src_bytes": 0,
                                 "flow_id": next_id}
            next_id += 1
        s["first_ts_ns"] = min(s["first_ts_ns"], ts)
        s["last_ts_ns"] = max(s["last_ts_ns"], ts)
        s["packets"] += 1
        s["bytes"] += wirelen
        d = "src2dst" if forward else "dst2src"
        s[d + "_packets"] += 1
        s[d + "_bytes"] += wirelen
        if r["tcp_flags"] is not None:
            s["tcp_flags"] = (s["tcp_flags"] or 0) | r["tcp_flags"]
    for key, s in live.items():
        end = "idle" if idle_ns is not None and last_capture - s["last_ts_ns"] >= idle_ns else "end"
        done.append((key, s, end))
    rows = []
    for key, s, reason in done:
        ipv, proto, src, sport, dst, dport, vlan = key
        row = {"flow_id": s["flow_id"]} if flow_id else {}
        row |= {"ip_version": ipv, "protocol": proto, "src_ip": src, "dst_ip": dst,
                   "src_port": None if sport == -1 else sport, "dst_port": None if dport == -1 else dport,
                   "vlan_id": vlan, "packets": s["packets"], "bytes": s["bytes"], "first_ts_ns": s["first_ts_ns"],
                   "last_ts_ns": s["last_ts_ns"], "duration_ns": s["last_ts_ns"] - s["first_ts_ns"],
                   "tcp_flags": s["tcp_flags"]}
        if bidirectional:
            for k in ("src2dst_packets", "src2dst_bytes", "dst2src_packets", "dst2src_bytes"):
                row[k] = s[k]
            row["bidirectional_packets"] = s["packets"]
            row["bidirectional_bytes"] = s["bytes"]
        if idle_ns is not None or active_ns is not None:
            row["expiration_reason"] = reason
        rows.append(((s["first_ts_ns"], key_sort(key), reason_order(reason)), row))
    rows.sort(key=lambda x: x[0])
    return [r for _, r in rows]


def reason_order(r: str) -> int:
    return {"idle": 0, "active": 1, "end": 2}[r]


def key_sort(key):
    """The native key order: version, protocol, src, src port (None first), dst, dst port, vlan."""
    ipv, proto, src, sport, dst, dport, vlan = key
    return (ipv, proto, src, sport, dst, dport, -1 if vlan is None else vlan)
