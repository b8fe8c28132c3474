"""Managed live capture on the loopback device: counts, queues, stop reasons, errors."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
import warnings

import pytest
from _live_util import (
    ETH_IP_UDP,
    LO,
    Receiver,
    fd_count,
    live,
    new_threads,
    payload,
    rss_bytes,
    send,
    send_async,
    thread_ids,
    udp_payload,
    wait_until,
    write_pcap,
)

import paclo

pytestmark = live


def check_invariants(s: dict) -> None:
    q, p = s["queue"], s["packets"]
    assert s["schema_version"] == 1
    assert p["enqueued"] == q["enqueued"]
    assert q["enqueued"] == p["delivered"] + q["abandoned"] + q["depth"]
    assert 0 <= q["depth"] <= q["capacity"] and 0 <= q["max_depth"] <= q["capacity"]
    if q["mode"] == "blocking":
        assert q["dropped"] == 0
    assert p["captured"] >= q["enqueued"] + q["dropped"] + q["cancelled"]
    if s["state"] in ("closed", "failed"):
        assert p["captured"] == q["enqueued"] + q["dropped"] + q["cancelled"]


def test_exact_count_caplen_and_payload():
    n = 300
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, idle_timeout=0.5)
        assert cap.state == "running"
        assert send(rx.port, n, size=100) == n
        got = list(cap)
        s = cap.stats()
    assert len(got) == n
    for i, pkt in enumerate(got):
        assert pkt.caplen == pkt.wirelen == ETH_IP_UDP + 100
        assert pkt.linktype == 1
        assert udp_payload(pkt) == payload(i, 100)
    ts = [p.ts_ns for p in got]
    assert ts == sorted(ts) and abs(ts[0] / 1e9 - time.time()) < 60
    assert s["state"] == "closed" and s["stop_reason"] == "idle_timeout" and s["error"] is None
    assert s["source"] == {"type": "device", "name": LO}
    p = s["packets"]
    assert (p["captured"], p["enqueued"], p["delivered"], p["processed"], p["decode_errors"]) == (n, n, n, n, 0)
    assert s["queue"]["dropped"] == 0 and s["queue"]["depth"] == 0
    # Linux loopback counts each datagram twice in pcap_stats.
    assert s["pcap"]["dropped"] == 0
    assert s["pcap"]["received"] >= n
    assert s["timing"]["elapsed_ms"] >= 500
    check_invariants(s)


def test_dropping_queue_with_slow_consumer_counts_every_loss():
    n = 400
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, queue_cap=8, queue_mode="dropping", idle_timeout=0.5)
        assert send(rx.port, n) == n
        seen = []
        for pkt in cap:
            seen.append(udp_payload(pkt))
            time.sleep(0.001)
        s = cap.stats()
    assert s["pcap"]["dropped"] == 0, s
    q = s["queue"]
    assert q["dropped"] > 0
    assert s["packets"]["processed"] == len(seen)
    # Exact: every datagram sent was either processed or dropped by the queue.
    assert n == s["packets"]["processed"] + q["dropped"]
    assert s["packets"]["captured"] == n
    # Dropped packets never reach the consumer; the rest arrive in order.
    idx = [int(x[5:13]) for x in seen]
    assert idx == sorted(idx) and len(set(idx)) == len(idx)
    assert q["max_depth"] == 8
    check_invariants(s)


def test_blocking_queue_with_slow_consumer_processes_everything():
    n = 400
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, queue_cap=8, idle_timeout=0.5)
        assert send(rx.port, n) == n
        seen = 0
        for _ in cap:
            seen += 1
            if seen % 4 == 0:
                time.sleep(0.001)
        s = cap.stats()
    assert seen == n == s["packets"]["processed"]
    assert s["queue"]["dropped"] == 0 and s["queue"]["blocked_events"] > 0 and s["queue"]["blocked_ns"] > 0
    assert s["pcap"]["dropped"] == 0
    check_invariants(s)


def test_close_while_producer_blocked_returns_promptly():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, queue_cap=4)
        send(rx.port, 50)
        assert wait_until(lambda: cap.stats()["queue"]["blocked_events"] > 0)
        t0 = time.monotonic()
        cap.close()
        took = time.monotonic() - t0
        s = cap.stats()
    assert took < 5.0
    assert s["state"] == "closed" and s["stop_reason"] == "closed"
    assert s["queue"]["depth"] == 0 and s["queue"]["abandoned"] >= 4
    assert list(cap) == []
    cap.close()  # idempotent
    check_invariants(s)


def test_stop_from_another_thread_ends_iteration():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter)
        threading.Timer(0.2, cap.stop).start()
        t0 = time.monotonic()
        assert list(cap) == []
        assert time.monotonic() - t0 < 2.0
        assert cap.stats()["stop_reason"] == "consumer"
        assert cap.state == "closed"
        cap.stop()
        assert cap.stats()["stop_reason"] == "consumer"


def test_stop_when_includes_the_matching_packet():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, stop_when=lambda p: udp_payload(p) == payload(5))
        send(rx.port, 20)
        got = [udp_payload(p) for p in cap]
        s = cap.stats()
    assert got == [payload(i) for i in range(6)]
    assert s["stop_reason"] == "predicate" and s["state"] == "closed"
    check_invariants(s)


def test_stop_when_error_propagates_and_fails_the_capture():
    def boom(p):
        raise ZeroDivisionError("bad predicate")

    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, stop_when=boom)
        send(rx.port, 3)
        with pytest.raises(ZeroDivisionError):
            next(cap)
        s = cap.stats()
    assert s["state"] == "failed" and s["stop_reason"] == "error"
    assert s["error"]["class"] == "ZeroDivisionError"


def test_limit_stops_after_exactly_limit_packets():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, limit=5)
        send(rx.port, 20)
        got = [udp_payload(p) for p in cap]
        s = cap.stats()
    assert got == [payload(i) for i in range(5)]
    assert s["stop_reason"] == "max_packets" and s["packets"]["captured"] == 5


def test_duration_stops_a_quiet_capture():
    with Receiver() as rx:
        t0 = time.monotonic()
        cap = paclo.capture(LO, filter=rx.filter, duration=0.3)
        assert list(cap) == []
        took = time.monotonic() - t0
        s = cap.stats()
    assert 0.3 <= took < 2.0
    assert s["stop_reason"] == "max_time" and s["state"] == "closed"


def test_idle_timeout_counts_from_the_last_packet():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, idle_timeout=0.3, duration=10)
        t, _ = send_async(rx.port, 6, pace_every=1, pace_s=0.1)
        t0 = time.monotonic()
        got = list(cap)
        took = time.monotonic() - t0
        t.join()
    assert len(got) == 6
    assert took >= 0.5 + 0.3 - 0.05
    assert cap.stats()["stop_reason"] == "idle_timeout"


def test_callbacks_run_once_with_final_stats():
    calls = {"ready": 0, "stats": [], "queue": [], "errors": []}
    with Receiver() as rx:

        def ready():
            calls["ready"] += 1

        cap = paclo.capture(
            LO,
            filter=rx.filter,
            idle_timeout=0.3,
            on_ready=ready,
            on_stats=calls["stats"].append,
            on_queue_stats=calls["queue"].append,
            on_error=calls["errors"].append,
        )
        assert calls["ready"] == 1
        send(rx.port, 10)
        assert len(list(cap)) == 10
        cap.close()
    assert len(calls["stats"]) == 1 and set(calls["stats"][0]) == {"received", "dropped", "interface_dropped"}
    assert len(calls["queue"]) == 1 and calls["queue"][0]["enqueued"] == 10
    assert calls["errors"] == []


def test_on_ready_error_raises_from_capture_and_closes():
    before = fd_count()

    def fail():
        raise RuntimeError("not ready")

    with pytest.raises(RuntimeError, match="not ready"):
        paclo.capture(LO, filter="udp port 9", on_ready=fail)
    gc.collect()
    assert fd_count() == before


def test_unknown_device_lists_available_devices():
    with pytest.raises(paclo.CaptureError) as ei:
        paclo.capture("paclo-no-such-dev0")
    msg = str(ei.value)
    assert "paclo-no-such-dev0" in msg and "available devices" in msg and LO in msg


def test_invalid_filter_is_a_value_error_before_any_packet():
    with pytest.raises(ValueError, match="udp port nope") as ei:
        paclo.capture(LO, filter="udp port nope and (")
    assert "udp port nope" in str(ei.value)
    from paclo._capture import reduce_device

    with pytest.raises(ValueError, match="invalid filter"):
        reduce_device(lambda a, p: a, 0, device=LO, filter="not a filter ((", duration=0.1)


def test_permission_error_names_cap_net_raw(tmp_path):
    # Drop CAP_NET_RAW/CAP_NET_ADMIN in a child process and try to open the device.
    import shutil
    import subprocess
    import sys

    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to drop capabilities")
    code = (
        "import paclo\n"
        "try:\n"
        "    paclo.capture('lo')\n"
        "except PermissionError as e:\n"
        "    print('PERM', e)\n"
    )
    out = subprocess.run(
        [setpriv, "--inh-caps=-all", "--bounding-set=-net_raw,-net_admin", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "PERM" in out.stdout, out.stdout + out.stderr
    assert "CAP_NET_RAW" in out.stdout


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"queue_mode": "lossy"}, ["queue_mode", "'blocking'", "'dropping'"]),
        ({"error_mode": "ignore"}, ["error_mode", "'raise'", "'pass'"]),
        ({"decode": "ip"}, ["decode", "'full'", "'flow'"]),
        ({"queue_cap": 0}, ["queue_cap", "between 1 and"]),
        ({"snaplen": 0}, ["snaplen", "between 1 and 262144"]),
        ({"timeout_ms": -1}, ["timeout_ms"]),
        ({"buffer_size": 0}, ["buffer_size"]),
        ({"limit": 0}, ["limit"]),
        ({"duration": -1.0}, ["duration", "seconds"]),
        ({"idle_timeout": 0}, ["idle_timeout", "seconds"]),
        ({"immediate": 1}, ["immediate", "True or False"]),
        ({"promisc": "yes"}, ["promisc", "True or False"]),
        ({"stop_when": 3}, ["stop_when", "callable"]),
        ({"filter": 5}, ["filter"]),
    ],
)
def test_option_validation_names_option_and_allowed_values(kwargs, words):
    with pytest.raises((ValueError, TypeError)) as ei:
        paclo.capture(LO, **kwargs)
    for w in words:
        assert w in str(ei.value)


@pytest.mark.parametrize("option", ["duration", "idle_timeout"])
def test_huge_time_limits_never_panic(option):
    """A finite number of seconds too large for a Duration is a ValueError naming the option;
    one that fits but reaches past the clock's range is simply a limit never reached."""
    with pytest.raises(ValueError, match=option) as ei:
        paclo.capture(LO, filter="udp port 9", **{option: 1e20})
    assert type(ei.value) is ValueError
    cap = paclo.capture(LO, filter="udp port 9", **{option: 1e19})
    assert wait_until(lambda: cap.stats()["timing"]["elapsed_ms"] >= 100, 5)
    assert cap.state == "running" and cap.stats()["error"] is None
    cap.close()
    s = cap.stats()
    assert (s["state"], s["stop_reason"], s["error"]) == ("closed", "closed", None)


def test_device_and_path_are_exclusive(tmp_path):
    with pytest.raises(ValueError, match="either device= or path="):
        paclo.capture()
    with pytest.raises(ValueError, match="not both"):
        paclo.capture(LO, path=str(tmp_path / "x.pcap"))
    with pytest.raises(FileNotFoundError):
        paclo.capture(path=str(tmp_path / "missing.pcap"))


def test_immediate_mode_protects_against_the_slot_trap():
    with pytest.warns(RuntimeWarning, match="slots"), paclo.capture(LO, filter="udp port 9", immediate=True, idle_timeout=0.01):
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with Receiver() as rx:
            cap = paclo.capture(LO, filter=rx.filter, immediate=True, snaplen=2048, idle_timeout=0.3)
            send(rx.port, 50)
            assert len(list(cap)) == 50


def test_buffered_create_path_captures():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, buffer_size=4 << 20, idle_timeout=0.3, snaplen=128)
        send(rx.port, 20, size=500)
        got = list(cap)
    assert len(got) == 20
    assert all(p.caplen == 128 and p.wirelen == ETH_IP_UDP + 500 for p in got)


def _sigint_state() -> str:
    """SIGINT's Python handler, whether it is pending, and the threads that block it (from
    /proc): what a capture that missed a Ctrl-C leaves to look at."""
    parts = [f"handler {signal.getsignal(signal.SIGINT)!r}"]
    bit = 1 << (signal.SIGINT - 1)

    def fields(path: str) -> dict[str, str]:
        with open(path) as f:
            return dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)

    try:
        parts.append(f"pending for the process: {bool(int(fields('/proc/self/status')['ShdPnd'], 16) & bit)}")
        for tid in sorted(os.listdir("/proc/self/task")):
            t = fields(f"/proc/self/task/{tid}/status")
            blocked, pending = int(t["SigBlk"], 16) & bit, int(t["SigPnd"], 16) & bit
            parts.append(f"thread {tid} {t['Name'].strip()}: {'blocks' if blocked else 'takes'} SIGINT{', pending' if pending else ''}")
    except (OSError, KeyError, ValueError) as e:
        parts.append(f"/proc unreadable: {e}")
    return "; ".join(parts)


def test_ctrl_c_raises_keyboard_interrupt_promptly_and_closes():
    with Receiver() as rx:
        # The duration only bounds a capture that missed the signal (a failure, not a hang).
        cap = paclo.capture(LO, filter=rx.filter, duration=60)
        fired = []

        def interrupt():
            fired.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)

        # With the collector paused the handler cannot run inside a gc callback (Hypothesis
        # installs one), where Python ignores the exception and the loop would wait forever.
        gc.disable()
        try:
            threading.Timer(0.3, interrupt).start()
            with pytest.raises(KeyboardInterrupt):
                for _ in cap:
                    pass
        except pytest.fail.Exception:
            pytest.fail(f"no KeyboardInterrupt {time.monotonic() - fired[0]:.1f} s after the SIGINT "
                        f"(stop reason {cap.stats()['stop_reason']}): {_sigint_state()}")
        finally:
            gc.enable()
        latency = time.monotonic() - fired[0]
    assert latency < 0.2, latency
    assert cap.state == "closed"
    assert cap.stats()["stop_reason"] == "closed"


def test_ctrl_c_reaches_a_consumer_written_in_c(tmp_path):
    """``list(cap)`` takes queued packets back to back with no Python code in between; the
    capture itself notices the signal, raises KeyboardInterrupt and closes."""
    from _foundation_util import keyboard_interrupt_after

    from paclo.perf import datasets

    path = tmp_path / "big.pcap"
    datasets.generate("udp-64", 1_000_000, path)
    got: list = []
    with paclo.capture(path=path, queue_cap=65536) as cap:
        # Let the queue fill so the consumer never waits.
        assert wait_until(lambda: cap.stats()["queue"]["depth"] == 65536, 10)
        with pytest.raises(KeyboardInterrupt), keyboard_interrupt_after(0.005):
            got.extend(cap)
    assert 0 < len(got) < 1_000_000
    assert cap.stats()["stop_reason"] == "closed"


def test_single_consumer_is_enforced():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, duration=0.5)
        errors = []

        def other():
            time.sleep(0.1)
            try:
                next(cap)
            except RuntimeError as e:
                errors.append(str(e))

        t = threading.Thread(target=other)
        t.start()
        list(cap)
        t.join()
    assert errors and "single consumer" in errors[0]


def test_abandoned_capture_is_collected_and_closed():
    gc.collect()  # captures abandoned by earlier tests must not close during the count
    base_threads, base_fds = thread_ids(), fd_count()
    cap = paclo.capture(LO, filter="udp port 9")
    assert len(new_threads(base_threads)) == 1
    del cap
    gc.collect()
    assert wait_until(lambda: not new_threads(base_threads), timeout=2)
    assert fd_count() == base_fds


def _abandon_capture_in_a_cycle(**options) -> None:
    """Start a capture whose callback refers back to it (a closure over a local), then drop
    every outside reference: only the garbage collector can free it."""
    holder: dict = {}

    def hook(*_args):
        return holder["cap"].state == "failed"

    holder["cap"] = paclo.capture(LO, filter="udp port 9", **dict.fromkeys(options, hook))


@pytest.mark.parametrize("hook", ["stop_when", "on_stats", "on_queue_stats", "on_error"])
def test_abandoned_capture_in_a_reference_cycle_is_collected_and_closed(hook):
    """A callback that refers back to its capture (a common closure) makes a reference cycle;
    the garbage collector still finds it, stops the thread and closes the handle."""
    gc.collect()
    base_threads, base_fds = thread_ids(), fd_count()
    _abandon_capture_in_a_cycle(**{hook: True})
    assert len(new_threads(base_threads)) == 1
    gc.collect()
    assert wait_until(lambda: not new_threads(base_threads), timeout=2)
    assert fd_count() == base_fds


def _abandon_fan_out_in_a_cycle() -> None:
    holder: dict = {}
    cap = paclo.capture(LO, filter="udp port 9", on_error=lambda e: holder)
    holder["fo"] = paclo.fan_out(cap, branches={"a": {"mode": "blocking"}, "b": {"mode": "dropping"}})
    holder["a"] = holder["fo"]["a"]


def test_fan_out_in_a_reference_cycle_is_collected_and_closed():
    gc.collect()
    base_threads, base_fds = thread_ids(), fd_count()
    _abandon_fan_out_in_a_cycle()
    assert len(new_threads(base_threads)) == 2
    gc.collect()
    assert wait_until(lambda: not new_threads(base_threads), timeout=2)
    assert fd_count() == base_fds


def test_start_stop_close_cycles_leak_nothing():
    def cycle(i: int) -> None:
        cap = paclo.capture(LO, filter="udp port 9", timeout_ms=5)
        if i % 3 == 0:
            cap.stop()
            list(cap)
            cap.close()
        elif i % 3 == 1:
            with cap:
                pass
        else:
            cap.close()
        assert cap.state == "closed"

    for i in range(20):
        cycle(i)
    gc.collect()
    threads, fds, rss = thread_ids(), fd_count(), rss_bytes()
    for i in range(200):
        cycle(i)
    gc.collect()
    assert not new_threads(threads)
    assert fd_count() == fds
    assert rss_bytes() - rss < 8 << 20


def test_capture_over_a_file_runs_the_managed_lifecycle(tmp_path):
    frames = [bytes([i]) * (60 + i) for i in range(25)]
    path = tmp_path / "t.pcap"
    write_pcap(str(path), frames)
    cap = paclo.capture(path=path, queue_cap=4)
    got = list(cap)
    s = cap.stats()
    assert [bytes(p.data) for p in got] == frames
    assert got[3].ts_ns == (1_700_000_003 * 10**9) + 500_000
    assert s["stop_reason"] == "eof" and s["state"] == "closed"
    assert s["pcap"] is None
    assert s["source"] == {"type": "path", "path": str(path)}
    assert s["packets"]["captured"] == 25 and s["queue"]["blocked_events"] > 0
    # A filter applies to files too.
    assert len(list(paclo.capture(path=path, filter="len > 70"))) == 14
    # Any path form paclo.read takes: str, os.PathLike, bytes.
    assert len(list(paclo.capture(path=str(path)))) == len(list(paclo.capture(path=os.fsencode(path)))) == 25
    with pytest.raises(TypeError, match=r"path must be a str or os\.PathLike"):
        paclo.capture(path=3)


def test_stats_readable_after_close_and_frozen():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, idle_timeout=0.1)
        list(cap)
        cap.close()
        a = cap.stats()
        time.sleep(0.05)
        assert cap.stats() == a


def test_devices_and_libpcap_version():
    devs = paclo.devices()
    lo = next(d for d in devs if d["name"] == LO)
    assert set(lo) == {"name", "description", "addresses", "flags"}
    assert "loopback" in lo["flags"] and "up" in lo["flags"]
    assert any(a["addr"] == "127.0.0.1" and a["netmask"] == "255.0.0.0" for a in lo["addresses"])
    assert paclo.libpcap_version().startswith("libpcap version")


def test_hook_errors_go_to_on_error():
    errors = []

    def bad_queue_hook(q):
        raise ValueError("hook failed")

    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, idle_timeout=0.1, on_queue_stats=bad_queue_hook, on_error=errors.append)
        assert list(cap) == []
    assert len(errors) == 1 and isinstance(errors[0], ValueError) and "hook failed" in str(errors[0])
    assert cap.state == "closed" and cap.stats()["error"] is None


def test_capture_thread_runs_while_python_holds_the_gil():
    import sys

    n = 100
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter)
        old = sys.getswitchinterval()
        sys.setswitchinterval(100.0)  # no other Python thread gets the GIL meanwhile
        try:
            send(rx.port, n)
            end = time.monotonic() + 0.5
            while time.monotonic() < end:  # pure Python: the GIL is never released
                pass
            captured = cap.stats()["packets"]["captured"]
        finally:
            sys.setswitchinterval(old)
        cap.close()
    assert captured == n
