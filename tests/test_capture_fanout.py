"""Bounded fan-out of a live capture on the loopback device."""

from __future__ import annotations

import threading
import time

import pytest
from _live_util import LO, Receiver, live, payload, send, udp_payload, wait_until

import paclo

pytestmark = live


def check_branch_invariants(stats: dict) -> None:
    assert stats["schema_version"] == 1
    for b in stats["branches"].values():
        buf = b["buffer"]
        assert b["offered"] == b["enqueued"] + b["dropped"] + b["cancelled"]
        assert b["enqueued"] == b["delivered"] + b["abandoned"] + buf["depth"]
        assert 0 <= buf["depth"] <= buf["capacity"] and 0 <= buf["max_depth"] <= buf["capacity"]
        if buf["mode"] == "blocking":
            assert b["dropped"] == 0


def consume(branch, out: list, delay: float = 0.0, times: list | None = None) -> threading.Thread:
    def run() -> None:
        for pkt in branch:
            out.append(udp_payload(pkt))
            if delay:
                time.sleep(delay)
        if times is not None:
            times.append(time.monotonic())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_both_branches_get_every_packet_in_order():
    n = 300
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, idle_timeout=0.5)
        fo = paclo.fan_out(cap, branches={"a": {"mode": "blocking", "cap": 16}, "b": {"mode": "blocking"}})
        a, b = [], []
        tb = consume(fo["b"], b)
        send(rx.port, n)
        for pkt in fo["a"]:
            a.append(udp_payload(pkt))
        tb.join(10)
        s = fo.stats()
        fo.close()
    assert a == b == [payload(i) for i in range(n)]
    assert s["source"]["received"] == n and s["stop_reason"] == "source_exhausted" and s["state"] == "closed"
    assert s["branches"]["a"]["state"] == "completed" and s["branches"]["a"]["buffer"]["capacity"] == 16
    assert s["branches"]["b"]["buffer"]["capacity"] == 1024
    assert all(br["delivered"] == n for br in s["branches"].values())
    check_branch_invariants(s)
    cs = cap.stats()
    assert cs["packets"]["captured"] == n and cs["packets"]["processed"] == n
    assert cs["packets"]["decode_errors"] is None  # converted per branch, not observed here


def test_dropping_slow_branch_does_not_hold_back_the_fast_one():
    n = 300
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, idle_timeout=0.5)
        fo = paclo.fan_out(cap, branches={"fast": {"mode": "blocking"}, "slow": {"mode": "dropping", "cap": 4}})
        slow: list = []
        slow_done: list = []
        ts = consume(fo["slow"], slow, delay=0.01, times=slow_done)
        send(rx.port, n)
        fast = [udp_payload(p) for p in fo["fast"]]
        slow_seen_when_fast_done = len(slow)
        ts.join(20)
        s = fo.stats()
        fo.close()
    assert fast == [payload(i) for i in range(n)]
    # The fast branch finished while the slow consumer had handled only a few packets.
    assert slow_seen_when_fast_done < n // 4
    sb = s["branches"]["slow"]
    assert sb["dropped"] > 0 and sb["delivered"] + sb["dropped"] == n
    idx = [int(x[5:13]) for x in slow]
    assert idx == sorted(idx)
    assert s["branches"]["fast"]["buffer"]["blocked_events"] == 0
    check_branch_invariants(s)


def test_blocking_branch_backpressures_every_branch():
    n = 200
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter, idle_timeout=0.5)
        fo = paclo.fan_out(cap, branches={"slow": {"mode": "blocking", "cap": 2}, "other": {"mode": "dropping", "cap": 1024}})
        slow: list = []
        ts = consume(fo["slow"], slow, delay=0.002)
        send(rx.port, n)
        other = [udp_payload(p) for p in fo["other"]]
        ts.join(20)
        s = fo.stats()
        fo.close()
    assert slow == other == [payload(i) for i in range(n)]
    assert s["branches"]["slow"]["buffer"]["blocked_events"] > 0
    assert s["branches"]["other"]["dropped"] == 0
    check_branch_invariants(s)


def test_closing_branches_and_the_fanout():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter)
        fo = paclo.fan_out(cap, branches={"a": {"mode": "blocking"}, "b": {"mode": "dropping"}})
        a, b = fo["a"], fo["b"]
        send(rx.port, 5)
        assert udp_payload(next(b)) == payload(0)
        b.close()
        assert [udp_payload(next(a)) for _ in range(5)] == [payload(i) for i in range(5)]
        assert fo.stats()["branches"]["b"]["state"] == "closed"
        assert fo.stats()["state"] == "running"
        a.close()
        t0 = time.monotonic()
        assert list(a) == []
        fo.close()
        assert time.monotonic() - t0 < 5
        s = fo.stats()
    assert s["stop_reason"] == "no_branches"
    assert cap.state == "closed" and cap.stats()["stop_reason"] == "consumer"
    check_branch_invariants(s)


def test_close_while_backpressured_returns_promptly():
    with Receiver() as rx:
        cap = paclo.capture(LO, filter=rx.filter)
        fo = paclo.fan_out(cap, branches={"a": {"mode": "blocking", "cap": 2}, "b": {"mode": "blocking", "cap": 2}})
        send(rx.port, 50)
        deadline = time.monotonic() + 5
        while fo.stats()["branches"]["a"]["buffer"]["blocked_events"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        # A snapshot while the dispatcher waits for space holds the invariants too.
        blocked = fo.stats()
        assert blocked["branches"]["a"]["buffer"]["blocked_events"] > 0
        check_branch_invariants(blocked)
        t0 = time.monotonic()
        with fo:
            pass
        assert time.monotonic() - t0 < 5
        s = fo.stats()
    assert s["stop_reason"] == "closed" and s["state"] == "closed"
    assert all(b["state"] == "fanout_closed" and b["buffer"]["depth"] == 0 for b in s["branches"].values())
    assert cap.state == "closed"
    check_branch_invariants(s)


def test_fan_out_errors():
    with Receiver() as rx:
        with pytest.raises(ValueError, match="at least two branches"):
            paclo.fan_out(paclo.capture(LO, filter=rx.filter), branches={"a": {"mode": "blocking"}})
        with pytest.raises(ValueError, match="'mode'"):
            paclo.fan_out(paclo.capture(LO, filter=rx.filter), branches={"a": {}, "b": {"mode": "blocking"}})
        with pytest.raises(ValueError, match="'blocking', 'dropping'"):
            paclo.fan_out(paclo.capture(LO, filter=rx.filter), branches={"a": {"mode": "x"}, "b": {"mode": "blocking"}})
        with pytest.raises(ValueError, match="unknown keys"):
            paclo.fan_out(paclo.capture(LO, filter=rx.filter), branches={"a": {"mode": "blocking", "size": 3}, "b": {"mode": "blocking"}})
        with pytest.raises(TypeError):
            paclo.fan_out([1, 2], branches={"a": {"mode": "blocking"}, "b": {"mode": "blocking"}})
        with pytest.raises(ValueError, match="stop_when"):
            paclo.fan_out(paclo.capture(LO, filter=rx.filter, stop_when=bool), branches={"a": {"mode": "blocking"}, "b": {"mode": "blocking"}})
        cap = paclo.capture(LO, filter=rx.filter, duration=0.05)
        list(cap)
        with pytest.raises(RuntimeError, match="fresh capture"):
            paclo.fan_out(cap, branches={"a": {"mode": "blocking"}, "b": {"mode": "blocking"}})
        cap = paclo.capture(LO, filter=rx.filter)
        with paclo.fan_out(cap, branches={"a": {"mode": "blocking"}, "b": {"mode": "blocking"}}) as fo:
            fo["a"]
            with pytest.raises(RuntimeError, match="acquired once"):
                fo.branch("a")
            with pytest.raises(KeyError, match="unknown fan_out branch"):
                fo["zzz"]
            with pytest.raises(RuntimeError, match="fan_out"):
                next(cap)


def test_ctrl_c_reaches_a_branch_consumer_written_in_c(tmp_path):
    """``list(branch)`` runs no Python code between packets; the branch notices the signal,
    raises KeyboardInterrupt and closes the fan-out and the capture."""
    from _foundation_util import keyboard_interrupt_after

    from paclo.perf import datasets

    path = tmp_path / "big.pcap"
    datasets.generate("udp-64", 1_000_000, path)
    got: list = []
    cap = paclo.capture(path=path, queue_cap=65536)
    with paclo.fan_out(cap, branches={"a": {"mode": "blocking", "cap": 65536}, "b": {"mode": "dropping", "cap": 1}}) as fo:
        assert wait_until(lambda: fo.stats()["branches"]["a"]["buffer"]["depth"] == 65536, 10)
        with pytest.raises(KeyboardInterrupt), keyboard_interrupt_after(0.005):
            got.extend(fo["a"])
    assert 0 < len(got) < 1_000_000
    assert fo.stats()["stop_reason"] == "closed" and cap.state == "closed"
