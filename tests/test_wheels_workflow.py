""".github/workflows/wheels.yml, as far as it runs without GitHub: its shell steps, run here
with the workflow's own environment, and its smoke script against the installed paclo.

The jobs themselves (the manylinux_2_28 container, the macOS runners, the artifacts) need
GitHub's runners; tests/test_wheel.py builds, repairs and installs this machine's wheel the
way the Linux job does (maturin build --release, libpcap bundled, installed without Rust).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "wheels.yml"


def _workflow() -> dict[str, Any]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(doc, dict)
    return doc


def _step(job: str, name: str) -> dict[str, Any]:
    steps = _workflow()["jobs"][job]["steps"]
    found = [s for s in steps if s.get("name") == name]
    assert len(found) == 1, [s.get("name") for s in steps]
    return found[0]


def _run_step(step: dict[str, Any], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", step["run"]], env={**os.environ, **env}, cwd=cwd, capture_output=True, text=True, timeout=60
    )


def _pyproject_features() -> list[str]:
    m = re.search(r"^\[tool\.maturin\][^\[]*?^features\s*=\s*\[([^\]]*)\]", (ROOT / "pyproject.toml").read_text(), flags=re.M | re.S)
    assert m
    return re.findall(r'"([^"]+)"', m.group(1))


@pytest.mark.parametrize("job", ["linux", "macos"])
@pytest.mark.parametrize("kind", ["per-version", "abi3"])
def test_the_maturin_arguments_step_gives_what_the_build_needs(tmp_path, job, kind):
    env = {str(k): str(v) for k, v in _workflow()["env"].items()}
    env["WHEEL_KIND"] = kind
    out = tmp_path / "github_output"
    proc = _run_step(_step(job, "maturin arguments"), {**env, "GITHUB_OUTPUT": str(out)}, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (line,) = out.read_text().splitlines()
    key, _, value = line.partition("=")
    args = value.split()
    assert key == "args" and args[:3] == ["--release", "--out", "dist"], line
    if kind == "per-version":
        # One interpreter per version the workflow names, each one paclo supports.
        versions = env["PYTHONS"].split()
        assert args[3:] == ["-i", *(f"python{v}" for v in versions)], line
        assert all(tuple(map(int, v.split("."))) >= (3, 11) for v in versions)
    else:
        # --features replaces pyproject's features: the module's own must be named again.
        features = args[args.index("--features") + 1].split(",")
        assert set(_pyproject_features()) <= set(features) and "pyo3/abi3-py311" in features, line
        assert args[-2:] == ["-i", "python3.11"], line


def test_requires_python_matches_the_oldest_wheel():
    m = re.search(r'^requires-python\s*=\s*">=([0-9.]+)"', (ROOT / "pyproject.toml").read_text(), flags=re.M)
    assert m
    oldest = min(_workflow()["env"]["PYTHONS"].split(), key=lambda v: tuple(map(int, v.split("."))))
    assert oldest == m.group(1)


def test_the_smoke_script_runs_against_paclo(tmp_path):
    """The Python the smoke job runs after installing a wheel: paclo's API as it is."""
    script = _step("smoke", "install and use")["run"]
    m = re.search(r"python - <<'EOF'\n(.*?)\n\s*EOF", script, flags=re.S)
    assert m, script
    code = textwrap.dedent(m.group(1))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("libpcap version "), proc.stdout
    assert (tmp_path / "smoke.pcap").stat().st_size == 24 + 16 + 60
