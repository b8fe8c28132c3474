"""One progress display for every long operation a user starts from a terminal.

A :class:`Progress` draws a single status line on a stream (stderr by default) when that
stream is a terminal, and draws nothing otherwise, so logs, pipes, CI and notebooks stay
clean. Messages given to :meth:`Progress.log` are printed in both cases: only the
redrawn line is for terminals.

Driving it::

    # a Python loop: advance by what was done
    with Progress(total=len(files), unit="files", label="convert") as bar:
        for f in files:
            work(f)
            bar.advance()

    # a native loop: hand it the display (any `Display`); it calls update() with the
    # absolute position reached (and the total, possibly learnt late) every few thousand
    # records, and close() at the end when it owns the display (paclo.read)
    bar = Progress(unit="bytes", label="read")
    reader = _paclo.read(path, progress=bar if bar.enabled else None)

    # free text (the perf runner's per-worker lines) and messages above the line
    bar.status("offline udp-64 raw-seq: run 2/5")
    bar.log("[perf] capture ready")

Calls may come from any thread and as often as a loop likes: each one takes a lock and
reads the clock; the line is redrawn at most every ``interval`` seconds (0.2 by default)
and when the work ends. A native loop should still call it only every few thousand
records, since each call crosses into Python.

The line reads ``label [#######-----------]  35.0%  1.2/3.4 GB  310.5 MB/s  eta 0:07  text``
with a total, and ``label  1.2 GB  310.5 MB/s  text`` without one; ``unit="bytes"`` prints
sizes in decimal units (kB, MB, GB), any other unit prints counts followed by the unit. It
is cut to the terminal's width, so it never wraps.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol, Self, TextIO

__all__ = ["Display", "Progress"]

_BAR_WIDTH = 20


def _size(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def _clock_text(seconds: float) -> str:
    s = int(seconds + 0.5)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Display(Protocol):
    """What a native loop reports to: a :class:`Progress`, or any object with these two
    methods (the perf runner shows the position as the text of its own line)."""

    def update(self, done: float, total: float | None = None) -> None: ...

    def close(self) -> None: ...


class Progress:
    """A progress line on ``stream`` (default ``sys.stderr``) when it is a terminal.

    ``total`` is the amount of work (None: unknown, no bar or percentage); ``unit`` is
    ``"bytes"`` or a word printed after counts (``"files"``, ``"packets"``); ``label``
    starts the line. ``enabled`` forces the line on or off (None: on when ``stream``
    is a terminal). ``interval`` is the least time between two redraws, in seconds;
    ``clock`` returns seconds (``time.monotonic``; tests pass their own).
    """

    def __init__(
        self,
        total: float | None = None,
        *,
        unit: str = "",
        label: str = "",
        stream: TextIO | None = None,
        enabled: bool | None = None,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if total is not None and (isinstance(total, bool) or not isinstance(total, (int, float)) or total < 0):
            raise ValueError(f"total must be a non-negative number or None, not {total!r}")
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or interval < 0:
            raise ValueError(f"interval must be a non-negative number of seconds, not {interval!r}")
        self._stream: TextIO = stream if stream is not None else sys.stderr
        if enabled is None:
            isatty = getattr(self._stream, "isatty", None)
            enabled = bool(isatty()) if callable(isatty) else False
        self.enabled: bool = enabled
        self.total: float | None = total
        self.done: float = 0
        self.unit = unit
        self.label = label
        self._text = ""
        self._interval = float(interval)
        self._clock = clock
        self._start = clock()
        self._last_draw: float | None = None
        self._drawn_done: float = 0
        self._width = 0
        self._closed = False
        self._lock = threading.Lock()

    # ---- driving it ------------------------------------------------------------------

    def update(self, done: float, total: float | None = None) -> None:
        """Set the position reached (absolute), and the total if given: the callback a
        native loop calls now and then."""
        with self._lock:
            self.done = done
            if total is not None:
                self.total = total
            self._maybe_draw()

    def advance(self, amount: float = 1) -> None:
        """Add ``amount`` to the position: the call a Python loop makes per item."""
        with self._lock:
            self.done += amount
            self._maybe_draw()

    def status(self, text: str) -> None:
        """Set the free text at the end of the line (the current item, a worker's line)."""
        with self._lock:
            self._text = text
            self._maybe_draw()

    def log(self, line: str) -> None:
        """Print ``line`` on the stream, terminal or not; the progress line, if shown, is
        cleared first and drawn again below it."""
        with self._lock:
            self._clear()
            print(line, file=self._stream, flush=True)
            if self.enabled and self._last_draw is not None and not self._closed:
                self._draw()

    def close(self) -> None:
        """End the display: draw the final state and end the line, if one was drawn.
        Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.enabled and self._last_draw is not None:
                self._draw()
                self._stream.write("\n")
                self._stream.flush()
                self._width = 0

    def clear(self) -> None:
        """Erase the progress line (it is drawn again at the next redraw)."""
        with self._lock:
            self._clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ---- what it shows ---------------------------------------------------------------

    def line(self) -> str:
        """The text of the progress line for the current state (without cutting)."""
        elapsed = max(self._clock() - self._start, 0.0)
        done, total = self.done, self.total
        parts = [self.label] if self.label else []
        if total is not None:
            frac = 1.0 if total == 0 else min(max(done / total, 0.0), 1.0)
            filled = int(frac * _BAR_WIDTH)
            parts.append(f"[{'#' * filled}{'-' * (_BAR_WIDTH - filled)}] {frac * 100:5.1f}%")
            parts.append(f"{self._amount(done, total)}")
        else:
            parts.append(self._amount(done, None))
        rate = done / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            parts.append(f"{_size(rate)}/s" if self.unit == "bytes" else f"{rate:.1f} {self.unit}/s".replace(" /s", "/s"))
            if total is not None and total > done:
                parts.append(f"eta {_clock_text((total - done) / rate)}")
        if self._text:
            parts.append(self._text)
        return "  ".join(parts)

    def _amount(self, done: float, total: float | None) -> str:
        if self.unit == "bytes":
            return _size(done) if total is None else f"{_size(done)} of {_size(total)}"
        count = f"{done:g}" if total is None else f"{done:g}/{total:g}"
        return f"{count} {self.unit}".rstrip()

    # ---- drawing (the lock is held) ----------------------------------------------------

    def _maybe_draw(self) -> None:
        if not self.enabled or self._closed:
            return
        now = self._clock()
        # The moment the work is done is drawn at once (once).
        finished = self.total is not None and self.done >= self.total and self._drawn_done < self.total
        if self._last_draw is None or now - self._last_draw >= self._interval or finished:
            self._draw()

    def _draw(self) -> None:
        self._last_draw = self._clock()
        self._drawn_done = self.done
        columns = shutil.get_terminal_size((80, 24)).columns
        text = self.line()[: max(columns - 1, 10)]
        pad = max(0, self._width - len(text))
        self._stream.write("\r" + text + " " * pad)
        self._stream.flush()
        self._width = len(text)

    def _clear(self) -> None:
        if self.enabled and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
