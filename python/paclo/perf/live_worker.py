"""One live rate x scenario in its own process (called by `paclo.perf.worker --live`)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import live, metrics

if TYPE_CHECKING:
    from types import ModuleType

# A loopback capture stops after this long without a packet (the generator process needs a
# moment to start, so this is longer than the Clojure runner's 250 ms).
LOOPBACK_IDLE_S = 1.0


def _delay(ns: int) -> None:
    if ns <= 0:
        return
    due = time.perf_counter_ns() + ns
    if ns > 100_000:
        time.sleep((ns - 50_000) / 1e9)
    while time.perf_counter_ns() < due:
        pass


class _Counter:
    """Counts packets, captured bytes and decode errors of Packet objects or packet maps."""

    __slots__ = ("bytes", "decode_errors", "decoded", "delay_ns", "packets")

    def __init__(self, decoded: bool, delay_ns: int) -> None:
        self.packets = 0
        self.bytes = 0
        self.decode_errors = 0
        self.decoded = decoded
        self.delay_ns = delay_ns

    def add(self, item: Any) -> None:
        self.packets += 1
        if self.decoded:
            self.bytes += item["caplen"]
            if "decode_error" in item:
                self.decode_errors += 1
        else:
            self.bytes += item.caplen
        if self.delay_ns:
            _delay(self.delay_ns)

    def fields(self) -> dict[str, Any]:
        return {"packets": self.packets, "bytes": self.bytes, "decode_errors": self.decode_errors}


def _generator_cmd(cfg: dict[str, Any]) -> list[str]:
    return [
        sys.executable, "-m", "paclo.perf.generator",
        "--host", "127.0.0.1", "--port", str(cfg["port"]),
        "--duration-ms", str(cfg["duration_ms"]), "--rate", str(cfg["target_pps"]),
        "--frame-size", str(cfg["frame_size"]), "--senders", str(cfg["senders"]),
        "--start-delay-ms", "100",
    ]


def _capture_options(cfg: dict[str, Any], on_ready: Callable[[], None], errors: list[str]) -> dict[str, Any]:
    loopback = cfg["source"] == "loopback"
    opts: dict[str, Any] = {
        "filter": cfg["filter"],
        "snaplen": cfg["snaplen"],
        "timeout_ms": 10,
        "decode": cfg["decode"],
        "duration": (cfg["duration_ms"] + (2000 if loopback else 0)) / 1000,
        "idle_timeout": LOOPBACK_IDLE_S if loopback else (cfg["duration_ms"] + 100) / 1000,
        "on_ready": on_ready,
        "on_error": lambda exc: errors.append(f"{type(exc).__name__}: {exc}"),
        "error_mode": "pass",
    }
    if cfg["buffer_size"] is not None:
        opts["buffer_size"] = cfg["buffer_size"]
    if cfg["immediate"] is not None:
        opts["immediate"] = cfg["immediate"]
    if cfg.get("expected_packets"):
        opts["limit"] = cfg["expected_packets"]
    return opts


def _queue_stats(q: dict[str, Any] | None) -> dict[str, Any] | None:
    if q is None:
        return None
    keys = ("mode", "capacity", "enqueued", "dropped", "blocked_events", "blocked_ns", "max_depth", "depth")
    return {k: q.get(k) for k in keys if k in q}


def one_run(cfg: dict[str, Any], ready_file: str | None) -> dict[str, Any]:
    """Capture (and, for loopback, send) once; return the consumer fields and the raw counters."""
    import warnings

    import paclo

    gen: list[subprocess.Popen[str]] = []
    errors: list[str] = []

    def on_ready() -> None:
        if cfg["source"] == "loopback":
            gen.append(subprocess.Popen(_generator_cmd(cfg), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        if ready_file:
            with open(ready_file, "w") as f:
                f.write("ready\n")

    engine = cfg["engine"]
    counter = _Counter(cfg["decode"] == "full", cfg["consumer_delay_ns"])
    opts = _capture_options(cfg, on_ready, errors)
    extra: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if engine == "direct":
            def step(acc: _Counter, item: Any) -> _Counter:
                acc.add(item)
                return acc

            _, stats = paclo.reduce(step, counter, device=cfg["device"], report=True, **opts)
            queue: dict[str, Any] | None = {"mode": "direct", "capacity": 0, "enqueued": counter.packets, "dropped": 0,
                     "blocked_events": 0, "blocked_ns": 0, "max_depth": 0}
        elif engine in ("queue", "managed"):
            with paclo.capture(cfg["device"], queue_cap=cfg["queue_cap"], queue_mode=cfg["queue_mode"],
                               **opts) as cap:
                for item in cap:
                    counter.add(item)
                stats = cap.stats()
            queue = _queue_stats(stats.get("queue"))
        elif engine == "fanout":
            stats, queue, extra = _fanout(paclo, cfg, opts, counter)
        else:
            raise ValueError(f"engine must be queue, direct, managed, or fanout, got {engine!r}")
    sent_report = None
    if gen:
        try:
            out, err = gen[0].communicate(timeout=cfg["duration_ms"] / 1000 + 60)
        except subprocess.TimeoutExpired:
            gen[0].kill()
            raise RuntimeError("the UDP generator did not finish") from None
        if gen[0].returncode != 0:
            raise RuntimeError(f"the UDP generator failed: {err.strip()}")
        sent_report = json.loads(out)
    elif cfg["source"] == "loopback":
        raise RuntimeError("the capture never became ready, so no traffic was sent")
    if stats.get("error"):
        errors.append(f"{stats['error'].get('class')}: {stats['error'].get('message')}")
    result = counter.fields()
    result.update(extra)
    result["capture_stats"] = stats.get("pcap")
    result["queue_stats"] = queue
    result["capture_errors"] = errors
    result["stop_reason"] = stats.get("stop_reason")
    result["warnings"] = [str(w.message) for w in caught]
    result["_generator"] = sent_report
    return result


def _fanout(
    paclo: ModuleType, cfg: dict[str, Any], opts: dict[str, Any], counter: _Counter
) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """The two fan-out scenarios: dual blocking branches, or a fast blocking + a slow dropping branch."""
    decoded = cfg["decode"] == "full"
    if cfg["fanout_mode"] == "dual":
        branches = {"left": {"mode": "blocking", "cap": cfg["branch_cap"]},
                    "right": {"mode": "blocking", "cap": cfg["branch_cap"]}}
    else:
        branches = {"fast": {"mode": "blocking", "cap": cfg["branch_cap"]},
                    "slow": {"mode": "dropping", "cap": cfg["slow_cap"]}}
    cap = paclo.capture(cfg["device"], queue_cap=cfg["queue_cap"], queue_mode=cfg["queue_mode"], **opts)
    with paclo.fan_out(cap, branches) as fo:
        names = list(branches)
        counters = {name: _Counter(decoded, cfg["consumer_delay_ns"]) for name in names}
        iters = {name: fo[name] for name in names}
        failures: list[BaseException] = []

        def drain(name: str) -> None:
            try:
                for item in iters[name]:
                    counters[name].add(item)
            except BaseException as exc:  # noqa: BLE001 - the main thread re-raises the first
                failures.append(exc)

        if cfg["fanout_mode"] == "dual":
            threads = [threading.Thread(target=drain, args=(n,)) for n in names]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            drain("fast")
            drain("slow")
        if failures:
            raise failures[0]
        fstats = fo.stats()
    first = counters[names[0]]
    counter.packets, counter.bytes, counter.decode_errors = first.packets, first.bytes, first.decode_errors
    stats = cap.stats()
    queue = _queue_stats(stats.get("queue"))
    if cfg["fanout_mode"] == "dual":
        extra = {"left_count": counters["left"].packets, "right_count": counters["right"].packets,
                 "stream_stats": fstats}
        if extra["left_count"] != extra["right_count"]:
            raise RuntimeError(
                f"fan-out blocking branches diverged: left {extra['left_count']}, right {extra['right_count']}"
            )
    else:
        slow = fstats["branches"]["slow"] if isinstance(fstats.get("branches"), dict) else None
        extra = {"fast_count": counters["fast"].packets, "slow_count": counters["slow"].packets,
                 "slow_dropped": (slow or {}).get("dropped"), "stream_stats": fstats}
    return stats, queue, extra


def run_live_worker(cfg: dict[str, Any], warmups: int, runs: int, ready_file: str | None) -> dict[str, Any]:
    """Warm-ups, then measured runs; each run gets stage counts, rates and the resource metrics."""
    native = None
    try:
        from paclo import _paclo

        native = getattr(_paclo, "native_alloc_counts", None)
    except ImportError:
        pass
    for i in range(warmups):
        print(f"[worker] warmup {i + 1}/{warmups}", file=sys.stderr, flush=True)
        one_run(cfg, None)
    out = []
    for i in range(runs):
        print(f"[worker] run {i + 1}/{runs}", file=sys.stderr, flush=True)
        run = metrics.measure(functools.partial(one_run, cfg, ready_file if i == 0 else None), native)
        report = run.pop("_generator")
        if cfg["source"] == "loopback":
            sent, sent_source = report["sent"], "internal_observed"
            run["generator"] = report
        elif cfg.get("expected_packets"):
            sent, sent_source = cfg["expected_packets"], "external_expected"
        else:
            sent, sent_source = 0, "unavailable"
        live.derive(run, sent=sent, sent_source=sent_source, duration_ms=cfg["duration_ms"],
                    target_pps=cfg["target_pps"], source=cfg["source"], engine=cfg["engine"])
        run["python_allocated_bytes"] = None
        run["python_allocated_bytes_per_packet"] = None
        out.append(run)
    return {"scenario": cfg.get("scenario"), "config": cfg, "runs": out}
