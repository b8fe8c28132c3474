"""Link types 228 (DLT_IPV4) and 229 (DLT_IPV6): raw IP of one version, through the
decoder, the flow fast path, BPF and the writer."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from _captures_util import tshark_fields
from _decoder_util import ipv4, ipv6, tcp, udp

import paclo

V4 = ipv4(17, udp(5353, 53, b"\x12\x34\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00"))
V6 = ipv6(6, tcp(443, 40000, 0x12))


@pytest.mark.parametrize("linktype,name,frame,l3", [
    (228, "raw_ipv4", V4, "ipv4"),
    (229, "raw_ipv6", V6, "ipv6"),
])
def test_decode(linktype, name, frame, l3):
    for lt in (linktype, name):
        m = paclo.decode(frame, linktype=lt)
        assert "decode_error" not in m, m["decode_error"]
        dec = m["decoded"]
        assert dec["type"] == name and dec["src"] is None and dec["dst"] is None
        assert dec["eth"] == (0x0800 if l3 == "ipv4" else 0x86DD)
        assert dec["l3"]["type"] == l3
        assert dec["l3"]["flow_key"]["src_port"] in (5353, 443)


def test_cut_header_names_the_link_types_ip_version():
    assert paclo.decode(b"", linktype=228)["decode_error"] == "truncated IPv4 header: need 20 bytes, have 0 at offset 0"
    assert paclo.decode(b"\x60" + bytes(10), linktype=229)["decode_error"] == (
        "truncated IPv6 header: need 40 bytes, have 11 at offset 0"
    )


@pytest.fixture
def files(tmp_path):
    out = {}
    for linktype, frame in ((228, V4), (229, V6)):
        p = tmp_path / f"lt{linktype}.pcap"
        n = paclo.write_pcap(p, [{"data": frame, "ts_ns": 1_700_000_000_000_000_000 + i} for i in range(3)],
                             linktype=linktype)
        assert n == 3
        out[linktype] = p
    return out


def test_writer_reader_round_trip(files):
    for linktype, frame in ((228, V4), (229, V6)):
        with paclo.read(files[linktype]) as r:
            pkts = list(r)
            assert r.linktype == linktype
        assert [(p.linktype, p.data) for p in pkts] == [(linktype, frame)] * 3
        # A packet read from the file writes back to a file of the same link type.
        again = files[linktype].with_suffix(".again.pcap")
        assert paclo.write_pcap(again, pkts, linktype=linktype) == 3
        assert [p.data for p in paclo.read(again)] == [frame] * 3


def test_flow_projection_and_dicts(files):
    t = pa.table(paclo.project(files[228]))
    assert t.num_rows == 3
    row = t.slice(0, 1).to_pylist()[0]
    assert (row["ip_version"], row["protocol"], row["src_port"], row["dst_port"]) == (4, 17, 5353, 53)
    t = pa.table(paclo.project(files[229]))
    row = t.slice(0, 1).to_pylist()[0]
    assert (row["ip_version"], row["protocol"], row["src_port"], row["dst_port"]) == (6, 6, 443, 40000)
    d = next(iter(paclo.read(files[229], decode="flow")))
    assert (d["ip_version"], d["protocol"], d["src_port"]) == (6, 6, 443) and "decode_error" not in d
    f = pa.table(paclo.flows(files[228]))
    assert f.num_rows == 1 and f.column("packets")[0].as_py() == 3


# None: libpcap compiles the expression to a program that rejects every packet of the link
# type and reports that as an error ("expression rejects all packets"), as tcpdump shows.
@pytest.mark.parametrize("expr,n228,n229", [
    ("udp", 3, 0),
    ("tcp", 0, 3),
    ("ip", 3, None),
    ("ip6", None, 3),
    ("port 53", 3, 0),
    ("ip host 10.0.0.1", 3, None),
    ("tcp port 443", 0, 3),
])
def test_bpf(files, expr, n228, n229):
    for lt, n in ((228, n228), (229, n229)):
        if n is None:
            with pytest.raises(ValueError, match="rejects all packets"):
                paclo.read(files[lt], filter=expr)
        else:
            assert len(list(paclo.read(files[lt], filter=expr))) == n


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is installed by .ci/run")
def test_tshark_reads_the_written_files_the_same(files):
    assert tshark_fields(str(files[228]), "ip.src", "udp.srcport", "udp.dstport") == [["10.0.0.1", "5353", "53"]] * 3
    assert tshark_fields(str(files[229]), "ipv6.src", "tcp.srcport", "tcp.flags") == [
        ["2001:db8::1", "443", "0x0012"]
    ] * 3
