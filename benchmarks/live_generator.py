"""paclo's UDP generator beside a plain C sendmmsg sender, in the same run, on the loopback.

Both send 64-byte datagrams (36 bytes of payload) to a sink socket bound on 127.0.0.1 (a
16 MiB receive buffer, never read, so no ICMP port-unreachable is ever generated), with the
same design: connected sockets, one thread per sender, sendmmsg batches of 64, pacing by
absolute deadlines. Each pass runs for --duration-ms at a target far above what either can
reach, so the realized rate is the sender's ceiling. Passes alternate (paclo, C, paclo, ...)
so that machine load hits both alike; the figures are medians with min-max.

    python benchmarks/live_generator.py --repeats 5 --senders 1,2

Options: --repeats N (5), --duration-ms MS (1000), --senders LIST (1,2), --rate PPS
(10,000,000), --batch N (64), --sink hold|drain (hold: the 16 MiB buffer is never read; drain:
a thread reads and discards), --capture (also capture the port with plain libpcap in C while
sending, as a live run does), --output DIR (target/perf-generator: the compiled C tools).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from paclo import _paclo
from paclo.perf import metrics, peers
from paclo.perf.sink import Sink


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _paclo_pass(port: int, args: argparse.Namespace, senders: int) -> float:
    report = _paclo.udp_generate("127.0.0.1", port, args.rate, duration_ms=args.duration_ms, senders=senders,
                                 batch=args.batch)
    return float(report["realized_pps"])


def _c_pass(binary: str, port: int, args: argparse.Namespace, senders: int) -> float:
    proc = subprocess.run([binary, "--host", "127.0.0.1", "--port", str(port), "--rate", str(args.rate),
                           "--duration-ms", str(args.duration_ms), "--senders", str(senders),
                           "--batch", str(args.batch)], capture_output=True, text=True, check=True)
    return float(json.loads(proc.stdout)["realized_pps"])


class _Capture:
    """Plain libpcap in C on lo, filtering the sink's port, for the length of one pass."""

    def __init__(self, binary: str, port: int, duration_ms: int) -> None:
        fd, self.ready = tempfile.mkstemp(suffix=".ready")
        os.close(fd)
        os.unlink(self.ready)
        self.proc = subprocess.Popen(
            [binary, "--device", "lo", "--filter", f"udp dst port {port}", "--buffer-size", str(16 << 20),
             "--immediate", "0", "--duration-ms", str(duration_ms + 2000), "--idle-ms", "300",
             "--ready-file", self.ready], stdout=subprocess.PIPE, text=True)
        while not os.path.exists(self.ready):
            if self.proc.poll() is not None:
                raise RuntimeError("the C capture failed to start")
            time.sleep(0.005)

    def finish(self) -> dict[str, Any]:
        out, _ = self.proc.communicate(timeout=60)
        os.unlink(self.ready)
        result: dict[str, Any] = json.loads(out)
        return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--duration-ms", type=int, default=1000)
    parser.add_argument("--senders", default="1,2")
    parser.add_argument("--rate", type=int, default=10_000_000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--sink", choices=("hold", "drain"), default="hold")
    parser.add_argument("--capture", action="store_true")
    parser.add_argument("--output", default="target/perf-generator")
    args = parser.parse_args(argv)
    sender = peers.compile_c_sender(Path(args.output))
    capture_bin = peers.compile_c_live_peer(Path(args.output)) if args.capture else None
    port = _free_port()
    print(f"load average before: {os.getloadavg()[0]:.2f}; {args.sink} sink on 127.0.0.1:{port}; "
          f"{'with' if args.capture else 'without'} a capture", file=sys.stderr)
    rows = []
    with Sink(port, mode=args.sink):
        for senders in (int(s) for s in args.senders.split(",")):
            got: dict[str, list[float]] = {"paclo": [], "c": []}
            for _ in range(args.repeats):
                for name in ("paclo", "c"):
                    cap = _Capture(capture_bin, port, args.duration_ms) if capture_bin else None
                    if name == "paclo":
                        got[name].append(_paclo_pass(port, args, senders))
                    else:
                        got[name].append(_c_pass(sender, port, args, senders))
                    if cap is not None:
                        cap.finish()
            med = {k: float(metrics.median(v)) for k, v in got.items()}
            rows.append((senders, med, got))
    print(f"load average after: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    print("| senders | paclo pps (median, min-max) | C sendmmsg pps (median, min-max) | paclo / C |")
    print("|---:|---:|---:|---:|")
    for senders, med, got in rows:
        print(f"| {senders} | {med['paclo']:,.0f} ({min(got['paclo']):,.0f}-{max(got['paclo']):,.0f}) "
              f"| {med['c']:,.0f} ({min(got['c']):,.0f}-{max(got['c']):,.0f}) | {med['paclo'] / med['c']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
