"""`python -m paclo.perf` end to end with the native dataset generator (paclo.perf.datasets)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import _perf_util
import pytest

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())


@pytest.mark.parametrize("case", _perf_util.CASES)
def test_native_generator_matches_the_dataset_definition(case, tmp_path):
    from paclo.perf import datasets

    native = tmp_path / "native.pcap"
    spec = tmp_path / "spec.pcap"
    datasets.generate(case, 1001, str(native))
    _perf_util.generate(case, 1001, str(spec))
    assert datasets.expected_file_size(case, 1001) == _perf_util.expected_file_size(case, 1001)
    assert datasets.expected_bytes(case, 1001) == _perf_util.expected_bytes(case, 1001)
    assert hashlib.sha256(native.read_bytes()).hexdigest() == hashlib.sha256(spec.read_bytes()).hexdigest()


def test_quick_profile_command_line_end_to_end(tmp_path):
    import jsonschema

    out = tmp_path / "perf"
    proc = subprocess.run(
        [sys.executable, "-m", "paclo.perf", "--profile", "quick", "--mode", "offline",
         "--packets", "5000", "--scenarios", "raw-seq", "--output", str(out)],
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stderr
    results = out / "results.json"
    assert proc.stdout.strip().endswith(f"[perf] wrote {results}")
    # piped: no progress display, only the dataset lines
    assert "\r" not in proc.stderr
    assert proc.stderr.count("[perf] preparing") == 3
    doc = json.loads(results.read_text())
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(doc)
    for result in doc["offline"]:
        assert result["runs"][0]["packets"] == 5000
        assert result["runs"][0]["bytes"] == _perf_util.expected_bytes(result["case"], 5000)
        assert Path(result["path"]).stat().st_size == _perf_util.expected_file_size(result["case"], 5000)
