"""Worker processes: run one, collect its JSON object; the console the runner reports on."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any, TextIO

from . import config


class RunFailed(RuntimeError):
    """The benchmark could not complete: a worker failed or a result failed its checks."""


class Console:
    """Progress on a TTY (stderr), silent otherwise; the final table always goes to stdout."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._width = 0

    def log(self, line: str) -> None:
        self.clear()
        print(line, file=self.stream, flush=True)

    def progress(self, text: str) -> None:
        if not self.tty:
            return
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)

    def progress_of(self, prefix: str) -> Callable[[str], None]:
        """A progress callback that shows each text after `prefix`."""
        return lambda text: self.progress(f"{prefix}: {text}")

    def clear(self) -> None:
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


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
