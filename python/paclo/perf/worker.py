"""One case x scenario (or, with `--live`, one rate x scenario) in its own process.

Runs the warm-ups unmeasured, then the measured runs, then one untimed tracemalloc pass for
the Python allocation figure, and prints one JSON object on stdout:
`{"scenario", "path", "count", "runs": [...], "python_allocated_bytes"}`. Progress lines
(`[worker] warmup i/n`, `[worker] run i/n`) go to stderr; any failure exits non-zero with
the reason on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from . import metrics

if TYPE_CHECKING:
    from .scenarios import ScenarioFields


def _native_counts() -> Callable[[], tuple[int, int]] | None:
    try:
        from paclo import _paclo
    except ImportError:
        return None
    counts: Callable[[], tuple[int, int]] | None = getattr(_paclo, "native_alloc_counts", None)
    return counts


def _build(
    scenario: str, path: str, count: int, binary: str | None, probe: metrics.AllocationProbe | None = None
) -> tuple[Callable[[], ScenarioFields], bool]:
    from . import peers, scenarios

    if scenario in scenarios.SCENARIOS:
        return scenarios.SCENARIOS[scenario](path, count, probe), True
    if scenario in peers.C_PEERS:
        if not binary:
            raise ValueError(f"{scenario} needs --binary")
        return peers.c_self_timed(binary, path, count), False
    if scenario in peers.PEERS:
        return peers.PEERS[scenario](path, count, probe), False
    raise ValueError(f"unknown scenario {scenario!r}")


def run_worker(scenario: str, path: str, count: int, warmups: int, runs: int, binary: str | None) -> dict[str, Any]:
    """Warm up, measure and return the worker's JSON object."""
    from .peers import C_PEERS

    fn, native = _build(scenario, path, count, binary)
    counts = _native_counts() if native else None
    for i in range(warmups):
        print(f"[worker] warmup {i + 1}/{warmups}", file=sys.stderr, flush=True)
        fn()
    out_runs = []
    for i in range(runs):
        print(f"[worker] run {i + 1}/{runs}", file=sys.stderr, flush=True)
        run = metrics.measure(fn, counts)
        # A peer that times itself in another process reports its own figures.
        self_timed = "_elapsed_ns" in run
        for key in ("elapsed_ns", "process_cpu_ns", "peak_rss_bytes"):
            own = run.pop(f"_{key}", None)
            if own is not None:
                run[key] = own
        if self_timed:
            run.update(metrics.derived(run["packets"], run["bytes"], run["elapsed_ns"]))
            run["gc_count"] = None
            run["gc_time_ms"] = None
        out_runs.append(run)
    python_bytes = None
    if scenario not in C_PEERS:
        print("[worker] python allocation pass", file=sys.stderr, flush=True)
        python_bytes = metrics.python_allocation_pass(
            lambda probe: _build(scenario, path, count, binary, probe)[0]
        )
    for run in out_runs:
        run["python_allocated_bytes"] = python_bytes
        packets = run["packets"]
        run["python_allocated_bytes_per_packet"] = (
            python_bytes / packets if python_bytes is not None and packets else None
        )
    return {"scenario": scenario, "path": path, "count": count, "runs": out_runs}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["--live"]:
        return live_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m paclo.perf.worker")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--path", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--binary")
    args = parser.parse_args(argv)
    return _emit(args.scenario, lambda: run_worker(
        args.scenario, args.path, args.count, args.warmups, args.runs, args.binary
    ))


def live_main(argv: list[str]) -> int:
    """`--live --config JSON [--warmups N] [--runs N] [--ready-file PATH]`."""
    parser = argparse.ArgumentParser(prog="python -m paclo.perf.worker --live")
    parser.add_argument("--config", required=True)
    parser.add_argument("--warmups", type=int, default=1)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--ready-file")
    args = parser.parse_args(argv)
    cfg = json.loads(args.config)

    def run() -> dict[str, Any]:
        from .live_worker import run_live_worker

        return run_live_worker(cfg, args.warmups, args.runs, args.ready_file)

    return _emit(cfg.get("scenario"), run)


def _emit(scenario: str | None, run: Callable[[], dict[str, Any]]) -> int:
    """Run the measurement and print its one JSON object; on failure, the traceback on stderr."""
    try:
        result = run()
    except Exception as exc:  # noqa: BLE001 - the runner reports stderr; keep the traceback
        traceback.print_exc(file=sys.stderr)
        print(f"[worker] {scenario} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(json.dumps(result))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
