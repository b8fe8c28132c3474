"""The live sweep: the sink, the C peers, one worker per rate x scenario, and the tables.

`run_live` binds the sink on the port for the whole sweep (see `sink`), compiles the C
libpcap receiver when a peer scenario runs, and runs every rate x scenario in its own worker
process, rate-major. `live_table` and `ceiling_table` are the console summaries.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import config, live, metrics
from .options import Options
from .sink import Sink, SinkError
from .workers import Console, RunFailed, run_worker

# Builds the worker command of one live rate x scenario: (config, warmups, runs, ready file) -> argv.
LiveWorkerCommand = Callable[[dict[str, Any], int, int, str | None], list[str]]


def live_scenarios(opts: Options) -> list[str]:
    """Live scenarios to run: --scenarios (plus, with --peers, the C peers with the same rings),
    else the profile's list, else every live scenario (the C peers included)."""
    if opts.scenarios is not None:
        chosen = set(opts.scenarios)
        if opts.peers:
            chosen |= {live.c_peer_for(s) for s in opts.scenarios}
        return [s for s in live.SCENARIOS if s in chosen]
    profile = config.PROFILES[opts.profile]
    if profile.live_scenarios is not None:
        return [s for s in live.SCENARIOS if s in profile.live_scenarios]
    return list(live.SCENARIOS)


def live_worker_command(cfg: dict[str, Any], warmups: int, runs: int, ready_file: str | None) -> list[str]:
    cmd = [sys.executable, "-m", "paclo.perf.worker", "--live", "--config", json.dumps(cfg),
           "--warmups", str(warmups), "--runs", str(runs)]
    if ready_file:
        cmd += ["--ready-file", ready_file]
    return cmd


def _ready_watch(console: Console) -> tuple[str, threading.Event]:
    """A fresh ready-file path and a thread that prints `[perf] capture ready` when it appears."""
    fd, path = tempfile.mkstemp(prefix="paclo-perf-ready-", suffix=".signal")
    os.close(fd)
    os.unlink(path)
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            if os.path.exists(path):
                console.log("[perf] capture ready")
                return
            time.sleep(0.01)

    threading.Thread(target=poll, daemon=True).start()
    return path, stop


def _c_peer_binary(names: list[str], output: Path) -> str | None:
    if not any(n in live.C_PEERS for n in names):
        return None
    from . import peers

    try:
        return peers.compile_c_live_peer(output)
    except peers.PeerUnavailable as exc:
        raise RunFailed(str(exc)) from None


def run_live(opts: Options, env: dict[str, Any], console: Console,
             worker_cmd: LiveWorkerCommand | None = None,
             results: list[dict[str, Any]] | None = None, done: set[tuple[str, str, Any]] | None = None,
             on_step: Callable[[dict[str, Any]], None] | None = None,
             ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every rate x live scenario in its own worker process; rate-major order. Each finished
    step is appended to `results` (a new list by default) and passed to `on_step`; steps whose
    key (`runner.step_key`) is in `done` are skipped.

    Returns the live results and the sweep's setup block (the sink, the C peer binary).
    """
    names = live_scenarios(opts)
    binary = _c_peer_binary(names, Path(opts.output))
    try:
        sink = Sink(opts.port, mode=opts.sink, external=opts.source == "external")
    except SinkError as exc:
        raise RunFailed(str(exc)) from None
    results = [] if results is None else results
    cpus = os.cpu_count()
    with sink:
        setup = {"sink": sink.describe(), "c_peer_binary": binary}
        for rate in opts.rates:
            for scenario in names:
                if ("live", scenario, rate) in (done or ()):
                    console.advance()
                    continue
                cfg = live.scenario_config(scenario, opts, rate, cpus)
                cfg["scenario"] = scenario
                if scenario in live.C_PEERS:
                    cfg["binary"] = binary
                if opts.generator_report:
                    cfg["generator_report"] = opts.generator_report
                results.append(_run_one(opts, cfg, env, console, worker_cmd))
                if on_step is not None:
                    on_step(results[-1])
                console.advance()
    return results, setup


def _run_one(opts: Options, cfg: dict[str, Any], env: dict[str, Any], console: Console,
             worker_cmd: LiveWorkerCommand | None) -> dict[str, Any]:
    scenario = cfg["scenario"]
    label = (f"live {opts.device} {scenario} source={opts.source} target-pps={cfg['target_pps']} "
             f"senders={cfg['senders']}")
    prefix = label
    console.progress(prefix)
    ready_file, stop_poll = _ready_watch(console) if opts.source == "external" else (None, None)
    cmd = (worker_cmd or live_worker_command)(cfg, opts.warmups, opts.runs, ready_file)
    try:
        doc = run_worker(cmd, label, console.progress_of(prefix))
    finally:
        if stop_poll is not None:
            stop_poll.set()
        if ready_file and os.path.exists(ready_file):
            os.unlink(ready_file)
    runs = doc["runs"]
    problems = live.validate_runs(runs)
    if problems:
        console.clear()
        raise RunFailed(f"live benchmark did not collect clean capture statistics: {label}: " + "; ".join(problems))
    return {
        "mode": "live",
        "scenario": scenario,
        "config": cfg,
        "environment": env,
        "runs": runs,
        "summary": metrics.summarize(runs),
        "sustainability": live.sustainability(runs),
    }


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def _med(result: dict[str, Any], name: str) -> float | None:
    stat = result["summary"].get(name)
    return None if stat is None else float(stat["median"])


def ring_label(ring: dict[str, Any] | None) -> str:
    """`V3 64x256K` (blocks) or `V2 7885 slots` from a run's ring block; `-` when unknown."""
    if not ring:
        return "-"
    version = str(ring.get("version") or "?").replace("TPACKET_", "")
    if version == "V3":
        return f"{version} {ring['block_count']}x{ring['block_size'] // 1024}K"
    return f"{version} {ring['frame_count']} slots"


def _grid(rows: list[tuple[str, ...]], left: int) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for i, row in enumerate(rows):
        cells = [c.ljust(w) if j < left else c.rjust(w) for j, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cpu_by_target(results: list[dict[str, Any]]) -> dict[tuple[int, str], float]:
    """(target, scenario) -> median CPU ns per packet of that scenario's result."""
    out = {}
    for r in results:
        cpu = _med(r, "cpu_ns_per_packet")
        if cpu:
            out[(r["config"]["target_pps"], r["scenario"])] = cpu
    return out


def _ratio(cpu: float | None, base: float | None, digits: int) -> str:
    return _fmt(cpu / base, digits) if cpu is not None and base else "-"


def live_table(results: list[dict[str, Any]]) -> str:
    """Per rate and scenario: target, ring, realized and processed rates, loss, CPU per packet
    (and as a multiple of plain libpcap's, and for `capture()` of `reduce(device=...)`'s, with
    the same ring at the same target), verdict."""
    by_target = _cpu_by_target(results)
    rows: list[tuple[str, ...]] = [("scenario", "ring", "target pps", "realized pps", "processed pps", "loss",
                                    "CPU us/pkt", "x C CPU", "x reduce CPU", "verdict")]
    for r in results:
        loss = _med(r, "send_loss_rate")
        cpu = _med(r, "cpu_ns_per_packet")
        target = r["config"]["target_pps"]
        base = by_target.get((target, live.c_peer_for(r["scenario"])))
        peer = live.reduce_peer_for(r["scenario"])
        reduce_cpu = by_target.get((target, peer)) if peer else None
        sus = r["sustainability"]
        rows.append((
            r["scenario"],
            ring_label(r["runs"][0].get("ring")),
            _fmt(r["config"]["target_pps"]),
            _fmt(_med(r, "realized_send_pps")),
            _fmt(_med(r, "sustained_processed_pps")),
            "-" if loss is None else f"{loss * 100:.3f}%",
            "-" if cpu is None else f"{cpu / 1000:.2f}",
            _ratio(cpu, base, 1),
            _ratio(cpu, reduce_cpu, 2),
            f"{sus['verdict']} {sus['passing_runs']}/{sus['total_runs']}",
        ))
    return _grid(rows, 2)


def ceiling_table(best: dict[str, dict[str, Any]]) -> str:
    """Per scenario, the highest certified zero-loss rate (`max_sustainable_by_scenario`), the
    lowest offered rate that failed above it, the ratio of the certified rate to plain
    libpcap's with the same ring, and the CPU per packet there. `>=` marks a floor: nothing
    offered above it failed (often because the generator could offer no more)."""
    rows: list[tuple[str, ...]] = [("scenario", "zero-loss pps", "failed at", "x C libpcap", "CPU us/pkt")]
    for scenario in live.SCENARIOS:
        entry = best.get(scenario)
        if entry is None:
            continue
        c = best.get(live.c_peer_for(scenario))
        floor = entry["upper_bound_pps"] is None
        ratio = "-"
        if c is not None and scenario not in live.C_PEERS:
            ratio = _fmt(entry["certified_pps"] / c["certified_pps"], 2)
            if floor or c["upper_bound_pps"] is None:
                ratio += " (floors)"
        cpu = entry["cpu_ns_per_packet"]
        rows.append((scenario, f"{'>=' if floor else ''}{_fmt(entry['certified_pps'])}",
                     _fmt(entry["upper_bound_pps"]), ratio, "-" if cpu is None else f"{cpu / 1000:.2f}"))
    if len(rows) == 1:
        return "no live scenario sustained any offered rate"
    return _grid(rows, 1)
