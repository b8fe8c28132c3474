"""Live mode: scenarios, stage counts, rates, the sustainability rule and the verdicts.

Every rate x scenario runs in its own worker process (`python -m paclo.perf.worker --live`,
see `live_worker`). Everything here is arithmetic on counters, so each formula is tested on
hand-made numbers.

Rates (per run; the glossary in docs/performance.md says the same):

- `realized_send_pps`: what the sender actually offered. Loopback: the generator's report,
  `(sent - k) / send window` with `k` senders. External: the generator report when given, else
  `(expected - 1) / capture window` (first to last captured packet).
- `sustained_processed_pps`: `(processed - 1) / capture window`, the rate while packets
  actually flowed (not divided by the configured duration).
- `kernel_drop_rate`: on Linux and the BSDs `ps_recv` already counts the dropped packets, so
  it is `dropped / received`; elsewhere `dropped / (received + dropped)`.
- `interface_drop_rate`: `interface_dropped / (received + interface_dropped)`: those never
  reached the capture, so `ps_recv` does not hold them.
- `generator_limited`: the realized rate is below 95% of the target. A run certifies at most
  the rate that was offered: `min(target, realized)`, never the target alone.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from . import config

if TYPE_CHECKING:
    from .options import Options


MIB16 = config.MIB16
DROP_THRESHOLD = 0.001
GENERATOR_LIMITED_BELOW = 0.95
# One sender thread per this many target pps (a Rust sendmmsg sender reaches well above it
# on lo), at most one per CPU.
PPS_PER_SENDER = 400_000

LiveScenario = config.LiveScenario
SCENARIOS = config.LIVE_MATRIX
C_PEERS = ("peer-c-libpcap-live", "peer-c-libpcap-live-immediate")


def c_peer_for(scenario: str) -> str:
    """The C libpcap peer with the same ring as `scenario` (immediate mode or not)."""
    return "peer-c-libpcap-live-immediate" if SCENARIOS[scenario]["immediate"] else "peer-c-libpcap-live"


# The engines that run `paclo.capture()` (a capture thread, a queue, one consumer).
CAPTURE_ENGINES = ("queue", "managed")


def reduce_peer_for(scenario: str) -> str | None:
    """The `reduce(device=...)` scenario with the same decode and ring as a `capture()`
    scenario (the yardstick of the managed path's CPU per packet); None when there is none or
    `scenario` is not a `capture()` scenario."""
    base = SCENARIOS[scenario]
    if base["engine"] not in CAPTURE_ENGINES:
        return None
    for name, s in SCENARIOS.items():
        if s["engine"] == "direct" and all(s[k] == base[k] for k in ("decode", "buffer_size", "immediate")):
            return name
    return None


def senders_for(rate: int, source: str, cpus: int | None = None) -> int:
    """Sender threads: one per `PPS_PER_SENDER` of target, between 1 and the CPU count; 1
    (unused) for external traffic."""
    if source != "loopback":
        return 1
    most = max(1, cpus if cpus is not None else 1)
    return min(most, max(1, -(-rate // PPS_PER_SENDER)), max(1, rate))


def scenario_config(name: str, opts: Options, rate: int, cpus: int | None = None) -> dict[str, Any]:
    """The live-result `config` block of one scenario at one rate."""
    base = SCENARIOS[name]
    senders = opts.senders if opts.senders is not None else senders_for(rate, opts.source, cpus)
    cfg: dict[str, Any] = {
        "device": opts.device,
        "port": opts.port,
        "target_pps": rate,
        "duration_ms": opts.duration_ms,
        "frame_size": opts.frame_size,
        "senders": senders if opts.source == "loopback" else 1,
        "source": opts.source,
        "engine": base["engine"],
        "decode": base["decode"],
        "snaplen": opts.snaplen,
        "queue_cap": opts.queue_cap,
        "queue_mode": opts.queue_mode or base["queue_mode"],
        "branch_cap": opts.branch_cap,
        "slow_cap": opts.slow_cap,
        "consumer_delay_ns": opts.consumer_delay_ns,
        "buffer_size": base["buffer_size"],
        "immediate": base["immediate"],
        "filter": opts.filter if opts.filter else f"udp dst port {opts.port}",
        "expected_packets": opts.expected_packets,
        "sink": opts.sink,
        "generator_cpus": opts.generator_cpus,
        "batch": opts.batch,
    }
    if base["engine"] in ("direct", "c-libpcap"):
        cfg["queue_mode"] = "direct"
    if "fanout_mode" in base:
        cfg["fanout_mode"] = base["fanout_mode"]
    return cfg


def window_rate(count: int, first_ns: int | None, last_ns: int | None) -> float | None:
    """`count` events from `first_ns` to `last_ns`: `(count - 1)` intervals over the window,
    so evenly spaced events at rate r give exactly r. None with fewer than 2 events."""
    if count < 2 or first_ns is None or last_ns is None or last_ns <= first_ns:
        return None
    return (count - 1) * 1e9 / (last_ns - first_ns)


def received_includes_drops(platform: str = sys.platform) -> bool:
    """Whether `pcap_stats().ps_recv` already counts the packets in `ps_drop` (Linux: the kernel
    adds `tp_drops` to `tp_packets`; the BSDs and macOS: BPF counts every packet it sees)."""
    return platform.startswith(("linux", "darwin", "freebsd", "openbsd", "netbsd", "dragonfly"))


def kernel_drop_rate(dropped: int, received: int, platform: str = sys.platform) -> float:
    """Dropped packets as a fraction of those that reached the capture (see the module doc)."""
    seen = received if received_includes_drops(platform) else received + dropped
    return dropped / seen if seen else 0.0


def _rate(num: float, den: float) -> float | None:
    return num / den if den else None


def derive(run: dict[str, Any], *, sent: int, sent_source: str, target_pps: int, source: str, engine: str,
           generator: dict[str, Any] | None = None, platform: str = sys.platform) -> dict[str, Any]:
    """Add the stage counts, rates and verdict inputs to one live run (in place, returned).

    `run` holds the consumer's `packets`, `capture_stats`, `queue_stats`, `first_ts_ns`,
    `last_ts_ns` and `capture_cpu_ns`; `generator` is the sender's report when there is one.
    """
    pcap = run.get("capture_stats")
    queue = run.get("queue_stats") or {}
    received = (pcap or {}).get("received") or 0
    dropped = (pcap or {}).get("dropped") or 0
    if_dropped = (pcap or {}).get("interface_dropped") or 0
    enqueued = queue.get("enqueued") or 0
    q_dropped = queue.get("dropped") or 0
    processed = run["packets"]
    gap = max(0, enqueued - processed)
    send_loss = max(0, sent - processed)
    first, last = run.pop("first_ts_ns", None), run.pop("last_ts_ns", None)
    run["stage_counts"] = {
        "sent": sent,
        "capture_received": received,
        "capture_delivered": enqueued + q_dropped,
        "kernel_dropped": dropped,
        "interface_dropped": if_dropped,
        "queue_enqueued": enqueued,
        "queue_dropped": q_dropped,
        "consumer_processed": processed,
        "consumer_gap": gap,
        "send_loss": send_loss,
    }
    run["sent"] = sent
    run["sent_source"] = sent_source
    run["capture_window_ns"] = last - first if first is not None and last is not None else None
    realized: float | None = None
    realized_source: str | None = None
    if generator is not None and generator.get("realized_pps") is not None:
        realized, realized_source = float(generator["realized_pps"]), "generator"
    elif sent_source == "external_expected":
        realized = window_rate(sent, first, last)
        realized_source = "capture_window" if realized is not None else None
    run["realized_send_pps"] = realized
    run["realized_send_source"] = realized_source
    run["sustained_processed_pps"] = window_rate(processed, first, last)
    run["processed_vs_sent_rate"] = _rate(processed, sent)
    run["send_loss_rate"] = _rate(send_loss, sent)
    run["kernel_drop_rate"] = kernel_drop_rate(dropped, received, platform) if pcap is not None else None
    run["interface_drop_rate"] = (_rate(if_dropped, received + if_dropped) or 0.0) if pcap is not None else None
    run["queue_drop_rate"] = _rate(q_dropped, enqueued + q_dropped) or 0.0
    run["consumer_gap_rate"] = _rate(gap, enqueued) or 0.0
    cpu = run.get("capture_cpu_ns")
    run["cpu_ns_per_packet"] = cpu / processed if cpu is not None and processed else None
    run["target_pps"] = target_pps
    run["generator_limited"] = generator_limited(target_pps, realized)
    run["source"] = source
    run["engine"] = engine
    return run


def generator_limited(target_pps: int, realized_pps: float | None) -> bool | None:
    """True when the sender offered less than 95% of the target; None when nobody knows."""
    if realized_pps is None or target_pps <= 0:
        return None
    return realized_pps < GENERATOR_LIMITED_BELOW * target_pps


def offered_pps(run: dict[str, Any]) -> float | None:
    """The rate a run can certify: what was offered, never more than the target."""
    if run.get("realized_send_pps") is None:
        return None
    realized = float(run["realized_send_pps"])
    target = run.get("target_pps") or 0
    return min(float(target), realized) if target > 0 else realized


def run_passes(run: dict[str, Any]) -> bool:
    """The sustainability rule: no capture errors, a known send count, every loss/drop rate <= 0.1%."""
    if run.get("capture_errors"):
        return False
    if run.get("sent_source") not in ("internal_observed", "external_expected"):
        return False
    if run.get("send_loss_rate") is not None and run["send_loss_rate"] > DROP_THRESHOLD:
        return False
    for name in ("kernel_drop_rate", "interface_drop_rate", "queue_drop_rate", "consumer_gap_rate"):
        if (run.get(name) or 0.0) > DROP_THRESHOLD:
            return False
    return True


def _median(values: list[float]) -> float | None:
    from .metrics import median

    return float(median(values)) if values else None


def sustainability(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-result sustainability block, with the verdict and the certified rate.

    `verdict`: `pass` (every run passed and the generator offered >= 95% of the target),
    `limited` (every run passed below a target the generator could not reach: only the
    realized rate is certified), `fail` (a run lost more than 0.1% or had no send count).
    `certified_pps` is the median over the runs of min(target, realized), or None on `fail`.
    """
    passing = [r for r in runs if run_passes(r)]
    all_pass = len(passing) == len(runs) and bool(runs)
    limited = any(r.get("generator_limited") is not False for r in runs)
    offered = [x for x in (offered_pps(r) for r in runs) if x is not None]
    certified = _median(offered) if all_pass and len(offered) == len(runs) else None
    verdict = "fail" if not all_pass or certified is None else ("limited" if limited else "pass")
    return {
        "drop_threshold": DROP_THRESHOLD,
        "end_to_end": all(r.get("sent", 0) > 0 for r in runs),
        "passing_runs": len(passing),
        "total_runs": len(runs),
        "all_runs_pass": all_pass,
        "max_passing_processed_pps": max(
            (r["sustained_processed_pps"] for r in passing if r.get("sustained_processed_pps") is not None),
            default=None,
        ),
        "generator_limited": limited,
        "certified_pps": certified,
        "verdict": verdict,
    }


def _summary_median(result: dict[str, Any], name: str) -> float | None:
    stat = result["summary"].get(name)
    return None if stat is None else float(stat["median"])


def max_sustainable_by_scenario(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scenario, the passing (or generator-limited) result with the highest certified rate.

    `upper_bound_pps` is the lowest rate offered above it at which the scenario failed (its
    ceiling lies between the two); None when no higher offered rate failed, so that the
    certified rate is only a floor.
    """
    best: dict[str, dict[str, Any]] = {}
    for result in results:
        sus = result["sustainability"]
        certified = sus.get("certified_pps")
        if sus.get("verdict") == "fail" or certified is None:
            continue
        current = best.get(result["scenario"])
        if current is None or certified > current["certified_pps"]:
            best[result["scenario"]] = {
                "target_pps": result["config"]["target_pps"],
                "realized_send_pps": _summary_median(result, "realized_send_pps"),
                "processed_pps": _summary_median(result, "sustained_processed_pps"),
                "certified_pps": certified,
                "generator_limited": sus["generator_limited"],
                "verdict": sus["verdict"],
                "cpu_ns_per_packet": _summary_median(result, "cpu_ns_per_packet"),
                "source": result["config"]["source"],
                "upper_bound_pps": None,
            }
    for result in results:
        entry = best.get(result["scenario"])
        offered = _summary_median(result, "realized_send_pps")
        if entry is None or result["sustainability"].get("verdict") != "fail" or offered is None:
            continue
        target = float(result["config"]["target_pps"])
        if target > 0:
            offered = min(offered, target)
        if offered > entry["certified_pps"] and (entry["upper_bound_pps"] is None or offered < entry["upper_bound_pps"]):
            entry["upper_bound_pps"] = offered
    return best


def validate_runs(runs: list[dict[str, Any]]) -> list[str]:
    """Reasons a live result cannot be trusted (reference: clean capture statistics)."""
    problems = []
    for i, r in enumerate(runs, 1):
        if r.get("capture_errors"):
            problems.append(f"run {i}: capture errors {r['capture_errors']}")
        if r.get("capture_stats") is None and r.get("source") == "loopback":
            problems.append(f"run {i}: no capture statistics")
        if r.get("queue_stats") is None:
            problems.append(f"run {i}: no queue statistics")
        if r.get("stage_counts") is None:
            problems.append(f"run {i}: no stage counts")
        elif r["stage_counts"]["queue_enqueued"] != r["stage_counts"]["consumer_processed"]:
            problems.append(
                f"run {i}: queue enqueued {r['stage_counts']['queue_enqueued']} != consumer processed "
                f"{r['stage_counts']['consumer_processed']}"
            )
    return problems
