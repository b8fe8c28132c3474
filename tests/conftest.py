"""Suite-wide setup."""

from __future__ import annotations

import signal


def pytest_configure(config: object) -> None:
    """Ctrl-C raises KeyboardInterrupt in the tests (and SIGINT has its default action in the
    commands they start), however the suite was launched. A simple command run in the
    background by a non-interactive shell (`cmd &`, `nohup cmd &`, as scripts and CI
    runners do) starts with SIGINT ignored, and Python then leaves it ignored: a test that
    interrupts itself would wait forever. Installed before collection, so that a library
    which chains its own SIGINT handler to the existing one (polars does) chains to
    Python's."""
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)
