"""Every offline scenario through the runner (worker processes), with exact counts."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _perf_util import SpecDatasets, expected_bytes, generate

from paclo.perf import cli, config, runner

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())


def _validate(document):
    import jsonschema

    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)


@pytest.mark.parametrize("scenario", config.OFFLINE_SCENARIOS)
def test_scenario_counts_are_exact(scenario, tmp_path):
    opts = cli.parse_args(["--output", str(tmp_path), "--packets", "3000", "--scenarios", scenario])
    doc = runner.run(opts, datasets=SpecDatasets, out=io.StringIO())
    _validate(doc)
    assert [r["case"] for r in doc["offline"]] == list(config.CASES)
    for result in doc["offline"]:
        run = result["runs"][0]
        assert run["packets"] == 3000
        assert run["bytes"] == expected_bytes(result["case"], 3000)
        assert run["decode_errors"] == 0
        assert run["native_allocated_bytes"] is not None
        if scenario in config.FLOW_SCENARIOS:
            # one flow per direction-less 5-tuple: UDP and TCP in the mixed case
            assert run["unique_flows"] == (2 if result["case"] == "mixed" else 1)
        else:
            assert "unique_flows" not in run
        # The scenarios with a threads= option record the threads their call asked for.
        if scenario in ("flow-project", "flow-table"):
            assert run["threads"] == 1
        else:
            assert "threads" not in run


def test_unknown_scenario_fails_in_the_worker():
    proc = subprocess.run(
        [sys.executable, "-m", "paclo.perf.worker", "--scenario", "nope", "--path", "x", "--count", "1"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 1
    assert "unknown scenario 'nope'" in proc.stderr
    assert proc.stdout == ""


def test_worker_prints_one_json_object(tmp_path):
    path = tmp_path / "d.pcap"
    generate("tcp-512", 300, str(path))
    proc = subprocess.run(
        [sys.executable, "-m", "paclo.perf.worker", "--scenario", "raw-seq", "--path", str(path),
         "--count", "300", "--warmups", "2", "--runs", "3"],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["scenario"] == "raw-seq" and doc["count"] == 300
    assert [r["packets"] for r in doc["runs"]] == [300, 300, 300]
    assert [r["bytes"] for r in doc["runs"]] == [300 * 512] * 3
    assert "[worker] warmup 2/2" in proc.stderr and "[worker] run 3/3" in proc.stderr
    # each run is measured in the same (worker) process, after the warm-ups
    assert len({r["pid"] for r in doc["runs"]}) == 1
    assert all(r["python_allocated_bytes"] is not None for r in doc["runs"])


def test_table_scenarios_count_packets_they_could_not_decode(tmp_path):
    """flow-project and flow-table report as decode errors the packets they could not place
    at an IP protocol, so the consistency check can catch a broken decoder."""
    import paclo
    from paclo.perf import scenarios

    path = tmp_path / "one-bad.pcap"
    generate("udp-64", 3, str(path))
    packets = [bytes(p) for p in paclo.read(path)]
    arp = bytes(12) + b"\x08\x06" + bytes(28)  # no IP layer
    paclo.write_pcap(path, [*packets, arp])

    projected = scenarios.flow_project(str(path), 4)()
    assert (projected["packets"], projected["decode_errors"]) == (4, 1)
    table = scenarios.flow_table(str(path), 4)()
    assert (table["packets"], table["decode_errors"], table["unique_flows"]) == (3, 1, 1)
