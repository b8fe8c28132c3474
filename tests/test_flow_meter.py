"""The flow meter offline: statistical features against numpy over the projection grouped
by flow id, SPLT lists, streams against flows(), max_flows eviction, feature validation."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from _flows_util import eth, ipv4, ipv6, mixed_packets, ref_flows, tcp, udp, write_pcap

import paclo

T0 = 1_700_000_000_000_000_000
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "192.168.1.9"]


def traffic(seed: int, packets: int = 3000, flows: int = 40, max_gap_ns: int = 3_000_000):
    """Packets of `flows` conversations (TCP and UDP, IPv4 and IPv6, some on a VLAN) in
    both directions, with random sizes, gaps and TCP flags: (ts_ns, frame, wirelen)."""
    rnd = random.Random(seed)
    convs = []
    for i in range(flows):
        a, b = rnd.sample(HOSTS, 2)
        convs.append((rnd.choice([6, 17]), a, b, 20000 + i, rnd.choice([53, 80, 443, 8080]), i % 7 == 0, i % 5 == 0))
    out = []
    ts = T0
    for _ in range(packets):
        ts += rnd.randrange(0, max_gap_ns)
        proto, a, b, sp, dp, v6, vlan = rnd.choice(convs)
        if rnd.random() < 0.4:
            a, b, sp, dp = b, a, dp, sp
        n = rnd.randrange(0, 900)
        l4 = tcp(sp, dp, rnd.randrange(256), n) if proto == 6 else udp(sp, dp, n)
        if v6:
            ip = ipv6(f"2001:db8::{HOSTS.index(a) + 1}", f"2001:db8::{HOSTS.index(b) + 1}", proto, l4)
            frame = eth(0x86DD, ip, tags=[(0x8100, 7)] if vlan else ())
        else:
            frame = eth(0x0800, ipv4(proto, a, b, l4), tags=[(0x8100, 7)] if vlan else ())
        out.append((ts, frame, len(frame) + rnd.choice([0, 0, 40])))
    return out


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("meter")
    pkts = traffic(1)
    return write_pcap(d / "traffic.pcap", pkts), pkts


def _col(t: pa.Table, name: str) -> np.ndarray:
    return t.column(name).to_numpy(zero_copy_only=False)


def _describe(v: np.ndarray, stddev_min: int = 2):
    if len(v) == 0:
        return None, None, None, None
    sd = float(np.std(v.astype(np.float64), ddof=1)) if len(v) >= stddev_min else None
    return int(v.min()), float(v.mean()), sd, int(v.max())


def _same(got, want, what):
    if want is None or got is None:
        assert got == want, what
    else:
        assert got == pytest.approx(want, rel=1e-12, abs=1e-9), what


@pytest.mark.parametrize("bidirectional", [True, False])
def test_statistics_equal_numpy_over_the_projection(capture, bidirectional):
    path, _ = capture
    table = paclo.flows(path, flow_id=True, bidirectional=bidirectional, features="statistical")
    proj = paclo.project(path, flow_id=True, bidirectional=bidirectional)
    assert proj.column("flow_id").null_count == 0
    ids, ts, size = _col(proj, "flow_id"), _col(proj, "ts_ns"), _col(proj, "len")
    flags = proj.column("tcp_flags").fill_null(0).to_numpy().astype(np.int64)
    psrc, pport = _col(proj, "src_ip"), _col(proj, "src_port")
    order = np.argsort(ids, kind="stable")  # packets of a flow stay in capture order
    bounds = np.searchsorted(ids[order], np.arange(table.num_rows + 1))
    rows = table.to_pylist()
    assert len(rows) == (40 if bidirectional else 80)
    prefixes = [("bidirectional_", None), ("src2dst_", True), ("dst2src_", False)] if bidirectional else [("", None)]
    for row in rows:
        fid = row["flow_id"]
        sel = order[bounds[fid]:bounds[fid + 1]]
        assert len(sel) == row["packets"]
        fwd = np.array([psrc[i] == row["src_ip"] and pport[i] == row["src_port"] for i in sel])
        for prefix, direction in prefixes:
            mine = sel if direction is None else sel[fwd == direction]
            for what, unit, values in (("ps", "", size[mine]), ("piat", "_ns", np.diff(ts[mine]))):
                lo, mean, sd, hi = _describe(values)
                _same(row[f"{prefix}min_{what}{unit}"], lo, (fid, prefix, what, "min"))
                _same(row[f"{prefix}mean_{what}{unit}"], mean, (fid, prefix, what, "mean"))
                _same(row[f"{prefix}stddev_{what}{unit}"], sd, (fid, prefix, what, "stddev"))
                _same(row[f"{prefix}max_{what}{unit}"], hi, (fid, prefix, what, "max"))
            for name, bit in (("syn", 2), ("cwr", 0x80), ("ece", 0x40), ("urg", 0x20),
                              ("ack", 0x10), ("psh", 8), ("rst", 4), ("fin", 1)):
                assert row[f"{prefix}{name}_packets"] == int(np.count_nonzero(flags[mine] & bit)), name


def test_statistics_are_null_where_undefined(tmp_path):
    f = eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(1000, 53)))
    r = eth(0x0800, ipv4(17, "10.0.0.2", "10.0.0.1", udp(53, 1000)))
    us = 1000  # the test writer keeps microseconds
    path = write_pcap(tmp_path / "t.pcap", [(T0, f, 100), (T0 + 10 * us, f, 110), (T0 + 25 * us, r, 90)])
    row = paclo.flows(path, flow_id=True, bidirectional=True, features="statistical").to_pylist()[0]
    assert (row["src2dst_min_ps"], row["src2dst_max_ps"], row["src2dst_mean_ps"]) == (100, 110, 105.0)
    assert row["src2dst_stddev_ps"] == pytest.approx(np.std([100, 110], ddof=1))
    assert (row["src2dst_min_piat_ns"], row["src2dst_stddev_piat_ns"]) == (10 * us, None)
    assert (row["dst2src_min_ps"], row["dst2src_stddev_ps"], row["dst2src_mean_piat_ns"]) == (90, None, None)
    assert (row["bidirectional_min_piat_ns"], row["bidirectional_max_piat_ns"]) == (10 * us, 15 * us)
    assert row["bidirectional_stddev_piat_ns"] == pytest.approx(np.std([10 * us, 15 * us], ddof=1))
    assert (row["bidirectional_min_ps"], row["bidirectional_mean_ps"]) == (90, 100.0)
    assert row["bidirectional_syn_packets"] == 0
    assert (row["src2dst_first_ts_ns"], row["src2dst_last_ts_ns"], row["src2dst_duration_ns"]) == (T0, T0 + 10 * us, 10 * us)
    assert (row["dst2src_first_ts_ns"], row["dst2src_duration_ns"]) == (T0 + 25 * us, 0)
    uni = paclo.flows(path, features="statistical")
    assert "src2dst_first_ts_ns" not in uni.column_names and uni.num_rows == 2


def test_splt_lists_are_the_first_packets(capture):
    path, _ = capture
    table = paclo.flows(path, flow_id=True, bidirectional=True, features="splt", splt=6)
    proj = paclo.project(path, flow_id=True, bidirectional=True)
    ids, ts, size = _col(proj, "flow_id"), _col(proj, "ts_ns"), _col(proj, "len")
    psrc, pport = _col(proj, "src_ip"), _col(proj, "src_port")
    assert table.schema.field("splt_ps").type == pa.list_(pa.field("item", pa.uint32(), nullable=False))
    for row in table.to_pylist():
        first = np.flatnonzero(ids == row["flow_id"])[:6]
        assert row["splt_ps"] == size[first].tolist()
        assert row["splt_direction"] == [0 if (psrc[i] == row["src_ip"] and pport[i] == row["src_port"]) else 1 for i in first]
        assert row["splt_piat_ns"] == [0, *np.diff(ts[first]).tolist()]
    assert max(len(r["splt_ps"]) for r in table.to_pylist()) == 6


def test_macs_and_vlan(capture):
    path, _ = capture
    table = paclo.flows(path, flow_id=True, bidirectional=True, features=["mac"])
    assert table.schema.field("src_mac").type == pa.binary(6)
    macs = {bytes.fromhex("101112131415"), bytes.fromhex("202122232425")}
    for row in table.to_pylist():
        assert {row["src_mac"], row["dst_mac"]} == macs
    assert set(table.column("vlan_id").to_pylist()) == {None, 7}


def _by_id(batches) -> list[dict]:
    rows = [r for b in batches for r in b.to_pylist()]
    return sorted(rows, key=lambda r: r["flow_id"])


@pytest.mark.parametrize("features", ["basic", "all"])
def test_stream_equals_flows_after_concatenation(tmp_path, features):
    pkts = traffic(3, packets=6000, flows=300, max_gap_ns=400_000)
    parts = [write_pcap(tmp_path / f"p{i}.pcap", pkts[i * 2000:(i + 1) * 2000]) for i in range(3)]
    opts = {"bidirectional": True, "idle_timeout": 0.15, "active_timeout": 0.3, "features": features}
    whole = paclo.flows(parts, flow_id=True, **opts)
    stream = paclo.flow_stream(parts, batch_rows=50, **opts)
    batches = list(stream)
    assert len(batches) > 5 and all(b.num_rows <= 50 for b in batches)
    assert all(b.schema == batches[0].schema for b in batches)
    assert batches[0].schema == whole.schema.remove_metadata()
    assert _by_id(batches) == sorted(whole.to_pylist(), key=lambda r: r["flow_id"])
    reasons = pc.value_counts(whole.column("expiration_reason")).to_pylist()
    assert {r["values"] for r in reasons} >= {"idle", "active", "end"}
    st = stream.stats()
    assert st["packets"] == len(pkts) and st["flows_yielded"] == whole.num_rows and st["flows_live"] == 0
    assert next(stream, None) is None


def test_stream_defaults_and_a_single_file(capture):
    path, pkts = capture
    rows = _by_id(paclo.flow_stream(path))
    assert rows == sorted(paclo.flows(path, flow_id=True, idle_timeout=120, active_timeout=1800).to_pylist(), key=lambda r: r["flow_id"])
    assert sum(r["packets"] for r in rows) == len(pkts)


def test_max_flows_eviction_is_counted_exactly(tmp_path):
    n, cap = 500, 64
    pkts = [(T0 + i * 1000, eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(10000 + i, 53))), 60) for i in range(n)]
    # Flow 0 stays active: one packet after every new flow.
    keep = eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(10000, 53)))
    pkts = [p for i, p in enumerate(pkts) for p in (p, (T0 + i * 1000 + 500, keep, 60))]
    path = write_pcap(tmp_path / "many.pcap", pkts)
    table = paclo.flows(path, flow_id=True, max_flows=cap)
    reasons = table.column("expiration_reason").to_pylist()
    assert reasons.count("evicted") == n - cap == int(table.schema.metadata[b"paclo.flows_evicted"])
    assert table.num_rows == n and sum(table.column("packets").to_pylist()) == len(pkts)
    first = table.filter(pc.equal(table.column("src_port"), 10000)).to_pylist()
    assert [r["expiration_reason"] for r in first] == ["end"]
    stream = paclo.flow_stream(path, max_flows=cap, idle_timeout=None, active_timeout=None, batch_rows=100)
    rows = _by_id(stream)
    assert rows == sorted(table.to_pylist(), key=lambda r: r["flow_id"])
    assert stream.stats()["flows_evicted"] == n - cap


def test_flow_id_reproduces_a_native_feature_with_polars(capture):
    pl = pytest.importorskip("polars")
    path, _ = capture
    # The documented example: bidirectional_mean_ps as a polars group-by.
    packets = pl.from_arrow(paclo.project(path, flow_id=True, bidirectional=True))
    mine = packets.group_by("flow_id").agg(pl.col("len").mean().alias("mean_ps")).sort("flow_id")
    native = pl.from_arrow(paclo.flows(path, flow_id=True, bidirectional=True, features="statistical")).sort("flow_id")
    assert mine["flow_id"].to_list() == native["flow_id"].to_list()
    assert np.allclose(mine["mean_ps"].to_numpy(), native["bidirectional_mean_ps"].to_numpy(), rtol=1e-12)


def test_flow_ids_follow_timeouts_and_lists_of_files(tmp_path, capture):
    _, pkts = capture
    parts = [write_pcap(tmp_path / f"q{i}.pcap", pkts[i * 1000:(i + 1) * 1000]) for i in range(3)]
    for opts in ({}, {"idle_timeout": 0.02}, {"bidirectional": True, "active_timeout": 0.5, "max_flows": 8}):
        proj = paclo.project(parts, flow_id=True, **opts)
        table = paclo.flows(parts, flow_id=True, **opts)
        counts = pc.value_counts(proj.column("flow_id")).to_pylist()
        got = sorted((c["values"], c["counts"]) for c in counts)
        assert got == sorted(zip(table.column("flow_id").to_pylist(), table.column("packets").to_pylist(), strict=True))
    assert proj.column_names[-1] == "flow_id"


def test_non_ip_packets_have_no_flow_id(tmp_path):
    arp = eth(0x0806, bytes(28))
    ip = eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(1, 2)))
    path = write_pcap(tmp_path / "a.pcap", [(T0, arp), (T0 + 1, ip), (T0 + 2, arp)])
    assert paclo.project(path, flow_id=True).column("flow_id").to_pylist() == [None, 0, None]


def test_bad_feature_options_are_named(capture):
    path, _ = capture
    with pytest.raises(ValueError, match=r"features must name 'basic', 'statistical', .*'all' or a fingerprint column \('ja4', .*'ja4x'\), not 'stats'"):
        paclo.flows(path, features=["stats"])
    with pytest.raises(TypeError, match="features must be"):
        paclo.flows(path, features=7)
    with pytest.raises(ValueError, match="splt must be an integer between 1 and 65535"):
        paclo.flows(path, features="splt", splt=0)
    with pytest.raises(ValueError, match="max_flows must be None or an integer between 1 and"):
        paclo.flows(path, max_flows=0)
    with pytest.raises(ValueError, match="batch_rows must be an integer between 1 and"):
        paclo.flow_stream(path, batch_rows=0)
    with pytest.raises(TypeError, match="apply only with flow_id=True"):
        paclo.project(path, bidirectional=True)
    with pytest.raises(FileNotFoundError):
        paclo.flow_stream(str(path) + ".missing")
    with pytest.raises(ValueError, match=r"BPF|syntax"):
        paclo.flow_stream(path, filter="not a filter (")


def test_stream_close_and_context_manager(capture):
    path, _ = capture
    with paclo.flow_stream(path, batch_rows=1) as s:
        first = next(s)
        assert first.num_rows == 1
    assert next(s, None) is None
    assert pa.schema(s) == first.schema


@pytest.mark.parametrize("idle,active", [(None, None), (0.3, None), (0.3, 2.0)])
def test_flow_ids_equal_the_reference_and_are_opt_in(tmp_path, idle, active):
    pkts = mixed_packets()
    path = write_pcap(tmp_path / "mixed.pcap", pkts)
    upkts = [(ts // 1000 * 1000, f, w) for ts, f, w in pkts]  # the writer keeps microseconds
    table = paclo.flows(path, flow_id=True, bidirectional=True, idle_timeout=idle, active_timeout=active)
    expected = ref_flows(upkts, bidirectional=True, flow_id=True,
                         idle_ns=None if idle is None else int(idle * 1e9),
                         active_ns=None if active is None else int(active * 1e9))
    assert table.column_names[0] == "flow_id"
    assert table.to_pylist() == expected
    assert sorted(r["flow_id"] for r in expected) == list(range(len(expected)))
    plain = paclo.flows(path, bidirectional=True, idle_timeout=idle, active_timeout=active)
    assert plain.column_names == table.column_names[1:]
    assert plain.equals(table.drop_columns(["flow_id"]))
