"""A Ctrl-C that lands while paclo runs a user callback (on_stats at the end of a capture)
raises KeyboardInterrupt inside it; it must reach the caller, not on_error or the unraisable
hook, where it would be lost."""

from __future__ import annotations

import gc
import os
import signal
import sys
import time

import pytest
from _live_util import LO, Receiver, live

import paclo

pytestmark = live


def _interrupted_on_stats(stats: dict) -> None:
    os.kill(os.getpid(), signal.SIGINT)
    # The handler runs here: KeyboardInterrupt inside the callback.
    time.sleep(5)


@pytest.mark.parametrize("with_on_error", [True, False])
def test_ctrl_c_inside_a_capture_callback_reaches_the_caller(with_on_error, monkeypatch):
    unraisable: list = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    errors: list = []
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, duration=0.2, on_stats=_interrupted_on_stats,
                            on_error=errors.append if with_on_error else None)
        t0 = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            for _ in cap:
                pass
            # The capture ended normally; the interrupt raises from the loop, not after this.
            time.sleep(5)
        assert time.monotonic() - t0 < 4
    assert errors == [] and unraisable == []
    assert cap.stats()["stop_reason"] == "max_time"
    # The interrupt's traceback holds the capture: collect it here, not in a later test.
    del cap
    gc.collect()
