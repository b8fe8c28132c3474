"""One capture file read with ``threads=1`` and ``threads=N`` (flows, project), alternated.

Generates a dataset with ``paclo.perf.datasets`` (or takes ``--file``), warms it into the
page cache, then runs each call with 1 and N threads alternately for ``--rounds`` rounds in
this one process, checking that both give the same table. Reports per call and thread
count the median wall time and process CPU time (min-max), and the wall-time speedup of
N threads over one (median of the per-round ratios). The generated file is deleted at the
end unless ``--keep``.

    python benchmarks/threads_bench.py [--case mixed] [--bytes 1e9] [--threads 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import paclo
from paclo.perf import datasets

# Bytes a packet of each case takes on disk (record header included), to size the dataset.
PER_PACKET = {"udp-64": 80, "tcp-512": 528}


def _count_for(case: str, size: float) -> int:
    probe = Path(tempfile.mkdtemp()) / "probe.pcap"
    if case in PER_PACKET:
        return int(size // PER_PACKET[case])
    info = datasets.generate(case, 100_000, probe)
    probe.unlink()
    return int(size / (info["file_size"] / 100_000))


def _timed(call: Any) -> tuple[float, float, Any]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - w0, time.process_time() - c0, out


def _spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--case", default="mixed", choices=datasets.CASES)
    ap.add_argument("--bytes", type=float, default=1e9, help="dataset size (default 1e9)")
    ap.add_argument("--file", help="an existing classic pcap file instead")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    made = a.file is None
    path = Path(a.file) if a.file else Path(tempfile.mkdtemp()) / f"{a.case}.pcap"
    try:
        if made:
            info = datasets.generate(a.case, _count_for(a.case, a.bytes), path)
            print(f"[threads] {a.case}: {info['packets']} packets, {info['file_size']} bytes")
        with open(path, "rb") as f:  # into the page cache
            while f.read(1 << 24):
                pass
        calls = {
            "flows": lambda t: paclo.flows(path, threads=t),
            "project": lambda t: paclo.project(path, threads=t),
        }
        for name, call in calls.items():
            wall: dict[int, list[float]] = {1: [], a.threads: []}
            cpu: dict[int, list[float]] = {1: [], a.threads: []}
            ratios = []
            for _ in range(a.rounds):
                w1, c1, one = _timed(lambda c=call: c(1))
                wn, cn, many = _timed(lambda c=call: c(a.threads))
                assert one.equals(many), f"{name}: threads={a.threads} differs from threads=1"
                del one, many
                wall[1].append(w1)
                cpu[1].append(c1)
                wall[a.threads].append(wn)
                cpu[a.threads].append(cn)
                ratios.append(w1 / wn)
            for t in wall:
                print(f"{name} threads={t}: wall {_spread(wall[t])} s, cpu {_spread(cpu[t])} s")
            print(f"{name}: speedup {statistics.median(ratios):.2f}x (rounds {', '.join(f'{r:.2f}' for r in ratios)})")
        print(f"[threads] load average {os.getloadavg()}")
    finally:
        if made and not a.keep:
            path.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
