"""Live mode end to end on the loopback device (needs paclo.capture and capture permission):
a small run, and the whole quick profile with every scenario and the C peers."""

from __future__ import annotations

import io
import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from paclo.perf import cli, live, runner

pytestmark = pytest.mark.live
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _needs_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("live capture on lo needs root or CAP_NET_RAW")


def _check_stage_counts(result: dict[str, Any], run: dict[str, Any]) -> None:
    """The stage counts of one loopback run add up, whatever was lost where."""
    sc = run["stage_counts"]
    label = f"{result['scenario']}: {sc}"
    report = run["generator"]
    assert sc["sent"] == run["sent"] == report["sent"] == sum(s["sent"] for s in report["per_sender"]), label
    assert sc["capture_delivered"] == sc["queue_enqueued"] + sc["queue_dropped"], label
    assert sc["queue_enqueued"] == sc["consumer_processed"] == run["packets"], label
    assert sc["consumer_gap"] == 0, label
    assert sc["consumer_processed"] <= sc["sent"], label
    assert sc["send_loss"] == sc["sent"] - sc["consumer_processed"], label
    assert sc["kernel_dropped"] <= sc["capture_received"], label
    if sc["kernel_dropped"] == 0:
        # Linux loopback: the ring sees each datagram twice (out and in), libpcap keeps one.
        # Nothing else is sent to this port, and a ring that dropped nothing delivered all.
        assert sc["capture_received"] == 2 * sc["sent"], label
        assert sc["capture_delivered"] == sc["sent"], label
    # lo frames: a 14-byte Ethernet header + the 64-byte IPv4 datagram (frame size)
    assert run["bytes"] == run["packets"] * (14 + 64), label
    assert run["ring"] is not None and run["ring"]["version"] in ("TPACKET_V2", "TPACKET_V3"), label
    assert run["ring"]["version"] == ("TPACKET_V2" if result["config"]["immediate"] else "TPACKET_V3"), label
    assert run["realized_send_source"] == "generator" and run["realized_send_pps"] == report["realized_pps"]
    assert run["capture_cpu_ns"] > 0 and run["cpu_ns_per_packet"] == run["capture_cpu_ns"] / run["packets"]


def test_loopback_live_run_counts_every_datagram(tmp_path):
    import jsonschema

    _needs_root()
    port = _free_udp_port()
    opts = cli.parse_args(
        ["--mode", "live", "--device", "lo", "--port", str(port), "--rates", "2000", "--duration-ms", "500",
         "--warmups", "0", "--runs", "1", "--snaplen", "2048",
         "--scenarios", "live-raw,live-sync-raw,live-dropping-full", "--output", str(tmp_path)]
    )
    assert opts is not None
    out = io.StringIO()
    doc = runner.run(opts, out=out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["offline"] is None
    assert doc["config"]["live"]["sink"] == {"mode": "hold", "port": port, "address": "127.0.0.1",
                                             "rcvbuf_bytes": doc["config"]["live"]["sink"]["rcvbuf_bytes"]}
    assert [r["scenario"] for r in doc["live"]] == ["live-raw", "live-sync-raw", "live-dropping-full"]
    for result in doc["live"]:
        run = result["runs"][0]
        assert run["sent"] == 1000 and run["sent_source"] == "internal_observed"  # 2,000 pps for 0.5 s
        _check_stage_counts(result, run)
        assert result["sustainability"]["total_runs"] == 1
    assert set(doc["max_sustainable_by_scenario"]) <= {"live-raw", "live-sync-raw", "live-dropping-full"}
    for entry in doc["max_sustainable_by_scenario"].values():
        assert entry["certified_pps"] <= 2000
    text = out.getvalue()
    assert "realized pps" in text and "zero-loss pps" in text


def test_port_taken_fails_with_a_clear_message(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        opts = cli.parse_args(["--mode", "live", "--port", str(port), "--scenarios", "live-sync-raw",
                               "--output", str(tmp_path)])
        assert opts is not None
        with pytest.raises(runner.RunFailed, match=f"UDP port {port} is already bound by another program"):
            runner.run(opts, out=io.StringIO())


def test_the_quick_live_profile_runs_every_scenario_with_counts_that_add_up(tmp_path):
    import jsonschema

    _needs_root()
    port = _free_udp_port()
    opts = cli.parse_args(["--mode", "live", "--profile", "quick", "--port", str(port), "--output", str(tmp_path)])
    assert opts is not None
    doc = runner.run(opts, out=io.StringIO())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert [r["scenario"] for r in doc["live"]] == list(live.SCENARIOS)
    for result in doc["live"]:
        assert result["config"]["target_pps"] == 10_000 and len(result["runs"]) == 1
        run = result["runs"][0]
        assert run["sent"] == 20_000, result["scenario"]  # 10,000 pps for 2 s, exactly
        _check_stage_counts(result, run)
        sus = result["sustainability"]
        assert sus["verdict"] in ("pass", "limited", "fail")
        if sus["verdict"] != "fail":
            assert sus["certified_pps"] <= 10_000
    assert {"peer-c-libpcap-live", "peer-c-libpcap-live-immediate"} <= {r["scenario"] for r in doc["live"]}
