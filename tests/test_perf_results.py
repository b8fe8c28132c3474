"""paclo.perf.load / compare / plot / markdown (the notebooks: test_notebooks.py)."""

from __future__ import annotations

import copy
import io
import json

import pytest
from _perf_util import SpecDatasets

from paclo.perf import cli, runner


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("perf")
    opts = cli.parse_args(
        ["--output", str(out), "--packets", "1000", "--runs", "2", "--warmups", "0",
         "--peers", "--scenarios", "raw-seq,peer-dpkt-raw"]
    )
    runner.run(opts, datasets=SpecDatasets, out=io.StringIO())
    return out / "results.json"


def test_load_has_one_row_per_run(results):
    import paclo.perf

    df = paclo.perf.load(results)
    assert len(df) == 3 * 2 * 2  # cases x scenarios x runs
    assert list(df.columns[:7]) == ["mode", "case", "scenario", "run", "profile", "path", "peer"]
    assert set(df["scenario"]) == {"raw-seq", "peer-dpkt-raw"}
    assert sorted(set(df["run"])) == [1, 2]
    assert (df["packets"] == 1000).all()
    assert df.loc[df["scenario"] == "peer-dpkt-raw", "peer"].all()
    assert not df.loc[df["scenario"] == "raw-seq", "peer"].any()
    # the directory works as well as the file
    assert len(paclo.perf.load(results.parent)) == len(df)


def test_load_rejects_other_schema_versions(tmp_path, results):
    import paclo.perf

    doc = json.loads(results.read_text())
    doc["schema_version"] = 1
    bad = tmp_path / "old.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="schema_version must be 2, got 1"):
        paclo.perf.load(bad)


def test_compare_gives_ratios_of_medians(tmp_path, results):
    import paclo.perf

    a = json.loads(results.read_text())
    b = copy.deepcopy(a)
    for result in b["offline"]:
        stat = result["summary"]["packets_per_sec"]
        stat["median"] *= 2
        result["summary"]["ns_per_packet"]["median"] /= 4
    b["offline"] = [r for r in b["offline"] if r["case"] != "mixed"]
    frame = paclo.perf.compare(a, b)
    assert len(frame) == 4  # only (case, scenario) pairs present in both
    assert frame["packets_per_sec_ratio"].tolist() == pytest.approx([2.0] * 4)
    assert frame["ns_per_packet_ratio"].tolist() == pytest.approx([0.25] * 4)
    row = frame.loc[("udp-64", "raw-seq")]
    assert row["packets_per_sec_b"] == pytest.approx(2 * row["packets_per_sec_a"])


def test_plot_makes_one_figure_per_case(results):
    pytest.importorskip("matplotlib")
    import paclo.perf

    figures = paclo.perf.plot(results)
    assert len(figures) == 3
    assert [f.axes[0].get_title() for f in figures] == ["udp-64", "tcp-512", "mixed"]
    labels = [t.get_text() for t in figures[0].axes[0].get_yticklabels()]
    assert labels == ["raw-seq", "peer-dpkt-raw"]
    with pytest.raises(ValueError, match="metric must be one of"):
        paclo.perf.plot(results, metric="speed")


def test_markdown_table_of_medians(results):
    import paclo.perf

    doc = json.loads(results.read_text())
    text = paclo.perf.markdown(results)
    lines = text.splitlines()
    assert lines[0] == "| case | scenario | packets/s | ns/packet | native B/packet | Python B/packet |"
    assert len(lines) == 2 + len(doc["offline"])
    first = doc["offline"][0]
    assert lines[2].startswith(f"| {first['case']} | {first['scenario']} | "
                               f"{first['summary']['packets_per_sec']['median']:,.0f} |")


def test_markdown_adds_the_c_loop_ratio_when_the_c_peer_ran(results):
    import paclo.perf

    doc = json.loads(results.read_text())
    for result in list(doc["offline"]):
        if result["scenario"] == "peer-dpkt-raw":
            result["scenario"] = "peer-c-pcap-next-ex"
    text = paclo.perf.markdown(doc)
    assert text.splitlines()[0].endswith("| x C loop |")
    c_rows = [line for line in text.splitlines() if "peer-c-pcap-next-ex" in line]
    assert len(c_rows) == 3 and all(row.endswith("| 1.00 |") for row in c_rows)
