"""Native loops report to paclo's one progress display: read(progress=...) and the dataset
generator tell it the position every few thousand packets and at the end, then close it."""

from __future__ import annotations

import io

import pytest
from _foundation_util import Rec, classic, udp_frame
from _perf_util import SpecDatasets

import paclo
from paclo import _paclo
from paclo.perf import datasets
from paclo.perf.runner import prepare_dataset
from paclo.perf.workers import Console


class Recorder:
    """A display that records what it is told."""

    def __init__(self) -> None:
        self.updates: list[tuple[float, float | None]] = []
        self.closed = 0

    def update(self, done: float, total: float | None = None) -> None:
        assert not self.closed, "update after close"
        self.updates.append((done, total))

    def close(self) -> None:
        self.closed += 1


def _capture(tmp_path, n: int):
    recs = [Rec(1_700_000_000_000_000_000 + i * 1000, udp_frame(payload=b"x" * (i % 7))) for i in range(n)]
    p = tmp_path / "c.pcap"
    p.write_bytes(classic(recs))
    return p


def test_read_reports_bytes_read_of_the_file_size_then_closes(tmp_path):
    p = _capture(tmp_path, 20_000)
    size = p.stat().st_size
    rec = Recorder()
    assert sum(1 for _ in _paclo.read(str(p), progress=rec)) == 20_000
    # Every 8,192 packets, then the end: the whole file.
    assert len(rec.updates) == 3 and rec.closed == 1
    assert all(total == size for _, total in rec.updates)
    done = [d for d, _ in rec.updates]
    assert done == sorted(done) and 0 < done[0] < done[1] < size and done[-1] == size


def test_a_read_that_stops_early_reports_where_it_stopped(tmp_path):
    p = _capture(tmp_path, 20_000)
    rec = Recorder()
    assert len(list(_paclo.read(str(p), limit=100, progress=rec))) == 100
    assert rec.closed == 1 and len(rec.updates) == 1
    assert 0 < rec.updates[0][0] < p.stat().st_size / 100

    rec = Recorder()
    reader = _paclo.read(str(p), progress=rec)
    next(reader)
    reader.close()
    reader.close()
    assert rec.closed == 1 and len(rec.updates) == 1 and rec.updates[0][0] < p.stat().st_size
    with _paclo.read(str(p), progress=(rec := Recorder())) as r:
        next(r)
    assert rec.closed == 1


def test_a_display_that_raises_stops_the_read(tmp_path):
    p = _capture(tmp_path, 20_000)

    class Broken(Recorder):
        def update(self, done, total=None):
            raise RuntimeError("display broke")

    with pytest.raises(RuntimeError, match="display broke"):
        list(_paclo.read(str(p), progress=Broken()))


def test_read_progress_true_is_silent_when_stderr_is_not_a_terminal(tmp_path, capfd):
    p = _capture(tmp_path, 20_000)
    assert sum(1 for _ in paclo.read(p, progress=True)) == 20_000
    assert capfd.readouterr().err == ""


def test_the_dataset_generator_reports_packets_written(tmp_path):
    rec = Recorder()
    n = 3 * 65536 + 5
    d = datasets.generate("udp-64", n, tmp_path / "d.pcap", progress=rec)
    assert d["packets"] == n
    assert rec.updates == [(65535, n), (2 * 65536 - 1, n), (3 * 65536 - 1, n), (n, n)]
    assert rec.closed == 1


def test_the_dataset_generator_checks_its_progress_argument(tmp_path, capfd):
    with pytest.raises(TypeError, match="progress must be True, False or an object with update"):
        datasets.generate("udp-64", 10, tmp_path / "d.pcap", progress="yes")  # type: ignore[arg-type]
    datasets.generate("udp-64", 70_000, tmp_path / "d.pcap", progress=True)
    assert capfd.readouterr().err == ""


def test_the_runner_shows_the_dataset_being_written_on_its_line(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    console = Console(stream=out)
    path = tmp_path / "datasets" / "udp-64-100.pcap"
    prepare_dataset(SpecDatasets, path, "udp-64", 100, console)
    assert path.stat().st_size == SpecDatasets.expected_file_size("udp-64", 100)
    text = out.getvalue()
    assert f"[perf] preparing {path}\n" in text
    assert "preparing udp-64-100.pcap: 100% (100/100 packets)" in text, text
