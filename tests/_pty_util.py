"""Run a program with its stderr on a pseudo-terminal, for tests of progress lines."""

from __future__ import annotations

import os
import subprocess


def run_with_tty_stderr(argv: list[str], timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run ``argv`` with stderr on a pseudo-terminal and stdout piped: the finished process
    and what the terminal received."""
    master, slave = os.openpty()
    try:
        proc = subprocess.run(argv, stderr=slave, stdout=subprocess.PIPE, text=True, timeout=timeout)
        os.close(slave)
        slave = -1
        err = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave >= 0:
            os.close(slave)
        os.close(master)
    return proc, err.decode()
