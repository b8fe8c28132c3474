"""Worker processes: run one, collect its JSON object; the console the runner reports on."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from .._progress import Progress
from . import config


class RunFailed(RuntimeError):
    """The benchmark could not complete: a worker failed or a result failed its checks."""


class Console:
    """The runner's progress line (paclo's shared progress display: drawn on a terminal,
    nothing when piped) and its messages, which print in both cases; the final table goes to
    stdout, not here. The line shows the steps done of `start(total)`, the rate and an ETA
    from the steps measured so far, and the current step's text."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        # Redrawn at every change: a worker reports only at run boundaries.
        self._bar = Progress(unit="steps", label="[perf]", stream=self.stream, interval=0)
        self.tty = self._bar.enabled

    def start(self, total: int) -> None:
        """The number of steps the run will take."""
        self._bar.update(0, total)

    def advance(self) -> None:
        """One step finished."""
        self._bar.advance()

    def log(self, line: str) -> None:
        self._bar.log(line)

    def progress(self, text: str) -> None:
        self._bar.status(text)

    def progress_of(self, prefix: str) -> Callable[[str], None]:
        """A progress callback that shows each text after `prefix`."""
        return lambda text: self.progress(f"{prefix}: {text}")

    def clear(self) -> None:
        self._bar.clear()


def run_worker(
    cmd: list[str], label: str, on_progress: Callable[[str], None], timeout_s: float = config.WORKER_TIMEOUT_S
) -> dict[str, Any]:
    """Run one worker process; return its JSON object or raise RunFailed with its stderr."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    err_lines: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_lines.append(line)
            if line.startswith("[worker] "):
                on_progress(line[len("[worker] "):].strip())

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = threading.Event()

    def kill() -> None:
        timed_out.set()
        proc.kill()

    timer = threading.Timer(timeout_s, kill)
    timer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read()
        code = proc.wait()
        reader.join()
    finally:
        timer.cancel()
        if proc.poll() is None:
            # Interrupted (Ctrl-C) or failing: ask the worker to stop, then insist.
            proc.terminate()
            try:
                proc.wait(timeout=config.WORKER_STOP_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if timed_out.is_set():
        raise RunFailed(f"performance worker timed out after {timeout_s:g} s: {label}\ncommand: {' '.join(cmd)}")
    stderr = "".join(line for line in err_lines if not line.startswith("[worker] ") or "failed" in line)
    if code != 0:
        raise RunFailed(
            f"performance worker failed: {label} (exit {code})\n"
            f"command: {' '.join(cmd)}\nstderr:\n{stderr.strip() or '(empty)'}"
        )
    try:
        result = json.loads(out)
    except json.JSONDecodeError as exc:
        raise RunFailed(
            f"performance worker returned invalid JSON: {label} ({exc})\n"
            f"stdout: {out[:500]!r}\nstderr:\n{stderr.strip() or '(empty)'}"
        ) from None
    if not isinstance(result, dict) or not isinstance(result.get("runs"), list) or not result["runs"]:
        raise RunFailed(f"performance worker returned invalid JSON: {label} (no runs)")
    return result
