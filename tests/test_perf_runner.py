"""The offline runner: datasets, worker isolation, consistency checks, results.json."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest
from _perf_util import SpecDatasets, expected_bytes, expected_file_size, generate

from paclo.perf import cli, metrics, runner

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())


def validate(document: dict) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    validator.validate(document)


def run_quick(tmp_path, *extra, **kwargs):
    opts = cli.parse_args(["--output", str(tmp_path / "out"), "--packets", "2000", *extra])
    out = io.StringIO()
    doc = runner.run(opts, datasets=kwargs.pop("datasets", SpecDatasets), out=out, **kwargs)
    return opts, doc, out.getvalue()


# --- median / min / max ---------------------------------------------------------------

def test_median_odd_count_is_the_element():
    assert metrics.median([5, 1, 3]) == 3
    assert isinstance(metrics.median([5, 1, 3]), int)


def test_median_even_count_is_the_mean_of_the_middle_two_as_float():
    value = metrics.median([4, 1, 3, 2])
    assert value == 2.5 and isinstance(value, float)
    value = metrics.median([2, 4])
    assert value == 3.0 and isinstance(value, float)


def test_median_of_nothing_raises():
    with pytest.raises(ValueError, match="median of no values"):
        metrics.median([])


def test_summarize_covers_metrics_present_in_any_run():
    runs = [
        {"elapsed_ns": 10, "packets_per_sec": 4.0, "unique_flows": None},
        {"elapsed_ns": 30, "packets_per_sec": 2.0, "unique_flows": None},
        {"elapsed_ns": 20, "packets_per_sec": 1.0, "gc_count": 3},
        {"elapsed_ns": 40, "packets_per_sec": 8.0},
    ]
    s = metrics.summarize(runs)
    assert s["elapsed_ns"] == {"median": 25.0, "min": 10, "max": 40}
    assert s["packets_per_sec"] == {"median": 3.0, "min": 1.0, "max": 8.0}
    assert s["gc_count"] == {"median": 3, "min": 3, "max": 3}
    assert "unique_flows" not in s and "mb_per_sec" not in s


def test_derived_rates():
    d = metrics.derived(packets=1000, nbytes=64000, elapsed_ns=2_000_000)
    assert d == {"packets_per_sec": 500_000.0, "mb_per_sec": 32.0, "ns_per_packet": 2000.0}


# --- end to end through worker processes -------------------------------------------------

def test_raw_seq_and_dpkt_end_to_end_counts_are_exact(tmp_path):
    _opts, doc, out = run_quick(tmp_path, "--scenarios", "raw-seq,peer-dpkt-5tuple", "--runs", "2")
    validate(doc)
    assert doc["schema_version"] == 2 and doc["profile"] == "quick"
    assert doc["live"] is None and doc["max_sustainable_by_scenario"] is None
    assert [(r["case"], r["scenario"]) for r in doc["offline"]] == [
        (case, scenario) for case in ("udp-64", "tcp-512", "mixed") for scenario in ("raw-seq", "peer-dpkt-5tuple")
    ]
    for result in doc["offline"]:
        assert len(result["runs"]) == 2
        assert Path(result["path"]).name == f"quick-{result['case']}-n2000.pcap"
        for run in result["runs"]:
            assert run["packets"] == 2000
            assert run["bytes"] == expected_bytes(result["case"], 2000)
            assert run["decode_errors"] == 0
            assert run["ns_per_packet"] == pytest.approx(run["elapsed_ns"] / 2000)
            assert run["process_cpu_ns"] > 0 and run["peak_rss_bytes"] > 0
        assert result["summary"]["elapsed_ns"]["min"] <= result["summary"]["elapsed_ns"]["median"]
        assert result["summary"]["elapsed_ns"]["median"] <= result["summary"]["elapsed_ns"]["max"]
        if result["scenario"] == "raw-seq":
            # paclo's own scenarios read the native allocation counters
            assert result["runs"][0]["native_allocated_bytes"] is not None
        else:
            assert result["runs"][0]["unique_flows"] == 1 if result["case"] != "mixed" else 2
    env = doc["offline"][0]["environment"]
    assert env["cpu_count"] == os.cpu_count()
    assert env["python_version"] == ".".join(map(str, sys.version_info[:3]))
    assert env["command_line"][:3] == ["python", "-m", "paclo.perf"]
    assert "--packets" in env["command_line"]
    assert doc["config"]["packets"] == 2000 and doc["config"]["packets_override"] is True
    on_disk = json.loads((tmp_path / "out" / "results.json").read_text())
    assert on_disk == doc
    assert f"[perf] wrote {tmp_path / 'out' / 'results.json'}" in out
    assert "packets/s" in out and "peer-dpkt-5tuple" in out


def test_datasets_are_reused_when_the_size_matches_and_regenerated_when_not(tmp_path, capsys):
    run_quick(tmp_path, "--scenarios", "raw-seq")
    err = capsys.readouterr().err
    assert err.count("[perf] preparing") == 3
    path = tmp_path / "out" / "datasets" / "quick-udp-64-n2000.pcap"
    mtime = path.stat().st_mtime_ns
    run_quick(tmp_path, "--scenarios", "raw-seq")
    assert "[perf] preparing" not in capsys.readouterr().err
    assert path.stat().st_mtime_ns == mtime
    # wrong size: regenerated, and the run passes
    with open(path, "ab") as f:
        f.write(b"junk")
    _, doc, _ = run_quick(tmp_path, "--scenarios", "raw-seq")
    assert f"[perf] preparing {path}" in capsys.readouterr().err
    assert path.stat().st_size == expected_file_size("udp-64", 2000)
    assert doc["offline"][0]["runs"][0]["packets"] == 2000


def test_same_size_but_corrupted_dataset_fails_the_consistency_checks(tmp_path):
    out = tmp_path / "out" / "datasets"
    out.mkdir(parents=True)
    path = out / "quick-udp-64-n2000.pcap"
    generate("udp-64", 2000, str(path))
    data = bytearray(path.read_bytes())
    # record 1000's caplen/wirelen say 32 bytes instead of 64: same file size, different content
    offset = 24 + 1000 * (16 + 64)
    data[offset + 8:offset + 16] = (32).to_bytes(4, "little") * 2
    path.write_bytes(bytes(data))
    with pytest.raises(runner.RunFailed) as info:
        run_quick(tmp_path, "--scenarios", "raw-seq")
    message = str(info.value)
    assert "offline benchmark result failed consistency checks" in message
    assert "udp-64 raw-seq" in message
    assert "packets" in message or "bytes" in message


def test_consistency_failures_name_each_field():
    run = {"packets": 10, "bytes": 640, "decode_errors": 0}
    assert runner.consistency_failures(run, 10, 640) == []
    bad = runner.consistency_failures({"packets": 9, "bytes": 600, "decode_errors": 2}, 10, 640)
    assert bad == ["packets 9 != 10", "bytes 600 != 640", "decode_errors 2 != 0"]


def test_failing_worker_fails_the_run_with_its_stderr(tmp_path):
    def failing(*args):
        return [sys.executable, "-c", "import sys; sys.stderr.write('worker exploded\\n'); sys.exit(7)"]

    with pytest.raises(runner.RunFailed) as info:
        run_quick(tmp_path, "--scenarios", "raw-seq", worker_cmd=failing)
    message = str(info.value)
    assert "performance worker failed: udp-64 raw-seq (exit 7)" in message
    assert "worker exploded" in message
    assert not (tmp_path / "out" / "results.json").exists()


def test_worker_with_invalid_json_fails_the_run(tmp_path):
    def garbage(*args):
        return [sys.executable, "-c", "print('{not json')"]

    with pytest.raises(runner.RunFailed, match="performance worker returned invalid JSON: udp-64 raw-seq"):
        run_quick(tmp_path, "--scenarios", "raw-seq", worker_cmd=garbage)


def test_worker_failure_inside_a_scenario_reports_the_exception(tmp_path):
    # a path that does not exist: the real worker raises and the runner reports why
    def missing_file(scenario, path, count, warmups, runs, binary):
        return runner.worker_command(scenario, path + ".missing", count, warmups, runs, binary)

    with pytest.raises(runner.RunFailed) as info:
        run_quick(tmp_path, "--scenarios", "raw-seq", worker_cmd=missing_file)
    assert "performance worker failed" in str(info.value)
    assert ".missing" in str(info.value)


def test_cli_exit_code_and_message_on_a_failed_run(tmp_path, capsys, monkeypatch):
    def boom(opts):
        raise runner.RunFailed("offline benchmark result failed consistency checks: x")

    monkeypatch.setattr(runner, "run", boom)
    code = cli.main(["--output", str(tmp_path), "--packets", "10"])
    assert code == cli.EXIT_FAILED
    assert "offline benchmark result failed consistency checks" in capsys.readouterr().err


def test_peers_side_by_side(tmp_path):
    import shutil

    if shutil.which("cc") is None:
        pytest.skip("no C compiler on this machine")
    _, doc, out = run_quick(
        tmp_path, "--peers", "--scenarios",
        "raw-seq,peer-c-pcap-next-ex,peer-dpkt-raw,peer-scapy-raw,peer-scapy-decode",
    )
    validate(doc)
    by = {(r["case"], r["scenario"]): r for r in doc["offline"]}
    c = by[("mixed", "peer-c-pcap-next-ex")]
    assert c["runs"][0]["bytes"] == expected_bytes("mixed", 2000)
    assert c["runs"][0]["gc_count"] is None  # timed inside the C process
    assert (tmp_path / "out" / "bin" / "pcap_next_ex_loop").exists()
    scapy = by[("tcp-512", "peer-scapy-decode")]
    assert scapy["runs"][0]["packets"] == 2000 and scapy["runs"][0]["unique_flows"] == 1
    assert "only the first" not in scapy["note"]  # 2000 packets: scapy reads them all
    assert "peer-c-pcap-next-ex" in out
    # the C loop is the yardstick: its own row reads 1.00 x
    header = out.splitlines()[0]
    assert header.rstrip().endswith("x C loop")
    c_row = next(line for line in out.splitlines() if line.startswith("mixed") and "peer-c-pcap-next-ex" in line)
    assert c_row.rstrip().endswith("1.00")


def test_scapy_reads_a_prefix_of_large_datasets_and_says_so(tmp_path, monkeypatch):
    from paclo.perf import config

    monkeypatch.setattr(config, "SCAPY_MAX_PACKETS", 500)
    # the worker is a separate process: tell it the same limit through its count argument
    _, doc, out = run_quick(tmp_path, "--peers", "--scenarios", "peer-scapy-raw")
    for result in doc["offline"]:
        assert result["packets"] == 500
        assert result["runs"][0]["packets"] == 500
        assert result["runs"][0]["bytes"] == expected_bytes(result["case"], 500)
        assert "reads only the first 500 packets" in result["note"]
    assert "* reads only the first 500 packets" in out


def test_python_allocation_pass_counts_bytes_per_packet():
    import itertools

    def build(probe):
        def run():
            n = 0
            for item in probe.iter(bytes(1000) for _ in itertools.repeat(None, 200)):
                n += len(item)
            return {"packets": 200, "bytes": n}

        return run

    total = metrics.python_allocation_pass(build)
    # a 1000-byte bytes object is 1033 bytes in CPython; each is freed before the next one
    assert 1000 * 200 <= total <= 1100 * 200


def test_python_allocation_pass_counts_reducer_steps():
    import itertools

    def build(probe):
        def step(acc, item):
            acc.append(bytes(500))
            return acc

        def run():
            acc = []
            fn = probe.fn(step)
            for item in itertools.repeat(None, 100):
                acc = fn(acc, item)
            return {"packets": len(acc), "bytes": 0}

        return run

    total = metrics.python_allocation_pass(build)
    assert 500 * 100 <= total <= 700 * 100


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


def test_progress_shows_on_a_tty_and_stays_quiet_when_piped(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the line is cut to the terminal's width
    tty = _Stream(True)
    run_quick(tmp_path / "a", "--scenarios", "raw-seq", console=runner.Console(tty))
    shown = tty.getvalue()
    # the shared progress line: steps done of all, then the current step
    assert "\r[perf]  [--------------------]   0.0%  0/3 steps" in shown
    assert "offline udp-64 raw-seq" in shown
    assert "2/3 steps" in shown and "offline mixed raw-seq: run 1/1" in shown
    assert "[perf]  [####################] 100.0%  3/3 steps" in shown
    assert "[perf] preparing" in shown
    piped = _Stream(False)
    run_quick(tmp_path / "b", "--scenarios", "raw-seq", console=runner.Console(piped))
    assert "\r" not in piped.getvalue()
    assert "[perf] [" not in piped.getvalue()
    assert piped.getvalue().count("[perf] preparing") == 3


def test_table_lists_median_rates_and_allocation(tmp_path):
    _, doc, out = run_quick(tmp_path, "--scenarios", "raw-seq", "--runs", "3")
    lines = out.splitlines()
    assert lines[0].split() == ["case", "scenario", "packets/s", "ns/packet", "native", "B/pkt",
                                "native", "allocs/pkt", "Python", "B/pkt"]
    row = next(line for line in lines if line.startswith("tcp-512"))
    result = next(r for r in doc["offline"] if r["case"] == "tcp-512")
    assert f"{result['summary']['packets_per_sec']['median']:,.0f}" in row
    assert f"{result['summary']['ns_per_packet']['median']:,.1f}" in row


def test_a_hung_worker_is_killed_and_fails_the_run():
    import time

    start = time.monotonic()
    with pytest.raises(runner.RunFailed, match="performance worker timed out after 1 s: udp-64 raw-seq"):
        runner.run_worker([sys.executable, "-c", "import time; time.sleep(60)"], "udp-64 raw-seq",
                          lambda text: None, timeout_s=1)
    assert time.monotonic() - start < 30


def test_python_allocation_pass_sees_items_a_reducer_caller_drops():
    import itertools

    def build(probe):
        def step(acc, item):
            return acc + len(item)

        def run():
            # like paclo.reduce: the caller makes an item, calls the step, drops the item
            fn = probe.fn(step)
            acc = 0
            for _ in itertools.repeat(None, 300):
                item = bytes(700)
                acc = fn(acc, item)
                del item
            return {"packets": 300, "bytes": acc}

        return run

    total = metrics.python_allocation_pass(build)
    # a 700-byte bytes object is 733 bytes
    assert 700 * 300 <= total <= 800 * 300
