"""The runner: datasets, one worker process per case x scenario (offline) or rate x scenario (live), checks, results.json."""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TextIO

from . import config, environment, live, metrics
from .live_runner import ceiling_table, live_scenarios, live_table, run_live
from .options import Options
from .workers import Console, RunFailed, run_worker

__all__ = ["Console", "Options", "RunFailed", "live_scenarios", "run", "run_live", "run_offline", "run_worker"]

# Builds the worker command of one offline case x scenario:
# (scenario, path, count, warmups, runs, C peer binary) -> argv.
OfflineWorkerCommand = Callable[[str, str, int, int, int, str | None], list[str]]

SCHEMA_VERSION = 2


class Datasets(Protocol):
    """What the runner needs of paclo.perf.datasets (tests pass a replacement)."""

    def expected_file_size(self, case: str, count: int) -> int: ...
    def expected_bytes(self, case: str, count: int) -> int: ...
    def generate(self, case: str, count: int, path: str) -> object: ...


def _datasets_module() -> Datasets:
    try:
        from . import datasets
    except ImportError as exc:
        raise RunFailed(
            f"the dataset generator paclo.perf.datasets is not available in this build ({exc})"
        ) from None
    return datasets


def prepare_dataset(datasets: Datasets, path: Path, case: str, count: int, log: Callable[[str], None]) -> None:
    """Generate `path` unless it exists with exactly the expected classic-pcap size."""
    expected = datasets.expected_file_size(case, count)
    if path.exists() and path.stat().st_size == expected:
        return
    log(f"[perf] preparing {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.generate(case, count, str(path))
    actual = path.stat().st_size
    if actual != expected:
        raise RunFailed(f"generated dataset {path} has {actual} bytes, expected {expected}")


def worker_command(scenario: str, path: str, count: int, warmups: int, runs: int, binary: str | None) -> list[str]:
    cmd = [
        sys.executable, "-m", "paclo.perf.worker",
        "--scenario", scenario, "--path", path, "--count", str(count),
        "--warmups", str(warmups), "--runs", str(runs),
    ]
    if binary:
        cmd += ["--binary", binary]
    return cmd


def consistency_failures(run: dict[str, Any], packets: int, nbytes: int) -> list[str]:
    """The fields of one run that contradict the dataset (empty when consistent)."""
    failures = []
    if run.get("packets") != packets:
        failures.append(f"packets {run.get('packets')} != {packets}")
    if run.get("bytes") != nbytes:
        failures.append(f"bytes {run.get('bytes')} != {nbytes}")
    if run.get("decode_errors") != 0:
        failures.append(f"decode_errors {run.get('decode_errors')} != 0")
    return failures


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    if digits:
        return f"{value:,.{digits}f}"
    return f"{value:,.0f}"


def table(results: list[dict[str, Any]]) -> str:
    """The summary table: median packets/s, ns/packet and allocation per packet.

    With the C peer in the results, a `x C loop` column gives each scenario's median packets/s
    as a multiple of the C pcap_next_ex loop's on the same case.
    """
    c_loop = {
        r["case"]: r["summary"].get("packets_per_sec", {}).get("median")
        for r in results
        if r["scenario"] == "peer-c-pcap-next-ex"
    }
    header = ["case", "scenario", "packets/s", "ns/packet", "native B/pkt", "native allocs/pkt", "Python B/pkt"]
    if c_loop:
        header.append("x C loop")
    rows: list[tuple[str, ...]] = [tuple(header)]
    for r in results:
        s = r["summary"]

        def med(name: str, s: dict[str, Any] = s) -> Any:
            return s.get(name, {}).get("median")

        values = [
            r["case"],
            r["scenario"] + (" *" if r.get("note") and "only the first" in r["note"] else ""),
            _fmt(med("packets_per_sec")),
            _fmt(med("ns_per_packet"), 1),
            _fmt(med("native_allocated_bytes_per_packet"), 2),
            _fmt(med("native_allocations_per_packet"), 4),
            _fmt(med("python_allocated_bytes_per_packet"), 2),
        ]
        if c_loop:
            base = c_loop.get(r["case"])
            pps = med("packets_per_sec")
            values.append(_fmt(pps / base, 2) if base and pps is not None else "-")
        rows.append(tuple(values))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for i, row in enumerate(rows):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])]
        cells += [c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True)]
        lines.append("  ".join(cells))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    if any(r.get("note") and "only the first" in r["note"] for r in results):
        lines.append(f"* reads only the first {config.SCAPY_MAX_PACKETS:,} packets of each dataset")
    return "\n".join(lines)


def write_results(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(document, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def run(opts: Options, *, datasets: Datasets | None = None, worker_cmd: OfflineWorkerCommand | None = None,
        console: Console | None = None, out: TextIO | None = None) -> dict[str, Any]:
    """Run the benchmark (`opts.mode`: offline, live, or all = live then offline) and write
    `<output>/results.json`; return the document.

    `datasets` replaces the paclo.perf.datasets module and `worker_cmd` the offline worker
    command builder (both for tests).
    """
    console = console or Console()
    out = out if out is not None else sys.stdout
    env = environment.collect(["python", "-m", "paclo.perf", *opts.argv])
    output = Path(opts.output)
    live_results = None
    live_setup = None
    offline_results = None
    if opts.mode in ("live", "all"):
        live_results, live_setup = run_live(opts, env, console)
    if opts.mode in ("offline", "all"):
        offline_results = run_offline(opts, env, console, datasets=datasets, worker_cmd=worker_cmd)
    console.clear()
    profile = config.PROFILES[opts.profile]
    document: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "created_at": _dt.datetime.now(_dt.UTC).isoformat().replace("+00:00", "Z"),
        "profile": opts.profile,
        "config": {
            "mode": opts.mode,
            "packets": opts.packets if opts.packets is not None else profile.packets,
            "packets_override": opts.packets is not None,
            "warmups": opts.warmups,
            "runs": opts.runs,
            "scenarios": opts.offline_scenarios() if offline_results is not None else live_scenarios(opts),
            "cases": list(config.CASES),
            "output": str(output),
            "live": live_setup,
        },
        "offline": offline_results,
        "live": live_results,
        "max_sustainable_by_scenario": None,
    }
    if live_results is not None:
        document["max_sustainable_by_scenario"] = live.max_sustainable_by_scenario(live_results)
    results_path = output / "results.json"
    write_results(results_path, document)
    if live_results:
        print(live_table(live_results), file=out)
        print(file=out)
        print(ceiling_table(document["max_sustainable_by_scenario"]), file=out)
    if offline_results:
        print(table(offline_results), file=out)
    print(f"[perf] wrote {results_path}", file=out, flush=True)
    return document


def run_offline(opts: Options, env: dict[str, Any], console: Console, *, datasets: Datasets | None = None,
                worker_cmd: OfflineWorkerCommand | None = None) -> list[dict[str, Any]]:
    """Every case x offline scenario in its own worker process; case-major order."""
    datasets = datasets or _datasets_module()
    worker_cmd = worker_cmd or worker_command
    profile = config.PROFILES[opts.profile]
    count = opts.packets if opts.packets is not None else profile.packets
    scenarios = opts.offline_scenarios()
    output = Path(opts.output)

    binary = None
    if "peer-c-pcap-next-ex" in scenarios:
        from . import peers

        try:
            binary = peers.compile_c_peer(output)
        except peers.PeerUnavailable as exc:
            raise RunFailed(str(exc)) from None

    from . import peers as peer_mod

    results: list[dict[str, Any]] = []
    total = len(config.CASES) * len(scenarios)
    step = 0
    for case in config.CASES:
        path = output / "datasets" / config.dataset_name(opts.profile, case, opts.packets)
        prepare_dataset(datasets, path, case, count, console.log)
        for scenario in scenarios:
            step += 1
            label = f"{case} {scenario}"
            n = config.scenario_count(scenario, count)
            expected_bytes = datasets.expected_bytes(case, n)
            prefix = f"[perf] [{step}/{total}] offline {label}"
            console.progress(prefix)
            cmd = worker_cmd(scenario, str(path), n, opts.warmups, opts.runs, binary)
            doc = run_worker(cmd, label, console.progress_of(prefix))
            runs = doc["runs"]
            failures = []
            for i, r in enumerate(runs, 1):
                bad = consistency_failures(r, n, expected_bytes)
                if bad:
                    failures.append(f"{label} run {i}: " + ", ".join(bad))
            if failures:
                console.clear()
                raise RunFailed(
                    "offline benchmark result failed consistency checks (dataset "
                    f"{path}): " + "; ".join(failures)
                )
            result: dict[str, Any] = {
                "mode": "offline",
                "case": case,
                "scenario": scenario,
                "path": str(path),
                "packets": n,
                "expected_bytes": expected_bytes,
                "warmups": opts.warmups,
                "environment": env,
                "runs": runs,
                "summary": metrics.summarize(runs),
            }
            if scenario.startswith("peer-"):
                note = peer_mod.NOTES[scenario]
                if "{n}" in note:
                    note = note.format(n=f"{n:,}") if n < count else note.split("; reads only")[0]
                result["note"] = note
            results.append(result)
    return results
