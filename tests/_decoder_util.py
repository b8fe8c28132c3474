"""Frame builders for the decoder tests: explicit bytes, no third-party packet library."""

from __future__ import annotations

import struct

MAC_DST = bytes.fromhex("101112131415")
MAC_SRC = bytes.fromhex("202122232425")
IP4_SRC = bytes([10, 0, 0, 1])
IP4_DST = bytes([10, 0, 0, 2])
IP6_SRC = bytes.fromhex("20010db8000000000000000000000001")
IP6_DST = bytes.fromhex("fe800000000000000000000000000abc")


def eth(ethertype: int, payload: bytes, *, dst: bytes = MAC_DST, src: bytes = MAC_SRC) -> bytes:
    return dst + src + struct.pack("!H", ethertype) + payload


def vlan(tpid: int, pcp: int, dei: int, vid: int, ethertype: int, payload: bytes) -> bytes:
    """An Ethernet frame with one tag (``payload`` follows ``ethertype``)."""
    tci = (pcp << 13) | (dei << 12) | vid
    return MAC_DST + MAC_SRC + struct.pack("!HHH", tpid, tci, ethertype) + payload


def tag(pcp: int, dei: int, vid: int, ethertype: int) -> bytes:
    return struct.pack("!HH", (pcp << 13) | (dei << 12) | vid, ethertype)


def ipv4(proto: int, payload: bytes, *, options: bytes = b"", flags_frag: int = 0, ident: int = 0xABCD,
         ttl: int = 64, tos: int = 0x10, src: bytes = IP4_SRC, dst: bytes = IP4_DST,
         total_length: int | None = None, checksum: int = 0x1111) -> bytes:
    hlen = 20 + len(options)
    total = hlen + len(payload) if total_length is None else total_length
    return struct.pack("!BBHHHBBH4s4s", 0x40 | hlen // 4, tos, total, ident, flags_frag, ttl, proto,
                       checksum, src, dst) + options + payload


def ipv6(nh: int, payload: bytes, *, tc: int = 0x12, flow: int = 0x34567, hop: int = 64,
         src: bytes = IP6_SRC, dst: bytes = IP6_DST) -> bytes:
    first = (6 << 28) | (tc << 20) | flow
    return struct.pack("!IHBB", first, len(payload), nh, hop) + src + dst + payload


def ext(nh: int, body: bytes) -> bytes:
    """A generic IPv6 extension header (HBH/DestOpt/Routing) padded to 8-byte units."""
    raw = bytes([nh, 0]) + body
    raw += bytes(-len(raw) % 8)
    return bytes([nh, len(raw) // 8 - 1]) + raw[2:]


def frag6(nh: int, offset: int, more: bool, ident: int = 1) -> bytes:
    return struct.pack("!BBHI", nh, 0, (offset << 3) | int(more), ident)


def ah(nh: int, icv: bytes = bytes(4)) -> bytes:
    length = (12 + len(icv)) // 4 - 2
    return struct.pack("!BBHII", nh, length, 0, 0x100, 1) + icv


def udp(sport: int, dport: int, payload: bytes, *, length: int | None = None, checksum: int = 0x1234) -> bytes:
    n = 8 + len(payload) if length is None else length
    return struct.pack("!HHHH", sport, dport, n, checksum) + payload


def tcp(sport: int, dport: int, flags: int, payload: bytes = b"", *, options: bytes = b"", seq: int = 1,
        ack: int = 2, window: int = 65535, checksum: int = 0x4321, urgent: int = 0) -> bytes:
    doff = (20 + len(options)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, doff << 4, flags, window, checksum,
                       urgent) + options + payload


def icmp(type_: int, code: int, rest: bytes = bytes(4), *, checksum: int = 0xF00D) -> bytes:
    return struct.pack("!BBH", type_, code, checksum) + rest


def arp(op: int, sha: bytes, spa: bytes, tha: bytes, tpa: bytes, *, ptype: int = 0x0800) -> bytes:
    return struct.pack("!HHBBH", 1, ptype, len(sha), len(spa), op) + sha + spa + tha + tpa


def dns_name(name: str) -> bytes:
    out = b""
    for label in name.split(".") if name else []:
        out += bytes([len(label)]) + label.encode()
    return out + b"\x00"


def dns(ident: int, flags: int, questions: list[tuple[bytes, int, int]], *, an: int = 0, ns: int = 0,
        ar: int = 0, tail: bytes = b"") -> bytes:
    body = b"".join(name + struct.pack("!HH", qt, qc) for name, qt, qc in questions)
    return struct.pack("!HHHHHH", ident, flags, len(questions), an, ns, ar) + body + tail


def client_hello(sni: str | None, alpn: list[str]) -> bytes:
    exts = b""
    if sni is not None:
        entry = b"\x00" + struct.pack("!H", len(sni)) + sni.encode()
        exts += struct.pack("!HHH", 0, len(entry) + 2, len(entry)) + entry
    if alpn:
        lst = b"".join(bytes([len(p)]) + p.encode() for p in alpn)
        exts += struct.pack("!HHH", 16, len(lst) + 2, len(lst)) + lst
    body = b"\x03\x03" + bytes(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    body += struct.pack("!H", len(exts)) + exts
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def write_pcap(path, frames, *, linktype: int = 1, ts0: int = 1_700_000_000) -> None:
    """A classic little-endian microsecond pcap of ``frames`` (bytes, or (bytes, wirelen))."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for i, fr in enumerate(frames):
            data, wirelen = fr if isinstance(fr, tuple) else (fr, len(fr))
            f.write(struct.pack("<IIII", ts0 + i, 250 * i, len(data), wirelen) + data)
