"""Full decode of a udp-64 capture: paclo's packet map beside dpkt, in one run.

    python benchmarks/decode_bench.py [--packets 1000000] [--runs 2] [--dir DIR]

Writes the capture (classic pcap, little-endian, microseconds) with a small struct-based
writer: Ethernet 20:21:22:23:24:25 -> 10:11:12:13:14:15, IPv4 10.0.0.1 -> 10.0.0.2, UDP
12000 -> 5300, 64-byte frames. Each figure is the best of ``--runs`` passes over the file
(file in the page cache), in ns per packet, as wall-clock time and as this process's CPU time
(the steadier figure on a shared machine). Build with ``maturin develop --release`` first.
"""

from __future__ import annotations

import argparse
import os
import platform
import struct
import sys
import tempfile
import time
from pathlib import Path

import paclo

FRAME_LEN = 64


def udp64_frame(i: int) -> bytes:
    payload = struct.pack("!I", i) + bytes(FRAME_LEN - 14 - 20 - 8 - 4)
    udp = struct.pack("!HHHH", 12000, 5300, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xFFFF, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    eth = bytes.fromhex("101112131415") + bytes.fromhex("202122232425") + b"\x08\x00"
    frame = eth + ip + udp
    assert len(frame) == FRAME_LEN
    return frame


def write_udp64(path: Path, packets: int) -> None:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        rec = struct.Struct("<IIII")
        for i in range(packets):
            frame = udp64_frame(i)
            f.write(rec.pack(1_700_000_000 + i // 1_000_000, i % 1_000_000, FRAME_LEN, FRAME_LEN))
            f.write(frame)


def run_paclo(path: Path) -> tuple[int, bool]:
    n = 0
    last = None
    for m in paclo.read(str(path), decode="full"):
        n += 1
        last = m
    ok = last is not None and last["decoded"]["l3"]["l4"]["dst_port"] == 5300
    return n, ok


def run_paclo_raw(path: Path) -> tuple[int, bool]:
    n = 0
    for _ in paclo.read(str(path)):
        n += 1
    return n, True


def run_dpkt(path: Path) -> tuple[int, bool]:
    import dpkt

    n = 0
    port = None
    with open(path, "rb") as f:
        for _ts, buf in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(buf)
            port = eth.data.data.dport
            n += 1
    return n, port == 5300


def best(fn, path: Path, packets: int, runs: int) -> tuple[float, float, bool]:
    """Best wall-clock and best process-CPU ns/packet over ``runs`` passes, and the check."""
    wall, cpu = [], []
    ok = True
    for _ in range(runs):
        t0, c0 = time.perf_counter_ns(), time.process_time_ns()
        n, good = fn(path)
        wall.append(time.perf_counter_ns() - t0)
        cpu.append(time.process_time_ns() - c0)
        ok = ok and good and n == packets
    return min(wall) / packets, min(cpu) / packets, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--dir", type=Path, default=None)
    args = ap.parse_args()
    tmp = args.dir or Path(tempfile.mkdtemp(prefix="paclo-decode-bench-"))
    path = tmp / f"udp-64-{args.packets}.pcap"
    if not path.exists():
        write_udp64(path, args.packets)
    print(f"# {platform.node()} {platform.processor() or platform.machine()} "
          f"cpus={os.cpu_count()} python={platform.python_version()} paclo={paclo.__version__}")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {path.name}  "
          f"load average {os.getloadavg()[0]:.1f}")
    for name, fn in [("paclo read (Packet objects)", run_paclo_raw),
                     ("paclo read decode='full' (packet map)", run_paclo),
                     ("dpkt pcap.Reader + Ethernet() parse", run_dpkt)]:
        wall, cpu, ok = best(fn, path, args.packets, args.runs)
        print(f"{name:42s} {wall:8.0f} ns/packet wall {cpu:8.0f} ns/packet cpu  correct={ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
