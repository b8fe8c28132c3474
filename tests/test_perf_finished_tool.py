"""The perf runner as a finished tool: what it announces, the table's legend, --version, and
Ctrl-C (a valid partial results.json marked incomplete, exit 130, no traceback, no worker left)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import jsonschema
from _perf_util import SpecDatasets, expected_file_size, second_step_started, workers_of

from paclo.perf import cli, config, runner

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())


def validate(document: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)


class Log(runner.Console):
    def __init__(self) -> None:
        super().__init__(io.StringIO())


def test_start_lines_name_mode_profile_steps_datasets_and_an_estimate(tmp_path):
    opts = cli.parse_args(["--output", str(tmp_path), "--packets", "2000", "--scenarios", "raw-seq,full-decode"])
    steps, lines = runner.plan(opts, SpecDatasets)
    assert steps == 6
    assert lines[0].startswith("[perf] mode offline, profile quick: 6 steps, estimated ")
    assert lines[1] == "[perf] offline: 6 steps (3 cases x 2 scenarios, 1 warm-up + 1 measured run of 2,000 packets each)"
    total = sum(expected_file_size(c, 2000) for c in config.CASES)
    assert lines[2].startswith(f"[perf] datasets: {runner._size_text(total)} on disk in {tmp_path / 'datasets'} (udp-64 ")
    assert lines[2].endswith(", 3 to generate)")


def test_estimate_grows_with_packets_and_runs(tmp_path):
    def seconds(*argv: str) -> float:
        opts = cli.parse_args(["--output", str(tmp_path), *argv])
        head = runner.plan(opts, SpecDatasets)[1][0]
        text = head.split("estimated ", 1)[1].split(" (", 1)[0]
        value, unit = text.split()
        return float(value) * {"s": 1, "min": 60, "h": 3600}[unit]

    assert seconds("--packets", "1000") < seconds("--packets", "10000000")
    assert seconds("--packets", "10000000", "--runs", "1") < seconds("--packets", "10000000", "--runs", "5")


def test_a_run_announces_itself_explains_its_columns_and_is_complete(tmp_path):
    opts = cli.parse_args(["--output", str(tmp_path / "out"), "--packets", "2000", "--scenarios", "raw-seq"])
    console, out = Log(), io.StringIO()
    doc = runner.run(opts, datasets=SpecDatasets, console=console, out=out)
    validate(doc)
    assert doc["complete"] is True
    err = console.stream.getvalue()
    assert err.startswith("[perf] mode offline, profile quick: 3 steps, estimated ")
    text = out.getvalue().splitlines()
    header = text.index(next(line for line in text if line.startswith("case ")))
    legend = [line.split("  ", 1)[0] for line in text[header + 2 + 3:] if not line.startswith("[perf]")]
    assert legend[:5] == ["packets/s", "ns/packet", "native B/pkt", "native allocs/pkt", "Python B/pkt"]
    # 2,000 packets are read in far less than 50 ms: the note says so and names every step
    note = next(line for line in text if line.startswith("note: "))
    assert note.startswith("note: 3 of 3 steps ran under 50 ms a run, too short to time well")
    assert all(f"{case} raw-seq (" in note for case in config.CASES)
    assert text[-1] == f"[perf] wrote {tmp_path / 'out' / 'results.json'}"


def test_version():
    for argv in (["--version"], ["--profile", "quick", "--version"]):
        r = subprocess.run([sys.executable, "-m", "paclo.perf", *argv], capture_output=True, text=True, timeout=120)
        assert (r.returncode, r.stdout, r.stderr) == (0, f"paclo.perf {version('paclo')}\n", "")


def test_sigint_writes_the_finished_steps_marked_incomplete_and_exits_130(tmp_path):
    out = tmp_path / "perf"
    # Long enough steps (many runs) that SIGINT lands inside one; the first step has finished
    # once a second worker process has been started.
    proc = subprocess.Popen(
        [sys.executable, "-m", "paclo.perf", "--profile", "quick", "--mode", "offline", "--packets", "20000",
         "--scenarios", "raw-seq,full-decode", "--runs", "40", "--output", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        second_step_started(proc)
        current = workers_of(proc.pid)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    results = out / "results.json"
    assert f"[perf] interrupted after {len(json.loads(results.read_text())['offline'])} of 6 steps; " \
           f"the finished ones are in {results}" in stderr
    doc = json.loads(results.read_text())
    validate(doc)
    assert doc["complete"] is False
    finished = [(r["case"], r["scenario"]) for r in doc["offline"]]
    assert 1 <= len(finished) < 6
    assert finished == [(c, s) for c in config.CASES for s in ("raw-seq", "full-decode")][: len(finished)]
    for r in doc["offline"]:
        assert len(r["runs"]) == 40 and all(run["packets"] == 20000 for run in r["runs"])
    # the worker that was running was stopped with the runner
    for pid in current:
        assert not os.path.exists(f"/proc/{pid}") or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1][:3]
    assert stdout == ""


def test_live_estimate_names_the_bound_when_senders_fall_short_of_a_rate(tmp_path):
    opts = cli.parse_args(["--mode", "live", "--profile", "reference", "--output", str(tmp_path)])
    head = runner.plan(opts, None)[1][0]
    # 96 steps of 6 runs: 15 s each, or 18.75 s (the senders' cap) where a rate is out of reach
    assert head.startswith("[perf] mode live, profile reference: 96 steps, estimated 2.6 h, at most 3.2 h where ")
    external = cli.parse_args(["--mode", "live", "--source", "external", "--rates", "1000", "--output", str(tmp_path)])
    assert "at most" not in runner.plan(external, None)[1][0]
