"""paclo.plot: traffic over time, top talkers and flow sizes from flow and projection tables."""

from __future__ import annotations

import numpy as np
import pytest
from _flows_util import eth, ipv4, ipv6, tcp, udp, write_pcap

pytest.importorskip("matplotlib")

import paclo
import paclo.plot

T0 = 1_700_000_000_000_000_000
SEC = 1_000_000_000


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """10 s of traffic: 10.0.0.1 sends 1 packet/s to 10.0.0.2, 10.0.0.3 sends 5 packets/s
    (bigger ones) to 2001:db8::9 over IPv6 ... and one flow of 30 packets from 10.0.0.4."""
    packets = []
    for s in range(10):
        packets.append((T0 + s * SEC, eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(1000, 53, 20)))))
        for k in range(5):
            packets.append((T0 + s * SEC + k * 100_000_000,
                            eth(0x86DD, ipv6("2001:db8::3", "2001:db8::9", 6, tcp(2000 + s, 443, 0x18, 400)))))
    for k in range(30):
        packets.append((T0 + 9 * SEC + k * 1_000_000, eth(0x0800, ipv4(6, "10.0.0.4", "10.0.0.2", tcp(3000, 80, 0x10, 100)))))
    packets.sort(key=lambda p: p[0])
    return write_pcap(tmp_path_factory.mktemp("plot") / "t.pcap", packets)


def step_data(ax):
    line = ax.get_lines()[0]
    return np.asarray(line.get_ydata(), dtype=float)


def test_traffic_from_a_projection_is_exact(capture):
    table = paclo.project(capture)
    fig = paclo.plot.traffic(table, by="bytes", interval=1)
    ax = fig.axes[0]
    heights = step_data(ax)[:-1]  # the last value repeats to give the last bin its width
    assert len(heights) == 10
    total_bits = sum(table.column("len").to_pylist()) * 8
    assert heights.sum() == pytest.approx(total_bits)  # 1 s bins: bits/s sums to the bits sent
    assert ax.get_ylabel() == "bits/s"
    assert ax.get_xlabel() == "time (UTC), 1 s bins of packets"
    assert ax.get_title() == "traffic over time (wire bytes)"
    packets = paclo.plot.traffic(table, by="packets", interval=1).axes[0]
    assert list(step_data(packets)[:-1]) == [6] * 9 + [36]
    assert packets.get_ylabel() == "packets/s"


def test_traffic_from_a_flow_table_counts_flows_at_their_start(capture):
    flows = paclo.flows(capture)
    ax = paclo.plot.traffic(flows, by="packets", interval=1).axes[0]
    heights = step_data(ax)[:-1]
    assert heights.sum() == sum(flows.column("packets").to_pylist())
    assert "flows, counted at their first packet" in ax.get_xlabel()
    # the analysis view works the same
    view_ax = paclo.plot.traffic(paclo.analysis_view(flows), by="packets", interval=1).axes[0]
    assert list(step_data(view_ax)) == list(step_data(ax))


def test_traffic_picks_a_round_interval(capture):
    ax = paclo.plot.traffic(paclo.project(capture)).axes[0]
    assert ax.get_xlabel() == "time (UTC), 0.1 s bins of packets"  # about 100 bins over 9 s


def test_top_talkers(capture):
    flows = paclo.flows(capture)
    ax = paclo.plot.top_talkers(flows, n=2).axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["2001:db8::3", "10.0.0.4"]
    widths = [p.get_width() for p in ax.patches]
    view = paclo.analysis_view(flows)
    expect = {}
    for src, b in zip(view.column("src_ip").to_pylist(), view.column("bytes").to_pylist(), strict=True):
        expect[src] = expect.get(src, 0) + b
    assert widths == [expect["2001:db8::3"], expect["10.0.0.4"]]
    assert ax.get_title() == "top 2 sources by bytes"
    dst = paclo.plot.top_talkers(paclo.project(capture), key="dst_ip", by="packets").axes[0]
    assert [t.get_text() for t in dst.get_yticklabels()] == ["2001:db8::9", "10.0.0.2"]
    assert [p.get_width() for p in dst.patches] == [50, 40]


def test_flow_sizes(capture):
    flows = paclo.flows(capture)
    ax = paclo.plot.flow_sizes(flows, by="packets").axes[0]
    assert sum(p.get_height() for p in ax.patches) == flows.num_rows
    assert ax.get_xscale() == "log"
    assert ax.get_title() == f"flow sizes ({flows.num_rows} flows)"
    labels = ax.get_legend_handles_labels()[1]
    assert labels[0].startswith("median ") and labels[1].startswith("99th percentile ")


def test_drawing_into_given_axes(capture):
    from matplotlib.figure import Figure

    fig = Figure()
    left, right = fig.subplots(1, 2)
    assert paclo.plot.flow_sizes(paclo.flows(capture), ax=left) is fig
    assert paclo.plot.top_talkers(paclo.flows(capture), ax=right) is fig
    assert left.patches and right.patches


def test_errors(capture):
    flows = paclo.flows(capture)
    with pytest.raises(ValueError, match="by must be 'bytes' or 'packets', not 'flows'"):
        paclo.plot.traffic(flows, by="flows")
    with pytest.raises(ValueError, match="flow_sizes needs a flow table"):
        paclo.plot.flow_sizes(paclo.project(capture))
    with pytest.raises(ValueError, match="n must be a positive integer"):
        paclo.plot.top_talkers(flows, n=0)
    with pytest.raises(ValueError, match="interval must be a positive number of seconds"):
        paclo.plot.traffic(flows, interval=-1)
    with pytest.raises(TypeError, match="table must be a pyarrow Table"):
        paclo.plot.traffic({"ts_ns": [1]})
