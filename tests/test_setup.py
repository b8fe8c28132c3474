"""scripts/setup.sh: what it decides to install, checked through `--check` with stand-in tools.

`--check` changes nothing; a stand-in `cargo` (in a private CARGO_HOME, which scripts/env.sh
puts first on PATH) and a stand-in `dpkg-query` make each decision observable. The install
steps themselves run in CI (.ci/run calls the script on a clean checkout) and on a fresh
Debian root (scripts/fresh-bookworm.sh, docs/architecture.md).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SETUP = ROOT / "scripts" / "setup.sh"


def _rust_version_required() -> str:
    m = re.search(r'^rust-version\s*=\s*"([0-9.]+)"', (ROOT / "Cargo.toml").read_text(), flags=re.M)
    assert m
    return m.group(1)


def _fake_cargo(home: Path, version: str | None, components: bool = True) -> None:
    """A `cargo` that reports `version` (None: fails like a missing command)."""
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True)
    if version is None:
        body = "exit 127\n"
    else:
        comp = "exit 0" if components else "exit 1"
        body = (
            'case "$1" in\n'
            f'  --version) echo "cargo {version} (0000000 2026-01-01)" ;;\n'
            f"  fmt | clippy) {comp} ;;\n"
            "  *) exit 2 ;;\n"
            "esac\n"
        )
    path = bin_dir / "cargo"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def _check(tmp_path: Path, cargo_version: str | None, *, components: bool = True,
           not_installed: tuple[str, ...] = ()) -> tuple[int, list[str]]:
    cargo_home = tmp_path / "cargo"
    _fake_cargo(cargo_home, cargo_version, components)
    env = dict(os.environ, CARGO_HOME=str(cargo_home), HOME=str(tmp_path))
    env.pop("RUSTUP_TOOLCHAIN", None)
    if not_installed:
        fake = tmp_path / "fakebin"
        fake.mkdir()
        dq = fake / "dpkg-query"
        # Every package reads as installed but the named ones.
        names = " ".join(not_installed)
        dq.write_text(
            "#!/bin/sh\n"
            'for p in "$@"; do last=$p; done\n'
            f'for n in {names}; do [ "$last" = "$n" ] && {{ echo "unknown ok not-installed"; exit 1; }}; done\n'
            'echo "install ok installed"\n'
        )
        dq.chmod(0o755)
        env["PATH"] = f"{fake}:{env['PATH']}"
    r = subprocess.run(["bash", str(SETUP), "--check"], capture_output=True, text=True, env=env, timeout=120)
    assert r.stderr == "", r.stderr
    return r.returncode, r.stdout.splitlines()


def _rust_lines(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("setup: missing: Rust")]


def test_no_cargo_means_rustup_installs_stable(tmp_path):
    code, lines = _check(tmp_path, None)
    need = _rust_version_required()
    assert code == 1
    assert _rust_lines(lines) == [f"setup: missing: Rust: cargo not found; rustup installs stable (rust-version is {need})"]


@pytest.mark.parametrize("old", ["1.63.0", "1.84.1", "1.9.0"])
def test_cargo_older_than_rust_version_is_upgraded(tmp_path, old):
    code, lines = _check(tmp_path, old)
    need = _rust_version_required()
    assert code == 1
    assert _rust_lines(lines) == [f"setup: missing: Rust: cargo {old} is older than rust-version {need}; rustup installs stable"]


@pytest.mark.parametrize("new", ["{need}", "{need}.0", "1.95.0", "1.100.0", "2.0.0", "1.96.0-nightly"])
def test_cargo_at_or_above_rust_version_is_kept(tmp_path, new):
    version = new.format(need=_rust_version_required())
    _code, lines = _check(tmp_path, version)
    assert [line for line in lines if "Rust" in line] == []


def test_missing_rustfmt_and_clippy_are_named(tmp_path):
    code, lines = _check(tmp_path, "1.95.0", components=False)
    assert code == 1
    assert "setup: missing: Rust components: rustfmt clippy" in lines


def test_missing_apt_packages_are_named(tmp_path):
    code, lines = _check(tmp_path, "1.95.0", not_installed=("tshark", "g++"))
    assert code == 1
    assert "setup: missing: apt packages: g++ tshark" in lines


def test_check_changes_nothing(tmp_path):
    before = sorted(p.name for p in ROOT.iterdir())
    stamp = ROOT / ".venv" / ".paclo-source"
    stamp_before = stamp.read_text() if stamp.exists() else None
    _check(tmp_path, None, not_installed=("tshark",))
    assert sorted(p.name for p in ROOT.iterdir()) == before
    assert (stamp.read_text() if stamp.exists() else None) == stamp_before


def test_unknown_argument_is_an_error():
    r = subprocess.run(["bash", str(SETUP), "--frobnicate"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stderr.strip() == "setup: error: unknown argument: --frobnicate (expected --check or nothing)"


def test_readme_commands_are_what_ci_runs():
    """.ci/run runs the README's two commands, character for character."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n\s*(.*?)\n\s*```", section, flags=re.S)
    assert len(commands) == 2
    assert commands[1] == "bash scripts/test.sh"
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert [line for line in ci if line in commands] == commands


def _apt_list() -> list[str]:
    names = []
    for line in (ROOT / "scripts" / "apt-packages.txt").read_text().splitlines():
        names += line.split("#", 1)[0].split()
    return names


def test_every_listed_apt_package_is_checked(tmp_path):
    """setup.sh checks exactly scripts/apt-packages.txt, in its order."""
    names = _apt_list()
    assert "libpcap-dev" in names
    assert "g++" in names
    assert len(names) == len(set(names))
    code, lines = _check(tmp_path, "1.95.0", not_installed=tuple(names))
    assert code == 1
    assert f"setup: missing: apt packages: {' '.join(names)}" in lines


def test_ci_installs_nothing_of_its_own():
    """The system packages are one list: .ci/run leaves them to setup.sh."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert "apt-get" not in ci
    assert "pip install" not in ci
