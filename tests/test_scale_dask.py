"""paclo.dask: one partition per capture, paclo's schema as meta, and the merge of flows
that span files, on a LocalCluster of two worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from _scale_util import sort_flows, write_captures

import paclo

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import paclo.dask as pdask  # noqa: E402 - needs dask, checked above
from paclo.parquet import to_parquet  # noqa: E402


@pytest.fixture(scope="module")
def caps(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("dask")
    return write_captures(root / "a", files=4, packets=500) + write_captures(root / "b", files=2, seed=3)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        scheduler_port=0,
        dashboard_address=None,
        worker_dashboard_address=None,
    )
    c = distributed.Client(cluster)
    try:
        yield c
    finally:
        c.close()
        cluster.close()


def _table(df) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False)


def _same_flows(got: pa.Table, want: pa.Table) -> None:
    got = got.cast(want.schema.remove_metadata())
    assert got.num_rows == want.num_rows > 0
    assert sort_flows(got).equals(sort_flows(want).replace_schema_metadata(None))


@pytest.mark.parametrize("bidirectional", [False, True])
def test_merged_flows_on_two_worker_processes_equal_paclo_flows(caps, client, bidirectional):
    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids

    ddf = pdask.read_flows(caps, bidirectional=bidirectional)
    assert ddf.npartitions == len(caps)
    merged = pdask.merge_flows(ddf).compute()
    want = paclo.flows(caps, bidirectional=bidirectional)
    # Flows spanned files: the per-file rows outnumber the merged ones.
    per_file = ddf.compute()
    assert len(per_file) > want.num_rows
    _same_flows(_table(merged), want)
    assert list(merged.columns) == want.column_names
    # A deeper tree, and a shuffle into three partitions, give the same rows.
    _same_flows(_table(pdask.merge_flows(ddf, split_every=2).compute()), want)
    spread = pdask.merge_flows(ddf, split_out=3)
    assert spread.npartitions == 3
    _same_flows(_table(spread.compute()), want)


def test_partitions_are_the_captures_and_meta_is_paclos_schema(caps, client):
    ddf = pdask.read_flows(caps)
    want_schema = paclo.flows(caps[0]).schema.remove_metadata()
    meta = ddf._meta
    assert list(meta.columns) == ["capture", *want_schema.names]
    assert len(meta) == 0
    for name, field in zip(want_schema.names, want_schema, strict=True):
        assert meta[name].dtype == pd.ArrowDtype(field.type), name
    parts = [ddf.get_partition(i).compute() for i in range(ddf.npartitions)]
    for cap, part in zip(caps, parts, strict=True):
        assert set(part["capture"]) == {f"{cap.parent.name}/{cap.name}"}
        assert part.dtypes.equals(meta.dtypes)
        got = _table(part.drop(columns=["capture"])).cast(want_schema)
        assert got.equals(paclo.flows(cap).replace_schema_metadata(None))


def test_read_projection_equals_paclo_project(caps, client):
    ddf = pdask.read_projection(caps[:3], filter="udp or tcp")
    assert ddf.npartitions == 3
    got = ddf.compute()
    want = paclo.project(caps[:3], filter="udp or tcp")
    assert len(got) == want.num_rows > 0
    assert _table(got.drop(columns=["capture"])).cast(want.schema).equals(want)
    per_capture = got.groupby("capture").size().to_dict()
    # Names are relative to the common directory of the captures given (here a/ alone).
    assert per_capture == {c.name: paclo.project(c, filter="udp or tcp").num_rows for c in caps[:3]}


def test_merge_of_the_parquet_outputs_equals_paclo_flows(caps, client, tmp_path):
    report = to_parquet(caps, tmp_path / "out", kind="flows", progress=False)
    assert report.ok
    ddf = dd.read_parquet(str(tmp_path / "out"), dtype_backend="pyarrow")
    merged = pdask.merge_flows(ddf).compute()
    _same_flows(_table(merged), paclo.flows(caps))


def test_merge_works_on_pandas_and_refuses_timeout_splits(caps):
    frames = [paclo.flows(c).to_pandas(types_mapper=pd.ArrowDtype) for c in caps]
    merged = pdask.merge_flows(pd.concat(frames, ignore_index=True))
    _same_flows(_table(merged), paclo.flows(caps))
    with pytest.raises(ValueError, match="cannot be merged across files"):
        pdask.merge_flows(pdask.read_flows(caps, idle_timeout=1))
    with pytest.raises(ValueError, match="does not know how to merge the columns note"):
        pdask.merge_flows(pdask.read_flows(caps).assign(note="x"))
    # Counters named *_packets or *_bytes add up (nfstream's per-flag counts would too).
    extra = pd.concat(frames, ignore_index=True)
    extra["src2dst_syn_packets"] = pd.array([1] * len(extra), dtype=pd.ArrowDtype(pa.uint64()))
    summed = pdask.merge_flows(extra)
    assert summed["src2dst_syn_packets"].sum() == len(extra)
    with pytest.raises(ValueError, match="missing columns: ip_version"):
        pdask.merge_flows(pdask.read_projection(caps).drop(columns=["ip_version"]))


def test_building_the_graph_reads_no_capture(tmp_path):
    caps = write_captures(tmp_path / "c", files=2)
    ddf = pdask.read_flows(caps)
    for c in caps:
        c.write_bytes(b"not a capture any more")
    with pytest.raises(paclo.PcapFormatError):
        ddf.compute(scheduler="sync")


def test_nothing_else_in_paclo_imports_dask():
    code = "import sys, paclo, paclo.parquet; print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
