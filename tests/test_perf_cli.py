"""Command-line parsing and validation of `python -m paclo.perf`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from paclo.perf import cli


def _error(argv, capsys):
    code = cli.main(argv)
    err = capsys.readouterr().err
    return code, err


def test_defaults_follow_the_quick_profile():
    opts = cli.parse_args([])
    assert (opts.mode, opts.profile, opts.output) == ("offline", "quick", "target/perf")
    assert (opts.warmups, opts.runs, opts.packets) == (1, 1, None)
    assert opts.rates == [10000] and opts.duration_ms == 2000
    assert opts.offline_scenarios()[:2] == ["raw-seq", "sync-loop"]
    # paclo's 11 and the C mmap walk, the yardstick of `x walk`
    assert len(opts.offline_scenarios()) == 12
    assert opts.offline_scenarios()[-1] == "peer-c-mmap-walk"


def test_reference_profile_defaults():
    opts = cli.parse_args(["--profile", "reference"])
    assert (opts.warmups, opts.runs) == (1, 5)
    assert opts.rates == [10000, 50000, 100000, 250000, 500000, 1000000]
    assert opts.duration_ms == 15000


def test_overrides_and_equals_form():
    opts = cli.parse_args(
        ["--profile=stress", "--warmups", "0", "--runs=3", "--packets", "5000",
         "--scenarios", "flow-table,raw-seq", "--output", "out", "--peers"]
    )
    assert (opts.profile, opts.warmups, opts.runs, opts.packets, opts.output) == ("stress", 0, 3, 5000, "out")
    # canonical order, not the order given; --peers adds the peers to the chosen scenarios
    assert opts.offline_scenarios() == [
        "raw-seq", "flow-table",
        "peer-c-mmap-walk", "peer-c-pcap-next-ex", "peer-dpkt-raw", "peer-dpkt-5tuple", "peer-scapy-raw",
        "peer-scapy-decode",
    ]
    assert opts.peers
    # peers named in --scenarios are the choice: --peers adds no others
    named = cli.parse_args(["--scenarios", "raw-seq,peer-dpkt-raw", "--peers"])
    assert named.offline_scenarios() == ["raw-seq", "peer-dpkt-raw"]


def test_peers_are_added_to_the_default_scenarios():
    opts = cli.parse_args(["--peers"])
    names = opts.offline_scenarios()
    assert names[-5:] == ["peer-c-pcap-next-ex", "peer-dpkt-raw", "peer-dpkt-5tuple", "peer-scapy-raw", "peer-scapy-decode"]


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["--mode", "fast"], 3, "mode must be offline, live, or all"),
        (["--profile", "huge"], 3, "unknown profile 'huge'"),
        (["--port", "0"], 4, "port must be between 1 and 65535"),
        (["--port", "70000"], 4, "port must be between 1 and 65535"),
        (["--source", "remote"], 3, "source must be loopback or external"),
        (["--mode", "live", "--scenarios", "raw-seq"], 3, "unknown live scenario 'raw-seq'"),
        (["--scenarios", "live-raw"], 3, "unknown offline scenario 'live-raw'"),
        (["--rates", "100,-5"], 4, "rates must contain positive integers"),
        (["--rates", "abc"], 4, "rates must contain positive integers"),
        (["--runs", "0"], 4, "runs must be positive"),
        (["--packets", "-1"], 4, "packets must be positive"),
        (["--duration-ms", "0"], 4, "duration-ms must be positive"),
        (["--frame-size", "0"], 4, "frame-size must be positive"),
        (["--queue-cap", "0"], 4, "queue-cap must be positive"),
        (["--warmups", "-1"], 4, "warmups cannot be negative"),
        (["--warmups", "two"], 4, "warmups must be an integer"),
        (["--consumer-delay-ns", "-3"], 4, "consumer-delay-ns cannot be negative"),
        (["--snaplen", "65537"], 4, "snaplen must be between 1 and 65536"),
        (["--queue-mode", "lossy"], 3, "queue-mode must be blocking or dropping"),
        (["--expected-packets", "0", "--source", "external"], 4, "expected-packets must be positive"),
        (["--expected-packets", "10"], 4, "expected-packets requires source=external"),
        (["--expected-packets", "10", "--source", "external"], 4, "expected-packets requires an external offered rate"),
        (
            ["--mode", "live", "--expected-packets", "10", "--source", "external", "--rates", "1000",
             "--scenarios", "live-sync-raw"],
            4,
            "external expected-packets requires one scenario, no warm-up, and one run",
        ),
        (["--bogus"], 1, "unknown or incomplete argument: --bogus"),
        (["--output"], 1, "unknown or incomplete argument: --output needs a value"),
    ],
)
def test_validation_messages(argv, code, message, capsys):
    got, err = _error(argv, capsys)
    assert got == code
    assert message in err


def test_external_expected_packets_accepts_one_scenario_no_warmup_one_run():
    opts = cli.parse_args(
        ["--mode", "live", "--source", "external", "--expected-packets", "15000000", "--rates", "250000",
         "--scenarios", "live-sync-raw", "--warmups", "0", "--runs", "1"]
    )
    assert opts.expected_packets == 15000000 and opts.rates == [250000]


def test_external_source_defaults_rates_to_zero():
    assert cli.parse_args(["--source", "external"]).rates == [0]


def test_help_lists_options_and_exits_zero():
    proc = subprocess.run([sys.executable, "-m", "paclo.perf", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for flag in ("--mode", "--profile", "--output", "--scenarios", "--warmups", "--runs", "--packets",
                 "--peers", "--resume", "--rates", "--duration-ms", "--device", "--port", "--source", "--filter",
                 "--expected-packets", "--frame-size", "--snaplen", "--queue-cap", "--queue-mode",
                 "--branch-cap", "--slow-cap", "--consumer-delay-ns"):
        assert flag in proc.stdout
    assert "flow-table" in proc.stdout and "live-sync-raw" in proc.stdout


def test_module_reports_usage_errors_on_stderr():
    proc = subprocess.run([sys.executable, "-m", "paclo.perf", "--mode", "x"], capture_output=True, text=True)
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert "mode must be offline, live, or all" in proc.stderr


def test_importing_the_main_module_runs_nothing():
    import importlib

    module = importlib.import_module("paclo.perf.__main__")
    assert module.main is cli.main


def test_paclo_perf_subcommand_forwards_to_the_runner():
    proc = subprocess.run([sys.executable, "-m", "paclo", "perf", "--mode", "x"], capture_output=True, text=True)
    assert proc.returncode == 3
    assert "mode must be offline, live, or all" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "paclo", "perf", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "--profile quick|reference|stress" in proc.stdout
