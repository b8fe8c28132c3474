"""The public API is typed by what it yields: ``mypy --strict`` checks a user's script that
iterates every kind of reader, capture and reduction (and rejects one that misuses them)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy")

GOOD = """
from __future__ import annotations

from typing import Any, assert_type

import paclo


def packets(path: str) -> int:
    n = 0
    with paclo.read(path) as r:
        for pkt in r:
            assert_type(pkt, paclo.Packet)
            n += pkt.caplen + len(pkt.data)
    first = next(iter(paclo.read(path)))
    assert_type(first, paclo.Packet)
    return n


def maps(path: str) -> list[dict[str, Any]]:
    out = []
    for m in paclo.read(path, decode="full"):
        assert_type(m, dict[str, Any])
        out.append(m)
    for f in paclo.read(path, decode="flow", limit=3):
        assert_type(f, dict[str, Any])
        out.append(f)
    return out


def captured(path: str) -> list[int]:
    sizes = [p.wirelen for p in paclo.capture(path=path)]
    for m in paclo.capture(path=path, decode="flow"):
        assert_type(m, dict[str, Any])
    cap = paclo.capture(path=path)
    assert_type(cap, paclo.Capture[paclo.Packet])
    fo = paclo.fan_out(cap, {"a": {"mode": "blocking"}, "b": {"mode": "dropping"}})
    for p in fo["a"]:
        assert_type(p, paclo.Packet)
    return sizes


def reduced(path: str) -> tuple[int, int, dict[str, Any]]:
    total = paclo.reduce(lambda acc, p: acc + p.caplen, 0, path=path)
    assert_type(total, int)
    stopped = paclo.reduce(lambda acc, p: paclo.Reduced(acc) if acc > 5 else acc + 1, 0, path=path)
    assert_type(stopped, int)
    count, stats = paclo.reduce(lambda acc, m: acc + int(m["caplen"]), 0, path=path, decode="full", report=True)
    assert_type(count, int)
    assert_type(stats, dict[str, Any])
    return total, count, stats
"""

BAD = """
import paclo

for pkt in paclo.read("x.pcap"):
    pkt["caplen"]
for m in paclo.read("x.pcap", decode="full"):
    m.caplen
paclo.reduce(lambda acc, p: acc + p.caplen, "text", path="x.pcap")
"""


def _mypy(tmp_path: Path, name: str, code: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / name
    script.write_text(textwrap.dedent(code))
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", str(tmp_path / ".mypy"), str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_user_script_iterating_each_kind_passes_mypy_strict(tmp_path):
    r = _mypy(tmp_path, "good.py", GOOD)
    assert r.returncode == 0, r.stdout + r.stderr


def test_misuse_is_caught(tmp_path):
    r = _mypy(tmp_path, "bad.py", BAD)
    out = r.stdout
    assert r.returncode == 1, out + r.stderr
    assert 'Value of type "Packet" is not indexable' in out, out
    assert '"dict[str, Any]" has no attribute "caplen"' in out, out
    assert "bad.py:8: error" in out, out  # int + str: the accumulator's type is followed
