"""Read one 1,000,000-packet udp-64 file three ways and compare ns/packet:

(a) the native loop probe (`_paclo.count_packets`: the whole loop in Rust, no Python
    object per packet), (b) the Python iterator (`for pkt in paclo.read(path)`), and
    (c) the C baseline `benchmarks/pcap_next_ex.c` (libpcap's `pcap_next_ex`).

Usage: python benchmarks/read_bench.py [--count N] [--repeats R] [--dir DIR]
Build paclo in release mode first (`maturin develop --release`). Each figure is the best
of R passes over a file in the page cache; every pass checks packets and bytes. Wall-clock
and process CPU time are both reported: on a machine shared with other jobs the CPU time
is the steadier of the two.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

import paclo
from paclo import _paclo
from paclo.perf import datasets

HERE = pathlib.Path(__file__).resolve().parent


def build_c(out_dir: pathlib.Path) -> pathlib.Path | None:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    exe = out_dir / "pcap_next_ex"
    subprocess.run([cc, "-O2", "-o", str(exe), str(HERE / "pcap_next_ex.c"), "-lpcap"], check=True)
    return exe


def best(fn, repeats: int) -> tuple[float, float]:
    """(best wall ns, best CPU ns) of `repeats` calls."""
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter_ns(), time.process_time_ns()
        fn()
        wall.append(time.perf_counter_ns() - t0)
        cpu.append(time.process_time_ns() - c0)
    return min(wall), min(cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where to write the dataset (default: a temp dir)")
    args = ap.parse_args()

    work = pathlib.Path(args.dir) if args.dir else pathlib.Path(tempfile.mkdtemp(prefix="paclo-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"udp-64-{args.count}.pcap"
    info = datasets.generate("udp-64", args.count, path)
    n, nbytes = info["packets"], info["bytes"]

    def native():
        got = _paclo.count_packets(str(path))
        assert got == (n, nbytes), got

    def iterator():
        count = 0
        total = 0
        for pkt in paclo.read(path):
            count += 1
            total += pkt.caplen
        assert (count, total) == (n, nbytes)

    def iterator_bare():
        count = 0
        for _ in paclo.read(path):
            count += 1
        assert count == n

    native()  # page cache warm-up
    results = {}
    for name, fn in (
        ("native loop (count_packets)", native),
        ("Python iterator, for pkt: pkt.caplen", iterator),
        ("Python iterator, bare for", iterator_bare),
    ):
        wall, cpu = best(fn, args.repeats)
        results[name] = (wall / n, cpu / n)
    exe = build_c(work)
    if exe is not None:
        out = subprocess.run([str(exe), str(path), str(args.repeats)], check=True, capture_output=True, text=True).stdout
        m = re.search(r"packets=(\d+) bytes=(\d+) ns_per_packet=([\d.]+) cpu_ns_per_packet=([\d.]+)", out)
        assert m and int(m.group(1)) == n and int(m.group(2)) == nbytes, out
        results["C pcap_next_ex loop"] = (float(m.group(3)), float(m.group(4)))

    print(f"# {platform.node()} | {platform.processor() or platform.machine()} | {os.cpu_count()} CPUs | "
          f"Python {platform.python_version()} | paclo {paclo.__version__} | {time.strftime('%Y-%m-%d')}")
    print(f"# udp-64, {n:,} packets, {nbytes:,} bytes, best of {args.repeats}")
    c = results.get("C pcap_next_ex loop")
    print(f"{'':40s} {'wall ns/pkt':>12s} {'CPU ns/pkt':>11s}  speed vs pcap_next_ex (wall, CPU)")
    for name, (wall, cpu) in results.items():
        ratio = f"  {c[0] / wall:5.2f}x {c[1] / cpu:5.2f}x" if c else ""
        print(f"{name:40s} {wall:12.1f} {cpu:11.1f}{ratio}")
    if not args.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
