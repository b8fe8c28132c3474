"""A realistic mix of many short flows, written as a classic pcap (deterministic per seed).

    python benchmarks/realistic_mix.py OUT.pcap [--packets 1000000] [--seed 1]

Flows start over a minute of capture time and overlap; by share of flows:
- 40% DNS over UDP: a query and its response (random names);
- 30% TLS over TCP: handshake, a ClientHello with SNI and ALPN, a ServerHello, 2-40
  application-data records both ways, FIN/ACK teardown;
- 15% HTTP/1.1 over TCP: handshake, a GET with Host and User-Agent, a response, teardown;
- 8% QUIC: a padded Initial (long header, version 1), then 2-20 short-header packets;
- 4% NTP: a client request and the server's reply on port 123;
- 3% SSH: handshake, identification strings, 5-30 packets.
Clients are 2,000 IPv4 hosts (1 in 10 flows over IPv6), servers 300. Frame sizes are
those of the protocols (ACKs 54-66 bytes, data up to 1,514).
"""

from __future__ import annotations

import argparse
import heapq
import random
import struct
import sys

ETH_SRC = bytes.fromhex("020000000001")
ETH_DST = bytes.fromhex("020000000002")
T0 = 1_700_000_000_000_000_000


def _eth(ethertype: int, payload: bytes, fwd: bool) -> bytes:
    a, b = (ETH_DST, ETH_SRC) if fwd else (ETH_SRC, ETH_DST)
    return a + b + struct.pack("!H", ethertype) + payload


def _ip(proto: int, src: bytes, dst: bytes, l4: bytes) -> tuple[int, bytes]:
    if len(src) == 4:
        return 0x0800, struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(l4), 0, 0x4000, 64, proto, 0, src, dst) + l4
    return 0x86DD, struct.pack("!IHBB16s16s", 0x60000000, len(l4), proto, 64, src, dst) + l4


def _tcp(sp: int, dp: int, seq: int, ack: int, flags: int, data: bytes = b"") -> bytes:
    return struct.pack("!HHIIBBHHH", sp, dp, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF, 0x50, flags, 65535, 0, 0) + data


def _udp(sp: int, dp: int, data: bytes) -> bytes:
    return struct.pack("!HHHH", sp, dp, 8 + len(data), 0) + data


def _dns(name: str, qid: int, response: bool) -> bytes:
    q = struct.pack("!HHHHHH", qid, 0x8180 if response else 0x0100, 1, 1 if response else 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    q += b"\x00\x00\x01\x00\x01"
    if response:
        q += b"\xc0\x0c\x00\x01\x00\x01\x00\x00\x01\x2c\x00\x04" + bytes([93, 184, 216, 34])
    return q


def _client_hello(sni: str, rnd: random.Random) -> bytes:
    host = sni.encode()
    ext = struct.pack("!HHHBH", 0, len(host) + 5, len(host) + 3, 0, len(host)) + host
    alpn = b"\x02h2\x08http/1.1"
    ext += struct.pack("!HHH", 16, len(alpn) + 2, len(alpn)) + alpn
    ext += struct.pack("!HH", 43, 3) + b"\x02\x03\x04"
    ext += struct.pack("!HH", 21, 150) + bytes(150)  # padding, as browsers send
    suites = b"".join(struct.pack("!H", s) for s in (0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0xC02C, 0xC030))
    body = b"\x03\x03" + rnd.randbytes(32) + b"\x20" + rnd.randbytes(32)
    body += struct.pack("!H", len(suites)) + suites + b"\x01\x00" + struct.pack("!H", len(ext)) + ext
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


def _server_hello(rnd: random.Random) -> bytes:
    body = b"\x03\x03" + rnd.randbytes(32) + b"\x20" + rnd.randbytes(32) + b"\x13\x01\x00" + b"\x00\x06\x00\x2b\x00\x02\x03\x04"
    hs = b"\x02" + struct.pack("!I", len(body))[1:] + body
    rec = b"\x16\x03\x03" + struct.pack("!H", len(hs)) + hs
    return rec + b"\x17\x03\x03" + struct.pack("!H", 1200) + rnd.randbytes(1200)


def _app_data(n: int) -> bytes:
    return b"\x17\x03\x03" + struct.pack("!H", n) + bytes(n)


class Flow:
    """The packets of one flow as (gap ns before it, forward?, l4 builder output)."""

    def __init__(self, kind: str, rnd: random.Random, client: bytes, server: bytes, cport: int) -> None:
        self.kind, self.client, self.server, self.cport = kind, client, server, cport
        self.rnd = rnd

    def packets(self):
        rnd, cp = self.rnd, self.cport
        rtt = rnd.randrange(200_000, 40_000_000)
        if self.kind == "dns":
            name = f"host{rnd.randrange(100000)}.example{rnd.randrange(50)}.com"
            qid = rnd.randrange(65536)
            yield 0, True, 17, _udp(cp, 53, _dns(name, qid, False))
            yield rtt, False, 17, _udp(53, cp, _dns(name, qid, True))
            return
        if self.kind == "ntp":
            yield 0, True, 17, _udp(cp, 123, b"\x23" + bytes(47))
            yield rtt, False, 17, _udp(123, cp, b"\x24\x02" + bytes(46))
            return
        if self.kind == "quic":
            dcid = rnd.randbytes(8)
            initial = b"\xc3\x00\x00\x00\x01\x08" + dcid + b"\x00\x00\x44\xd0" + rnd.randbytes(1180)
            yield 0, True, 17, _udp(cp, 443, initial)
            yield rtt, False, 17, _udp(443, cp, b"\xc1\x00\x00\x00\x01\x00\x08" + dcid + rnd.randbytes(1100))
            for _ in range(rnd.randrange(2, 20)):
                fwd = rnd.random() < 0.4
                yield rnd.randrange(10_000, 5_000_000), fwd, 17, _udp(cp if fwd else 443, 443 if fwd else cp,
                                                                      b"\x40" + dcid + rnd.randbytes(rnd.randrange(20, 1200)))
            return
        port = {"tls": 443, "http": 80, "ssh": 22}[self.kind]
        cs, ss = rnd.randrange(1 << 32), rnd.randrange(1 << 32)
        yield 0, True, 6, _tcp(cp, port, cs, 0, 0x02)
        yield rtt, False, 6, _tcp(port, cp, ss, cs + 1, 0x12)
        yield rtt // 4, True, 6, _tcp(cp, port, cs + 1, ss + 1, 0x10)
        if self.kind == "tls":
            sni = f"www.site{rnd.randrange(5000)}.example"
            yield 50_000, True, 6, _tcp(cp, port, cs + 1, ss + 1, 0x18, _client_hello(sni, rnd))
            yield rtt, False, 6, _tcp(port, cp, ss + 1, cs + 600, 0x18, _server_hello(rnd))
            for _ in range(rnd.randrange(2, 40)):
                fwd = rnd.random() < 0.3
                n = rnd.choice([30, 60, 200, 1200, 1400]) if fwd else rnd.choice([100, 1400, 1400, 1400, 600])
                data = _app_data(n)
                yield rnd.randrange(20_000, 20_000_000), fwd, 6, (_tcp(cp, port, cs, ss, 0x18, data) if fwd
                                                                  else _tcp(port, cp, ss, cs, 0x18, data))
        elif self.kind == "http":
            req = (f"GET /page/{rnd.randrange(10**6)} HTTP/1.1\r\nHost: web{rnd.randrange(500)}.example\r\n"
                   f"User-Agent: Mozilla/5.0 (X11; Linux x86_64) bench/{rnd.randrange(9)}\r\nAccept: */*\r\n\r\n").encode()
            yield 40_000, True, 6, _tcp(cp, port, cs + 1, ss + 1, 0x18, req)
            yield rtt, False, 6, _tcp(port, cp, ss + 1, cs + 1 + len(req), 0x18,
                                      b"HTTP/1.1 200 OK\r\nContent-Length: 900\r\n\r\n" + bytes(900))
            yield rtt // 4, True, 6, _tcp(cp, port, cs + 1 + len(req), ss + 950, 0x10)
        else:
            yield 30_000, False, 6, _tcp(port, cp, ss + 1, cs + 1, 0x18, b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
            yield 30_000, True, 6, _tcp(cp, port, cs + 1, ss + 33, 0x18, b"SSH-2.0-OpenSSH_9.6\r\n")
            for _ in range(rnd.randrange(5, 30)):
                fwd = rnd.random() < 0.5
                data = rnd.randbytes(rnd.choice([36, 52, 100, 500]))
                yield rnd.randrange(50_000, 200_000_000), fwd, 6, (_tcp(cp, port, cs, ss, 0x18, data) if fwd
                                                                   else _tcp(port, cp, ss, cs, 0x18, data))
        yield rnd.randrange(1_000_000, 50_000_000), True, 6, _tcp(cp, port, cs + 2, ss + 2, 0x11)
        yield rtt, False, 6, _tcp(port, cp, ss + 2, cs + 3, 0x11)
        yield rtt // 4, True, 6, _tcp(cp, port, cs + 3, ss + 3, 0x10)


KINDS = [("dns", 40), ("tls", 30), ("http", 15), ("quic", 8), ("ntp", 4), ("ssh", 3)]


def generate(path: str, packets: int = 1_000_000, seed: int = 1) -> dict[str, int]:
    """Write `packets` packets to `path` (flows still going at the end are cut); returns counts."""
    import paclo

    rnd = random.Random(seed)
    kinds = [k for k, w in KINDS for _ in range(w)]
    clients4 = [bytes([10, 1 + i // 250, i % 250, 1 + i % 7]) for i in range(2000)]
    servers4 = [bytes([93, 184, i // 100, i % 100 + 1]) for i in range(300)]
    clients6 = [bytes.fromhex("20010db8000100000000000000") + struct.pack("!H", i) + b"\x01" for i in range(2000)]
    servers6 = [bytes.fromhex("2606280000000000000000000000") + struct.pack("!H", i) for i in range(300)]
    # A flow starts every so often; its packets go on a heap ordered by time.
    heap: list[tuple[int, int, bytes]] = []
    written = flows = 0
    start = T0
    avg_flow_packets = 10
    spacing = 60_000_000_000 // max(1, packets // avg_flow_packets)
    seq = 0
    with paclo.PcapWriter(path, nanosecond=True) as w:
        while written < packets:
            start += int(rnd.expovariate(1 / spacing))
            while heap and heap[0][0] <= start and written < packets:
                ts, _, frame = heapq.heappop(heap)
                w.write(frame, ts_ns=ts)
                written += 1
            v6 = rnd.random() < 0.1
            client = rnd.choice(clients6 if v6 else clients4)
            server = rnd.choice(servers6 if v6 else servers4)
            f = Flow(rnd.choice(kinds), random.Random(rnd.randrange(1 << 62)), client, server, rnd.randrange(1024, 65536))
            ts = start
            for gap, fwd, proto, l4 in f.packets():
                ts += gap
                src, dst = (client, server) if fwd else (server, client)
                et, ip = _ip(proto, src, dst, l4)
                seq += 1
                heapq.heappush(heap, (ts, seq, _eth(et, ip, fwd)))
            flows += 1
        while heap and written < packets:
            ts, _, frame = heapq.heappop(heap)
            w.write(frame, ts_ns=ts)
            written += 1
    return {"packets": written, "flows_started": flows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    print(generate(a.out, a.packets, a.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
