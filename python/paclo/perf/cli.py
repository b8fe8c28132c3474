"""Command line of the performance runner: `python -m paclo.perf` and `paclo perf`.

Exit codes follow the paclo command-line contract: 0 success, 1 usage (unknown or incomplete
argument), 3 invalid choice, 4 bad flag value, 5 the benchmark failed (a worker failed, a
result failed its consistency checks, or the requested mode is not available).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from . import config

EXIT_USAGE = 1
EXIT_CHOICE = 3
EXIT_VALUE = 4
EXIT_FAILED = 5

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
  --scenarios a,b,...       run only these scenarios (offline, peer or live names)
  --warmups N               warm-up runs per worker (default: profile, 1)
  --runs N                  measured runs per worker (default: profile, 1 or 5)
  --packets N               packets per dataset case instead of the profile's count
  --peers                   also run the peers (C pcap_next_ex, dpkt, scapy) on the same datasets
  -h, --help                show this help

live options (validated; live mode runs the live workers):
  --rates R1,R2,...         target packets per second (default: profile)
  --duration-ms N           capture duration per run (default: profile)
  --device NAME             capture device (default lo)
  --port N                  UDP port of the generated traffic (default 39053)
  --source loopback|external
                            traffic from in-process senders or from another host (default loopback)
  --filter BPF              capture filter (loopback default: "udp dst port <port>")
  --expected-packets N      external only: packets the remote generator sends
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


class UsageError(Exception):
    """A command-line error: a message for stderr and the exit code."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass
class Options:
    """Validated runner options (profile defaults already applied)."""

    mode: str = "offline"
    profile: str = "quick"
    output: str = "target/perf"
    scenarios: list[str] | None = None
    warmups: int = 1
    runs: int = 1
    packets: int | None = None
    peers: bool = False
    rates: list[int] = field(default_factory=list)
    duration_ms: int = 2000
    device: str = "lo"
    port: int = 39053
    source: str = "loopback"
    filter: str | None = None
    expected_packets: int | None = None
    frame_size: int = 64
    snaplen: int = 2048
    queue_cap: int = 1024
    queue_mode: str | None = None
    branch_cap: int = 4096
    slow_cap: int = 64
    consumer_delay_ns: int = 0
    argv: list[str] = field(default_factory=list)

    def offline_scenarios(self) -> list[str]:
        """Offline (and peer) scenarios to run, in the canonical order."""
        known = list(config.OFFLINE_SCENARIOS)
        if self.peers:
            known += list(config.PEER_SCENARIOS)
        if self.scenarios is None:
            return known
        allowed = config.OFFLINE_SCENARIOS + config.PEER_SCENARIOS
        chosen = [s for s in allowed if s in self.scenarios]
        if self.peers and not any(s in config.PEER_SCENARIOS for s in chosen):
            # --peers with only paclo scenarios named: compare them with every peer.
            chosen += list(config.PEER_SCENARIOS)
        return chosen


_VALUE_FLAGS = {
    "--mode", "--profile", "--output", "--scenarios", "--warmups", "--runs", "--packets",
    "--rates", "--duration-ms", "--device", "--port", "--source", "--filter",
    "--expected-packets", "--frame-size", "--snaplen", "--queue-cap", "--queue-mode",
    "--branch-cap", "--slow-cap", "--consumer-delay-ns",
}
_BOOL_FLAGS = {"--peers"}


def _int(name: str, text: str) -> int:
    try:
        return int(text, 10)
    except ValueError:
        raise UsageError(f"{name} must be an integer, got {text!r}", EXIT_VALUE) from None


def _positive(name: str, text: str) -> int:
    value = _int(name, text)
    if value <= 0:
        raise UsageError(f"{name} must be positive, got {value}", EXIT_VALUE)
    return value


def _non_negative(name: str, text: str) -> int:
    value = _int(name, text)
    if value < 0:
        raise UsageError(f"{name} cannot be negative, got {value}", EXIT_VALUE)
    return value


def _tokens(argv: list[str]) -> dict[str, str]:
    """Split argv into {flag: value}; reject unknown flags and missing values."""
    raw: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            raw["--help"] = ""
            i += 1
            continue
        name, eq, inline = arg.partition("=")
        if name in _BOOL_FLAGS and not eq:
            raw[name] = "true"
            i += 1
        elif name in _VALUE_FLAGS:
            if eq:
                raw[name] = inline
                i += 1
            elif i + 1 < len(argv):
                raw[name] = argv[i + 1]
                i += 2
            else:
                raise UsageError(f"unknown or incomplete argument: {arg} needs a value", EXIT_USAGE)
        else:
            raise UsageError(f"unknown or incomplete argument: {arg}", EXIT_USAGE)
    return raw


def parse_args(argv: list[str]) -> Options | None:
    """Parse and validate argv. Returns None for --help; raises UsageError otherwise."""
    raw = _tokens(argv)
    if "--help" in raw:
        return None
    opts = Options(argv=list(argv))
    mode = raw.get("--mode", "offline")
    if mode not in ("offline", "live", "all"):
        raise UsageError(f"mode must be offline, live, or all, got {mode!r}", EXIT_CHOICE)
    opts.mode = mode
    profile_name = raw.get("--profile", "quick")
    if profile_name not in config.PROFILES:
        raise UsageError(
            f"unknown profile {profile_name!r} (allowed: quick, reference, stress)", EXIT_CHOICE
        )
    profile = config.PROFILES[profile_name]
    opts.profile = profile_name
    opts.output = raw.get("--output", opts.output)
    if not opts.output:
        raise UsageError("output must not be empty", EXIT_VALUE)
    opts.peers = "--peers" in raw

    if "--scenarios" in raw:
        names = [s.strip() for s in raw["--scenarios"].split(",") if s.strip()]
        if not names:
            raise UsageError("scenarios must name at least one scenario", EXIT_VALUE)
        offline_known = set(config.OFFLINE_SCENARIOS + config.PEER_SCENARIOS)
        live_known = set(config.LIVE_SCENARIOS)
        for name in names:
            if mode == "live" and name not in live_known:
                raise UsageError(
                    f"unknown live scenario {name!r} (allowed: {', '.join(config.LIVE_SCENARIOS)})",
                    EXIT_CHOICE,
                )
            if mode == "offline" and name not in offline_known:
                raise UsageError(
                    f"unknown offline scenario {name!r} (allowed: "
                    f"{', '.join(config.OFFLINE_SCENARIOS + config.PEER_SCENARIOS)})",
                    EXIT_CHOICE,
                )
            if mode == "all" and name not in offline_known | live_known:
                raise UsageError(f"unknown scenario {name!r}", EXIT_CHOICE)
        opts.scenarios = names

    opts.warmups = _non_negative("warmups", raw["--warmups"]) if "--warmups" in raw else profile.warmups
    opts.runs = _positive("runs", raw["--runs"]) if "--runs" in raw else profile.runs
    if "--packets" in raw:
        opts.packets = _positive("packets", raw["--packets"])

    if "--rates" in raw:
        rates = []
        for part in raw["--rates"].split(","):
            try:
                rate = int(part.strip(), 10)
            except ValueError:
                rate = 0
            if rate <= 0:
                raise UsageError(
                    f"rates must contain positive integers, got {raw['--rates']!r}", EXIT_VALUE
                )
            rates.append(rate)
        opts.rates = rates
    opts.duration_ms = (
        _positive("duration-ms", raw["--duration-ms"]) if "--duration-ms" in raw else profile.duration_ms
    )
    opts.device = raw.get("--device", opts.device)
    if "--port" in raw:
        port = _int("port", raw["--port"])
        if not 1 <= port <= 65535:
            raise UsageError(f"port must be between 1 and 65535, got {port}", EXIT_VALUE)
        opts.port = port
    source = raw.get("--source", "loopback")
    if source not in ("loopback", "external"):
        raise UsageError(f"source must be loopback or external, got {source!r}", EXIT_CHOICE)
    opts.source = source
    opts.filter = raw.get("--filter")
    if "--frame-size" in raw:
        opts.frame_size = _positive("frame-size", raw["--frame-size"])
    if "--snaplen" in raw:
        snaplen = _int("snaplen", raw["--snaplen"])
        if not 1 <= snaplen <= 65536:
            raise UsageError(f"snaplen must be between 1 and 65536, got {snaplen}", EXIT_VALUE)
        opts.snaplen = snaplen
    if "--queue-cap" in raw:
        opts.queue_cap = _positive("queue-cap", raw["--queue-cap"])
    if "--queue-mode" in raw:
        qm = raw["--queue-mode"]
        if qm not in ("blocking", "dropping"):
            raise UsageError(f"queue-mode must be blocking or dropping, got {qm!r}", EXIT_CHOICE)
        opts.queue_mode = qm
    if "--branch-cap" in raw:
        opts.branch_cap = _positive("branch-cap", raw["--branch-cap"])
    if "--slow-cap" in raw:
        opts.slow_cap = _positive("slow-cap", raw["--slow-cap"])
    if "--consumer-delay-ns" in raw:
        opts.consumer_delay_ns = _non_negative("consumer-delay-ns", raw["--consumer-delay-ns"])

    if "--expected-packets" in raw:
        opts.expected_packets = _positive("expected-packets", raw["--expected-packets"])
        if opts.source != "external":
            raise UsageError("expected-packets requires source=external", EXIT_VALUE)
        if "--rates" not in raw:
            raise UsageError("expected-packets requires an external offered rate (--rates)", EXIT_VALUE)
        if opts.scenarios is None or len(opts.scenarios) != 1 or opts.warmups != 0 or opts.runs != 1:
            raise UsageError(
                "external expected-packets requires one scenario, no warm-up, and one run", EXIT_VALUE
            )
    if not opts.rates:
        opts.rates = [0] if opts.source == "external" else list(profile.rates)
    return opts


def main(argv: list[str] | None = None) -> int:
    """Run the performance runner with `argv` (default: sys.argv[1:]); return the exit code."""
    if argv is None:
        argv = sys.argv[1:]
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
    from .runner import RunFailed, run

    try:
        run(opts)
    except RunFailed as exc:
        print(f"paclo perf: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    return 0
