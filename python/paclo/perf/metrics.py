"""Per-run measurement and median/min/max summaries."""

from __future__ import annotations

import gc
import itertools
import os
import resource
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Self, TypeVar

_T = TypeVar("_T")
_A = TypeVar("_A")

# What the worker measures for every run, offline and live.
MEASURED_METRICS = (
    "elapsed_ns",
    "packets_per_sec",
    "mb_per_sec",
    "ns_per_packet",
    "native_allocations",
    "native_allocations_per_packet",
    "native_allocated_bytes",
    "native_allocated_bytes_per_packet",
    "python_allocated_bytes",
    "python_allocated_bytes_per_packet",
    "gc_count",
    "gc_time_ms",
    "peak_rss_bytes",
    "process_cpu_ns",
)

# Metrics summarised as {median, min, max} when present (not None) in at least one run.
SUMMARY_METRICS = (*MEASURED_METRICS, "unique_flows", "realized_send_pps", "sustained_processed_pps",
                   "processed_vs_sent_rate", "send_loss_rate", "kernel_drop_rate", "interface_drop_rate",
                   "queue_drop_rate", "consumer_gap_rate", "capture_cpu_ns", "cpu_ns_per_packet")


def median(values: list[float]) -> float | int:
    """The median: the element itself for an odd count, the mean of the middle two (a float) for an even one."""
    if not values:
        raise ValueError("median of no values")
    ordered = sorted(values)
    n = len(ordered)
    mid = n // 2
    if n % 2:
        return ordered[mid]
    return (ordered[mid - 1] + ordered[mid]) / 2.0


def summarize(runs: list[dict[str, Any]]) -> dict[str, dict[str, float | int]]:
    """{metric: {median, min, max}} for every summary metric present in at least one run."""
    out: dict[str, dict[str, float | int]] = {}
    for name in SUMMARY_METRICS:
        values = [r[name] for r in runs if r.get(name) is not None]
        if values:
            out[name] = {"median": median(values), "min": min(values), "max": max(values)}
    return out


class GcWatch:
    """Counts collections and their total time through gc.callbacks."""

    def __init__(self) -> None:
        self.count = 0
        self.time_ns = 0
        self._start = 0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter_ns()
        else:
            self.count += 1
            self.time_ns += time.perf_counter_ns() - self._start

    def __enter__(self) -> Self:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


def reset_peak_rss() -> bool:
    """Reset the process's peak RSS (Linux `clear_refs` 5). Returns False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (VmHWM on Linux, else ru_maxrss)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss if sys.platform == "darwin" else rss * 1024


def derived(packets: int, nbytes: int, elapsed_ns: int) -> dict[str, float | None]:
    """packets/s, MB/s (bytes / s / 1e6) and ns/packet from counts and elapsed time."""
    secs = elapsed_ns / 1e9
    return {
        "packets_per_sec": packets / secs if secs > 0 else None,
        "mb_per_sec": nbytes / secs / 1e6 if secs > 0 else None,
        "ns_per_packet": elapsed_ns / packets if packets else None,
    }


def measure(fn: Callable[[], Mapping[str, Any]], native_counts: Callable[[], tuple[int, int]] | None) -> dict[str, Any]:
    """Run `fn` once, timed, and return its result fields plus the timing and resource metrics.

    Before the run: a full collection and a 25 ms pause (as the reference runner does) and a
    reset of the peak RSS, so `peak_rss_bytes` is this run's peak where the OS allows it.
    """
    gc.collect()
    time.sleep(0.025)
    rss_reset = reset_peak_rss()
    before_native = native_counts() if native_counts else None
    with GcWatch() as watch:
        cpu0 = time.process_time_ns()
        t0 = time.perf_counter_ns()
        result = fn()
        elapsed = time.perf_counter_ns() - t0
        cpu = time.process_time_ns() - cpu0
    after_native = native_counts() if native_counts else None
    run: dict[str, Any] = dict(result)
    packets = run["packets"]
    run["elapsed_ns"] = elapsed
    run.update(derived(packets, run["bytes"], elapsed))
    if before_native is not None and after_native is not None:
        allocs = after_native[0] - before_native[0]
        nbytes = after_native[1] - before_native[1]
        run["native_allocations"] = allocs
        run["native_allocations_per_packet"] = allocs / packets if packets else None
        run["native_allocated_bytes"] = nbytes
        run["native_allocated_bytes_per_packet"] = nbytes / packets if packets else None
    else:
        run["native_allocations"] = None
        run["native_allocations_per_packet"] = None
        run["native_allocated_bytes"] = None
        run["native_allocated_bytes_per_packet"] = None
    run["gc_count"] = watch.count
    run["gc_time_ms"] = watch.time_ns / 1e6
    run["peak_rss_bytes"] = peak_rss_bytes()
    run["peak_rss_reset"] = rss_reset
    run["process_cpu_ns"] = cpu
    run["pid"] = os.getpid()
    return run


class AllocationProbe:
    """Per-packet Python allocation through tracemalloc, for the untimed pass.

    `tick()` runs once per packet (through `iter` around a packet iterator, or `fn` around a
    reducer step). Each tick adds the growth of the traced heap's peak over the heap size at
    the previous tick, then resets the peak: the bytes a packet needed at once. Memory freed
    and reused inside one packet counts once, so this is a lower bound of the churn. The
    tick's own cost is calibrated away.
    """

    def __init__(self) -> None:
        self.total = 0
        self.ticks = 0
        self._prev = 0
        self._bias = 0.0
        self._keep: object = None

    def _measure(self) -> None:
        import tracemalloc

        _, peak = tracemalloc.get_traced_memory()
        self.total += peak - self._prev
        self.ticks += 1
        del _, peak

    def _rebase(self) -> None:
        import tracemalloc

        # Everything the probe allocates or frees happens before reset_peak (locals are
        # deleted first), so the next interval starts from the heap size stored in `_prev`.
        self._prev = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()

    def tick(self) -> None:
        self._measure()
        self._rebase()

    def iter(self, iterable: Iterable[_T]) -> Iterator[_T]:
        # Tick before fetching each item: the consumer still holds the previous item while the
        # next one is made, so the interval's peak growth is the new item and its processing.
        tick = self.tick
        it = iter(iterable)
        while True:
            tick()
            try:
                item = next(it)
            except StopIteration:
                return
            yield item
            del item

    def fn(self, step: Callable[[_A, _T], _A]) -> Callable[[_A, _T], _A]:
        # The reducer's caller drops each item before making the next one, which would hide it
        # from a peak: the wrapper keeps the current item alive until the next item has been
        # made and measured, then lets the old one go before taking the new baseline.
        measure = self._measure
        rebase = self._rebase
        probe = self

        def wrapped(acc: _A, item: _T) -> _A:
            measure()
            probe._keep = item
            rebase()
            return step(acc, item)

        return wrapped

    def start(self) -> None:
        import tracemalloc

        tracemalloc.start()
        # calibrate: the cost of a tick on its own (repeat() allocates no loop counter)
        for _ in itertools.repeat(None, 1000):
            self.tick()
        self._bias = self.total / self.ticks
        self.total = 0
        self.ticks = 0
        tracemalloc.reset_peak()
        self._prev, _ = tracemalloc.get_traced_memory()
        self._start = self._prev

    def stop(self) -> int:
        """Stop tracing; return the bytes attributed to the pass."""
        import tracemalloc

        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        if self.ticks == 0:
            # no per-packet hook: the pass's heap high-water mark
            return max(0, peak - self._start)
        self.total += max(0, peak - self._prev)
        return max(0, round(self.total - self._bias * self.ticks))


def python_allocation_pass(build: Callable[[AllocationProbe], Callable[[], object]]) -> int:
    """Bytes of Python heap allocated by one untimed, probed run of a scenario (see AllocationProbe)."""
    probe = AllocationProbe()
    fn = build(probe)
    gc.collect()
    probe.start()
    try:
        fn()
    finally:
        total = probe.stop()
    return total
