"""The shared progress line: drawn on a terminal only, rate-limited, thread-safe, and
drivable from a Python loop or a native loop's periodic callback."""

from __future__ import annotations

import io
import threading

import pytest

from paclo._progress import Progress


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")


def _frames(text: str) -> list[str]:
    """The successive contents of the redrawn line."""
    return [f.rstrip() for f in text.replace("\n", "\r").split("\r") if f.strip()]


def test_silent_when_the_stream_is_not_a_terminal():
    out = io.StringIO()
    with Progress(total=10, unit="files", stream=out) as bar:
        for _ in range(10):
            bar.advance()
        bar.status("working")
    assert not bar.enabled and out.getvalue() == ""


def test_log_lines_are_printed_terminal_or_not():
    plain = io.StringIO()
    Progress(total=3, stream=plain).log("[perf] capture ready")
    assert plain.getvalue() == "[perf] capture ready\n"
    tty, clock = Tty(), Clock()
    bar = Progress(total=4, unit="files", stream=tty, clock=clock)
    bar.advance()
    drawn = tty.getvalue()
    bar.log("a message")
    # The line is erased, the message printed, and the line drawn again below it.
    width = len(drawn) - 1
    assert tty.getvalue() == drawn + "\r" + " " * width + "\r" + "a message\n" + drawn


def test_a_python_loop_draws_at_most_every_interval_and_at_the_end():
    tty, clock = Tty(), Clock()
    with Progress(total=100, unit="files", label="convert", stream=tty, clock=clock, interval=0.2) as bar:
        for _ in range(100):
            clock.t += 0.01  # 100 items over one second: about 5 redraws
            bar.advance()
    frames = _frames(tty.getvalue())
    assert 5 <= len(frames) <= 8
    assert frames[0] == "convert  [--------------------]   1.0%  1/100 files  100.0 files/s  eta 0:01"
    last = frames[-1]
    assert last == "convert  [####################] 100.0%  100/100 files  100.0 files/s"
    assert tty.getvalue().endswith("\n")


def test_a_native_callback_sets_the_absolute_position_and_a_late_total():
    tty, clock = Tty(), Clock()
    bar = Progress(unit="bytes", label="read", stream=tty, clock=clock, interval=0)
    callback = bar.update
    clock.t += 2
    callback(250_000_000)
    assert _frames(tty.getvalue())[-1] == "read  250.0 MB  125.0 MB/s"
    clock.t += 2
    callback(500_000_000, 1_000_000_000)
    assert _frames(tty.getvalue())[-1] == "read  [##########----------]  50.0%  500.0 MB of 1.0 GB  125.0 MB/s  eta 0:04"
    bar.status("trace.pcap")
    assert _frames(tty.getvalue())[-1].endswith("eta 0:04  trace.pcap")
    bar.close()
    bar.close()
    assert tty.getvalue().count("\n") == 1


def test_a_shorter_line_erases_the_longer_one_before_it():
    tty, clock = Tty(), Clock()
    bar = Progress(stream=tty, clock=clock, interval=0)
    bar.status("a long status text")
    bar.status("short")
    last = tty.getvalue().split("\r")[-1]
    assert last.startswith("0  short") and len(last) == len("0  a long status text")


def test_nothing_is_drawn_when_nothing_happened():
    tty = Tty()
    with Progress(total=5, stream=tty):
        pass
    assert tty.getvalue() == ""


def test_threads_may_advance_it_at_once():
    tty, clock = Tty(), Clock()
    bar = Progress(total=8000, stream=tty, clock=clock)

    def work() -> None:
        for _ in range(1000):
            bar.advance()

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bar.close()
    assert bar.done == 8000
    assert "100.0%  8000/8000" in _frames(tty.getvalue())[-1]


def test_forced_on_or_off():
    out = io.StringIO()
    bar = Progress(total=1, stream=out, enabled=True, interval=0)
    bar.advance()
    assert "100.0%" in out.getvalue()
    tty = Tty()
    Progress(total=1, stream=tty, enabled=False).advance()
    assert tty.getvalue() == ""


@pytest.mark.parametrize(("kwargs", "message"), [({"total": -1}, "total must be"), ({"interval": "0.2"}, "interval must be")])
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Progress(**kwargs)


def test_the_line_is_cut_to_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")
    tty = Tty()
    bar = Progress(total=10, stream=tty, interval=0)
    bar.status("x" * 100)
    assert len(_frames(tty.getvalue())[-1]) == 39
