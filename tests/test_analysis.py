"""The analysis view: text addresses, time types, nullable integers, protocol names; and the
pandas, polars and duckdb ways in."""

from __future__ import annotations

import ipaddress
import subprocess
import sys

import pyarrow as pa
import pytest
from _flows_util import MAPPED, arp, eth, icmp, ipv4, ipv6, tcp, udp, write_pcap

import paclo

# (ts_ns, frame): IPv4 UDP/TCP/ICMP, IPv6 UDP/TCP, an IPv6 packet carrying mapped addresses,
# ARP (no IP layer), and an IPv6 UDP whose addresses have a zero run.
T0 = 1_700_000_000_000_000_000
FRAMES = [
    (T0, eth(0x0800, ipv4(17, "10.1.1.2", "192.0.2.255", udp(53000, 53)))),
    (T0 + 1_000, eth(0x0800, ipv4(6, "10.1.1.2", "198.51.100.7", tcp(40000, 443, 0x12)))),
    (T0 + 2_000, eth(0x0806, arp())),
    (T0 + 3_000, eth(0x0800, ipv4(1, "0.0.0.0", "255.255.255.255", icmp()))),
    (T0 + 4_000, eth(0x86DD, ipv6("2001:db8::1", "fe80::abcd:ef01:2345:6789", 17, udp(5353, 5353)))),
    (T0 + 5_000, eth(0x86DD, ipv6("2001:db8:0:1:1:1:1:1", "::1", 6, tcp(1, 2, 0x02)))),
    (T0 + 6_000, eth(0x86DD, ipv6("::ffff:192.0.2.1", "::ffff:10.9.8.7", 17, udp(7, 9)))),
    (T0 + 7_000, eth(0x0800, ipv4(47, "10.1.1.2", "10.200.0.1", b"\x00" * 8))),
]


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    return write_pcap(tmp_path_factory.mktemp("analysis") / "mixed.pcap", FRAMES)


def expected_text(b: bytes | None, version: int | None) -> str | None:
    """The text a reader expects, built with the standard library."""
    if b is None:
        return None
    a = ipaddress.IPv6Address(b)
    if a.ipv4_mapped is not None:
        return str(a.ipv4_mapped) if version != 6 else f"::ffff:{a.ipv4_mapped}"
    return str(a)


def test_project_view_round_trips_addresses_and_keeps_nulls(capture):
    table = paclo.project(capture)
    view = paclo.analysis_view(table)
    assert view.num_rows == table.num_rows == len(FRAMES)
    assert view.column_names == ["ts", "caplen", "len", "ip_version", "protocol", "src_ip", "dst_ip",
                                 "src_port", "dst_port", "vlan_id", "tcp_flags", "tcp_flags_str"]
    versions = table.column("ip_version").to_pylist()
    for col in ("src_ip", "dst_ip"):
        raw = table.column(col).to_pylist()
        text = view.column(col).to_pylist()
        assert text == [expected_text(b, v) for b, v in zip(raw, versions, strict=True)]
        # back to the stored bytes through the helper
        assert [None if t is None else paclo.ip_to_bytes(t) for t in text] == raw
    src = view.column("src_ip").to_pylist()
    assert src[0] == "10.1.1.2" and src[4] == "2001:db8::1" and src[5] == "2001:db8:0:1:1:1:1:1"
    assert src[6] == "::ffff:192.0.2.1"  # an IPv6 packet keeps its mixed form
    assert view.column("dst_ip")[3].as_py() == "255.255.255.255"
    # ARP: nulls stay nulls in every L3 column
    arp_row = view.slice(2, 1).to_pylist()[0]
    assert all(arp_row[c] is None for c in ("ip_version", "protocol", "src_ip", "dst_ip", "src_port", "tcp_flags"))
    assert view.column("src_ip").null_count == table.column("src_ip").null_count == 1
    assert view.column("protocol").to_pylist() == ["udp", "tcp", None, "icmp", "udp", "tcp", "udp", "gre"]
    assert view.column("tcp_flags").to_pylist() == table.column("tcp_flags").to_pylist()
    assert view.column("tcp_flags_str").to_pylist() == [None, "AS", None, None, None, "S", None, None]
    assert view.schema.field("ts").type == pa.timestamp("ns", tz="UTC")
    assert [t.value for t in view.column("ts")] == table.column("ts_ns").to_pylist()
    assert view.schema.metadata[b"paclo.view"] == b"analysis"


def test_flow_view_times_durations_and_metadata(capture):
    table = paclo.flows(capture, bidirectional=True)
    view = paclo.analysis_view(table)
    names = view.column_names
    assert "first_ts" in names and "last_ts" in names and "duration" in names
    assert not any(n.endswith("_ns") for n in names)
    assert view.schema.field("duration").type == pa.duration("ns")
    assert [d.value for d in view.column("duration")] == table.column("duration_ns").to_pylist()
    assert [t.value for t in view.column("first_ts")] == table.column("first_ts_ns").to_pylist()
    for key, value in table.schema.metadata.items():
        assert view.schema.metadata[key] == value
    # every other column is the same data
    for name in ("packets", "bytes", "src_port", "dst_port", "src2dst_packets", "vlan_id"):
        assert view.column(name).equals(table.column(name))
    # a view is returned as it is
    assert paclo.analysis_view(view) is view


def test_unknown_protocol_numbers_print_as_numbers(tmp_path):
    path = write_pcap(tmp_path / "p.pcap", [(T0, eth(0x0800, ipv4(253, "10.0.0.1", "10.0.0.2", b"x" * 8)))])
    view = paclo.analysis_view(paclo.flows(path))
    assert view.column("protocol").to_pylist() == ["253"]


def test_sliced_and_chunked_columns_keep_their_rows(capture, monkeypatch):
    table = paclo.project(capture)
    whole = paclo.analysis_view(table)
    # a slice whose offset is not a multiple of 8, with a null inside it
    for start in range(len(FRAMES)):
        part = paclo.analysis_view(table.slice(start, 5))
        assert part.column("src_ip").to_pylist() == whole.column("src_ip").slice(start, 5).to_pylist()
    # several chunks, and chunks cut into calls of at most 3 rows
    two = pa.concat_tables([table, table.slice(1)])
    monkeypatch.setattr(paclo._paclo, "ADDRESS_TEXT_MAX_ROWS", 3)
    text = paclo.analysis_view(two).column("src_ip").to_pylist()
    assert text == whole.column("src_ip").to_pylist() + whole.column("src_ip").to_pylist()[1:]


def test_to_pandas_uses_nullable_integers_not_float(capture):
    pd = pytest.importorskip("pandas")
    df = paclo.to_pandas(paclo.project(capture))
    assert str(df["src_port"].dtype) == "UInt16"
    assert str(df["tcp_flags"].dtype) == "UInt8"
    assert str(df["vlan_id"].dtype) == "UInt16"
    assert df["src_port"].isna().tolist() == [False, False, True, True, False, False, False, True]
    assert df.loc[1, "tcp_flags"] == 0x12
    assert not any(str(t).startswith("float") for t in df.dtypes)
    assert str(df["ts"].dtype) == "datetime64[ns, UTC]"
    assert isinstance(df["src_ip"].dtype, pd.StringDtype)
    assert df.loc[0, "src_ip"] == "10.1.1.2" and df.loc[0, "protocol"] == "udp"
    assert pd.isna(df.loc[2, "src_ip"])
    flows = paclo.to_pandas(paclo.flows(capture))
    assert str(flows["packets"].dtype) == "UInt64"
    assert str(flows["duration"].dtype) == "timedelta64[ns]"
    top = flows.groupby("src_ip")["bytes"].sum().sort_values(ascending=False)
    assert top.index[0] == "10.1.1.2"

    arrow = paclo.to_pandas(paclo.flows(capture), dtype_backend="pyarrow")
    assert isinstance(arrow["src_port"].dtype, pd.ArrowDtype)
    assert str(arrow["src_port"].dtype) == "uint16[pyarrow]"
    with pytest.raises(ValueError, match="dtype_backend must be 'numpy_nullable' or 'pyarrow'"):
        paclo.to_pandas(paclo.flows(capture), dtype_backend="numpy")


def test_to_polars_types(capture):
    pl = pytest.importorskip("polars")
    df = paclo.to_polars(paclo.project(capture))
    assert df.schema["src_ip"] == pl.String
    assert df.schema["src_port"] == pl.UInt16
    assert df.schema["ts"] == pl.Datetime("ns", "UTC")
    assert df["src_port"].null_count() == 3
    assert df.filter(pl.col("src_ip") == "2001:db8::1").height == 1
    flows = paclo.to_polars(paclo.flows(capture))
    assert flows.schema["duration"] == pl.Duration("ns")


def test_duckdb_filters_by_address_both_ways(capture):
    duckdb = pytest.importorskip("duckdb")
    flows = paclo.flows(capture)
    # the lossless table: a 16-byte parameter, and a network as a range of stored addresses
    n = duckdb.sql("select count(*) from flows where src_ip = $ip", params={"ip": paclo.ip_to_bytes("10.1.1.2")}).fetchall()[0][0]
    assert n == 3  # UDP, TCP and GRE flows
    lo, hi = paclo.ip_range("198.51.100.0/24")
    rows = duckdb.sql("select dst_port from flows where dst_ip between $lo and $hi", params={"lo": lo, "hi": hi}).fetchall()
    assert rows == [(443,)]
    lo, hi = paclo.ip_range("2001:db8::/32")
    assert duckdb.sql("select count(*) from flows where src_ip between $lo and $hi",
                      params={"lo": lo, "hi": hi}).fetchall()[0][0] == 2
    # a plain string against the lossless bytes matches nothing (why the helpers exist) ...
    assert duckdb.sql("select count(*) from flows where src_ip = '10.1.1.2'").fetchall()[0][0] == 0
    # ... and matches in the analysis view, whose addresses are text
    con = duckdb.connect()
    con.register("flow_view", paclo.analysis_view(flows))
    assert con.sql("select count(*) from flow_view where src_ip = '10.1.1.2'").fetchall()[0][0] == 3
    assert con.sql("select protocol from flow_view where dst_ip = '::1'").fetchall() == [("tcp",)]


def test_address_helpers_and_their_errors():
    assert paclo.ip_to_bytes("10.1.1.2") == MAPPED + bytes([10, 1, 1, 2])
    assert paclo.ip_to_bytes(ipaddress.ip_address("2001:db8::1")) == ipaddress.IPv6Address("2001:db8::1").packed
    assert paclo.ip_range("10.1.2.3/8") == (MAPPED + bytes([10, 0, 0, 0]), MAPPED + bytes([10, 255, 255, 255]))
    assert paclo.ip_range(ipaddress.ip_network("::/0")) == (bytes(16), b"\xff" * 16)
    with pytest.raises(ValueError, match="not an IPv4 or IPv6 address: 'nope'"):
        paclo.ip_to_bytes("nope")
    with pytest.raises(TypeError, match="address must be a str or an ipaddress address, not int"):
        paclo.ip_to_bytes(167837954)
    with pytest.raises(ValueError, match=r"not an IPv4 or IPv6 network: '10\.0\.0\.0/33'"):
        paclo.ip_range("10.0.0.0/33")
    with pytest.raises(TypeError, match="table must be a pyarrow Table or RecordBatch"):
        paclo.analysis_view([1, 2])
    bad = pa.table({"src_ip": pa.array([b"short"], pa.binary())})
    with pytest.raises(ValueError, match="addresses must be 16 bytes each"):
        paclo.analysis_view(bad)


def test_a_record_batch_and_a_stream_are_accepted(capture):
    table = paclo.flows(capture)
    batch = table.to_batches()[0]
    assert paclo.analysis_view(batch).equals(paclo.analysis_view(table))
    stream = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    assert not isinstance(stream, pa.Table) and hasattr(stream, "__arrow_c_stream__")
    assert paclo.analysis_view(stream).equals(paclo.analysis_view(table))


def test_the_view_does_not_import_pandas(capture):
    # pandas costs a second or more to import; a view for duckdb or a Parquet file needs none.
    code = (
        "import sys, paclo\n"
        f"t = paclo.analysis_view(paclo.flows({str(capture)!r}))\n"
        f"p = paclo.project({str(capture)!r}, view='analysis')\n"
        "assert t.column('protocol')[0].as_py() == 'udp' and p.num_rows == 8, (t, p)\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_view_option_on_project_and_flows(capture):
    assert paclo.flows(capture, view="analysis").equals(paclo.analysis_view(paclo.flows(capture)))
    assert paclo.project(capture, view="analysis").equals(paclo.analysis_view(paclo.project(capture)))
    numeric = paclo.flows(capture, view="numeric")
    assert numeric.schema.field("src_ip").type == pa.binary(16) and numeric.equals(paclo.flows(capture))
    with pytest.raises(ValueError, match=r"view must be 'numeric' \(lossless\) or 'analysis', not 'text'"):
        paclo.flows(capture, view="text")
    with pytest.raises(ValueError, match="view must be"):
        paclo.project(capture, view=None)


def test_ip_to_str_and_the_view_agree(capture):
    table = paclo.project(capture)
    view = paclo.analysis_view(table)
    assert paclo.ip_to_str(table.column("src_ip"), table.column("ip_version")).to_pylist() == view.column("src_ip").to_pylist()
