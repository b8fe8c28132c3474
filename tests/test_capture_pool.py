"""The managed capture's raw packets keep the capture's buffer instead of a copy, and give it back
when freed: bytes stay right however long a packet is kept, and a consumer that drops its packets
allocates no native buffer per packet. Traffic goes to a socket bound by the test."""

from __future__ import annotations

import gc
import pickle
import sys

import pytest
from _live_util import LO, Receiver, live, payload, send_async, udp_payload

import paclo
from paclo import _paclo

pytestmark = live


def _capture(rx: Receiver, n: int, *, size: int = 16, **kw):
    """A capture of the `n` datagrams a paced sender sends once the capture is ready."""
    senders = []

    def ready() -> None:
        senders.append(send_async(rx.port, n, size=size, pace_every=200, pace_s=0.002)[0])

    cap = paclo.capture(LO, filter=rx.filter, on_ready=ready, limit=n, idle_timeout=3.0, **kw)
    return cap, senders


def test_kept_packets_keep_their_bytes_while_buffers_are_reused():
    n = 3_000
    with Receiver() as rx:
        cap, senders = _capture(rx, n)
        kept = []
        with cap:
            for i, p in enumerate(cap):
                if i % 2 == 0:  # every other packet is kept, the rest give their buffer back
                    kept.append(p)
        for t in senders:
            t.join(10)
    assert len(kept) == n // 2
    assert [udp_payload(p) for p in kept] == [payload(i) for i in range(0, n, 2)]
    p = kept[-1]
    assert bytes(memoryview(p)) == bytes(p) == p.data and len(p) == p.caplen == len(p.data)
    assert pickle.loads(pickle.dumps(p)) == p
    assert p.decode()["caplen"] == p.caplen


def test_small_packets_after_a_large_one_are_right():
    """A buffer that once held a large packet is not kept by a small one (its bytes are copied
    out and the buffer goes back), and the bytes are right either way."""
    with Receiver() as rx:
        sizes = [4_000 if i % 50 == 0 else 16 for i in range(400)]

        def ready() -> None:
            import socket
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            for i, size in enumerate(sizes):
                tx.sendto(payload(i, size), ("127.0.0.1", rx.port))
            tx.close()

        with paclo.capture(LO, filter=rx.filter, on_ready=ready, limit=len(sizes), idle_timeout=3.0) as cap:
            got = list(cap)
    assert [udp_payload(p) for p in got] == [payload(i, s) for i, s in enumerate(sizes)]


def test_a_consumer_that_drops_its_packets_allocates_no_buffer_per_packet():
    n, warm_up = 20_000, 2_000
    with Receiver() as rx:
        cap, senders = _capture(rx, n, queue_cap=64)
        seen = 0
        before = None
        with cap:
            for p in cap:
                seen += 1
                if seen == warm_up:
                    before = _paclo.native_alloc_counts()[0]
                del p
            after = _paclo.native_alloc_counts()[0]
        for t in senders:
            t.join(10)
    assert seen == n
    assert before is not None
    # Buffers are made only while the pools fill (queue, batch, spares): a bound set by the
    # queue, far below one per packet.
    assert after - before <= 400, f"{after - before} native allocations over {n - warm_up} packets"


def test_a_kept_packet_is_one_python_object():
    """The bytes of a kept raw packet are not a second Python object until `data` is read."""
    n = 2_000
    with Receiver() as rx:
        cap, senders = _capture(rx, n)
        gc.collect()
        gc.disable()
        try:
            before = sys.getallocatedblocks()
            with cap:
                kept = list(cap)
            held = sys.getallocatedblocks() - before
        finally:
            gc.enable()
        for t in senders:
            t.join(10)
    assert len(kept) == n
    assert held < 1.5 * n, f"{held} Python blocks held for {n} packets"
    datas = [p.data for p in kept]  # now each packet has its bytes object
    assert sys.getallocatedblocks() - before >= held + n * 0.9
    assert datas[0] is kept[0].data


@pytest.mark.parametrize("decode", ["flow", "full"])
def test_decoded_captures_are_unchanged(decode):
    n = 300
    with Receiver() as rx:
        cap, senders = _capture(rx, n, decode=decode)
        with cap:
            got = list(cap)
        for t in senders:
            t.join(10)
    assert len(got) == n and all(isinstance(d, dict) for d in got)
