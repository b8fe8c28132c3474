"""results.json after every step, and `--resume`: a stopped or killed run continues where it
stopped, keeping the steps that finished, only with the same options and the same build."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from _perf_util import SpecDatasets, second_step_started

from paclo.perf import cli, config, runner
from paclo.perf.options import UsageError

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())
ARGS = ["--packets", "2000", "--scenarios", "raw-seq,sync-loop"]
ORDER = [(c, s) for c in config.CASES for s in ("raw-seq", "sync-loop")]


def validate(document: dict) -> None:
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)


class Log(runner.Console):
    def __init__(self) -> None:
        super().__init__(io.StringIO())


def run(out: Path, *extra: str, calls: list[str] | None = None, stop_after: int | None = None):
    """runner.run in this process; `calls` collects each worker's scenario; with `stop_after`,
    the step after that many workers is stopped as Ctrl-C would stop it."""
    opts = cli.parse_args(["--output", str(out), *ARGS, *extra])
    seen = calls if calls is not None else []

    def worker(scenario, path, count, warmups, runs, binary):
        if stop_after is not None and len(seen) == stop_after:
            raise KeyboardInterrupt
        seen.append(f"{Path(path).name} {scenario}")
        return runner.worker_command(scenario, path, count, warmups, runs, binary)

    console = Log()
    doc = runner.run(opts, datasets=SpecDatasets, worker_cmd=worker, console=console, out=io.StringIO())
    return doc, console.stream.getvalue()


def steps(doc: dict) -> list[tuple[str, str]]:
    return [(r["case"], r["scenario"]) for r in doc["offline"]]


def test_results_json_is_written_after_every_step(tmp_path):
    out = tmp_path / "out"
    written = []
    real = runner.write_results

    def spy(path, document):
        real(path, document)
        written.append(json.loads(Path(path).read_text()))

    runner.write_results = spy
    try:
        doc, _ = run(out)
    finally:
        runner.write_results = real
    # one checkpoint per step (incomplete, growing by one), then the final document
    assert [len(d["offline"]) for d in written] == [1, 2, 3, 4, 5, 6, 6]
    assert [d["complete"] for d in written] == [False] * 6 + [True]
    for d in written:
        validate(d)
    assert doc["complete"] is True and steps(doc) == ORDER
    assert all(r["finished_at"].endswith("Z") for r in doc["offline"])
    assert all(len(r["load_average"]) == 3 and min(r["load_average"]) >= 0 for r in doc["offline"])
    assert [s["steps"] for s in doc["sittings"]] == [6]


def test_an_interrupted_run_resumes_with_only_the_missing_steps(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(runner.Interrupted):
        run(out, stop_after=3)
    first = json.loads((out / "results.json").read_text())
    assert first["complete"] is False and steps(first) == ORDER[:3]

    calls: list[str] = []
    doc, log = run(out, "--resume", calls=calls)
    validate(doc)
    assert f"[perf] resuming {out / 'results.json'}: 3 of 6 steps kept, 3 to run" in log
    # only the three missing steps ran, in order; the kept ones are the very same results
    assert [c.split()[1] for c in calls] == [s for _, s in ORDER[3:]]
    assert doc["complete"] is True and steps(doc) == ORDER
    assert doc["offline"][:3] == first["offline"]
    assert [s["steps"] for s in doc["sittings"]] == [3, 3]
    assert all("--resume" in s["command_line"] for s in doc["sittings"][1:])
    assert json.loads((out / "results.json").read_text()) == doc

    # the report says a document is incomplete, and lists the sittings of a resumed one
    from paclo.perf.report import write_report

    page = write_report(first, tmp_path / "r1").html.read_text()
    assert "Incomplete run</b>: 3 steps finished" in page and "Sittings" not in page
    page = write_report(doc, tmp_path / "r2").html.read_text()
    assert "Incomplete run" not in page and page.count("</tr>", page.index("Sittings")) >= 2


def test_resume_refuses_what_it_cannot_continue(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(UsageError) as info:
        run(out, "--resume")
    assert info.value.code == 2 and "no results.json" in str(info.value)

    run(out)
    with pytest.raises(UsageError, match="is complete; nothing to continue") as info:
        run(out, "--resume")
    assert info.value.code == 4

    path = out / "results.json"
    doc = json.loads(path.read_text())
    doc["complete"] = False
    path.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match=r"other options: runs 1 -> 2") as info:
        run(out, "--runs", "2", "--resume")
    assert info.value.code == 4

    doc["offline"][0]["environment"]["git_sha"] = "0" * 40
    path.write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="measured with git_sha '0000") as info:
        run(out, "--resume")
    assert info.value.code == 4
    # refused runs leave the file as it was
    assert json.loads(path.read_text()) == doc


def test_resume_errors_exit_with_their_code_and_no_traceback(tmp_path):
    r = subprocess.run([sys.executable, "-m", "paclo.perf", "--output", str(tmp_path / "none"), *ARGS, "--resume"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr.startswith("paclo perf: error: resume: no results.json in ") and "Traceback" not in r.stderr


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_or_terminated_runner_keeps_its_finished_steps_and_resumes(tmp_path, how):
    out = tmp_path / "perf"
    argv = [sys.executable, "-m", "paclo.perf", "--profile", "quick", "--mode", "offline", "--packets", "20000",
            "--scenarios", "raw-seq,full-decode", "--runs", "40", "--output", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: set[int] = set()
    try:
        seen = second_step_started(proc)
        proc.send_signal(how)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in seen:  # a SIGKILLed runner cannot stop its worker
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == (130 if how == signal.SIGTERM else -signal.SIGKILL), stderr
    assert "Traceback" not in stderr
    killed = json.loads((out / "results.json").read_text())
    validate(killed)
    assert killed["complete"] is False
    kept = [(r["case"], r["scenario"]) for r in killed["offline"]]
    order = [(c, s) for c in config.CASES for s in ("raw-seq", "full-decode")]
    assert 1 <= len(kept) < 6 and kept == order[: len(kept)]

    r = subprocess.run([*argv, "--resume"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"{len(kept)} of 6 steps kept, {6 - len(kept)} to run" in r.stderr
    doc = json.loads((out / "results.json").read_text())
    validate(doc)
    assert doc["complete"] is True
    assert [(x["case"], x["scenario"]) for x in doc["offline"]] == order
    assert doc["offline"][: len(kept)] == killed["offline"]
    assert len(doc["sittings"]) == 2 and sum(s["steps"] for s in doc["sittings"]) == 6


def test_a_resumed_live_sweep_runs_only_the_missing_rate_x_scenario_steps(tmp_path, monkeypatch):
    from paclo.perf import live_runner

    ran: list[tuple[str, int]] = []

    def one(opts, cfg, env, console, worker_cmd):
        ran.append((cfg["scenario"], cfg["target_pps"]))
        return {"mode": "live", "scenario": cfg["scenario"], "config": cfg}

    monkeypatch.setattr(live_runner, "_run_one", one)
    opts = cli.parse_args(["--mode", "live", "--output", str(tmp_path), "--scenarios", "live-raw,live-managed-raw",
                           "--rates", "1000,2000", "--port", "39391"])
    every = [(s, r) for r in (1000, 2000) for s in ("live-raw", "live-managed-raw")]
    done = {("live", s, r) for s, r in every[:3]}
    stepped: list[tuple[str, int]] = []
    results, _ = live_runner.run_live(opts, {}, Log(), done=done,
                                      on_step=lambda r: stepped.append((r["scenario"], r["config"]["target_pps"])))
    assert ran == stepped == every[3:]
    assert [(r["scenario"], r["config"]["target_pps"]) for r in results] == every[3:]
