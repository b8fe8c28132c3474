"""Live mode pieces that need no capture device: config, stage counts, rates, sustainability,
and the exact-count UDP generator (over a local socket)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

import pytest

from paclo.perf import cli, generator, live


def _run(packets, sent=1000, *, received=2000, dropped=0, if_dropped=0, enqueued=None, q_dropped=0,
         errors=(), source="internal_observed"):
    enqueued = packets if enqueued is None else enqueued
    run = {
        "packets": packets,
        "capture_stats": {"received": received, "dropped": dropped, "interface_dropped": if_dropped},
        "queue_stats": {"mode": "blocking", "enqueued": enqueued, "dropped": q_dropped},
        "capture_errors": list(errors),
    }
    return live.derive(run, sent=sent, sent_source=source, duration_ms=2000, target_pps=500,
                       source="loopback", engine="queue")


def test_senders_one_per_100k_between_1_and_8():
    assert [live.senders_for(r, "loopback") for r in (10_000, 100_000, 100_001, 250_000, 1_000_000)] == [1, 1, 2, 3, 8]
    assert live.senders_for(1_000_000, "external") == 1


def test_scenario_config_follows_the_matrix():
    opts = cli.parse_args(["--mode", "live", "--port", "40000", "--queue-cap", "64"])
    raw = live.scenario_config("live-raw", opts, 10_000)
    assert (raw["engine"], raw["buffer_size"], raw["immediate"], raw["queue_mode"]) == ("queue", None, None, "blocking")
    assert raw["filter"] == "udp dst port 40000" and raw["queue_cap"] == 64
    sync = live.scenario_config("live-sync-full", opts, 10_000)
    assert (sync["engine"], sync["decode"], sync["buffer_size"], sync["immediate"], sync["queue_mode"]) == (
        "direct", "full", 16 * 1024 * 1024, True, "direct")
    drop = live.scenario_config("live-dropping-raw", opts, 250_000)
    assert drop["queue_mode"] == "dropping" and drop["senders"] == 3
    forced = live.scenario_config("live-dropping-raw", cli.parse_args(["--queue-mode", "blocking"]), 1)
    assert forced["queue_mode"] == "blocking"
    assert len(live.SCENARIOS) == 12


def test_stage_counts_and_rates():
    run = _run(990, sent=1000, received=2000, dropped=10, enqueued=995, q_dropped=5)
    sc = run["stage_counts"]
    assert sc == {"sent": 1000, "capture_received": 2000, "capture_delivered": 1000, "kernel_dropped": 10,
                  "interface_dropped": 0, "queue_enqueued": 995, "queue_dropped": 5,
                  "consumer_processed": 990, "consumer_gap": 5, "send_loss": 10}
    assert run["realized_send_pps"] == 500.0
    assert run["sustained_processed_pps"] == 495.0
    assert run["processed_vs_sent_rate"] == 0.99
    assert run["send_loss_rate"] == 0.01
    assert run["kernel_drop_rate"] == pytest.approx(10 / 2010)
    assert run["queue_drop_rate"] == pytest.approx(5 / 1000)
    assert run["consumer_gap_rate"] == pytest.approx(5 / 995)


def test_sustainability_rule_threshold_is_one_per_mille():
    assert live.run_passes(_run(1000, sent=1000))
    assert live.run_passes(_run(999, sent=1000, enqueued=999))        # 0.1% loss passes
    assert not live.run_passes(_run(998, sent=1000, enqueued=998))    # 0.2% fails
    assert not live.run_passes(_run(1000, sent=1000, errors=["CaptureError: x"]))
    assert not live.run_passes(_run(1000, sent=0, source="unavailable"))
    assert not live.run_passes(_run(1000, sent=1000, enqueued=1000, q_dropped=5))
    block = live.sustainability([_run(1000, sent=1000), _run(990, sent=1000, enqueued=990)])
    assert block == {"drop_threshold": 0.001, "end_to_end": True, "passing_runs": 1, "total_runs": 2,
                     "all_runs_pass": False, "max_passing_processed_pps": 500.0}


def test_max_sustainable_picks_the_highest_passing_median():
    def result(scenario, target, pps, ok):
        return {"scenario": scenario, "config": {"target_pps": target, "source": "loopback"},
                "summary": {"sustained_processed_pps": {"median": pps}, "realized_send_pps": {"median": pps}},
                "sustainability": {"all_runs_pass": ok}}

    best = live.max_sustainable_by_scenario([
        result("live-raw", 10_000, 10_000.0, True),
        result("live-raw", 50_000, 49_990.0, True),
        result("live-raw", 100_000, 80_000.0, False),
        result("live-full", 10_000, 9_000.0, False),
    ])
    assert best == {"live-raw": {"target_pps": 50_000, "processed_pps": 49_990.0,
                                 "realized_send_pps": 49_990.0, "source": "loopback"}}


def test_validation_requires_enqueued_equal_processed():
    good = _run(1000)
    assert live.validate_runs([good]) == []
    bad = _run(990, enqueued=1000)
    assert live.validate_runs([bad]) == ["run 1: queue enqueued 1000 != consumer processed 990"]


def test_generator_split_is_exact():
    assert generator.split(10, 3) == [4, 3, 3]
    assert sum(generator.split(15_000_000, 4)) == 15_000_000


def _receiver(count):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)
    got = []

    def recv():
        try:
            while len(got) < count:
                got.append(sock.recv(2048))
        except OSError:
            pass

    t = threading.Thread(target=recv)
    t.start()
    return sock, t, got


def test_generator_sends_the_exact_count():
    sock, t, got = _receiver(50)
    port = sock.getsockname()[1]
    report = generator.send("127.0.0.1", port, rate=5000, frame_size=100, senders=3, packets=50)
    t.join()
    sock.close()
    assert report["sent"] == 50 and report["requested_packets"] == 50
    assert len(got) == 50 and all(len(d) == 72 for d in got)  # frame size - 28
    assert report["senders"] == 3 and report["realized_pps"] > 0


def test_generator_command_line_report_and_errors():
    sock, t, got = _receiver(7)
    port = sock.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, "-m", "paclo.perf.generator", "--host", "127.0.0.1", "--port", str(port),
         "--packets", "7", "--rate", "1000", "--frame-size", "10"],
        capture_output=True, text=True,
    )
    t.join()
    sock.close()
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["sent"] == 7 and len(got) == 7 and all(len(d) == 1 for d in got)
    bad = subprocess.run([sys.executable, "-m", "paclo.perf.generator", "--packets", "5", "--rate", "10"],
                         capture_output=True, text=True)
    assert bad.returncode == 4 and "host is required" in bad.stderr
    bad = subprocess.run([sys.executable, "-m", "paclo.perf.generator", "--host", "x", "--packets", "2",
                          "--rate", "10", "--senders", "3"], capture_output=True, text=True)
    assert bad.returncode == 4 and "senders cannot exceed packets" in bad.stderr
