"""A reader reuses a Packet object nothing else holds any more (see MappedPackets in
src/python/convert/packet.rs): whatever a consumer keeps (the packet, its bytes, a view of
it) reads as the packet it was, however the loop goes on."""

from __future__ import annotations

import collections
import pathlib
import pickle

import pytest
from _foundation_util import Ng, Rec, classic, tcp_frame, udp_frame

import paclo

# Lengths below and above 256 (CPython's own small ints) and above 65,535 bytes (past the
# shared ints), wirelen beside caplen, timestamps that differ in every field.
RECS = [
    Rec(1_700_000_000_000_000_000 + i * 1_000_003_000, frame, wirelen=None if i % 3 else len(frame) + i)
    for i, frame in enumerate(
        [
            udp_frame(53, b"a"),
            tcp_frame(443),
            udp_frame(54, bytes(range(256)) * 2),
            udp_frame(55, b"z" * 1400),
            udp_frame(56),
            b"\xee" * 70_000,
            tcp_frame(80),
            udp_frame(58, b"b" * 300),
        ]
        * 3
    )
]


def fields(p: paclo.Packet) -> tuple:
    return (p.ts_ns, p.ts, p.caplen, p.wirelen, p.linktype, len(p), p.data, bytes(p), repr(p))


def expected() -> list[tuple]:
    return [
        (r.ts_ns, r.ts_ns / 1e9, len(r.data), len(r.data) if r.wirelen is None else r.wirelen, 1, len(r.data), r.data)
        for r in RECS
    ]


@pytest.fixture
def path(tmp_path: pathlib.Path) -> pathlib.Path:
    p = tmp_path / "reuse.pcap"
    p.write_bytes(classic(RECS, nanosecond=True, snaplen=262144))
    return p


def test_a_loop_that_drops_its_packets_reads_each_packet(path):
    got = [fields(p) for p in paclo.read(path)]
    assert [g[:7] for g in got] == expected()
    kept = list(paclo.read(path))
    assert got == [fields(p) for p in kept]


def test_packets_kept_in_any_pattern_keep_their_values(path):
    want = [fields(p) for p in list(paclo.read(path))]
    for every in (1, 2, 3, 5):
        kept = {}
        for i, p in enumerate(paclo.read(path)):
            if i % every == 0:
                kept[i] = p
            fields(p)  # reads (and caches) the bytes of every packet
        assert {i: fields(p) for i, p in kept.items()} == {i: want[i] for i in kept}


def test_what_a_consumer_keeps_of_a_dropped_packet_stays_valid(path):
    want = expected()
    datas, pickles, copies = [], [], []
    for p in paclo.read(path):
        datas.append(p.data)
        pickles.append(pickle.dumps(p))
        copies.append((hash(p), paclo.Packet(p.data, p.ts_ns, p.wirelen, p.linktype)))
    assert datas == [w[6] for w in want]
    assert [fields(pickle.loads(b))[:7] for b in pickles] == want
    for (h, copy), p in zip(copies, paclo.read(path), strict=True):
        assert copy == p and h == hash(p)


def test_views_keep_their_packets(path):
    import numpy as np

    views, arrays = [], []
    for i, p in enumerate(paclo.read(path)):
        # A packet held only by a view of it, one by an array, one dropped (reused).
        if i % 3 == 1:
            views.append(memoryview(p))
        elif i % 3 == 2:
            arrays.append(np.frombuffer(p, dtype=np.uint8))
    want = [w[6] for w in expected()]
    assert [v.tobytes() for v in views] == want[1::3]
    assert [a.tobytes() for a in arrays] == want[2::3]


def test_views_released_inside_the_loop(path):
    # A view keeps its packet from being reused while it lives; released, the packet may be.
    for p, w in zip(paclo.read(path), expected(), strict=True):
        with memoryview(p) as v:
            assert v.tobytes() == w[6]
        assert p.data == w[6]


def test_next_by_hand_and_interleaved_readers(path):
    a, b = paclo.read(path), paclo.read(path)
    got_a, got_b = [], []
    for _ in range(len(RECS)):
        got_a.append(fields(next(a)))
        x = next(b)
        got_b.append(fields(x))
        del x
    assert got_a == got_b
    assert [g[:7] for g in got_a] == expected()
    with pytest.raises(StopIteration):
        next(a)


def test_a_dropped_packet_is_the_object_reused(path):
    # The reuse itself: the first packet, dropped, is the third one handed out.
    r = paclo.read(path)
    first = next(r)
    first_id = id(first)
    del first
    second = next(r)
    third = next(r)
    assert id(third) == first_id and id(second) != first_id
    assert fields(third)[:7] == expected()[2]


def test_packets_survive_close_and_the_end(path):
    r = paclo.read(path)
    (last,) = collections.deque(r, maxlen=1)  # consumed in C, the last packet kept
    r.close()
    assert fields(last)[:7] == expected()[-1]
    with paclo.read(path) as r:
        p = next(r)
        q = next(r)
    assert fields(p)[:7] == expected()[0] and fields(q)[:7] == expected()[1]


def test_reduce_reuses_dropped_packets_and_keeps_kept_ones(path):
    want = expected()
    rows = paclo.reduce(lambda acc, p: [*acc, fields(p)[:7]], [], path=path)
    assert rows == want
    kept = paclo.reduce(lambda acc, p: [*acc, p] if p.caplen % 2 == 0 else acc, [], path=path)
    assert [fields(p)[:7] for p in kept] == [w for w in want if w[2] % 2 == 0]
    last = paclo.reduce(lambda acc, p: p, None, path=path)
    assert fields(last)[:7] == want[-1]


def test_pcapng_and_filtered_reads(tmp_path):
    ng = Ng().shb().idb(1, tsresol=9)
    frames = [udp_frame(53, b"x" * n) for n in (1, 300, 2000)] + [tcp_frame(443)] * 2
    for i, f in enumerate(frames):
        ng.epb(0, 1_000 + i, f)
    p = tmp_path / "ng.pcapng"
    p.write_bytes(ng.bytes())
    assert [(q.ts_ns, q.data) for q in paclo.read(p)] == [(1_000 + i, f) for i, f in enumerate(frames)]
    assert [q.caplen for q in paclo.read(p, filter="tcp")] == [len(tcp_frame(443))] * 2
