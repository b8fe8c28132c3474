"""Options of the performance runner: the validated `Options`, `parse_args`, the exit codes
and the integer parsers the runner and the generator share.

Exit codes follow the paclo command-line contract: 0 success, 1 usage (unknown or incomplete
argument), 2 input not found (`--resume` with no results.json), 3 invalid choice, 4 bad flag
value, 5 the benchmark failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import config

EXIT_USAGE = 1
EXIT_NOT_FOUND = 2
EXIT_CHOICE = 3
EXIT_VALUE = 4
EXIT_FAILED = 5

SINK_MODES = config.SINK_MODES


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
    sink: str = "hold"
    senders: int | None = None
    batch: int = 64
    generator_cpus: list[int] | None = None
    generator_report: str | None = None
    resume: bool = False
    argv: list[str] = field(default_factory=list)

    def offline_scenarios(self) -> list[str]:
        """Offline (and peer) scenarios to run, in the canonical order: by default paclo's and
        the C mmap walk (all peers with --peers); with --scenarios, the named ones (and all
        peers with --peers when none is named)."""
        known = list(config.OFFLINE_SCENARIOS)
        known += list(config.PEER_SCENARIOS) if self.peers else [config.WALK_SCENARIO]
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
    "--branch-cap", "--slow-cap", "--consumer-delay-ns", "--sink", "--senders", "--batch",
    "--generator-cpus", "--generator-report",
}
_BOOL_FLAGS = {"--peers", "--resume"}


def parse_int(name: str, text: str) -> int:
    """`text` as a base-10 integer, else UsageError naming `name` (exit 4)."""
    try:
        return int(text, 10)
    except ValueError:
        raise UsageError(f"{name} must be an integer, got {text!r}", EXIT_VALUE) from None


def parse_positive(name: str, text: str) -> int:
    """`text` as an integer > 0, else UsageError naming `name` (exit 4)."""
    value = parse_int(name, text)
    if value <= 0:
        raise UsageError(f"{name} must be positive, got {value}", EXIT_VALUE)
    return value


def parse_non_negative(name: str, text: str) -> int:
    """`text` as an integer >= 0, else UsageError naming `name` (exit 4)."""
    value = parse_int(name, text)
    if value < 0:
        raise UsageError(f"{name} cannot be negative, got {value}", EXIT_VALUE)
    return value


def parse_cpus(name: str, text: str) -> list[int]:
    """A comma list of CPU numbers (>= 0), else UsageError naming `name` (exit 4)."""
    try:
        cpus = [int(part.strip(), 10) for part in text.split(",") if part.strip()]
    except ValueError:
        cpus = []
    if not cpus or any(c < 0 for c in cpus):
        raise UsageError(f"{name} must be a comma list of CPU numbers, got {text!r}", EXIT_VALUE)
    return cpus


def tokens(argv: list[str], value_flags: set[str], bool_flags: set[str]) -> dict[str, str]:
    """Split argv into {flag: value} (`--help` for -h/--help, "true" for a boolean flag);
    reject unknown flags and missing values (UsageError, exit 1)."""
    raw: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            raw["--help"] = ""
            i += 1
            continue
        name, eq, inline = arg.partition("=")
        if name in bool_flags and not eq:
            raw[name] = "true"
            i += 1
        elif name in value_flags:
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


def _scenarios(raw: dict[str, str], mode: str) -> list[str] | None:
    if "--scenarios" not in raw:
        return None
    names = [s.strip() for s in raw["--scenarios"].split(",") if s.strip()]
    if not names:
        raise UsageError("scenarios must name at least one scenario", EXIT_VALUE)
    offline_known = set(config.OFFLINE_SCENARIOS + config.PEER_SCENARIOS)
    live_known = set(config.LIVE_SCENARIOS)
    for name in names:
        if mode == "live" and name not in live_known:
            raise UsageError(
                f"unknown live scenario {name!r} (allowed: {', '.join(config.LIVE_SCENARIOS)})", EXIT_CHOICE
            )
        if mode == "offline" and name not in offline_known:
            raise UsageError(
                f"unknown offline scenario {name!r} (allowed: "
                f"{', '.join(config.OFFLINE_SCENARIOS + config.PEER_SCENARIOS)})",
                EXIT_CHOICE,
            )
        if mode == "all" and name not in offline_known | live_known:
            raise UsageError(f"unknown scenario {name!r}", EXIT_CHOICE)
    return names


def _rates(text: str) -> list[int]:
    rates = []
    for part in text.split(","):
        try:
            rate = int(part.strip(), 10)
        except ValueError:
            rate = 0
        if rate <= 0:
            raise UsageError(f"rates must contain positive integers, got {text!r}", EXIT_VALUE)
        rates.append(rate)
    return rates


def _live_options(opts: Options, raw: dict[str, str], profile: config.Profile) -> None:
    if "--rates" in raw:
        opts.rates = _rates(raw["--rates"])
    if "--duration-ms" in raw:
        opts.duration_ms = parse_positive("duration-ms", raw["--duration-ms"])
    else:
        opts.duration_ms = profile.duration_ms
    opts.device = raw.get("--device", opts.device)
    if "--port" in raw:
        port = parse_int("port", raw["--port"])
        if not 1 <= port <= 65535:
            raise UsageError(f"port must be between 1 and 65535, got {port}", EXIT_VALUE)
        opts.port = port
    source = raw.get("--source", "loopback")
    if source not in ("loopback", "external"):
        raise UsageError(f"source must be loopback or external, got {source!r}", EXIT_CHOICE)
    opts.source = source
    opts.filter = raw.get("--filter")
    if "--frame-size" in raw:
        opts.frame_size = parse_positive("frame-size", raw["--frame-size"])
    if "--snaplen" in raw:
        snaplen = parse_int("snaplen", raw["--snaplen"])
        if not 1 <= snaplen <= 65536:
            raise UsageError(f"snaplen must be between 1 and 65536, got {snaplen}", EXIT_VALUE)
        opts.snaplen = snaplen
    if "--queue-cap" in raw:
        opts.queue_cap = parse_positive("queue-cap", raw["--queue-cap"])
    if "--queue-mode" in raw:
        qm = raw["--queue-mode"]
        if qm not in ("blocking", "dropping"):
            raise UsageError(f"queue-mode must be blocking or dropping, got {qm!r}", EXIT_CHOICE)
        opts.queue_mode = qm
    if "--branch-cap" in raw:
        opts.branch_cap = parse_positive("branch-cap", raw["--branch-cap"])
    if "--slow-cap" in raw:
        opts.slow_cap = parse_positive("slow-cap", raw["--slow-cap"])
    if "--consumer-delay-ns" in raw:
        opts.consumer_delay_ns = parse_non_negative("consumer-delay-ns", raw["--consumer-delay-ns"])
    if "--sink" in raw:
        if raw["--sink"] not in SINK_MODES:
            raise UsageError(f"sink must be hold, drain, or none, got {raw['--sink']!r}", EXIT_CHOICE)
        opts.sink = raw["--sink"]
    if "--senders" in raw:
        opts.senders = parse_positive("senders", raw["--senders"])
    if "--batch" in raw:
        opts.batch = parse_positive("batch", raw["--batch"])
        if opts.batch > 1024:
            raise UsageError(f"batch must be between 1 and 1024, got {opts.batch}", EXIT_VALUE)
    if "--generator-cpus" in raw:
        opts.generator_cpus = parse_cpus("generator-cpus", raw["--generator-cpus"])
    _external_options(opts, raw)
    if not opts.rates:
        opts.rates = [0] if opts.source == "external" else list(profile.rates)


def _external_options(opts: Options, raw: dict[str, str]) -> None:
    if "--generator-report" in raw:
        if opts.source != "external":
            raise UsageError("generator-report requires source=external", EXIT_VALUE)
        if not raw["--generator-report"]:
            raise UsageError("generator-report must name a file", EXIT_VALUE)
        opts.generator_report = raw["--generator-report"]
    if "--expected-packets" in raw:
        opts.expected_packets = parse_positive("expected-packets", raw["--expected-packets"])
        if opts.source != "external":
            raise UsageError("expected-packets requires source=external", EXIT_VALUE)
        if "--rates" not in raw:
            raise UsageError("expected-packets requires an external offered rate (--rates)", EXIT_VALUE)
        if opts.scenarios is None or len(opts.scenarios) != 1 or opts.warmups != 0 or opts.runs != 1:
            raise UsageError("external expected-packets requires one scenario, no warm-up, and one run", EXIT_VALUE)
    elif opts.generator_report is not None:
        raise UsageError("generator-report requires expected-packets", EXIT_VALUE)


def parse_args(argv: list[str]) -> Options | None:
    """Parse and validate argv. Returns None for --help; raises UsageError otherwise."""
    raw = tokens(argv, _VALUE_FLAGS, _BOOL_FLAGS)
    if "--help" in raw:
        return None
    opts = Options(argv=list(argv))
    mode = raw.get("--mode", "offline")
    if mode not in ("offline", "live", "all"):
        raise UsageError(f"mode must be offline, live, or all, got {mode!r}", EXIT_CHOICE)
    opts.mode = mode
    profile_name = raw.get("--profile", "quick")
    if profile_name not in config.PROFILES:
        raise UsageError(f"unknown profile {profile_name!r} (allowed: quick, reference, stress)", EXIT_CHOICE)
    profile = config.PROFILES[profile_name]
    opts.profile = profile_name
    opts.output = raw.get("--output", opts.output)
    if not opts.output:
        raise UsageError("output must not be empty", EXIT_VALUE)
    opts.peers = "--peers" in raw
    opts.resume = "--resume" in raw
    opts.scenarios = _scenarios(raw, mode)
    opts.warmups = parse_non_negative("warmups", raw["--warmups"]) if "--warmups" in raw else profile.warmups
    opts.runs = parse_positive("runs", raw["--runs"]) if "--runs" in raw else profile.runs
    if "--packets" in raw:
        opts.packets = parse_positive("packets", raw["--packets"])
    _live_options(opts, raw, profile)
    return opts
