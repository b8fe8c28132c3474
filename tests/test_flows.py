"""project, flows, flow_topn, read_batches and ip_to_str against an independent
pure-Python computation."""

from __future__ import annotations

import ipaddress
import warnings

import pyarrow as pa
import pytest
from _flows_util import (
    MAPPED,
    eth,
    frag_ext,
    ipv4,
    ipv6,
    mixed_packets,
    opts_ext,
    ref_flows,
    ref_project,
    tcp,
    udp,
    write_pcap,
)

import paclo

PROJECTION_COLUMNS = ["ts_ns", "caplen", "len", "ip_version", "protocol", "src_ip", "dst_ip",
                      "src_port", "dst_port", "vlan_id", "tcp_flags"]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    pkts = mixed_packets()
    path = write_pcap(tmp_path_factory.mktemp("flows") / "mixed.pcap", pkts)
    return path, pkts


def test_projection_equals_reference_row_by_row(mixed):
    path, pkts = mixed
    table = paclo.project(path)
    assert table.column_names == PROJECTION_COLUMNS
    assert table.schema.field("src_ip").type == pa.binary(16)
    rows = table.to_pylist()
    assert len(rows) == len(pkts)
    kinds = set()
    for (ts, frame, wirelen), row in zip(pkts, rows, strict=True):
        expected = ref_project(1, frame)
        expected.update(ts_ns=ts // 1000 * 1000, caplen=len(frame), len=wirelen)
        assert row == expected, frame.hex()
        kinds.add((row["ip_version"], row["protocol"], row["src_port"] is None, row["vlan_id"] is None))
    # The mix really holds non-IP rows, ports and port-less rows, VLANs, both versions.
    assert (None, None, True, True) in kinds
    assert {k[0] for k in kinds} == {None, 4, 6}
    assert {k[1] for k in kinds} >= {1, 6, 17, 50, 58}
    assert any(not k[3] for k in kinds)


@pytest.mark.parametrize("bidirectional", [False, True])
def test_flows_equal_reference(mixed, bidirectional):
    path, pkts = mixed
    upkts = [(ts // 1000 * 1000, f, w) for ts, f, w in pkts]
    table = paclo.flows(path, bidirectional=bidirectional)
    expected = ref_flows(upkts, bidirectional=bidirectional)
    assert table.to_pylist() == expected
    assert len(expected) > 20
    md = table.schema.metadata
    assert int(md[b"paclo.packets_total"]) == len(pkts)
    unkeyed = sum(1 for _, f, _ in pkts if ref_project(1, f)["protocol"] is None)
    assert int(md[b"paclo.packets_not_aggregated"]) == unkeyed > 0
    if bidirectional:
        assert "src2dst_packets" in table.column_names and "expiration_reason" not in table.column_names
        assert any(r["src2dst_packets"] and r["dst2src_packets"] for r in expected)


@pytest.mark.parametrize("idle,active", [(0.5, None), (None, 1.0), (0.3, 2.0)])
def test_timeouts_split_flows_like_reference(mixed, idle, active):
    path, pkts = mixed
    upkts = [(ts // 1000 * 1000, f, w) for ts, f, w in pkts]
    table = paclo.flows(path, bidirectional=True, idle_timeout=idle, active_timeout=active)
    expected = ref_flows(upkts, bidirectional=True,
                         idle_ns=None if idle is None else int(idle * 1e9),
                         active_ns=None if active is None else int(active * 1e9))
    assert table.to_pylist() == expected
    reasons = {r["expiration_reason"] for r in expected}
    assert len(expected) > len(ref_flows(upkts, bidirectional=True))
    assert reasons >= ({"idle"} if idle else {"active"})


def test_timeouts_split_exactly_where_expected(tmp_path):
    f = eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(1000, 53)))
    s = 1_000_000_000
    pkts = [(0, f, 60), (1 * s, f, 60), (5 * s, f, 60), (6 * s, f, 60), (7 * s, f, 60)]
    path = write_pcap(tmp_path / "t.pcap", pkts)
    rows = paclo.flows(path, idle_timeout=2).to_pylist()
    assert [(r["packets"], r["first_ts_ns"], r["expiration_reason"]) for r in rows] == [
        (2, 0, "idle"), (3, 5 * s, "end")]
    rows = paclo.flows(path, active_timeout=5.5).to_pylist()
    assert [(r["packets"], r["duration_ns"], r["expiration_reason"]) for r in rows] == [
        (3, 5 * s, "active"), (2, s, "end")]
    plain = paclo.flows(path)
    assert "expiration_reason" not in plain.column_names and plain.num_rows == 1


def test_list_of_paths_parallel_equals_sequential(tmp_path, mixed):
    _, pkts = mixed
    parts = [write_pcap(tmp_path / f"p{i}.pcap", pkts[i::3]) for i in range(3)]
    one = write_pcap(tmp_path / "all.pcap", [p for i in range(3) for p in pkts[i::3]])
    assert paclo.project(parts).equals(paclo.project(one))
    for bidi in (False, True):
        assert paclo.flows(parts, bidirectional=bidi).to_pylist() == paclo.flows(one, bidirectional=bidi).to_pylist()
    assert paclo.flows(parts, idle_timeout=0.5).to_pylist() == paclo.flows(one, idle_timeout=0.5).to_pylist()
    assert paclo.flow_topn(parts, 5, filter=None) == paclo.flow_topn(one, 5, filter=None)


def test_ipv6_extension_headers_and_fragments(tmp_path):
    pkts = [
        (0, eth(0x86DD, ipv6("2001:db8::1", "2001:db8::2", 17, udp(5, 6),
                             [(0, opts_ext()), (43, opts_ext(2)), (44, frag_ext(0, True)), (60, opts_ext())]))),
        (1000, eth(0x86DD, ipv6("2001:db8::1", "2001:db8::2", 17, b"\x00" * 16, [(44, frag_ext(100, False))]))),
        (2000, eth(0x0800, ipv4(6, "10.1.1.1", "10.2.2.2", tcp(80, 81, 0x12), frag=0x2000))),
        (3000, eth(0x0800, ipv4(6, "10.1.1.1", "10.2.2.2", b"\x00" * 20, frag=0x0004))),
        (4000, eth(0x86DD, ipv6("2001:db8::1", "2001:db8::2", 6, tcp(1, 2, 0x02), [(0, opts_ext()), (0, opts_ext())]))),
    ]
    rows = paclo.project(write_pcap(tmp_path / "x.pcap", pkts)).to_pylist()
    assert [(r["ip_version"], r["protocol"], r["src_port"], r["dst_port"]) for r in rows] == [
        (6, 17, 5, 6), (6, 17, None, None), (4, 6, 80, 81), (4, 6, None, None), (6, None, None, None)]


def test_flow_topn_rows_ties_and_ipv6_text(tmp_path):
    a = eth(0x0800, ipv4(17, "10.0.0.1", "8.8.8.8", udp(5000, 53)))
    b = eth(0x0800, ipv4(17, "10.0.0.9", "8.8.4.4", udp(5000, 53)))
    c = eth(0x86DD, ipv6("2001:db8:0:0:0:0:0:1", "2001:db8::53", 6, tcp(40000, 443, 0x18)))
    d = eth(0x86DD, ipv6("2001:db8::53", "2001:db8::1", 6, tcp(443, 40000, 0x10)))
    pkts = [(i * 1000, f) for i, f in enumerate([b, a, c, a, b, d, c, c])]
    path = write_pcap(tmp_path / "t.pcap", pkts)
    top = paclo.flow_topn(path, 3, filter=None)
    assert top == [
        {"flow": {"proto": "tcp", "src": "[2001:db8::1]:40000", "dst": "[2001:db8::53]:443"}, "packets": 3,
         "bytes": 3 * len(c)},
        {"flow": {"proto": "udp", "src": "10.0.0.1:5000", "dst": "8.8.8.8:53"}, "packets": 2, "bytes": 2 * len(a)},
        {"flow": {"proto": "udp", "src": "10.0.0.9:5000", "dst": "8.8.4.4:53"}, "packets": 2, "bytes": 2 * len(b)},
    ]
    bi = paclo.flow_topn(path, 1, bidirectional=True, by="bytes", filter=None)
    assert bi[0]["packets"] == 4 and bi[0]["flow"]["src"] == "[2001:db8::1]:40000"
    assert paclo.flow_topn(path, 0, filter=None) == []
    with pytest.raises(ValueError, match="by must be 'packets' or 'bytes'"):
        paclo.flow_topn(path, by="flows", filter=None)
    with pytest.raises(ValueError, match="n must be"):
        paclo.flow_topn(path, -1, filter=None)


def test_read_batches(tmp_path, mixed):
    _, pkts = mixed
    path = write_pcap(tmp_path / "b.pcap", pkts)
    batches = list(paclo.read_batches(path, batch_size=64))
    assert [b.num_rows for b in batches] == [64] * (len(pkts) // 64) + ([len(pkts) % 64] if len(pkts) % 64 else [])
    assert batches[0].schema.names == ["ts_ns", "caplen", "wirelen", "data"]
    rows = pa.Table.from_batches(batches).to_pylist()
    assert [(r["ts_ns"], r["data"], r["wirelen"], r["caplen"]) for r in rows] == [
        (ts // 1000 * 1000, f, w, len(f)) for ts, f, w in pkts]
    with pytest.raises(ValueError, match="batch_size"):
        paclo.read_batches(path, batch_size=0)


def test_truncated_file_warns_and_keeps_packets(tmp_path, mixed):
    _, pkts = mixed
    path = write_pcap(tmp_path / "cut.pcap", pkts[:10])
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t = paclo.project(path)
    assert t.num_rows == 9
    assert any(issubclass(x.category, paclo.TruncatedCaptureWarning) for x in w)
    batches = paclo.read_batches(path, batch_size=100)
    first = next(batches)
    assert first.num_rows == 9
    with pytest.raises(Exception, match=r"(?i)truncat"):
        next(batches)


def test_errors_name_the_problem(tmp_path):
    missing = tmp_path / "nope.pcap"
    with pytest.raises(FileNotFoundError):
        paclo.project(missing)
    with pytest.raises(FileNotFoundError):
        paclo.flows([missing])
    with pytest.raises(ValueError, match="at least one"):
        paclo.flows([])
    with pytest.raises(TypeError, match="source must be"):
        paclo.project(42)
    good = write_pcap(tmp_path / "g.pcap", [(0, eth(0x0806, b"\x00" * 28))])
    with pytest.raises(ValueError, match="idle_timeout"):
        paclo.flows(good, idle_timeout=-1)
    with pytest.raises(TypeError, match="active_timeout"):
        paclo.flows(good, active_timeout="5")
    with pytest.raises(TypeError, match="bidirectional"):
        paclo.flows(good, bidirectional="yes")
    with pytest.raises(TypeError):
        paclo.flows(good, True)  # options are keyword-only
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture file at all, really")
    with pytest.raises(paclo.PcapFormatError):
        paclo.flows(bad)


def test_ip_to_str_inputs(mixed):
    path, _ = mixed
    t = paclo.project(path)
    col = t.column("src_ip")
    versions = t.column("ip_version")
    text = paclo.ip_to_str(col, versions)
    assert isinstance(text, pa.ChunkedArray) and text.type == pa.string()
    for addr, v, s in zip(col.to_pylist(), versions.to_pylist(), text.to_pylist(), strict=True):
        if addr is None:
            assert s is None
        elif v == 4:
            assert s == str(ipaddress.IPv4Address(addr[12:]))
        else:
            assert s == str(ipaddress.IPv6Address(addr))
    arr = col.combine_chunks()
    assert paclo.ip_to_str(arr).to_pylist() == paclo.ip_to_str(col).to_pylist()
    pd = pytest.importorskip("pandas")
    series = t.to_pandas()["dst_ip"]
    out = paclo.ip_to_str(series)
    assert isinstance(out, pd.Series) and list(out.index) == list(series.index)
    assert out.tolist() == paclo.ip_to_str(t.column("dst_ip")).to_pylist()
    np = pytest.importorskip("numpy")
    raw = np.array([MAPPED + bytes([10, 0, 0, 0]), ipaddress.IPv6Address("2001:db8::").packed], dtype="S16")
    assert paclo.ip_to_str(raw).tolist() == ["10.0.0.0", "2001:db8::"]
    assert paclo.ip_to_str(MAPPED + bytes([1, 2, 3, 4])) == "1.2.3.4"
    assert paclo.ip_to_str(MAPPED + bytes([1, 2, 3, 4]), version=6) == "::ffff:1.2.3.4"
    assert paclo.ip_to_str([None, bytes(15) + b"\x01"]) == [None, "::1"]
    with pytest.raises(ValueError, match="an address is 16 bytes, got 4"):
        paclo.ip_to_str(b"\x00" * 4)


def test_read_decode_flow_dict(mixed):
    path, pkts = mixed
    n = 0
    for (ts, frame, wirelen), d in zip(pkts, paclo.read(path, decode="flow"), strict=True):
        exp = ref_project(1, frame)
        assert list(d)[:10] == ["ts_sec", "ts_usec", "caplen", "len", "ip_version", "protocol", "src_ip",
                                "dst_ip", "src_port", "dst_port"]
        assert (d["ts_sec"], d["ts_usec"]) == (ts // 10**9, ts % 10**9 // 1000)
        assert (d["caplen"], d["len"]) == (len(frame), wirelen)
        for k in ("ip_version", "protocol", "src_ip", "dst_ip", "src_port", "dst_port"):
            assert d[k] == exp[k], (k, frame.hex())
        if len(frame) < 14:
            assert "truncated" in d["decode_error"]
        n += 1
    assert n == len(pkts)


def test_filter_and_reader_sources(mixed, tmp_path):
    path, pkts = mixed
    upkts = [(ts // 1000 * 1000, f, w) for ts, f, w in pkts]
    # The packets libpcap keeps, as the filtered reader yields them.
    kept = [(p.ts_ns, p.data, p.wirelen) for p in paclo.read(path, filter="udp")]
    assert 0 < len(kept) < len(upkts)
    got = paclo.flows(path, filter="udp").to_pylist()
    assert got == ref_flows(kept)
    assert paclo.project(path, filter="udp").num_rows == len(kept)
    assert sum(b.num_rows for b in paclo.read_batches(path, filter="udp")) == len(kept)
    with pytest.raises(ValueError, match="filter"):
        paclo.flows(path, filter="udp and and")
    with pytest.raises(TypeError, match="filter"):
        paclo.project(path, filter=17)
    with paclo.read(path) as reader:
        assert paclo.project(reader).equals(paclo.project(path))
        assert paclo.flows(reader, bidirectional=True).equals(paclo.flows(path, bidirectional=True))
    default = paclo.flow_topn(path, 1000)
    everything = paclo.flow_topn(path, 1000, filter=None)
    assert {r["flow"]["proto"] for r in default} == {"udp", "tcp"}
    assert len(everything) > len(default)


def test_reduce_decode_flow_sees_the_same_fields(mixed):
    path, pkts = mixed
    got = paclo.reduce(lambda acc, d: [*acc, (d["protocol"], d["src_port"], d["dst_ip"])], [], path=path, decode="flow")
    exp = [(r["protocol"], r["src_port"], r["dst_ip"]) for r in (ref_project(1, f) for _, f, _ in pkts)]
    assert got == exp


@pytest.mark.parametrize("linktype,header", [
    (101, b""),                                   # raw IP
    (113, bytes(14) + b"\x08\x00"),              # Linux SLL, protocol IPv4
    (276, b"\x08\x00" + bytes(18)),              # Linux SLL2
    (0, b"\x02\x00\x00\x00"),                    # BSD NULL, little-endian AF_INET
    (108, b"\x00\x00\x00\x02"),                  # OpenBSD LOOP, big-endian AF_INET
])
def test_other_link_types(tmp_path, linktype, header):
    ip = ipv4(6, "10.9.8.7", "10.1.2.3", tcp(4444, 22, 0x18))
    path = write_pcap(tmp_path / "l.pcap", [(0, header + ip), (1, header[:2])], linktype=linktype)
    rows = paclo.project(path).to_pylist()
    assert (rows[0]["ip_version"], rows[0]["protocol"], rows[0]["src_port"], rows[0]["dst_port"],
            rows[0]["tcp_flags"]) == (4, 6, 4444, 22, 0x18)
    assert rows[0]["src_ip"] == MAPPED + bytes([10, 9, 8, 7])
    assert rows[1]["ip_version"] is None
    assert paclo.flows(path).num_rows == 1


def test_empty_capture(tmp_path):
    path = write_pcap(tmp_path / "empty.pcap", [])
    t = paclo.project(path)
    assert t.num_rows == 0 and t.column_names == PROJECTION_COLUMNS
    f = paclo.flows(path, bidirectional=True, idle_timeout=1)
    assert f.num_rows == 0 and f.column_names[-1] == "expiration_reason"
    assert int(f.schema.metadata[b"paclo.packets_total"]) == 0
    assert paclo.flow_topn(path) == [] and list(paclo.read_batches(path)) == []
    assert paclo.ip_to_str(t.column("src_ip")).to_pylist() == []
