"""Profiles, cases and scenario names of the performance runner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NotRequired, TypedDict

CASES = ("udp-64", "tcp-512", "mixed")


@dataclass(frozen=True)
class Profile:
    """Per-profile defaults (offline count, warm-ups, runs; live rates and duration)."""

    name: str
    packets: int
    warmups: int
    runs: int
    rates: tuple[int, ...]
    duration_ms: int
    live_scenarios: tuple[str, ...] | None  # None: every live scenario


PROFILES = {
    "quick": Profile("quick", 50_000, 1, 1, (10_000,), 2_000, None),
    "reference": Profile(
        "reference", 1_000_000, 1, 5, (10_000, 50_000, 100_000, 250_000, 500_000, 1_000_000), 15_000, None
    ),
    "stress": Profile(
        "stress",
        10_000_000,
        1,
        5,
        (1_000_000,),
        60_000,
        ("live-sync-raw", "live-dropping-raw", "live-sync-full", "live-dropping-full", "peer-c-libpcap-live-immediate"),
    ),
}

# Offline scenarios, in the order they run (the reference's nine, then paclo's two).
OFFLINE_SCENARIOS = (
    "raw-seq",
    "sync-loop",
    "raw-reduce",
    "full-decode",
    "full-reduce",
    "flow-aggregate",
    "flow-reduce",
    "flow-project",
    "write-pipeline",
    "flow-table",
    "arrow-batches",
)

# Scenarios that report `unique_flows`.
FLOW_SCENARIOS = ("flow-aggregate", "flow-reduce", "flow-table")

# The floor of a raw read (a C walk over the mmapped records): every default offline run
# measures it beside paclo, the yardstick of the `x walk` column.
WALK_SCENARIO = "peer-c-mmap-walk"

# Other tools over the same datasets, run with --peers (the walk first).
PEER_SCENARIOS = (
    WALK_SCENARIO,
    "peer-c-pcap-next-ex",
    "peer-dpkt-raw",
    "peer-dpkt-5tuple",
    "peer-scapy-raw",
    "peer-scapy-decode",
)

# scapy is about 100x slower than the rest: it reads at most this many packets of each dataset.
SCAPY_MAX_PACKETS = 20_000

# The start-of-run estimate: ns per packet of each offline scenario (paclo's and the C walk:
# the quick profile's quiet-machine medians of 2026-12-01, the largest of the three cases,
# rounded up; the other peers: the reference figures of docs/performance.md), and the cost of
# a worker besides its timed runs (start, imports, dataset open, the tracemalloc run's
# overhead), fitted so the estimate matches the quick profile's measured 61 s on a quiet
# 2-vCPU machine. What generating a dataset costs per packet (writing it included). An
# estimate, not a measurement.
ESTIMATE_NS_PER_PACKET = {
    "raw-seq": 550, "sync-loop": 180, "raw-reduce": 630, "full-decode": 5_100, "full-reduce": 5_000,
    "flow-aggregate": 4_500, "flow-reduce": 7_800, "flow-project": 290, "write-pipeline": 880, "flow-table": 300,
    "arrow-batches": 830, "peer-c-mmap-walk": 110, "peer-c-pcap-next-ex": 60, "peer-dpkt-raw": 1_300, "peer-dpkt-5tuple": 9_000,
    "peer-scapy-raw": 1_200, "peer-scapy-decode": 120_000,
}
ESTIMATE_WORKER_START_S = 1.15
# A live run beyond its capture duration: the capture's set-up, the generator's start and the
# idle timeout that ends it (the reference sweep of 2026-12-02: 97 s a step of 6 x 15 s runs
# where the generator reached the rate, 118 s where it sent for its cap, 1.25 x the duration).
ESTIMATE_LIVE_RUN_OVERHEAD_S = 0.95
ESTIMATE_GENERATE_NS_PER_PACKET = 5_000  # 912 MB for 3 x 1,000,000 packets took about 15 s

# A measured run shorter than this is too short to time well (timer, scheduler and cache noise
# are a large part of it): the runner says so under its table.
MIN_TIMED_NS = 50_000_000

# A worker still running after this long is killed and fails the run (the Clojure runner's cap).
WORKER_TIMEOUT_S = 3600.0
# A worker asked to stop (SIGTERM, when the runner is interrupted) is killed after this long.
WORKER_STOP_S = 5.0

class LiveScenario(TypedDict):
    """How one live scenario captures and consumes."""

    engine: str
    decode: str | None
    buffer_size: int | None
    immediate: bool | None
    queue_mode: str | None
    fanout_mode: NotRequired[str]


MIB16 = 16 * 1024 * 1024

_Q = "blocking"
# The reference's 12 scenarios (engine, decode, 16 MiB + immediate or libpcap defaults, queue),
# then TPACKET_V3 twins of the sync and managed raw paths, then plain libpcap in C.
LIVE_MATRIX: dict[str, LiveScenario] = {
    "live-raw": {"engine": "queue", "decode": None, "buffer_size": None, "immediate": None, "queue_mode": _Q},
    "live-raw-buffered": {"engine": "queue", "decode": None, "buffer_size": MIB16, "immediate": False, "queue_mode": _Q},
    "live-raw-immediate": {"engine": "queue", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": _Q},
    "live-managed-raw": {"engine": "managed", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": _Q},
    "live-full": {"engine": "queue", "decode": "full", "buffer_size": None, "immediate": None, "queue_mode": _Q},
    "live-sync-raw": {"engine": "direct", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": None},
    "live-dropping-raw": {"engine": "queue", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": "dropping"},
    "live-sync-full": {"engine": "direct", "decode": "full", "buffer_size": MIB16, "immediate": True, "queue_mode": None},
    "live-managed-full": {"engine": "managed", "decode": "full", "buffer_size": MIB16, "immediate": True, "queue_mode": _Q},
    "live-managed-fanout-dual": {"engine": "fanout", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": _Q,
                                 "fanout_mode": "dual"},
    "live-managed-fanout-slow-dropping": {"engine": "fanout", "decode": None, "buffer_size": MIB16, "immediate": True,
                                          "queue_mode": _Q, "fanout_mode": "slow-dropping"},
    "live-dropping-full": {"engine": "queue", "decode": "full", "buffer_size": MIB16, "immediate": True, "queue_mode": "dropping"},
    "live-sync-raw-buffered": {"engine": "direct", "decode": None, "buffer_size": MIB16, "immediate": False, "queue_mode": None},
    "live-managed-raw-buffered": {"engine": "managed", "decode": None, "buffer_size": MIB16, "immediate": False, "queue_mode": _Q},
    "peer-c-libpcap-live": {"engine": "c-libpcap", "decode": None, "buffer_size": MIB16, "immediate": False, "queue_mode": None},
    "peer-c-libpcap-live-immediate": {"engine": "c-libpcap", "decode": None, "buffer_size": MIB16, "immediate": True,
                                      "queue_mode": None},
}

# What the live sweep binds on its port: hold (never read), drain (read and discard), none.
SINK_MODES = ("hold", "drain", "none")

# Live scenarios, in the order they run.
LIVE_SCENARIOS = tuple(LIVE_MATRIX)


def dataset_name(profile: str, case: str, packets_override: int | None = None) -> str:
    """File name of a dataset: `<profile>-<case>.pcap`, or `<profile>-<case>-n<N>.pcap` with an override."""
    if packets_override is None:
        return f"{profile}-{case}.pcap"
    return f"{profile}-{case}-n{packets_override}.pcap"


def scenario_count(scenario: str, count: int) -> int:
    """Packets a scenario reads from a dataset of `count` packets (scapy reads a prefix)."""
    if scenario.startswith("peer-scapy"):
        return min(count, SCAPY_MAX_PACKETS)
    return count
