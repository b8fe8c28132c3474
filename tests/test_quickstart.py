"""docs/quickstart.md runs as written: every python block in one namespace and every sh block in
a shell, in order, in an empty folder; the install block is checked against pyproject."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QUICKSTART = ROOT / "docs" / "quickstart.md"


def blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(python|sh)\n(.*?)```", QUICKSTART.read_text(), flags=re.S)


def test_quickstart_is_linked_first_from_the_readme():
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links and links[0] == "docs/quickstart.md"


def test_the_install_block_names_an_extra_that_exists():
    install = [code for lang, code in blocks() if lang == "sh" and code.lstrip().startswith("pip install")]
    assert install == ['pip install "paclo[notebooks]"\n']
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0] for r in extras["notebooks"]}
    # what the page's code imports or runs
    assert {"pandas", "polars", "duckdb", "matplotlib"} <= names


def test_every_block_runs(tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    pytest.importorskip("duckdb")
    pytest.importorskip("pandas")
    # `python` in the sh blocks is this interpreter (the one paclo is installed in).
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # A wrapper, not a symlink: a symlinked venv interpreter outside its venv loses the venv.
    wrapper = bindir / "python"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", MPLBACKEND="Agg")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    namespace: dict[str, object] = {}
    printed = []
    for lang, code in blocks():
        if lang == "python":
            exec(compile(code, str(QUICKSTART), "exec"), namespace)
            printed.append(capsys.readouterr().out)
        elif not code.lstrip().startswith("pip install"):
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], env=env, cwd=work, capture_output=True,
                                  text=True, timeout=1200)
            assert proc.returncode == 0, proc.stderr[-3000:]
            printed.append(proc.stdout)
    out = "\n".join(printed)
    assert "20000 packets; eof" in out
    assert ".example" in out or "example." in out  # DNS question names
    assert "10.1.0.99" in out  # the demo's bulk sender is among the top talkers
    assert "[('tcp'," in out or "[('udp'," in out
    assert (work / "top-talkers.png").stat().st_size > 1000 and (work / "traffic.png").stat().st_size > 1000
    report = work / "perf-quick" / "report" / "report.html"
    assert report.exists() and "throughput-udp-64.png" in report.read_text()
    assert "3 figures: ['udp-64', 'tcp-512', 'mixed']" in out
