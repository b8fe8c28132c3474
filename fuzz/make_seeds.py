"""Write the seeds of the `read`, `flow` and `l7` fuzz targets: small capture files written by
paclo's writer, by the test builders (big-endian, nanosecond, modified classic; pcapng
with several sections and interfaces) and rewritten by tcpdump, tshark, editcap and
mergecap when they are installed.

    python fuzz/make_seeds.py [OUT]     # default fuzz/corpus/seeds; prints one line per target

`OUT/read/*` are whole files; `OUT/flow/*` are the `flow` target's inputs (an option byte,
then `[length][time step][frame]` records) made from the same packets. Seeds are
generated, never committed: the tools' files depend on the tools' versions.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from _decoder_util import (  # noqa: E402
    IP4_DST,
    IP4_SRC,
    ah,
    client_hello,
    dns,
    dns_name,
    eth,
    ext,
    frag6,
    icmp,
    ipv4,
    ipv6,
    tcp,
    udp,
    vlan,
)
from _foundation_util import Ng, Rec, classic  # noqa: E402

#: The flow target's link types, by index (its LINKTYPES table).
FLOW_LINKTYPES = [0, 1, 12, 14, 101, 108, 113, 276, 147, 228, 229]


def frames() -> list[bytes]:
    """A dozen small Ethernet frames covering the decoder's layers."""
    q = dns(0x1234, 0x0100, [(dns_name("example.com"), 1, 1)])
    return [
        eth(0x0800, ipv4(17, udp(40000, 53, q))),
        eth(0x0800, ipv4(6, tcp(40001, 443, 0x18, client_hello("example.org", ["h2", "http/1.1"])))),
        eth(0x0800, ipv4(6, tcp(40001, 443, 0x02))),
        eth(0x0800, ipv4(6, tcp(443, 40001, 0x12))),
        eth(0x0800, ipv4(1, icmp(8, 0, b"\x00\x01\x00\x01" + b"ping"))),
        eth(0x0800, ipv4(17, udp(1, 2, b"frag"), flags_frag=0x2000)),
        eth(0x0800, ipv4(17, b"tail-of-a-fragment", flags_frag=0x0003)),
        eth(0x0800, ipv4(51, ah(6, bytes(4)) + tcp(1, 2, 0x10))),
        eth(0x86DD, ipv6(0, ext(60, bytes(6)) + ext(17, bytes(6))[:0] + udp(5353, 5353, b"m"))),
        eth(0x86DD, ipv6(44, frag6(17, 0, True) + udp(7, 8, b"x"))),
        eth(0x86DD, ipv6(58, icmp(128, 0, b"\x00\x02\x00\x01"))),
        vlan(0x8100, 1, 0, 100, 0x0800, ipv4(17, udp(9, 10, b"vlan"))),
        eth(0x0806, bytes.fromhex("0001080006040001") + bytes(20)),
    ]


def builder_files() -> dict[str, bytes]:
    fs = frames()
    recs = [Rec(1_700_000_000_000_000_000 + i * 1_001_000, f) for i, f in enumerate(fs)]
    out = {
        "le-us.pcap": classic(recs),
        "be-us.pcap": classic(recs, big_endian=True),
        "le-ns.pcap": classic(recs, nanosecond=True),
        "be-ns.pcap": classic(recs, big_endian=True, nanosecond=True),
        "modified.pcap": classic(recs[:4], modified=True),
        "snaplen-40.pcap": classic(recs[:4], snaplen=40),
        "raw-ipv4.pcap": classic([Rec(r.ts_ns, r.data[14:]) for r in recs[:5]], linktype=228),
    }
    for big in (False, True):
        ng = Ng(big).shb().idb(1).idb(101, snaplen=60, tsresol=9).idb(113, tsresol=0x80 | 20, tsoffset=5)
        for i, r in enumerate(recs):
            iface = i % 3
            data = r.data if iface == 0 else r.data[14:] if iface == 1 else bytes(14) + r.data[12:]
            ng.epb(iface, r.ts_ns // 1000, data)
        ng.spb(recs[0].data)
        # A second section, other byte order, one interface.
        ng2 = Ng(not big).shb().idb(276)
        ng2.epb(0, 7, bytes.fromhex("0800000000000002000101060a0b0c0d0e0f0000") + recs[0].data[14:])
        out[f"sections-{'be' if big else 'le'}.pcapng"] = ng.bytes() + ng2.bytes()
    return out


def paclo_files(tmp: Path) -> dict[str, bytes]:
    try:
        import paclo
    except ImportError:
        return {}
    fs = frames()
    out = {}
    for name, kw in (("paclo-us.pcap", {}), ("paclo-ns.pcap", {"nanosecond": True}),
                     ("paclo-snap64.pcap", {"snaplen": 64})):
        p = tmp / name
        paclo.write_pcap(p, [{"data": f, "ts_ns": 1_700_000_000_000_000_000 + i * 999} for i, f in enumerate(fs)], **kw)
        out[name] = p.read_bytes()
    return out


def tool_files(tmp: Path, src: dict[str, bytes]) -> dict[str, bytes]:
    """The builder files rewritten by each installed tool."""
    base = tmp / "base.pcap"
    base.write_bytes(src["le-us.pcap"])
    raw = tmp / "raw.pcap"
    raw.write_bytes(src["raw-ipv4.pcap"])
    ng = tmp / "ng.pcapng"
    ng.write_bytes(src["sections-le.pcapng"])
    jobs = {
        "tcpdump.pcap": ["tcpdump", "-r", base, "-w", "{out}"],
        "tcpdump-ns.pcap": ["tcpdump", "--time-stamp-precision=nano", "-r", base, "-w", "{out}"],
        "tcpdump-snap60.pcap": ["tcpdump", "-s", "60", "-r", base, "-w", "{out}"],
        "tshark.pcapng": ["tshark", "-r", base, "-F", "pcapng", "-w", "{out}"],
        "tshark.pcap": ["tshark", "-r", ng, "-F", "pcap", "-w", "{out}"],
        "editcap-ns.pcap": ["editcap", "-F", "nsecpcap", base, "{out}"],
        "editcap-modified.pcap": ["editcap", "-F", "modpcap", base, "{out}"],
        "editcap-snap48.pcapng": ["editcap", "-F", "pcapng", "-s", "48", base, "{out}"],
        "mergecap.pcapng": ["mergecap", "-F", "pcapng", "-w", "{out}", base, raw],
    }
    out = {}
    for name, cmd in jobs.items():
        if shutil.which(cmd[0]) is None:
            continue
        dst = tmp / name
        args = [str(dst) if a == "{out}" else str(a) for a in cmd]
        r = subprocess.run(args, capture_output=True, timeout=60)
        if r.returncode == 0 and dst.exists():
            out[name] = dst.read_bytes()
    return out


def flow_inputs(files: dict[str, bytes]) -> list[bytes]:
    """The flow target's inputs: the frames under several option bytes."""
    fs = frames()
    body = b"".join(bytes([len(f), i % 7]) + f for i, f in enumerate(fs))
    raw = b"".join(bytes([len(f) - 14, 1]) + f[14:] for f in fs[:8])
    eth_index, raw_index = FLOW_LINKTYPES.index(1), FLOW_LINKTYPES.index(101)
    out = [bytes([eth_index | flags]) + body for flags in (0x00, 0x10, 0x30, 0x70, 0x80)]
    out += [bytes([raw_index]) + raw, bytes([FLOW_LINKTYPES.index(228) | 0x10]) + raw]
    return out


def l7_inputs() -> list[bytes]:
    """The l7 target's inputs (`[u16 length][time step][frame]` records): the frames, a
    ClientHello split over two TCP segments, an HTTP request, and the QUIC Initials of
    RFC 9001 and RFC 9369, under several option bytes."""
    hello = client_hello("example.org", ["h2", "http/1.1"])
    half = len(hello) // 2
    handshake = [
        eth(0x0800, ipv4(6, tcp(40002, 443, 0x02, seq=100))),
        eth(0x0800, ipv4(6, tcp(443, 40002, 0x12, seq=500, ack=101), src=IP4_DST, dst=IP4_SRC)),
        eth(0x0800, ipv4(6, tcp(40002, 443, 0x10, seq=101, ack=501))),
        eth(0x0800, ipv4(6, tcp(40002, 443, 0x18, hello[:half], seq=101, ack=501))),
        eth(0x0800, ipv4(6, tcp(40002, 443, 0x18, hello[half:], seq=101 + half, ack=501))),
        eth(0x0800, ipv4(6, tcp(40003, 80, 0x18, b"GET / HTTP/1.1\r\nHost: example.com:8080\r\n"
                                 b"User-Agent: fuzz\r\n\r\n"))),
    ]
    vectors = HERE.parent / "src" / "fingerprint" / "testdata"
    quic = [eth(0x0800, ipv4(17, udp(40004, 443, bytes.fromhex(p.read_text().strip()))))
            for p in sorted(vectors.glob("*client_initial.hex"))]
    fs = frames() + handshake + quic
    body = b"".join(struct.pack("!HB", len(f), i % 5) + f for i, f in enumerate(fs))
    eth_index = FLOW_LINKTYPES.index(1)
    return [bytes([eth_index | flags]) + body for flags in (0x00, 0x10, 0x30, 0x50)]


def write(out: Path, blobs: list[bytes]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    for b in blobs:
        (out / hashlib.sha1(b).hexdigest()[:16]).write_bytes(b)
    return len(blobs)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus" / "seeds"
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        files = builder_files()
        files.update(paclo_files(tmp))
        tools = tool_files(tmp, files)
        files.update(tools)
    n = write(out / "read", list(files.values()))
    m = write(out / "flow", flow_inputs(files))
    k = write(out / "l7", l7_inputs())
    made = ", ".join(sorted(tools)) or "none (no tool installed)"
    print(f"seeds: {n} files for read (tools: {made}), {m} inputs for flow, {k} for l7, in {out}")


if __name__ == "__main__":
    main()
