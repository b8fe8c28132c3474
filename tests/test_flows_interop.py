"""Flow tables cross into pyarrow, polars, duckdb and pandas through the Arrow PyCapsule
interface, with the same values."""

from __future__ import annotations

import pyarrow as pa
import pytest
from _flows_util import mixed_packets, write_pcap

import paclo
from paclo import _paclo


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return write_pcap(tmp_path_factory.mktemp("interop") / "m.pcap", mixed_packets(seed=3, count=300))


def test_capsule_stream_is_a_one_shot_arrow_stream(path):
    stream = _paclo.flow_table([str(path)], bidirectional=True)
    schema = pa.schema(stream)  # __arrow_c_schema__
    assert "src2dst_bytes" in schema.names
    table = pa.table(stream)
    assert table.schema.remove_metadata() == schema.remove_metadata()
    with pytest.raises(RuntimeError, match="already consumed"):
        pa.table(stream)


def test_polars_reads_the_stream(path):
    pl = pytest.importorskip("polars")
    expected = paclo.flows(path).to_pylist()
    df = pl.DataFrame(_paclo.flow_table([str(path)]))
    assert df.to_dicts() == expected
    df2 = pl.from_arrow(paclo.flows(path))
    assert df2.to_dicts() == expected
    g = df.group_by("protocol").agg(pl.col("packets").sum()).sort("protocol")
    by_proto: dict = {}
    for r in expected:
        by_proto[r["protocol"]] = by_proto.get(r["protocol"], 0) + r["packets"]
    assert dict(zip(g["protocol"].to_list(), g["packets"].to_list(), strict=True)) == by_proto


def test_duckdb_reads_the_table(path):
    duckdb = pytest.importorskip("duckdb")
    flows = paclo.flows(path, bidirectional=True)  # noqa: F841 (read by duckdb by name)
    con = duckdb.connect()
    got = con.execute("select sum(packets), sum(bytes), count(*) from flows").fetchone()
    t = paclo.flows(path, bidirectional=True)
    assert got == (sum(t.column("packets").to_pylist()), sum(t.column("bytes").to_pylist()), t.num_rows)
    proj = _paclo.flow_project([str(path)])  # noqa: F841 - duckdb reads the local by name
    n = con.execute("select count(*), count(src_port) from proj").fetchone()
    p = paclo.project(path)
    assert n == (p.num_rows, p.num_rows - p.column("src_port").null_count)


def test_pandas_groupby(path):
    pytest.importorskip("pandas")
    t = paclo.flows(path)
    df = t.to_pandas()
    assert len(df) == t.num_rows
    assert df["packets"].sum() == sum(t.column("packets").to_pylist())
    df["src"] = paclo.ip_to_str(df["src_ip"])
    top = df.groupby("src")["bytes"].sum().sort_values(ascending=False)
    rows = t.to_pylist()
    exp: dict = {}
    for r in rows:
        k = paclo.ip_to_str(r["src_ip"])
        exp[k] = exp.get(k, 0) + r["bytes"]
    assert top.to_dict() == exp
    assert isinstance(df.loc[0, "src_ip"], bytes) and len(df.loc[0, "src_ip"]) == 16
    proj = paclo.project(path).to_pandas()
    assert proj["src_port"].isna().sum() == paclo.project(path).column("src_port").null_count


def test_flows_to_groupby_and_plot(path):
    pytest.importorskip("pandas")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    df = paclo.flows(path, bidirectional=True).to_pandas()
    df["dst"] = paclo.ip_to_str(df["dst_ip"])
    per_dst = df.groupby("dst")["bidirectional_bytes"].sum().sort_values()
    ax = per_dst.plot.barh()
    assert [t.get_text() for t in ax.get_yticklabels()] == list(per_dst.index)
    assert df["first_ts_ns"].dtype == "int64" and df["src_ip"].map(len).eq(16).all()
