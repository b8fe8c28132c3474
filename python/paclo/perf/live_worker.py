"""One live rate x scenario in its own process (called by `paclo.perf.worker --live`).

A loopback run starts the generator process first (`python -m paclo.perf.generator
--wait-go`: it opens nothing, prints `ready` once imported, and sends only after a `go` line),
then opens the capture; the capture's `on_ready` hook (after open and filter) records the
kernel ring, starts the CPU clock and sends `go`. So interpreter start-up never falls inside
the measured window, and no datagram leaves before the filter is installed.

The C peer (`pcap_live_count`, plain libpcap) runs the same way in a child process: the
worker waits for its ready file, reads its ring, then sends `go`.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import live, metrics, ring

if TYPE_CHECKING:
    from types import ModuleType

# A loopback capture stops this long after the last packet (the generator is already running
# when the capture opens, so this only has to outlast a scheduling hiccup).
LOOPBACK_IDLE_S = 0.5
# A loopback capture's hard stop comes this long after the generator's own time cap.
LOOPBACK_SLACK_S = 2.0


def loopback_packets(cfg: dict[str, Any]) -> int:
    """Datagrams a loopback run sends: the target rate for the configured duration, exactly."""
    return max(1, int(cfg["target_pps"]) * int(cfg["duration_ms"]) // 1000)


def send_cap_ms(duration_ms: int) -> int:
    """The generator's time cap: a sender that cannot keep up stops here with what it sent
    (a quarter more than the duration, at least a second)."""
    return duration_ms + max(1000, duration_ms // 4)


def capture_cap_s(cfg: dict[str, Any]) -> float:
    """The capture's hard stop: `duration` for external traffic; for loopback, after the
    generator's cap (it normally ends on the idle timeout long before)."""
    if cfg["source"] != "loopback":
        return float(cfg["duration_ms"]) / 1000
    return send_cap_ms(cfg["duration_ms"]) / 1000 + LOOPBACK_SLACK_S
# How long the generator and the C peer may take to get ready.
READY_TIMEOUT_S = 30.0
# How long an external generator's report may take to appear after the capture ended.
REPORT_WAIT_S = 30.0


def _delay(ns: int) -> None:
    if ns <= 0:
        return
    due = time.perf_counter_ns() + ns
    if ns > 100_000:
        time.sleep((ns - 50_000) / 1e9)
    while time.perf_counter_ns() < due:
        pass


class _Counter:
    """Counts packets, captured bytes and decode errors of Packet objects or packet maps, and
    keeps the first and last item for the capture window."""

    __slots__ = ("bytes", "decode_errors", "decoded", "delay_ns", "first", "last", "packets")

    def __init__(self, decoded: bool, delay_ns: int) -> None:
        self.packets = 0
        self.bytes = 0
        self.decode_errors = 0
        self.decoded = decoded
        self.delay_ns = delay_ns
        self.first: Any = None
        self.last: Any = None

    def add(self, item: Any) -> None:
        self.packets += 1
        self.last = item
        if self.first is None:
            self.first = item
        if self.decoded:
            self.bytes += item["caplen"]
            if "decode_error" in item:
                self.decode_errors += 1
        else:
            self.bytes += item.caplen
        if self.delay_ns:
            _delay(self.delay_ns)

    def _ts(self, item: Any) -> int | None:
        if item is None:
            return None
        return int(item["ts_ns"] if self.decoded else item.ts_ns)

    def fields(self) -> dict[str, Any]:
        return {"packets": self.packets, "bytes": self.bytes, "decode_errors": self.decode_errors,
                "first_ts_ns": self._ts(self.first), "last_ts_ns": self._ts(self.last)}


class Generator:
    """The loopback sender in its own process, started ahead of the capture (see the module doc)."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        cmd = [
            sys.executable, "-m", "paclo.perf.generator",
            "--host", "127.0.0.1", "--port", str(cfg["port"]),
            "--packets", str(loopback_packets(cfg)), "--duration-ms", str(send_cap_ms(cfg["duration_ms"])),
            "--rate", str(cfg["target_pps"]),
            "--frame-size", str(cfg["frame_size"]), "--senders", str(cfg["senders"]),
            "--batch", str(cfg["batch"]), "--wait-go",
        ]
        if cfg.get("generator_cpus"):
            cmd += ["--cpus", ",".join(str(c) for c in cfg["generator_cpus"])]
        self.timeout_s = send_cap_ms(cfg["duration_ms"]) / 1000 + 60
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True)
        assert self.proc.stdout is not None
        line = _readline(self.proc.stdout, READY_TIMEOUT_S)
        if line.strip() != "ready":
            self.kill()
            raise RuntimeError(f"the UDP generator did not become ready: {self._stderr() or line.strip() or 'no output'}")

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def report(self) -> dict[str, Any]:
        try:
            out, err = self.proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError("the UDP generator did not finish") from None
        if self.proc.returncode != 0:
            raise RuntimeError(f"the UDP generator failed: {err.strip()}")
        report: dict[str, Any] = json.loads(out)
        return report

    def _stderr(self) -> str:
        try:
            _, err = self.proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            return ""
        return err.strip()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _readline(stream: Any, timeout_s: float) -> str:
    """One line from a pipe, or "" after `timeout_s`."""
    got: list[str] = []
    t = threading.Thread(target=lambda: got.append(stream.readline()), daemon=True)
    t.start()
    t.join(timeout_s)
    return got[0] if got else ""


class _Window:
    """What `on_ready` records: the ring, and the CPU and wall clocks at the start of traffic."""

    def __init__(self) -> None:
        self.ring: dict[str, Any] | None = None
        self.cpu0 = self.t0 = 0
        self.cpu_ns: int | None = None
        self.elapsed_ns: int | None = None

    def start(self, pid: int | None = None) -> None:
        self.ring = ring.ring_of(pid)
        self.cpu0 = time.process_time_ns()
        self.t0 = time.perf_counter_ns()

    def stop(self) -> None:
        self.cpu_ns = time.process_time_ns() - self.cpu0
        self.elapsed_ns = time.perf_counter_ns() - self.t0


def _capture_options(cfg: dict[str, Any], on_ready: Callable[[], None], errors: list[str]) -> dict[str, Any]:
    loopback = cfg["source"] == "loopback"
    duration_s = cfg["duration_ms"] / 1000
    opts: dict[str, Any] = {
        "filter": cfg["filter"],
        "snaplen": cfg["snaplen"],
        "timeout_ms": 10,
        "decode": cfg["decode"],
        "duration": capture_cap_s(cfg),
        "idle_timeout": LOOPBACK_IDLE_S if loopback else duration_s + 0.1,
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


def _direct_queue(processed: int) -> dict[str, Any]:
    """The queue block of an engine without a queue (the reference synthesises it the same way)."""
    return {"mode": "direct", "capacity": 0, "enqueued": processed, "dropped": 0, "blocked_events": 0,
            "blocked_ns": 0, "max_depth": 0}


def external_report(path: str, expected: int | None, wait_s: float = REPORT_WAIT_S) -> dict[str, Any]:
    """The remote generator's JSON report, read once the capture has ended (waiting up to
    `wait_s` for it to be complete). Its count must equal --expected-packets."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            with open(path) as f:
                report: dict[str, Any] = json.load(f)
            break
        except (OSError, ValueError) as exc:
            if time.monotonic() > deadline:
                raise RuntimeError(f"cannot read the generator report {path}: {exc}") from None
            time.sleep(0.05)
    if expected is not None and report.get("sent") != expected:
        raise RuntimeError(f"the generator report {path} says {report.get('sent')} sent, "
                           f"but --expected-packets is {expected}")
    return report


def _signal_ready(ready_file: str | None) -> None:
    if ready_file:
        with open(ready_file, "w") as f:
            f.write("ready\n")


def one_run(cfg: dict[str, Any], ready_file: str | None) -> dict[str, Any]:
    """Capture (and, for loopback, send) once; return the consumer fields and the raw counters."""
    gen = Generator(cfg) if cfg["source"] == "loopback" else None
    try:
        result = _c_libpcap_run(cfg, gen, ready_file) if cfg["engine"] == "c-libpcap" else _paclo_run(cfg, gen, ready_file)
        if gen is not None:
            result["_generator"] = gen.report()
        elif cfg.get("generator_report"):
            result["_generator"] = external_report(cfg["generator_report"], cfg.get("expected_packets"))
        else:
            result["_generator"] = None
    finally:
        if gen is not None:
            gen.kill()
    return result


def _paclo_run(cfg: dict[str, Any], gen: Generator | None, ready_file: str | None) -> dict[str, Any]:
    import warnings

    import paclo

    errors: list[str] = []
    window = _Window()

    def on_ready() -> None:
        window.start()
        if gen is not None:
            gen.go()
        _signal_ready(ready_file)

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
            window.stop()
            queue: dict[str, Any] | None = _direct_queue(counter.packets)
        elif engine in ("queue", "managed"):
            with paclo.capture(cfg["device"], queue_cap=cfg["queue_cap"], queue_mode=cfg["queue_mode"],
                               **opts) as cap:
                for item in cap:
                    counter.add(item)
                window.stop()
                stats = cap.stats()
            queue = _queue_stats(stats.get("queue"))
        elif engine == "fanout":
            stats, queue, extra = _fanout(paclo, cfg, opts, counter)
            window.stop()
        else:
            raise ValueError(f"engine must be queue, direct, managed, fanout, or c-libpcap, got {engine!r}")
    if window.cpu_ns is None:
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
    result["ring"] = window.ring
    result["capture_cpu_ns"] = window.cpu_ns
    result["capture_elapsed_ns"] = window.elapsed_ns
    return result


def c_peer_command(cfg: dict[str, Any], ready_file: str) -> list[str]:
    """The C peer's command line: the same device options as paclo's scenario."""
    loopback = cfg["source"] == "loopback"
    duration_ms = round(capture_cap_s(cfg) * 1000)
    idle_ms = int(LOOPBACK_IDLE_S * 1000) if loopback else cfg["duration_ms"] + 100
    cmd = [cfg["binary"], "--device", cfg["device"], "--snaplen", str(cfg["snaplen"]), "--promisc", "1",
           "--timeout-ms", "10", "--duration-ms", str(duration_ms), "--idle-ms", str(idle_ms),
           "--ready-file", ready_file]
    if cfg["filter"]:
        cmd += ["--filter", cfg["filter"]]
    if cfg["buffer_size"] is not None:
        cmd += ["--buffer-size", str(cfg["buffer_size"])]
    if cfg["immediate"] is not None:
        cmd += ["--immediate", "1" if cfg["immediate"] else "0"]
    if cfg.get("expected_packets"):
        cmd += ["--limit", str(cfg["expected_packets"])]
    return cmd


def _c_libpcap_run(cfg: dict[str, Any], gen: Generator | None, ready_file: str | None) -> dict[str, Any]:
    if not cfg.get("binary"):
        raise ValueError("the C libpcap peer needs its compiled binary in the config")
    fd, own_ready = tempfile.mkstemp(prefix="paclo-perf-c-ready-", suffix=".signal")
    os.close(fd)
    os.unlink(own_ready)
    proc = subprocess.Popen(c_peer_command(cfg, own_ready), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not os.path.exists(own_ready):
            if proc.poll() is not None or time.monotonic() > deadline:
                _, err = proc.communicate(timeout=5) if proc.poll() is not None else ("", "timed out")
                raise RuntimeError(f"the C libpcap peer did not become ready: {err.strip()}")
            time.sleep(0.002)
        ring_info = ring.ring_of(proc.pid)
        if gen is not None:
            gen.go()
        _signal_ready(ready_file)
        out, err = proc.communicate(timeout=capture_cap_s(cfg) + 60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if os.path.exists(own_ready):
            os.unlink(own_ready)
    if proc.returncode != 0:
        raise RuntimeError(f"the C libpcap peer failed (exit {proc.returncode}): {err.strip()}")
    c = json.loads(out)
    pcap = None if c["received"] is None else {k: c[k] for k in ("received", "dropped", "interface_dropped")}
    return {
        "packets": c["packets"],
        "bytes": c["bytes"],
        "decode_errors": 0,
        "first_ts_ns": c["first_ts_ns"],
        "last_ts_ns": c["last_ts_ns"],
        "capture_stats": pcap,
        "queue_stats": _direct_queue(c["packets"]),
        "capture_errors": [],
        "stop_reason": c["stop_reason"],
        "warnings": [],
        "ring": ring_info,
        "capture_cpu_ns": c["cpu_ns"],
        "capture_elapsed_ns": c["elapsed_ns"],
        "_elapsed_ns": c["elapsed_ns"],
        "_process_cpu_ns": c["cpu_ns"],
        "_peak_rss_bytes": c["maxrss_bytes"],
    }


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
    counter.first, counter.last = first.first, first.last
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


def _sent(cfg: dict[str, Any], report: dict[str, Any] | None) -> tuple[int, str]:
    if cfg["source"] == "loopback" and report is not None:
        return int(report["sent"]), "internal_observed"
    if cfg.get("expected_packets"):
        return int(cfg["expected_packets"]), "external_expected"
    return 0, "unavailable"


def run_live_worker(cfg: dict[str, Any], warmups: int, runs: int, ready_file: str | None) -> dict[str, Any]:
    """Warm-ups, then measured runs; each run gets stage counts, rates and the resource metrics."""
    native = None
    if cfg["engine"] != "c-libpcap":
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
        # The C peer times itself in its own process: its figures replace the worker's.
        if "_elapsed_ns" in run:
            for key in ("elapsed_ns", "process_cpu_ns", "peak_rss_bytes"):
                run[key] = run.pop(f"_{key}")
            run.update(metrics.derived(run["packets"], run["bytes"], run["elapsed_ns"]))
            run["gc_count"] = None
            run["gc_time_ms"] = None
        report = run.pop("_generator")
        sent, sent_source = _sent(cfg, report)
        if report is not None:
            run["generator"] = report
        live.derive(run, sent=sent, sent_source=sent_source, target_pps=cfg["target_pps"], source=cfg["source"],
                    engine=cfg["engine"], generator=report)
        run["python_allocated_bytes"] = None
        run["python_allocated_bytes_per_packet"] = None
        out.append(run)
    return {"scenario": cfg.get("scenario"), "config": cfg, "runs": out}
