"""paclo.perf.plot (paclo.perf.plots): offline throughput and allocation, live rates and loss stages, compare;
and the HTML report (python -m paclo.perf report)."""

from __future__ import annotations

import base64
import copy
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _perf_util import SpecDatasets

pytest.importorskip("matplotlib")

from paclo.perf import cli, runner
from paclo.perf.plots import plot
from paclo.perf.report import write_report

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["raw-seq", "flow-table", "peer-c-pcap-next-ex", "peer-dpkt-raw"]


def _run(out: Path, runs: int) -> Path:
    opts = cli.parse_args(["--profile", "quick", "--output", str(out), "--packets", "2000", "--runs", str(runs),
                           "--warmups", "0", "--peers", "--scenarios", ",".join(SCENARIOS)])
    runner.run(opts, datasets=SpecDatasets, out=io.StringIO())
    return out / "results.json"


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """A quick-profile results file with two runs per scenario (so whiskers are drawn)."""
    return _run(tmp_path_factory.mktemp("perf-two"), 2)


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The same with one run per scenario."""
    return _run(tmp_path_factory.mktemp("perf-one"), 1)


def with_walk(path: Path) -> dict:
    """The results with a C mmap-walk peer result (the C loop's figures at 4x the speed)."""
    doc = json.loads(path.read_text())
    for r in list(doc["offline"]):
        if r["scenario"] == "peer-c-pcap-next-ex":
            walk = copy.deepcopy(r)
            walk["scenario"] = "peer-c-mmap-walk"
            for name in ("packets_per_sec", "mb_per_sec"):
                walk["summary"][name] = {k: v * 4 for k, v in walk["summary"][name].items()}
            doc["offline"].insert(doc["offline"].index(r) + 1, walk)
    return doc


def markers(ax) -> list:
    """Lines drawn as single points (the medians)."""
    return [line for line in ax.get_lines() if line.get_marker() not in (None, "None", "") and len(line.get_xdata()) == 1]


def whiskers(ax) -> list:
    return [line for line in ax.get_lines() if line.get_marker() in (None, "None", "") and len(line.get_xdata()) == 2
            and line.get_ydata()[0] == line.get_ydata()[1]]


def texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def no_overlap(fig) -> None:
    """Titles and the suptitle sit clear of every axes frame; tick labels stay inside the figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    frames = [ax.get_window_extent(renderer) for ax in fig.axes]
    boxes = []
    if fig._suptitle is not None:
        boxes.append(fig._suptitle.get_window_extent(renderer))
    boxes += [ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()]
    for box in boxes:
        for frame in frames:
            assert not box.overlaps(frame), (box, frame)
    if len(boxes) > 1:
        assert not boxes[0].overlaps(boxes[1])
    width, _ = canvas.get_width_height()
    for ax in fig.axes:
        for label in ax.get_yticklabels():
            box = label.get_window_extent(renderer)
            assert box.x0 >= -1 and box.x1 <= width + 1, label.get_text()


def test_throughput_one_figure_per_case_with_peers_and_c_loop_ratios(quick):
    figures = plot(quick)
    assert [f.axes[0].get_title() for f in figures] == ["udp-64", "tcp-512", "mixed"]
    for fig in figures:
        ax = fig.axes[0]
        assert [t.get_text() for t in ax.get_yticklabels()] == SCENARIOS
        assert "packets/s (median of 2 runs" in ax.get_xlabel()
        assert len(markers(ax)) == len(SCENARIOS)
        colors = [line.get_color() for line in markers(ax)]
        assert colors[:2] == ["C0", "C0"] and colors[2:] == ["0.45", "0.45"]  # peers in grey
        # Log scale exactly when the measured medians span a decade (C loop vs dpkt usually
        # does; a loaded machine can narrow it) and no whisker reaches zero.
        medians = [m.get_xdata()[0] for m in markers(ax)]
        lows = [min(w.get_xdata()) for w in whiskers(ax)]
        spans = max(medians) / min(medians) >= 10 and all(low > 0 for low in lows)
        assert ax.get_xscale() == ("log" if spans else "linear"), medians
        notes = texts(ax)
        assert len(notes) == len(SCENARIOS) and all(n.endswith("x C loop") for n in notes)
        assert notes[SCENARIOS.index("peer-c-pcap-next-ex")] == "1.00x C loop"
        assert "C pcap_next_ex loop (C loop)" in ax.get_legend_handles_labels()[1]
        no_overlap(fig)


def test_throughput_shows_the_walk_ratio_when_the_walk_peer_ran(quick):
    figures = plot(with_walk(quick))
    ax = figures[0].axes[0]
    assert "peer-c-mmap-walk" in [t.get_text() for t in ax.get_yticklabels()]
    assert "C mmap record walk (walk)" in ax.get_legend_handles_labels()[1]
    notes = texts(ax)
    assert all(re.fullmatch(r"[\d.]+x C loop  [\d.]+x walk", n) for n in notes), notes
    walk_row = [t.get_text() for t in ax.get_yticklabels()].index("peer-c-mmap-walk")
    assert notes[walk_row] == "4.00x C loop  1.00x walk"


def test_one_measured_run_draws_points_not_bars(single):
    for fig in plot(single):
        ax = fig.axes[0]
        assert not ax.patches  # no bars at all
        assert len(markers(ax)) == len(SCENARIOS)
        assert whiskers(ax) == []  # one run: no spread to draw
        assert "median of 1 run)" in ax.get_xlabel()
    for fig in plot(single, metric="ns_per_packet", log=False):
        assert fig.axes[0].get_xscale() == "linear"
        assert "ns/packet" in fig.axes[0].get_xlabel()


def test_two_runs_draw_min_max_whiskers(quick):
    doc = json.loads(quick.read_text())
    ax = plot(doc)[0].axes[0]
    lines = whiskers(ax)
    spread = [r for r in doc["offline"] if r["case"] == "udp-64"
              and r["summary"]["packets_per_sec"]["max"] > r["summary"]["packets_per_sec"]["min"]]
    assert len(lines) == len(spread)
    first = spread[0]["summary"]["packets_per_sec"]
    assert any(sorted(line.get_xdata()) == pytest.approx([first["min"], first["max"]]) for line in lines)


def test_allocation_panels(quick):
    figures = plot(quick, "allocation")
    assert len(figures) == 3
    native, python = figures[0].axes
    assert native.get_xlabel().startswith("native bytes/packet") and python.get_xlabel().startswith("Python bytes/packet")
    assert native.get_title() == "udp-64"
    assert texts(native).count("not measured") == 2  # the two peers have no Rust allocator
    assert len(markers(python)) == 3  # paclo's two and dpkt; the C peer has no Python heap
    assert texts(python).count("not measured") == 1
    no_overlap(figures[0])


def live_document(quick: Path, *, realized: bool = True) -> dict:
    """A results document with a live section of two scenarios at two rates, shaped as the
    runner writes it (validated against docs/results-schema.json by the test)."""
    doc = json.loads(quick.read_text())
    env = doc["offline"][0]["environment"]
    results = []
    for scenario, loss in (("live-sync-raw", 0.0), ("live-dropping-raw", 0.004)):
        for target in (10_000, 50_000):
            runs = []
            for i in range(2):
                sent = target * 2 - i
                processed = round(sent * (1 - loss * target / 10_000))
                dropped = sent - processed
                run = {"packets": processed, "bytes": processed * 64, "decode_errors": 0, "sent": sent,
                       "sent_source": "internal_observed", "sustained_processed_pps": processed / 2,
                       "processed_vs_sent_rate": processed / sent, "send_loss_rate": dropped / sent,
                       "kernel_drop_rate": 0.0, "interface_drop_rate": 0.0,
                       "queue_drop_rate": dropped / sent, "consumer_gap_rate": 0.0,
                       "target_pps": target, "source": "loopback", "engine": "queue",
                       "capture_stats": {"received": 2 * sent, "dropped": 0, "interface_dropped": 0},
                       "queue_stats": {"mode": "dropping", "enqueued": processed, "dropped": dropped},
                       "stage_counts": {"sent": sent, "capture_received": 2 * sent, "capture_delivered": sent,
                                        "kernel_dropped": 0, "interface_dropped": 0, "queue_enqueued": processed,
                                        "queue_dropped": dropped, "consumer_processed": processed, "consumer_gap": 0,
                                        "send_loss": dropped},
                       "capture_errors": [], "elapsed_ns": 2_000_000_000 + i, "process_cpu_ns": 900_000_000,
                       "realized_send_pps": sent / 2 if realized else None,
                       "realized_send_source": "generator" if realized else None,
                       "capture_window_ns": 2_000_000_000 - i, "generator_limited": False if realized else None,
                       "ring": None, "capture_cpu_ns": 800_000_000, "cpu_ns_per_packet": 800_000_000 / processed,
                       "stop_reason": "duration"}
                runs.append(run)
            summary = {}
            for name in ("sustained_processed_pps", "send_loss_rate", "queue_drop_rate", "kernel_drop_rate",
                         "interface_drop_rate", "consumer_gap_rate", *(["realized_send_pps"] if realized else [])):
                values = [r[name] for r in runs]
                summary[name] = {"median": sum(values) / 2, "min": min(values), "max": max(values)}
            config = {"device": "lo", "port": 39053, "target_pps": target, "duration_ms": 2000, "frame_size": 64,
                      "senders": 1, "source": "loopback", "engine": "queue", "decode": None, "snaplen": 2048,
                      "queue_cap": 1024, "queue_mode": "dropping", "branch_cap": 4096, "slow_cap": 64,
                      "consumer_delay_ns": 0}
            results.append({"mode": "live", "scenario": scenario, "config": config,
                            "environment": env, "runs": runs, "summary": summary,
                            "sustainability": {"drop_threshold": 0.001, "end_to_end": True, "total_runs": 2,
                                               "passing_runs": 2 if loss == 0 else 0, "all_runs_pass": loss == 0,
                                               "max_passing_processed_pps": None, "generator_limited": False,
                                               "certified_pps": target if loss == 0 else None,
                                               "verdict": "pass" if loss == 0 else "fail"}})
    doc["live"] = results
    doc["max_sustainable_by_scenario"] = {"live-sync-raw": {"target_pps": 50_000, "processed_pps": 49_999.5,
                                                            "realized_send_pps": 49_999.5, "certified_pps": 49_999.5,
                                                            "generator_limited": False, "verdict": "pass",
                                                            "upper_bound_pps": None, "source": "loopback"}}
    return doc


def test_live_document_matches_the_schema(quick):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "docs" / "results-schema.json").read_text())
    jsonschema.validate(live_document(quick), schema)


def test_live_rates_and_loss(quick):
    doc = live_document(quick)
    doc["live"][3]["runs"][0]["generator_limited"] = True
    (fig,) = plot(doc, "live")
    rate_ax, loss_ax = fig.axes
    labels = rate_ax.get_legend_handles_labels()[1]
    assert {"live-sync-raw", "live-dropping-raw", "processed = offered", "0.1% loss", "generator-limited"} <= set(labels)
    assert rate_ax.get_xscale() == rate_ax.get_yscale() == "log"
    assert rate_ax.get_xlabel() == "offered packets/s" and "processed packets/s" in rate_ax.get_ylabel()
    sync = next(line for line in rate_ax.get_lines() if line.get_label() == "live-sync-raw")
    assert list(sync.get_xdata()) == pytest.approx([19_999.5 / 2, 99_999.5 / 2])  # realized send rates
    assert list(sync.get_ydata()) == pytest.approx(list(sync.get_xdata()))  # nothing lost
    threshold = [line for line in loss_ax.get_lines() if line.get_label() == "0.1% threshold"]
    assert len(threshold) == 1 and list(threshold[0].get_ydata()) == [0.001, 0.001]
    dropping = next(line for line in loss_ax.get_lines() if line.get_label() == "live-dropping-raw")
    assert all(y > 0.001 for y in dropping.get_ydata())
    no_overlap(fig)


def test_live_without_realized_rates_uses_the_targets(quick):
    (fig,) = plot(live_document(quick, realized=False), "live")
    sync = next(line for line in fig.axes[0].get_lines() if line.get_label() == "live-sync-raw")
    assert list(sync.get_xdata()) == [10_000, 50_000]
    assert "generator-limited" not in fig.axes[0].get_legend_handles_labels()[1]


def test_loss_stages_one_figure_per_rate(quick):
    figures = plot(live_document(quick), "loss")
    assert [f.axes[0].get_title() for f in figures] == ["loss stages at 10,000 packets/s offered",
                                                         "loss stages at 50,000 packets/s offered"]
    ax = figures[1].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["live-sync-raw", "live-dropping-raw"]
    labels = ax.get_legend_handles_labels()[1]
    for stage in ("sent - processed", "kernel drop", "interface drop", "queue drop", "consumer gap", "0.1% threshold"):
        assert stage in labels
    assert ax.get_xscale() == "symlog"
    no_overlap(figures[1])


def test_compare_before_and_after(quick):
    before = json.loads(quick.read_text())
    after = copy.deepcopy(before)
    for r in after["offline"]:
        for name in ("packets_per_sec",):
            r["summary"][name] = {k: v * 2 for k, v in r["summary"][name].items()}
    figures = plot(before, "compare", other=after, labels=("main", "branch"))
    assert len(figures) == 3
    ax = figures[0].axes[0]
    assert ax.get_legend_handles_labels()[1] == ["main", "branch"]
    assert texts(ax) == ["2.00x speed"] * len(SCENARIOS)
    assert figures[0]._suptitle.get_text().startswith("main: quick profile")
    no_overlap(figures[0])


def test_plot_errors(quick):
    with pytest.raises(ValueError, match="kind must be one of throughput, allocation, live, loss, compare"):
        plot(quick, "pie")
    with pytest.raises(ValueError, match="kind='compare' needs other="):
        plot(quick, "compare")
    with pytest.raises(ValueError, match=r"these results have no live runs \(run the runner with --mode live\)"):
        plot(quick, "live")
    with pytest.raises(ValueError, match="metric must be one of"):
        plot(quick, metric="speed")


def test_load_frame_is_accepted_for_offline_kinds(quick):
    import paclo.perf

    figures = plot(paclo.perf.load(quick))
    assert [f.axes[0].get_title() for f in figures] == ["udp-64", "tcp-512", "mixed"]
    assert len(markers(figures[0].axes[0])) == len(SCENARIOS)


IMG = re.compile(r'<img src="([^"]*)"')


def check_page(report) -> str:
    page = report.html.read_text()
    assert report.plots, "plots were written"
    for path in report.plots:
        assert path.exists() and path.stat().st_size > 1000
        assert path.name in page  # every plot is referenced
    sources = IMG.findall(page)
    assert len(sources) == len(report.plots)
    for src, path in zip(sources, report.plots, strict=True):
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]) == path.read_bytes()  # the same image, inline
    # self-contained: no external URL of any kind outside the inline images
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "data:", page)
    assert not re.search(r"(https?:)?//[a-z0-9]", text, re.I), re.search(r"(https?:)?//[a-z0-9].{0,40}", text, re.I)
    assert not re.search(r"""(src|href)=(?!["']?(data:|#))""", text)
    assert "@import" not in text and "url(" not in text
    return page


def test_report_offline_with_compare(quick, single, tmp_path):
    report = write_report(quick, tmp_path / "rep", compare=single)
    page = check_page(report)
    names = sorted(p.name for p in report.plots)
    for case in ("udp-64", "tcp-512", "mixed"):
        assert f"throughput-{case}.png" in names and f"allocation-{case}.png" in names and f"compare-{case}.png" in names
    assert "<h2>Offline medians</h2>" in page and "x C loop" in page and "<h2>Before and after</h2>" in page
    assert "peer-dpkt-raw" in page


def test_report_live(quick, tmp_path):
    report = write_report(live_document(quick), tmp_path / "live")
    page = check_page(report)
    names = [p.name for p in report.plots]
    assert "live-rates.png" in names and "live-loss-10000pps.png" in names and "live-loss-50000pps.png" in names
    assert "<h2>Live runs</h2>" in page and "Highest sustained rate per scenario" in page
    # the certified rate with its verdict; no failure above it, so it is a floor
    assert "<td>live-sync-raw</td><td>pass</td><td class=num>50,000</td><td class=num>none (a floor)</td>" in page
    # each live result's verdict, and a generator-limited run said so
    doc = live_document(quick)
    doc["live"][3]["sustainability"]["generator_limited"] = True
    page = check_page(write_report(doc, tmp_path / "limited"))
    assert page.count(">fail</td>") == 2 and page.count(">generator-limited</td>") == 1


def test_report_command_line(quick, tmp_path):
    out = tmp_path / "cli"
    proc = subprocess.run([sys.executable, "-m", "paclo.perf", "report", str(quick), "--output", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"[perf] wrote {out / 'report.html'}"
    assert (out / "report.html").exists() and "[perf] wrote 6 plots (PNG)" in proc.stderr
    # it says where it is: the drawing, then each PNG as it is written
    steps = [line for line in proc.stderr.splitlines() if line.startswith("[perf] report: ")]
    assert steps[0] == f"[perf] report: drawing the plots into {out}"
    assert sorted(s.split()[-1] for s in steps[1:]) == sorted(p.name for p in out.glob("*.png"))
    assert [s.split()[2] for s in steps[1:]] == [f"{i}/6" for i in range(1, 7)]
    # the directory holding results.json works too
    assert cli.main(["report", str(quick.parent), "--output", str(tmp_path / "dir")]) == 0


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["report"], 1, "usage: python -m paclo.perf report"),
        (["report", "RESULTS"], 1, "--output DIR is needed"),
        (["report", "nope.json", "--output", "x"], 2, "results file not found: nope.json"),
        (["report", "BAD", "--output", "x"], 4, "not a usable results file"),
        (["report", "RESULTS", "--output"], 1, "--output needs a value"),
        (["report", "RESULTS", "--bogus", "--output", "x"], 1, "unknown or incomplete argument: --bogus"),
    ],
)
def test_report_command_line_errors(argv, code, message, quick, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_version": 1}))
    argv = [str(quick) if a == "RESULTS" else str(bad) if a == "BAD" else str(tmp_path / a) if a == "x" else a for a in argv]
    assert cli.main(argv) == code
    captured = capsys.readouterr()
    assert message in captured.err + captured.out
