"""The runner: datasets, one worker process per case x scenario (offline) or rate x scenario (live), checks, results.json."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TextIO

from .._progress import Display
from . import config, environment, live, metrics
from .live_runner import ceiling_table, live_scenarios, live_table, run_live
from .options import EXIT_NOT_FOUND, EXIT_VALUE, Options, UsageError
from .results import SPEED_REFERENCES
from .workers import Console, RunFailed, run_worker

__all__ = ["Console", "Interrupted", "Options", "RunFailed", "live_scenarios", "run", "run_live", "run_offline",
           "run_worker"]

# Builds the worker command of one offline case x scenario:
# (scenario, path, count, warmups, runs, C peer binary) -> argv.
OfflineWorkerCommand = Callable[[str, str, int, int, int, str | None], list[str]]

SCHEMA_VERSION = 2


class Interrupted(Exception):
    """Ctrl-C stopped the run; the finished steps were written to `path` marked incomplete."""

    def __init__(self, path: Path, finished: int, total: int) -> None:
        super().__init__(f"interrupted after {finished} of {total} steps; the finished ones are in {path}")
        self.path = path


class Datasets(Protocol):
    """What the runner needs of paclo.perf.datasets (tests pass a replacement)."""

    def expected_file_size(self, case: str, count: int) -> int: ...
    def expected_bytes(self, case: str, count: int) -> int: ...
    def generate(self, case: str, count: int, path: str, *, progress: Display) -> object: ...


def _datasets_module() -> Datasets:
    try:
        from . import datasets
    except ImportError as exc:
        raise RunFailed(
            f"the dataset generator paclo.perf.datasets is not available in this build ({exc})"
        ) from None
    return datasets


def prepare_dataset(datasets: Datasets, path: Path, case: str, count: int, console: Console) -> None:
    """Generate `path` unless it exists with exactly the expected classic-pcap size; the
    packets written show on the console's line."""
    expected = datasets.expected_file_size(case, count)
    if path.exists() and path.stat().st_size == expected:
        return
    console.log(f"[perf] preparing {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.generate(case, count, str(path), progress=console.display(f"preparing {path.name}"))
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

    With the C peers in the results, `x C loop` and `x walk` columns give each scenario's
    median packets/s as a multiple of the C pcap_next_ex loop's and of the C mmap walk's on
    the same case (results.SPEED_REFERENCES).
    """
    refs = {
        label: {r["case"]: r["summary"].get("packets_per_sec", {}).get("median")
                for r in results if r["scenario"] == scenario}
        for scenario, label in SPEED_REFERENCES
    }
    labels = [label for label, by_case in refs.items() if by_case]
    header = ["case", "scenario", "packets/s", "ns/packet", "native B/pkt", "native allocs/pkt", "Python B/pkt",
              *labels]
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
        pps = med("packets_per_sec")
        for label in labels:
            base = refs[label].get(r["case"])
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


# One line per column of the offline table.
LEGEND = (
    ("packets/s", "median over the measured runs of packets read per second of wall-clock time"),
    ("ns/packet", "median wall-clock nanoseconds per packet (the same runs)"),
    ("native B/pkt", "bytes the Rust core allocated per packet (counting allocator; 0: nothing per packet)"),
    ("native allocs/pkt", "allocations the Rust core made per packet"),
    ("Python B/pkt", "bytes Python allocated per packet (tracemalloc, in an extra untimed run)"),
    ("x C loop", "packets/s as a multiple of the C pcap_next_ex loop's on the same case (> 1: faster)"),
    ("x walk", "packets/s as a multiple of the C mmap record walk's, the floor of a raw read (1: at the floor)"),
)


def legend(results: list[dict[str, Any]]) -> str:
    """What each column of `table(results)` means, one line each, and a note on runs too
    short to time."""
    ran = {r["scenario"] for r in results}
    absent = {label for scenario, label in SPEED_REFERENCES if scenario not in ran}
    shown = [(name, text) for name, text in LEGEND if name not in absent]
    width = max(len(name) for name, _ in shown)
    lines = [f"{name.ljust(width)}  {text}" for name, text in shown]
    short = [
        f"{r['case']} {r['scenario']} ({r['summary']['elapsed_ns']['median'] / 1e6:.1f} ms)"
        for r in results
        if r["summary"].get("elapsed_ns", {}).get("median", config.MIN_TIMED_NS) < config.MIN_TIMED_NS
    ]
    if short:
        lines.append(
            f"note: {len(short)} of {len(results)} steps ran under {config.MIN_TIMED_NS // 1_000_000} ms a run, too "
            f"short to time well (timer and scheduler noise): {', '.join(short)}. More packets "
            "(--packets N, or --profile reference) give figures that mean more."
        )
    return "\n".join(lines)


def _size_text(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _count_text(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _duration_text(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def plan(opts: Options, datasets: Datasets | None) -> tuple[int, list[str]]:
    """The steps the run will take and the lines that announce them: mode, profile, steps,
    the datasets on disk (and what is still to be generated), an estimate of the time."""
    profile = config.PROFILES[opts.profile]
    passes = opts.warmups + opts.runs
    lines = []
    steps = 0
    seconds = 0.0
    at_most = 0.0  # the live steps' bound: loopback senders that cannot reach a rate send for their cap
    if opts.mode in ("live", "all"):
        from .live_worker import send_cap_ms

        names = live_scenarios(opts)
        n = len(opts.rates) * len(names)
        steps += n
        # each run captures for the duration and its overhead, plus the worker's start
        run_s = opts.duration_ms / 1000 + config.ESTIMATE_LIVE_RUN_OVERHEAD_S
        seconds += n * (passes * run_s + config.ESTIMATE_WORKER_START_S)
        if opts.source == "loopback":
            cap_s = send_cap_ms(opts.duration_ms) / 1000 + config.ESTIMATE_LIVE_RUN_OVERHEAD_S
            at_most = n * passes * (cap_s - run_s)
        lines.append(f"[perf] live: {n} steps ({len(opts.rates)} rates x {len(names)} scenarios, "
                     f"{_count_text(passes, 'run')} of {opts.duration_ms:,} ms each) on {opts.device}")
    if opts.mode in ("offline", "all"):
        count = opts.packets if opts.packets is not None else profile.packets
        scenarios = opts.offline_scenarios()
        n = len(config.CASES) * len(scenarios)
        steps += n
        for scenario in scenarios:
            packets = config.scenario_count(scenario, count)
            ns = config.ESTIMATE_NS_PER_PACKET.get(scenario, 1_000)
            # the warm-ups and measured runs, plus the untimed tracemalloc run (slower)
            seconds += len(config.CASES) * ((passes + 3) * packets * ns / 1e9 + config.ESTIMATE_WORKER_START_S)
        lines.append(f"[perf] offline: {n} steps ({len(config.CASES)} cases x {len(scenarios)} scenarios, "
                     f"{_count_text(opts.warmups, 'warm-up')} + {_count_text(opts.runs, 'measured run')} of {count:,} "
                     "packets each)")
        if datasets is not None:
            folder = Path(opts.output) / "datasets"
            sizes = {case: datasets.expected_file_size(case, count) for case in config.CASES}
            missing = [
                case for case in config.CASES
                if not ((p := folder / config.dataset_name(opts.profile, case, opts.packets)).exists()
                        and p.stat().st_size == sizes[case])
            ]
            seconds += len(missing) * count * config.ESTIMATE_GENERATE_NS_PER_PACKET / 1e9
            state = f", {len(missing)} to generate" if missing else ", all present"
            lines.append(f"[perf] datasets: {_size_text(sum(sizes.values()))} on disk in {folder} "
                         f"({', '.join(f'{c} {_size_text(sizes[c])}' for c in config.CASES)}{state})")
    head = f"[perf] mode {opts.mode}, profile {opts.profile}: {steps} steps, estimated {_duration_text(seconds)}"
    if at_most:
        head += f", at most {_duration_text(seconds + at_most)} where the senders cannot reach a rate"
    return steps, [head + " (from a quiet machine's figures; a loaded one takes longer)", *lines]


def write_results(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as f:
        json.dump(document, f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat().replace("+00:00", "Z")


def step_key(result: dict[str, Any]) -> tuple[str, str, Any]:
    """What identifies a step: (mode, scenario, case) offline, (mode, scenario, target) live."""
    if result["mode"] == "live":
        return ("live", result["scenario"], result["config"]["target_pps"])
    return ("offline", result["scenario"], result["case"])


def plan_key(opts: Options) -> dict[str, Any]:
    """Every option that decides which steps run and how (all but the output and --resume):
    a resumed run must have the same."""
    fields = dataclasses.asdict(opts)
    for name in ("argv", "output", "resume"):
        fields.pop(name)
    fields["scenarios"] = opts.offline_scenarios() if opts.mode == "offline" else live_scenarios(opts)
    return fields


def load_resume(opts: Options) -> dict[str, Any]:
    """The incomplete results.json that `--resume` continues, checked against this run:
    UsageError (exit 2) when there is none, (exit 4) when it is complete, was written by
    another plan or another build of paclo."""
    path = Path(opts.output) / "results.json"
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"resume: no results.json in {opts.output} to continue", EXIT_NOT_FOUND) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"resume: cannot read {path}: {exc}", EXIT_VALUE) from None
    if not isinstance(document, dict) or document.get("schema_version") != SCHEMA_VERSION:
        raise UsageError(f"resume: {path} is not a schema {SCHEMA_VERSION} results.json", EXIT_VALUE)
    if document.get("complete") is not False:
        raise UsageError(f"resume: {path} is complete; nothing to continue", EXIT_VALUE)
    previous = (document.get("config") or {}).get("plan")
    if previous is None:
        raise UsageError(f"resume: {path} does not record its plan (written before --resume existed)", EXIT_VALUE)
    current = plan_key(opts)
    differ = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
    if differ:
        shown = ", ".join(f"{k} {previous.get(k)!r} -> {current.get(k)!r}" for k in differ)
        raise UsageError(f"resume: {path} was run with other options: {shown}", EXIT_VALUE)
    env = environment.collect([])
    for result in (document.get("live") or []) + (document.get("offline") or []):
        before = result["environment"]
        for name in ("git_sha", "paclo_version", "python_version", "libpcap_version"):
            if before.get(name) != env[name]:
                raise UsageError(f"resume: {path} was measured with {name} {before.get(name)!r}, "
                                 f"this run has {env[name]!r}: start a new output directory", EXIT_VALUE)
    return document


def _sigterm_as_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run(opts: Options, *, datasets: Datasets | None = None, worker_cmd: OfflineWorkerCommand | None = None,
        console: Console | None = None, out: TextIO | None = None) -> dict[str, Any]:
    """Run the benchmark (`opts.mode`: offline, live, or all = live then offline) and write
    `<output>/results.json`; return the document.

    The document is rewritten after every step, marked `"complete": false` until the last, so
    a run that is killed keeps what finished; Ctrl-C and SIGTERM write it and raise
    Interrupted. With `opts.resume` the steps of the incomplete results.json are kept and
    only the others run (each sitting is listed in `sittings`).

    `datasets` replaces the paclo.perf.datasets module and `worker_cmd` the offline worker
    command builder (both for tests).
    """
    console = console or Console()
    out = out if out is not None else sys.stdout
    previous = load_resume(opts) if opts.resume else None
    if opts.mode in ("offline", "all") and datasets is None:
        datasets = _datasets_module()
    total, announce = plan(opts, datasets)
    for line in announce:
        console.log(line)
    output = Path(opts.output)
    results_path = output / "results.json"
    kept_live = list(previous["live"] or []) if previous else []
    kept_offline = list(previous["offline"] or []) if previous else []
    done = {step_key(r) for r in kept_live + kept_offline}
    if previous is not None:
        console.log(f"[perf] resuming {results_path}: {len(done)} of {total} steps kept, "
                    f"{total - len(done)} to run")
    console.start(total)
    env = environment.collect(["python", "-m", "paclo.perf", *opts.argv])
    sittings = list(previous.get("sittings") or []) if previous else []
    sittings.append({"started_at": _now(), "command_line": env["command_line"], "steps": 0})
    profile = config.PROFILES[opts.profile]
    # Filled step by step, so that an interrupted or killed run still has the steps that finished.
    live_results: list[dict[str, Any]] | None = kept_live if opts.mode in ("live", "all") else None
    offline_results: list[dict[str, Any]] | None = None
    live_setup: dict[str, Any] | None = None

    def document(complete: bool) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "created_at": _now(),
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
                "plan": plan_key(opts),
            },
            "offline": offline_results,
            "live": live_results,
            "max_sustainable_by_scenario": None,
            "complete": complete,
            "sittings": sittings,
        }
        if live_results is not None:
            doc["max_sustainable_by_scenario"] = live.max_sustainable_by_scenario(live_results)
        return doc

    def checkpoint(result: dict[str, Any]) -> None:
        result["finished_at"] = _now()
        # what else ran: the 1, 5 and 15 min load averages as the step ended (its own processes included)
        result["load_average"] = [round(x, 2) for x in os.getloadavg()]
        sittings[-1]["steps"] += 1
        write_results(results_path, document(False))

    complete = True
    previous_handler = None
    if hasattr(signal, "SIGTERM") and _main_thread():
        previous_handler = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        if opts.mode in ("live", "all"):
            live_setup = run_live(opts, env, console, results=live_results, done=done, on_step=checkpoint)[1]
        if opts.mode in ("offline", "all"):
            offline_results = kept_offline
            run_offline(opts, env, console, datasets=datasets, worker_cmd=worker_cmd, results=offline_results,
                        done=done, on_step=checkpoint)
    except KeyboardInterrupt:
        complete = False
    finally:
        if previous_handler is not None:
            signal.signal(signal.SIGTERM, previous_handler)
    console.clear()
    sittings[-1]["finished_at"] = _now()
    final = document(complete)
    write_results(results_path, final)
    if not complete:
        finished = len(live_results or []) + len(offline_results or [])
        raise Interrupted(results_path, finished, total)
    if live_results:
        print(live_table(live_results), file=out)
        print(file=out)
        print(ceiling_table(final["max_sustainable_by_scenario"]), file=out)
    if offline_results:
        print(table(offline_results), file=out)
        print(legend(offline_results), file=out)
    print(f"[perf] wrote {results_path}", file=out, flush=True)
    return final


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def run_offline(opts: Options, env: dict[str, Any], console: Console, *, datasets: Datasets | None = None,
                worker_cmd: OfflineWorkerCommand | None = None,
                results: list[dict[str, Any]] | None = None, done: set[tuple[str, str, Any]] | None = None,
                on_step: Callable[[dict[str, Any]], None] | None = None) -> list[dict[str, Any]]:
    """Every case x offline scenario in its own worker process; case-major order. Each
    finished step is appended to `results` (a new list by default), which is returned, and
    passed to `on_step`; steps whose key (`step_key`) is in `done` are skipped."""
    datasets = datasets or _datasets_module()
    worker_cmd = worker_cmd or worker_command
    profile = config.PROFILES[opts.profile]
    count = opts.packets if opts.packets is not None else profile.packets
    scenarios = opts.offline_scenarios()
    output = Path(opts.output)

    from . import peers as peer_mod

    # The C peers are compiled once per run. The walk joins every default run: without a C
    # compiler it is left out (and said so) unless it was named.
    binaries: dict[str, str] = {}
    for scenario in [s for s in scenarios if s in peer_mod.C_PEERS]:
        try:
            binaries[scenario] = peer_mod.compile_c_peer(output, scenario)
        except peer_mod.PeerUnavailable as exc:
            named = opts.peers or (opts.scenarios is not None and scenario in opts.scenarios)
            if named:
                raise RunFailed(str(exc)) from None
            console.log(f"[perf] {scenario} left out: {exc}")
            scenarios.remove(scenario)
            for _ in config.CASES:
                console.advance()

    results = [] if results is None else results
    for case in config.CASES:
        path = output / "datasets" / config.dataset_name(opts.profile, case, opts.packets)
        todo = [s for s in scenarios if ("offline", s, case) not in (done or ())]
        for _ in range(len(scenarios) - len(todo)):
            console.advance()
        if not todo:
            continue
        prepare_dataset(datasets, path, case, count, console)
        for scenario in todo:
            label = f"{case} {scenario}"
            n = config.scenario_count(scenario, count)
            expected_bytes = datasets.expected_bytes(case, n)
            prefix = f"offline {label}"
            console.progress(prefix)
            cmd = worker_cmd(scenario, str(path), n, opts.warmups, opts.runs, binaries.get(scenario))
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
            if on_step is not None:
                on_step(result)
            console.advance()
    return results
