"""Live mode: scenarios, stage counts, rates and the sustainability rule.

Every rate x scenario runs in its own worker process (`python -m paclo.perf.worker --live`).
For loopback runs the worker starts the UDP generator (`python -m paclo.perf.generator
--duration-ms`, a separate process so that sending never competes with the consumer for the
GIL) from the capture's `on_ready` hook, i.e. after the device is open and the filter is
installed, and reads the exact sent count from the generator's report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    from .cli import Options


class LiveScenario(TypedDict):
    """How one live scenario captures and consumes."""

    engine: str
    decode: str | None
    buffer_size: int | None
    immediate: bool | None
    queue_mode: str | None
    fanout_mode: NotRequired[str]


MIB16 = 16 * 1024 * 1024
DROP_THRESHOLD = 0.001

# engine, decode, buffered (16 MiB + immediate) or libpcap defaults, queue mode, fan-out
SCENARIOS: dict[str, LiveScenario] = {
    "live-raw": {"engine": "queue", "decode": None, "buffer_size": None, "immediate": None, "queue_mode": "blocking"},
    "live-raw-buffered": {"engine": "queue", "decode": None, "buffer_size": MIB16, "immediate": False, "queue_mode": "blocking"},
    "live-raw-immediate": {"engine": "queue", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": "blocking"},
    "live-managed-raw": {"engine": "managed", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": "blocking"},
    "live-full": {"engine": "queue", "decode": "full", "buffer_size": None, "immediate": None, "queue_mode": "blocking"},
    "live-sync-raw": {"engine": "direct", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": None},
    "live-dropping-raw": {"engine": "queue", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": "dropping"},
    "live-sync-full": {"engine": "direct", "decode": "full", "buffer_size": MIB16, "immediate": True, "queue_mode": None},
    "live-managed-full": {"engine": "managed", "decode": "full", "buffer_size": MIB16, "immediate": True, "queue_mode": "blocking"},
    "live-managed-fanout-dual": {"engine": "fanout", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": "blocking", "fanout_mode": "dual"},
    "live-managed-fanout-slow-dropping": {"engine": "fanout", "decode": None, "buffer_size": MIB16, "immediate": True, "queue_mode": "blocking", "fanout_mode": "slow-dropping"},
    "live-dropping-full": {"engine": "queue", "decode": "full", "buffer_size": MIB16, "immediate": True, "queue_mode": "dropping"},
}


def senders_for(rate: int, source: str) -> int:
    """Sender threads: one per 100k pps, between 1 and 8; 1 (unused) for external traffic."""
    if source != "loopback":
        return 1
    return min(8, max(1, -(-rate // 100_000)))


def scenario_config(name: str, opts: Options, rate: int) -> dict[str, Any]:
    """The live-result `config` block of one scenario at one rate."""
    base = SCENARIOS[name]
    cfg: dict[str, Any] = {
        "device": opts.device,
        "port": opts.port,
        "target_pps": rate,
        "duration_ms": opts.duration_ms,
        "frame_size": opts.frame_size,
        "senders": senders_for(rate, opts.source),
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
        "filter": opts.filter if opts.filter else (f"udp dst port {opts.port}" if opts.source == "loopback" else None),
        "expected_packets": opts.expected_packets,
    }
    if base["engine"] == "direct":
        cfg["queue_mode"] = "direct"
    if "fanout_mode" in base:
        cfg["fanout_mode"] = base["fanout_mode"]
    return cfg


def _rate(num: float, den: float) -> float | None:
    return num / den if den else None


def derive(run: dict[str, Any], *, sent: int, sent_source: str, duration_ms: int, target_pps: int, source: str,
           engine: str) -> dict[str, Any]:
    """Add the stage counts and rates of reference §4.6 to one live run (in place, returned)."""
    pcap = run.get("capture_stats") or {}
    queue = run.get("queue_stats") or {}
    received = pcap.get("received") or 0
    dropped = pcap.get("dropped") or 0
    if_dropped = pcap.get("interface_dropped") or 0
    enqueued = queue.get("enqueued") or 0
    q_dropped = queue.get("dropped") or 0
    processed = run["packets"]
    gap = max(0, enqueued - processed)
    send_loss = max(0, sent - processed)
    secs = duration_ms / 1000
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
    run["realized_send_pps"] = sent / secs if sent_source == "internal_observed" and sent > 0 else None
    run["sustained_processed_pps"] = processed / secs
    run["processed_vs_sent_rate"] = _rate(processed, sent)
    run["send_loss_rate"] = _rate(send_loss, sent)
    run["kernel_drop_rate"] = _rate(dropped, received + dropped) or 0.0
    run["interface_drop_rate"] = _rate(if_dropped, received + dropped) or 0.0
    run["queue_drop_rate"] = _rate(q_dropped, enqueued + q_dropped) or 0.0
    run["consumer_gap_rate"] = _rate(gap, enqueued) or 0.0
    run["target_pps"] = target_pps
    run["source"] = source
    run["engine"] = engine
    return run


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


def sustainability(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-result sustainability block."""
    passing = [r for r in runs if run_passes(r)]
    return {
        "drop_threshold": DROP_THRESHOLD,
        "end_to_end": all(r.get("sent", 0) > 0 for r in runs),
        "passing_runs": len(passing),
        "total_runs": len(runs),
        "all_runs_pass": len(passing) == len(runs) and bool(runs),
        "max_passing_processed_pps": max((r["sustained_processed_pps"] for r in passing), default=None),
    }


def max_sustainable_by_scenario(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per scenario, the all-runs-passing result with the highest median sustained processed pps."""
    best: dict[str, dict[str, Any]] = {}
    for result in results:
        if not result["sustainability"]["all_runs_pass"]:
            continue
        median = result["summary"].get("sustained_processed_pps", {}).get("median")
        if median is None:
            continue
        current = best.get(result["scenario"])
        if current is None or median > current["processed_pps"]:
            realized = result["summary"].get("realized_send_pps", {}).get("median")
            best[result["scenario"]] = {
                "target_pps": result["config"]["target_pps"],
                "processed_pps": median,
                "realized_send_pps": realized,
                "source": result["config"]["source"],
            }
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
