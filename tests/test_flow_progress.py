"""progress= on flows, project and flow_topn: the native loops report the bytes read of the
files' total size to paclo's one progress display, once per chunk of records."""

from __future__ import annotations

import os
import sys

import pytest
from _pty_util import run_with_tty_stderr

import paclo
from paclo import _paclo
from paclo._options import live_source
from paclo.perf import datasets

CHUNK = 1 << 16


class Recorder:
    """A display that records what it is told."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, float | None]] = []
        self.closed = 0

    def update(self, done: float, total: float | None = None) -> None:
        self.updates.append((done, total))

    def close(self) -> None:
        self.closed += 1


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("flow-progress")
    big = d / "big.pcap"
    datasets.generate("udp-64", 3 * CHUNK + 11, big)
    small = d / "small.pcap"
    datasets.generate("udp-64", 1000, small)
    return big, small


def _check(rec: Recorder, total: int) -> None:
    assert rec.updates, "no report"
    assert all(t == total for _, t in rec.updates), rec.updates
    done = [d for d, _ in rec.updates]
    assert done == sorted(done) and done[-1] == total, done
    assert rec.closed == 0  # the caller owns the display


def test_one_file_reports_each_chunk_then_the_whole_file(files):
    big, _ = files
    size = big.stat().st_size
    rec = Recorder()
    _paclo.flow_table([str(big)], progress=rec, threads=1)
    _check(rec, size)
    # One thread: three full chunks, each reported when the loop asks its check, then the end.
    assert len(rec.updates) == 4 and 0 < rec.updates[0][0] < rec.updates[1][0] < rec.updates[2][0] < size


def test_several_files_report_their_total_size(files):
    big, small = files
    total = big.stat().st_size + small.stat().st_size
    paths = [str(big), str(small), str(big)]
    total += big.stat().st_size
    for call in (
        lambda r: _paclo.flow_table(paths, progress=r),  # in parallel
        lambda r: _paclo.flow_table(paths, idle_timeout=5.0, progress=r),  # in order
        lambda r: _paclo.flow_project(paths, progress=r),  # in parallel
        lambda r: _paclo.flow_project(paths, flow_id=True, progress=r),  # in order
        lambda r: _paclo.flow_topn(paths, 3, by_bytes=False, bidirectional=False, filter=None, progress=r),
    ):
        rec = Recorder()
        call(rec)
        _check(rec, total)


def test_results_do_not_depend_on_progress(files):
    big, small = files
    paths = [big, small]
    assert paclo.flows(paths, progress=True).equals(paclo.flows(paths))
    assert paclo.project(big, progress=True).equals(paclo.project(big))
    assert paclo.flow_topn(paths, 2, progress=True) == paclo.flow_topn(paths, 2)


def test_a_display_that_raises_stops_the_walk(files):
    big, _ = files

    class Broken(Recorder):
        def update(self, done, total=None):
            raise RuntimeError("display broke")

    with pytest.raises(RuntimeError, match="display broke"):
        _paclo.flow_table([str(big)], progress=Broken())
    with pytest.raises(RuntimeError, match="display broke"):
        _paclo.flow_project([str(big), str(big)], progress=Broken())


def test_progress_is_checked_and_needs_files(files, capfd):
    big, _ = files
    for f in (paclo.flows, paclo.project, paclo.flow_topn):
        with pytest.raises(TypeError, match="progress must be True or False"):
            f(big, progress="yes")
        with pytest.raises(ValueError, match=r"device=.*has no progress line"):
            f(device="lo", duration=0.1, progress=True)
    with pytest.raises(ValueError, match="a device has none"):
        _paclo.flow_table(live_source("lo", duration=0.1), progress=Recorder())


def test_no_output_when_stderr_is_not_a_terminal_or_progress_is_off(files, capfd):
    big, _ = files
    paclo.flows(big, progress=True)
    paclo.project([big, big], progress=True)
    paclo.flows(big, progress=False)
    assert capfd.readouterr().err == ""


def _stderr_of(code: str, *args: str) -> tuple[str, str]:
    """Run ``code`` with stderr on a pseudo-terminal: (stdout, what the terminal got)."""
    proc, err = run_with_tty_stderr([sys.executable, "-c", code, *args])
    assert proc.returncode == 0, err
    return proc.stdout, err


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_the_progress_line_on_a_terminal_ends_at_the_whole_size(files):
    big, small = files
    code = (
        "import sys, paclo\n"
        "t = paclo.flows(sys.argv[1:], progress=True)\n"
        "p = paclo.project(sys.argv[1], progress=True)\n"
        "print(t.num_rows, p.num_rows)\n"
    )
    out, text = _stderr_of(code, str(big), str(small))
    assert out.split() == [str(paclo.flows([big, small]).num_rows), str(3 * CHUNK + 11)]
    lines = text.split("\n")
    # One line per call, redrawn in place, each ending at 100% of its files' size.
    assert len(lines) == 3 and lines[2] == "", text
    both = big.stat().st_size + small.stat().st_size
    for line, label, size in ((lines[0], "flows", both), (lines[1], "project", big.stat().st_size)):
        frames = [f.rstrip() for f in line.split("\r") if f.strip()]
        assert frames and all(f.startswith(f"{label}  [") and " of " in f for f in frames), text
        assert frames[-1].startswith(f"{label}  [####################] 100.0%"), text
        mb = f"{size / 1e6:.1f} MB"
        assert f"{mb} of {mb}" in frames[-1], text
