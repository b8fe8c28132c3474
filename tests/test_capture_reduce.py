"""Synchronous reduce over the loopback device, and read errors mid-capture."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from _live_util import LO, Receiver, fd_count, live, new_threads, payload, send_async, thread_ids, udp_payload

import paclo
from paclo._capture import reduce_device

pytestmark = live


def run_reduce(rx: Receiver, n: int, fn, init, **kw):
    """reduce_device with a sender started from on_ready (after open + filter)."""
    senders = []

    def ready():
        senders.append(send_async(rx.port, n, pace_every=50, pace_s=0.005)[0])

    kw.setdefault("idle_timeout", 0.5)
    out = reduce_device(fn, init, device=LO, filter=rx.filter, on_ready=ready, **kw)
    for t in senders:
        t.join(10)
    return out


def test_reduce_counts_every_packet_and_reports():
    n = 200
    stats_seen = []
    with Receiver() as rx:
        threads = thread_ids()
        acc, stats = run_reduce(rx, n, lambda acc, p: [*acc, udp_payload(p)], [], report=True, on_stats=stats_seen.append)
        assert not new_threads(threads)
    assert acc == [payload(i) for i in range(n)]
    assert stats["schema_version"] == 1 and stats["state"] == "closed"
    assert stats["stop_reason"] == "idle_timeout" and stats["error"] is None
    assert stats["queue"] is None
    assert stats["packets"] == {"captured": n, "processed": n, "decode_errors": 0}
    assert stats["pcap"]["dropped"] == 0 and stats["pcap"]["received"] >= n
    assert stats["source"] == {"type": "device", "name": LO}
    assert stats_seen == [stats["pcap"]]


def test_reduced_stops_at_once():
    calls = []

    def fn(acc, p):
        calls.append(1)
        acc += 1
        return paclo.Reduced(acc) if acc == 10 else acc

    with Receiver() as rx:
        acc, stats = run_reduce(rx, 50, fn, 0, report=True)
    assert acc == 10 and len(calls) == 10
    assert stats["stop_reason"] == "reduced" and stats["packets"]["processed"] == 10


def test_reduce_limit_stop_when_and_duration():
    with Receiver() as rx:
        acc, stats = run_reduce(rx, 50, lambda a, p: a + 1, 0, limit=7, report=True)
        assert (acc, stats["stop_reason"]) == (7, "max_packets")
        acc, stats = run_reduce(
            rx, 50, lambda a, p: [*a, udp_payload(p)], [], stop_when=lambda p: udp_payload(p) == payload(3), report=True
        )
        assert acc == [payload(i) for i in range(4)] and stats["stop_reason"] == "predicate"
        t0 = time.monotonic()
        acc, stats = reduce_device(lambda a, p: a + 1, 0, device=LO, filter=rx.filter, duration=0.3, report=True)
        assert acc == 0 and stats["stop_reason"] == "max_time"
        assert 0.3 <= time.monotonic() - t0 < 2
        # Without report the accumulator alone comes back.
        assert reduce_device(lambda a, p: a + 1, 5, device=LO, filter=rx.filter, duration=0.05) == 5


def test_reduce_fn_error_propagates_and_closes_the_handle():
    before = fd_count()

    def fn(acc, p):
        raise KeyError("inside fn")

    with Receiver() as rx:
        with pytest.raises(KeyError, match="inside fn"):
            run_reduce(rx, 5, fn, 0)
        assert fd_count() == before + 1  # only the receiver socket remains


def test_reduce_ctrl_c_is_prompt():
    fired = []

    def interrupt():
        fired.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    # With the collector paused the handler cannot run inside a gc callback (Hypothesis
    # installs one), where Python ignores the exception and the loop would wait forever.
    gc.disable()
    try:
        with Receiver() as rx:
            threading.Timer(0.3, interrupt).start()
            with pytest.raises(KeyboardInterrupt):
                reduce_device(lambda a, p: a, 0, device=LO, filter=rx.filter)
    finally:
        gc.enable()
    assert time.monotonic() - fired[0] < 0.2


def test_reduce_validates_options():
    with pytest.raises(TypeError, match="fn must be a callable"):
        reduce_device(None, 0, device=LO)
    with pytest.raises(ValueError, match="error_mode"):
        reduce_device(lambda a, p: a, 0, device=LO, error_mode="x")
    with pytest.raises(paclo.CaptureError, match="available devices"):
        reduce_device(lambda a, p: a, 0, device="paclo-no-such-dev0", duration=0.1)


def test_reduce_huge_time_limits_never_panic():
    with pytest.raises(ValueError, match="duration") as ei:
        reduce_device(lambda a, p: a, 0, device=LO, duration=1e20)
    assert type(ei.value) is ValueError
    _acc, s = reduce_device(lambda a, p: a, 0, device=LO, filter="udp port 9", duration=1e19, idle_timeout=0.05, report=True)
    assert (s["state"], s["stop_reason"], s["error"]) == ("closed", "idle_timeout", None)


def _netns_available() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    r = subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link add pv0 type veth peer name pv1"], capture_output=True, timeout=30
    )
    return r.returncode == 0


READ_ERROR_SCRIPT = textwrap.dedent(
    """
    import subprocess, threading, time, paclo
    from paclo._capture import reduce_device

    def delete_later():
        time.sleep(0.3)
        subprocess.run(["ip", "link", "del", "pv0"], check=True)

    def recreate():
        subprocess.run(["ip", "link", "add", "pv0", "type", "veth", "peer", "name", "pv1"], check=True)
        subprocess.run(["ip", "link", "set", "pv0", "up"], check=True)

    # error_mode="raise": the consumer gets CaptureError, not a quiet end.
    recreate()
    threading.Thread(target=delete_later).start()
    cap = paclo.capture("pv0", duration=5)
    try:
        for _ in cap:
            pass
        print("RAISE-MODE: ended without error")
    except paclo.CaptureError as e:
        s = cap.stats()
        print("RAISE-MODE:", s["state"], s["stop_reason"], "|", e)

    # error_mode="pass": iteration ends, on_error gets the error, state failed.
    recreate()
    threading.Thread(target=delete_later).start()
    seen = []
    cap = paclo.capture("pv0", duration=5, error_mode="pass", on_error=seen.append)
    list(cap)
    s = cap.stats()
    print("PASS-MODE:", s["state"], s["stop_reason"], len(seen), type(seen[0]).__name__ if seen else None)

    # reduce on a device: raised, and with pass the accumulator comes back with a failed report.
    recreate()
    threading.Thread(target=delete_later).start()
    try:
        reduce_device(lambda a, p: a, 0, device="pv0", duration=5)
        print("REDUCE-RAISE: no error")
    except paclo.CaptureError as e:
        print("REDUCE-RAISE:", e)
    recreate()
    threading.Thread(target=delete_later).start()
    acc, st = reduce_device(lambda a, p: a, 42, device="pv0", duration=5, error_mode="pass", report=True)
    print("REDUCE-PASS:", acc, st["state"], st["stop_reason"])
    """
)


@pytest.mark.skipif(not _netns_available(), reason="needs unshare -n and veth (a private network namespace)")
def test_read_error_mid_capture_is_an_error_not_eof():
    # The interface disappears under the capture, inside a private network namespace.
    out = subprocess.run(
        ["unshare", "-n", sys.executable, "-c", READ_ERROR_SCRIPT], capture_output=True, text=True, timeout=60
    )
    text = out.stdout + out.stderr
    assert "RAISE-MODE: failed error | capture failed: libpcap read error" in text, text
    assert "PASS-MODE: failed error 1 CaptureError" in text, text
    assert "REDUCE-RAISE: libpcap read error" in text, text
    assert "REDUCE-PASS: 42 failed error" in text, text


def test_public_reduce_on_a_device_with_a_dsl_filter():
    n = 30
    with Receiver() as rx:
        senders = []
        acc, stats = paclo.reduce(
            lambda a, p: a + len(udp_payload(p)),
            0,
            device=LO,
            filter=("and", "udp", ("dst-port", rx.port)),
            idle_timeout=0.4,
            on_ready=lambda: senders.append(send_async(rx.port, n)[0]),
            report=True,
        )
        senders[0].join(10)
    assert acc == 16 * n
    assert stats["packets"]["processed"] == n and stats["stop_reason"] == "idle_timeout"


def test_immediate_mode_warning_names_the_callers_line():
    """The slot-trap warning points at the user's call, through paclo.reduce as well as
    through paclo.capture and reduce_device."""
    import warnings

    calls = [
        lambda: paclo.reduce(lambda a, p: a, 0, device=LO, filter="udp port 9", immediate=True, idle_timeout=0.01),
        lambda: reduce_device(lambda a, p: a, 0, device=LO, filter="udp port 9", immediate=True, idle_timeout=0.01),
        lambda: paclo.capture(LO, filter="udp port 9", immediate=True, idle_timeout=0.01).close(),
    ]
    for call in calls:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            call()
        assert [(x.category, x.filename) for x in w] == [(RuntimeWarning, __file__)], [str(x) for x in w]
