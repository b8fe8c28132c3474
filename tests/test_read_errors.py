"""Every bad-input row of the reading error table (DESIGN §8), on files built here."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import warnings

import pytest
from _foundation_util import Ng, Rec, classic, udp_frame
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import paclo

RECS = [Rec(1_000_000_000 * i, udp_frame(53, bytes([i]) * 10)) for i in range(1, 4)]


def write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def format_error(path, **kw):
    with pytest.raises(paclo.PcapFormatError) as e:
        list(paclo.read(path, **kw))
    return e.value


def test_missing_file(tmp_path):
    p = tmp_path / "nope.pcap"
    with pytest.raises(FileNotFoundError) as e:
        paclo.read(p)
    assert e.value.filename == str(p)


def test_directory_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="directory"):
        paclo.read(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_fifo_is_refused_without_blocking(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    with pytest.raises(OSError, match="not a regular file"):
        paclo.read(p)


@pytest.mark.skipif(not hasattr(os, "geteuid"), reason="POSIX permissions")
def test_no_permission(tmp_path):
    p = write(tmp_path, "secret.pcap", classic(RECS))
    p.chmod(0)
    if os.geteuid() != 0:
        with pytest.raises(PermissionError, match=r"secret\.pcap"):
            paclo.read(p)
        return
    # Root ignores file modes: drop to an unprivileged user in a child process, after
    # importing paclo (the interpreter's own files may not be readable by that user).
    code = (
        "import os, sys, paclo\n"
        "os.setgid(65534); os.setuid(65534)\n"
        "try:\n    paclo.read(sys.argv[1])\n"
        "except PermissionError as e:\n    print('PermissionError', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True)
    assert out.stdout.startswith("PermissionError"), out.stdout + out.stderr
    assert "secret.pcap" in out.stdout


def test_empty_file(tmp_path):
    p = write(tmp_path, "empty.pcap", b"")
    with pytest.raises(paclo.PcapFormatError, match="empty file") as e:
        paclo.read(p)
    assert (e.value.path, e.value.index, e.value.offset) == (str(p), 0, 0)
    assert isinstance(e.value, ValueError) and isinstance(e.value, paclo.PacloError)


def test_bad_magic(tmp_path):
    p = write(tmp_path, "text.pcap", b"this is not a capture file at all")
    with pytest.raises(paclo.PcapFormatError, match="unknown magic number") as e:
        paclo.read(p)
    assert (e.value.path, e.value.offset) == (str(p), 0)
    assert str(p) in str(e.value)


@pytest.mark.parametrize("cut", [2, 10, 23])
def test_truncated_classic_file_header(tmp_path, cut):
    p = write(tmp_path, "short.pcap", classic(RECS)[:cut])
    with pytest.raises(paclo.PcapFormatError, match="truncated") as e:
        paclo.read(p)
    assert e.value.offset == 0


def test_truncated_pcapng_section_header(tmp_path):
    p = write(tmp_path, "short.pcapng", Ng().shb().bytes()[:20])
    with pytest.raises(paclo.PcapFormatError, match="truncated pcapng section header"):
        paclo.read(p)


def test_caplen_above_256k(tmp_path):
    data = bytearray(classic(RECS, snaplen=0))
    rec1 = 24 + 16 + len(RECS[0].data)
    struct.pack_into("<I", data, rec1 + 8, 256 * 1024 + 1)
    p = write(tmp_path, "huge.pcap", bytes(data))
    got = []
    with pytest.raises(paclo.PcapFormatError, match="exceeds the maximum of 262144") as e:
        for pkt in paclo.read(p):
            got.append(pkt.data)
    assert got == [RECS[0].data]
    assert (e.value.index, e.value.offset) == (1, rec1)
    assert f"record 1, byte offset {rec1}" in str(e.value)


def test_caplen_above_snaplen_strict_raises(tmp_path):
    p = write(tmp_path, "snap.pcap", classic(RECS, snaplen=40))
    err = format_error(p, strict=True)
    assert "exceeds the file's snaplen 40" in str(err)
    assert (err.index, err.offset) == (0, 24)


def test_caplen_above_snaplen_is_read_whole(tmp_path):
    p = write(tmp_path, "snap.pcap", classic(RECS, snaplen=40))
    r = paclo.read(p)
    with pytest.warns(paclo.OversizedRecordWarning, match="record 0 at byte offset 24 has caplen 52") as w:
        got = [x.data for x in r]
    assert got == [x.data for x in RECS] and len(w) == 1
    assert r.stats()["oversized_records"] == 3


def test_pcapng_caplen_above_interface_snaplen_strict_raises(tmp_path):
    ng = Ng().shb().idb(1, snaplen=10).epb(0, 1, b"a" * 10).epb(0, 2, b"b" * 11)
    got = []
    with pytest.raises(paclo.PcapFormatError, match="exceeds the snaplen 10 of interface 0") as e:
        for pkt in paclo.read(write(tmp_path, "snap.pcapng", ng.bytes()), strict=True):
            got.append(pkt.data)
    assert got == [b"a" * 10] and e.value.index == 3


def test_pcapng_caplen_above_interface_snaplen_is_read_whole(tmp_path):
    ng = Ng().shb().idb(1, snaplen=10).epb(0, 1, b"a" * 10).epb(0, 2, b"b" * 11)
    r = paclo.read(write(tmp_path, "snap.pcapng", ng.bytes()))
    with pytest.warns(paclo.OversizedRecordWarning, match="above the snaplen 10 of interface 0"):
        got = [x.data for x in r]
    assert got == [b"a" * 10, b"b" * 11]
    assert r.stats()["oversized_records"] == 1


def test_pcapng_inconsistent_block_length(tmp_path):
    ng = Ng().shb().idb(1).epb(0, 1, b"a" * 8).epb(0, 2, b"b" * 8)
    data = bytearray(ng.bytes())
    struct.pack_into("<I", data, len(data) - 4, 12345)
    p = write(tmp_path, "bad.pcapng", bytes(data))
    got = []
    with pytest.raises(paclo.PcapFormatError, match="inconsistent block length") as e:
        for pkt in paclo.read(p):
            got.append(pkt.data)
    assert got == [b"a" * 8]
    last = len(data) - (12 + 20 + 8)
    assert (e.value.index, e.value.offset) == (3, last)
    s_path = str(p)
    assert e.value.path == s_path


def test_pcapng_length_not_multiple_of_four(tmp_path):
    data = bytearray(Ng().shb().idb(1).epb(0, 1, b"a" * 8).bytes())
    struct.pack_into("<I", data, 28 + 4, 21)
    err = format_error(write(tmp_path, "bad4.pcapng", bytes(data)))
    assert "multiple of 4" in str(err) and (err.index, err.offset) == (1, 28)


def test_truncated_last_record_warns_after_every_packet(tmp_path):
    data = classic(RECS)[:-5]
    p = write(tmp_path, "cut.pcap", data)
    r = paclo.read(p)
    with pytest.warns(paclo.TruncatedCaptureWarning, match="truncated record 2") as w:
        got = [x.data for x in r]
    assert got == [RECS[0].data, RECS[1].data]
    assert len(w) == 1
    s = r.stats()
    assert s["truncated"] is True and s["state"] == "closed" and s["stop_reason"] == "eof"
    assert s["packets"]["processed"] == 2


def test_truncation_warning_points_at_the_consuming_line(tmp_path):
    """The warning names the user's line that consumed the file (the loop over the reader,
    the call of reduce), not a frame above it."""
    p = write(tmp_path, "cut.pcap", classic(RECS)[:-5])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        loop_line = sys._getframe().f_lineno + 1
        for _ in paclo.read(p):
            pass
        reduce_line = sys._getframe().f_lineno + 1
        paclo.reduce(lambda acc, _pkt: acc, 0, path=p)
    assert [(x.category, x.filename, x.lineno) for x in w] == [
        (paclo.TruncatedCaptureWarning, __file__, loop_line),
        (paclo.TruncatedCaptureWarning, __file__, reduce_line),
    ]


def test_truncated_record_header(tmp_path):
    data = classic(RECS)
    p = write(tmp_path, "cut.pcap", data[: len(data) - len(RECS[2].data) - 8])
    with pytest.warns(paclo.TruncatedCaptureWarning, match="need 16 bytes, have 8"):
        assert len(list(paclo.read(p))) == 2


def test_truncated_last_record_strict_raises(tmp_path):
    p = write(tmp_path, "cut.pcap", classic(RECS)[:-5])
    got = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = paclo.read(p, strict=True)
        with pytest.raises(paclo.PcapFormatError, match="truncated record 2") as e:
            for pkt in r:
                got.append(pkt)
    assert len(got) == 2
    assert e.value.index == 2
    s = r.stats()
    assert s["state"] == "failed" and s["stop_reason"] == "error"
    assert s["error"]["class"] == "PcapFormatError" and "truncated" in s["error"]["message"]


def test_truncated_pcapng_block(tmp_path):
    p = write(tmp_path, "cut.pcapng", Ng().shb().idb(1).epb(0, 1, b"a" * 8).epb(0, 2, b"b" * 8).bytes()[:-6])
    with pytest.warns(paclo.TruncatedCaptureWarning):
        assert [x.data for x in paclo.read(p)] == [b"a" * 8]


def test_reduce_truncated_warns_and_strict_raises(tmp_path):
    p = write(tmp_path, "cut.pcap", classic(RECS)[:-5])
    with pytest.warns(paclo.TruncatedCaptureWarning):
        acc, stats = paclo.reduce(lambda a, x: a + 1, 0, path=p, report=True)
    assert acc == 2 and stats["truncated"] is True
    with pytest.raises(paclo.PcapFormatError):
        paclo.reduce(lambda a, x: a + 1, 0, path=p, strict=True)


_HEADS = [b"", classic([]), classic([], big_endian=True, nanosecond=True), Ng().shb().idb(1).bytes(), Ng(True).shb().bytes()]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(head=st.sampled_from(_HEADS), tail=st.binary(max_size=400))
def test_arbitrary_bytes_read_or_raise_format_error(tmp_path, head, tail):
    p = tmp_path / "fuzz.bin"
    p.write_bytes(head + tail)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", paclo.TruncatedCaptureWarning)
            for pkt in paclo.read(p):
                assert pkt.caplen == len(pkt.data) <= 262144
    except paclo.PcapFormatError as e:
        # Any prefix may raise; the error must name the file and an offset inside it.
        assert e.path == str(p) and e.offset <= len(head + tail)  # noqa: PT017
