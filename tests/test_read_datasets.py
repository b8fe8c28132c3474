"""paclo.perf.datasets: deterministic cases, exact frames, sizes and timestamps."""

from __future__ import annotations

import hashlib
import struct

import pytest

import paclo
from paclo import _paclo
from paclo.perf import datasets


@pytest.mark.parametrize("case, count, nbytes", [("udp-64", 7, 448), ("tcp-512", 3, 1536), ("mixed", 5, 3 * 64 + 2 * 512)])
def test_generate_sizes_and_bytes(tmp_path, case, count, nbytes):
    p = tmp_path / f"{case}.pcap"
    info = datasets.generate(case, count, p)
    assert info == {"path": str(p), "packets": count, "bytes": nbytes, "file_size": 24 + 16 * count + nbytes}
    assert p.stat().st_size == info["file_size"] == datasets.expected_file_size(case, count)
    assert datasets.expected_bytes(case, count) == nbytes
    pkts = list(paclo.read(p))
    assert len(pkts) == count and sum(x.caplen for x in pkts) == nbytes
    assert [x.data for x in pkts] == [datasets.frame(case, i) for i in range(count)]


def test_header_and_timestamps(tmp_path):
    p = tmp_path / "u.pcap"
    datasets.generate("udp-64", 3, p)
    raw = p.read_bytes()
    assert struct.unpack("<IHHiIII", raw[:24]) == (0xA1B2C3D4, 2, 4, 0, 0, 65536, 1)
    assert [(x.ts_sec, x.ts_usec) for x in paclo.read(p)] == [(1_700_000_000, i) for i in range(3)]


def test_usec_wraps_at_one_million(tmp_path):
    p = tmp_path / "u.pcap"
    datasets.generate("udp-64", 1_000_002, p)
    last = list(paclo.read(p))[-2:]
    assert [(x.ts_sec, x.ts_usec) for x in last] == [(1_700_000_000, 0), (1_700_000_000, 1)]
    assert _paclo.count_packets(str(p)) == (1_000_002, 64 * 1_000_002)


def test_frame_templates_exact():
    udp = datasets.frame("udp-64", 0)
    assert udp.hex() == (
        "101112131415202122232425" "0800"
        "4500003200014000401100000a0000010a000002"
        "2ee014b4001e0000" + "00" * 22
    )
    tcp = datasets.frame("tcp-512", 0)
    assert tcp[:54].hex() == (
        "101112131415202122232425" "0800"
        "450001f200014000400600000a0000010a000002"
        "2ee001bb00000001000000005002ffff00000000"
    )
    assert tcp[54:] == bytes(512 - 54)
    assert [len(datasets.frame("mixed", i)) for i in range(4)] == [64, 512, 64, 512]


def test_deterministic(tmp_path):
    a, b = tmp_path / "a.pcap", tmp_path / "b.pcap"
    datasets.generate("mixed", 1000, a)
    datasets.generate("mixed", 1000, b)
    assert hashlib.sha256(a.read_bytes()).digest() == hashlib.sha256(b.read_bytes()).digest()


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="case must be 'udp-64', 'tcp-512' or 'mixed'"):
        datasets.generate("udp64", 1, tmp_path / "x.pcap")
    with pytest.raises(ValueError, match="count must be a non-negative integer"):
        datasets.expected_bytes("mixed", -1)
    with pytest.raises(TypeError):
        datasets.expected_file_size("mixed", 1.5)


@pytest.mark.parametrize("case", ["udp-64", "tcp-512", "mixed"])
def test_counts_whose_sizes_overflow_are_value_errors(case):
    """A count whose byte total does not fit in 64 bits is refused with a ValueError naming
    the count, never an arithmetic panic inside the extension."""
    for fn in (datasets.expected_bytes, datasets.expected_file_size):
        with pytest.raises(ValueError, match="count 4611686018427387904 is too large"):
            fn(case, 2**62)
    assert datasets.expected_file_size(case, 2**40) == 24 + 16 * 2**40 + datasets.expected_bytes(case, 2**40)


def test_native_loop_allocations_do_not_grow_with_packets(tmp_path):
    """The native loop (with and without a filter) allocates per call, never per packet."""
    small, big = tmp_path / "small.pcap", tmp_path / "big.pcap"
    datasets.generate("mixed", 1_000, small)
    datasets.generate("mixed", 200_000, big)
    for flt in (None, "udp"):
        _paclo.count_packets(str(small), filter=flt)  # warm up
        deltas = []
        for path in (small, big, small, big):
            a0, _ = _paclo.native_alloc_counts()
            _paclo.count_packets(str(path), filter=flt)
            a1, _ = _paclo.native_alloc_counts()
            deltas.append(a1 - a0)
        assert deltas[1] <= deltas[0] + 2 and deltas[3] <= deltas[2] + 2, (flt, deltas)
        assert max(deltas) < 100, (flt, deltas)


def test_generate_is_interruptible(tmp_path):
    """Ctrl-C (here a SIGALRM handler raising KeyboardInterrupt) stops a long generation
    from inside the native loop, and no partial dataset is left behind. ``list.extend`` over
    ``map`` calls the native generator and consumes its result in C, so a generation that
    ran to the end before the interrupt surfaced would leave its result in ``out``."""
    from _foundation_util import keyboard_interrupt_after

    p = tmp_path / "big.pcap"
    out: list = []
    with pytest.raises(KeyboardInterrupt), keyboard_interrupt_after(0.005):
        out.extend(map(_paclo.generate_dataset, ["udp-64"], [1_000_000], [str(p)]))
    assert out == []
    assert not p.exists()
