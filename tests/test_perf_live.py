"""Live mode end to end on the loopback device (needs paclo.capture and capture permission)."""

from __future__ import annotations

import io
import json
import os
import socket
from pathlib import Path

import pytest

from paclo.perf import cli, runner

pytestmark = pytest.mark.live
SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())


def _free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_loopback_live_run_counts_every_datagram(tmp_path):
    import jsonschema

    if os.geteuid() != 0:
        pytest.skip("live capture on lo needs root or CAP_NET_RAW")
    port = _free_udp_port()
    opts = cli.parse_args(
        ["--mode", "live", "--device", "lo", "--port", str(port), "--rates", "2000", "--duration-ms", "500",
         "--warmups", "0", "--runs", "1", "--snaplen", "2048",
         "--scenarios", "live-raw,live-sync-raw,live-dropping-full", "--output", str(tmp_path)]
    )
    doc = runner.run(opts, out=io.StringIO())
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["offline"] is None
    assert [r["scenario"] for r in doc["live"]] == ["live-raw", "live-sync-raw", "live-dropping-full"]
    for result in doc["live"]:
        run = result["runs"][0]
        assert run["sent"] > 0 and run["sent_source"] == "internal_observed"
        assert run["stage_counts"]["consumer_processed"] == run["packets"]
        assert run["stage_counts"]["queue_enqueued"] == run["packets"]
        # nothing else is sent to this port: every processed datagram was one of ours
        assert run["packets"] <= run["sent"]
        # lo frames: a 14-byte Ethernet header + the 64-byte IPv4 datagram (frame size)
        assert run["bytes"] == run["packets"] * (14 + 64)
        assert result["sustainability"]["total_runs"] == 1
    assert set(doc["max_sustainable_by_scenario"]) <= {"live-raw", "live-sync-raw", "live-dropping-full"}
