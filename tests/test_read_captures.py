"""Files shaped like real captures: records longer than the snaplen are read whole, as
tshark reads them (libpcap cuts or rejects them)."""

from __future__ import annotations

import warnings

import pyarrow as pa
import pytest
from _captures_util import (
    BIG_FRAME,
    OVERSIZED_AT,
    PACKETS,
    oversized_pcap,
    oversized_pcapng,
    oversized_records,
    tshark,
    tshark_fields,
)
from _foundation_util import libpcap_read

import paclo

FILES = {"pcap": oversized_pcap, "pcapng": oversized_pcapng}


@pytest.fixture(params=sorted(FILES))
def oversized(tmp_path, request):
    p = tmp_path / f"big.{request.param}"
    p.write_bytes(FILES[request.param]())
    return p


def test_every_packet_is_delivered_whole(oversized):
    r = paclo.read(oversized)
    with pytest.warns(paclo.OversizedRecordWarning) as w:
        got = list(r)
    assert len(w) == 1
    assert f"has caplen {BIG_FRAME}, above the" in str(w[0].message) and "65535" in str(w[0].message)
    assert len(got) == PACKETS
    assert [(p.caplen, p.wirelen, p.data) for p in got] == [(len(x.data), len(x.data), x.data) for x in oversized_records()]
    s = r.stats()
    assert s["oversized_records"] == 1 and s["truncated"] is False and s["stop_reason"] == "eof"
    assert s["packets"]["processed"] == PACKETS


def test_strict_raises_at_the_oversized_record(oversized):
    got: list[paclo.Packet] = []
    with pytest.raises(paclo.PcapFormatError, match="exceeds the") as e:
        got.extend(paclo.read(oversized, strict=True))  # keeps the packets before the error
    assert len(got) == OVERSIZED_AT
    assert str(BIG_FRAME) in str(e.value)


def test_decode_reduce_and_flow_paths_read_to_the_end(oversized):
    with pytest.warns(paclo.OversizedRecordWarning):
        maps = list(paclo.read(oversized, decode="full"))
    big = maps[OVERSIZED_AT]
    assert big["caplen"] == BIG_FRAME and "decode_error" not in big
    assert big["decoded"]["l3"]["total_length"] == 65535
    assert big["decoded"]["l3"]["l4"]["data_len"] == 65535 - 40
    with pytest.warns(paclo.OversizedRecordWarning):
        n, stats = paclo.reduce(lambda a, _p: a + 1, 0, path=oversized, report=True)
    assert n == PACKETS and stats["oversized_records"] == 1
    assert paclo._paclo.count_packets(str(oversized)) == (PACKETS, sum(len(x.data) for x in oversized_records()))
    with pytest.warns(paclo.OversizedRecordWarning):
        t = pa.table(paclo.project(oversized))
    assert t.num_rows == PACKETS
    assert t.column("caplen")[OVERSIZED_AT].as_py() == BIG_FRAME
    with pytest.warns(paclo.OversizedRecordWarning):
        f = pa.table(paclo.flows(oversized))
    assert sum(f.column("packets").to_pylist()) == PACKETS
    with pytest.warns(paclo.OversizedRecordWarning) as w:
        rows = sum(b.num_rows for b in paclo.read_batches(oversized, batch_size=100))
    assert rows == PACKETS and len(w) == 1


def test_one_warning_per_file_for_a_list(tmp_path):
    paths = []
    for i in range(3):
        p = tmp_path / f"{i}.pcap"
        p.write_bytes(oversized_pcap())
        paths.append(p)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = pa.table(paclo.project(paths))
    assert t.num_rows == 3 * PACKETS
    msgs = [str(x.message) for x in w if x.category is paclo.OversizedRecordWarning]
    assert len(msgs) == 3 and all(str(p) in m for p, m in zip(paths, msgs, strict=True))


def test_libpcap_cuts_or_rejects_what_paclo_reads_whole(oversized):
    """The comparison the behaviour was chosen against: libpcap 1.10 cuts a classic record
    to the snaplen and stops a pcapng file at it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", paclo.OversizedRecordWarning)
        ours = [(p.caplen, p.wirelen, p.data) for p in paclo.read(oversized)]
    if oversized.suffix == ".pcap":
        rows, _ = libpcap_read(str(oversized))
        assert len(rows) == PACKETS
        theirs = [(c, w, d) for _ts, c, w, d in rows]
        assert theirs[OVERSIZED_AT][:2] == (65535, BIG_FRAME)
        assert theirs[OVERSIZED_AT][2] == ours[OVERSIZED_AT][2][:65535]
        assert theirs[:OVERSIZED_AT] + theirs[OVERSIZED_AT + 1:] == ours[:OVERSIZED_AT] + ours[OVERSIZED_AT + 1:]
    else:
        with pytest.raises(OSError, match="bigger than snaplen"):
            libpcap_read(str(oversized))


@pytest.mark.skipif(tshark() is None, reason="tshark is installed by .ci/run")
def test_same_frames_and_lengths_as_tshark(oversized):
    rows = tshark_fields(str(oversized), "frame.cap_len", "frame.len", "ip.len", "tcp.seq_raw")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", paclo.OversizedRecordWarning)
        ours = [
            [str(m["caplen"]), str(m["len"]), str(m["decoded"]["l3"]["total_length"]), str(m["decoded"]["l3"]["l4"]["seq"])]
            for m in paclo.read(oversized, decode="full")
        ]
    assert len(rows) == PACKETS
    assert ours == rows


def test_capture_of_a_file_reads_and_warns_alike(oversized):
    cap = paclo.capture(path=oversized)
    with pytest.warns(paclo.OversizedRecordWarning, match=f"has caplen {BIG_FRAME}") as w:
        got = [p.data for p in cap]
    assert len(w) == 1
    assert got == [x.data for x in oversized_records()]
    s = cap.stats()
    assert s["oversized_records"] == 1 and s["packets"]["captured"] == PACKETS
