"""Command line of the performance runner: `python -m paclo.perf` and `paclo perf`.

Exit codes follow the paclo command-line contract: 0 success, 1 usage (unknown or incomplete
argument), 3 invalid choice, 4 bad flag value, 5 the benchmark failed (a worker failed, a
result failed its consistency checks, or the requested mode is not available), 130
interrupted (Ctrl-C: the finished steps are written to results.json with "complete": false).
"""

from __future__ import annotations

import sys

from . import config
from .options import EXIT_CHOICE, EXIT_FAILED, EXIT_USAGE, EXIT_VALUE, Options, UsageError, parse_args

# The shell's status for a command stopped by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130

__all__ = ["EXIT_CHOICE", "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_USAGE", "EXIT_VALUE", "USAGE", "Options", "UsageError", "main",
           "parse_args"]

USAGE = """\
usage: python -m paclo.perf [options]
       python -m paclo.perf report RESULTS.json [--compare OTHER.json] --output DIR

Reproducible offline (and live) performance baselines for paclo. Writes
<output>/results.json (schema version 2).

options:
  --mode offline|live|all   what to measure (default offline; all = live, then offline)
  --profile quick|reference|stress
                            dataset size and run counts (default quick)
  --output DIR              output directory (default target/perf)
  --scenarios a,b,...       run only these scenarios (offline, peer or live names; offline default:
                            paclo's and the C mmap walk peer-c-mmap-walk, the x walk yardstick)
  --warmups N               warm-up runs per worker (default: profile, 1)
  --runs N                  measured runs per worker (default: profile, 1 or 5)
  --packets N               packets per dataset case instead of the profile's count
  --peers                   also run the peers (C mmap walk, C pcap_next_ex, dpkt, scapy) on the same datasets;
                            live: add the C libpcap receivers to the --scenarios named
  --resume                  continue the incomplete results.json in --output: keep its steps, run the rest
                            (the same options and the same build of paclo are required)
  -h, --help                show this help
  --version                 print the version of paclo and exit

It prints the mode, profile, steps, dataset sizes and a time estimate first, then a table
(its columns explained under it). results.json is rewritten after every step, marked
"complete": false until the last one. Ctrl-C (or SIGTERM) stops the current worker and
writes the finished steps; the exit status is then 130. A run that was stopped or killed is
continued with the same command plus --resume.

live options (validated; live mode runs the live workers):
  --rates R1,R2,...         target packets per second (default: profile)
  --duration-ms N           capture duration per run (default: profile)
  --device NAME             capture device (default lo)
  --port N                  UDP port of the generated traffic (default 39053)
  --source loopback|external
                            traffic from in-process senders or from another host (default loopback)
  --filter BPF              capture filter (default: "udp dst port <port>")
  --expected-packets N      external only: packets the remote generator sends
  --generator-report FILE   external only: the remote generator's JSON report (read after the capture)
  --sink hold|drain|none    UDP socket bound on the port for the sweep (default hold: never read)
  --senders N               loopback sender threads (default: one per 400k pps, at most one per CPU)
  --batch N                 datagrams per sendmmsg call, 1..1024 (default 64)
  --generator-cpus 0,1      pin the loopback sender threads to these CPUs (default: not pinned)
  --frame-size N            bytes per generated frame (default 64)
  --snaplen N               1..65536 (default 2048: see docs/performance.md)
  --queue-cap N             queue capacity (default 1024)
  --queue-mode blocking|dropping
                            overrides the scenario's queue mode
  --branch-cap N            fan-out branch capacity (default 4096)
  --slow-cap N              slow dropping branch capacity (default 64)
  --consumer-delay-ns N     delay per packet in the consumer (default 0)

offline scenarios: {offline}
peer scenarios: {peers}
live scenarios: {live}
""".format(
    offline=", ".join(config.OFFLINE_SCENARIOS),
    peers=", ".join(config.PEER_SCENARIOS),
    live=", ".join(config.LIVE_SCENARIOS),
)


def main(argv: list[str] | None = None) -> int:
    """Run the performance runner with `argv` (default: sys.argv[1:]); return the exit code."""
    if argv is None:
        argv = sys.argv[1:]
    if "--version" in argv:
        from importlib.metadata import version

        print(f"paclo.perf {version('paclo')}")
        return 0
    if argv and argv[0] == "report":
        from .report import main as report_main

        return report_main(argv[1:])
    try:
        opts = parse_args(list(argv))
    except UsageError as exc:
        print(f"paclo perf: error: {exc}", file=sys.stderr)
        return exc.code
    if opts is None:
        sys.stdout.write(USAGE)
        return 0
    from .runner import Interrupted, RunFailed, run

    try:
        run(opts)
    except UsageError as exc:
        print(f"paclo perf: error: {exc}", file=sys.stderr)
        return exc.code
    except RunFailed as exc:
        print(f"paclo perf: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except Interrupted as exc:
        print(f"[perf] {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("[perf] interrupted before a step finished; nothing written", file=sys.stderr)
        return EXIT_INTERRUPTED
    return 0
