"""Matplotlib figures of results.json: offline throughput and allocation, live rates and
loss stages, and a before/after comparison of two results files.

Every figure is a ``matplotlib.figure.Figure`` made without pyplot (no global figure state:
a script or a report can make hundreds and save them; in Jupyter, ``display(fig)`` or a
figure as a cell's last value shows it). Values are medians with min-max whiskers over the
measured runs, drawn as points: a result with one run is a point without whiskers, and a
log scale (used where the medians span a decade or more) never draws bars from an arbitrary
base. Fields a results file does not have (older or newer runners, a live section without
the generator's realized rate) are left out of the figure, never invented.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .results import read_results

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["KINDS", "available_kinds", "plot"]

Kind = Literal["throughput", "allocation", "live", "loss", "compare"]
KINDS: tuple[Kind, ...] = ("throughput", "allocation", "live", "loss", "compare")

# Reference peers: every offline figure shows paclo's speed as a multiple of theirs.
C_LOOP = "peer-c-pcap-next-ex"
C_WALK = "peer-c-mmap-walk"
REFERENCES = ((C_LOOP, "C loop", "C pcap_next_ex loop"), (C_WALK, "walk", "C mmap record walk"))

PACLO_COLOR = "C0"
PEER_COLOR = "0.45"
AFTER_COLOR = "C1"
THRESHOLD = 0.001  # the live sustainability rule: every loss or drop rate at most 0.1%

LOSS_STAGES = (
    ("send_loss_rate", "sent - processed"),
    ("kernel_drop_rate", "kernel drop"),
    ("interface_drop_rate", "interface drop"),
    ("queue_drop_rate", "queue drop"),
    ("consumer_gap_rate", "consumer gap"),
)

METRIC_LABELS = {
    "packets_per_sec": "packets/s",
    "ns_per_packet": "ns/packet",
    "mb_per_sec": "MB/s",
    "native_allocated_bytes_per_packet": "native bytes/packet",
    "python_allocated_bytes_per_packet": "Python bytes/packet",
    "native_allocations_per_packet": "native allocations/packet",
    "peak_rss_bytes": "peak RSS bytes",
    "process_cpu_ns": "process CPU ns",
    "elapsed_ns": "elapsed ns",
    "gc_count": "GC collections",
    "gc_time_ms": "GC ms",
}


@dataclass(frozen=True)
class Stat:
    """Median, min and max of one metric over a result's runs."""

    median: float
    low: float
    high: float


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def stat(result: Mapping[str, Any], name: str) -> Stat | None:
    """``name``'s summary of one result, from its ``summary`` block or else from its runs;
    None when no run measured it."""
    summary = (result.get("summary") or {}).get(name)
    if isinstance(summary, Mapping):
        med, low, high = (_number(summary.get(k)) for k in ("median", "min", "max"))
        if med is not None:
            return Stat(med, low if low is not None else med, high if high is not None else med)
    values = [v for v in (_number(r.get(name)) for r in result.get("runs") or []) if v is not None]
    if not values:
        return None
    return Stat(float(statistics.median(values)), min(values), max(values))


def _frame_results(frame: Any) -> list[dict[str, Any]]:
    """Offline results rebuilt from ``paclo.perf.load``'s DataFrame (one row per run)."""
    out: list[dict[str, Any]] = []
    offline = frame[frame["mode"] == "offline"]
    for (case, scenario), group in offline.groupby(["case", "scenario"], sort=False):
        runs = [{k: (None if _isna(v) else v) for k, v in row.items()} for row in group.to_dict("records")]
        out.append({"case": case, "scenario": scenario, "runs": runs})
    return out


def _isna(value: Any) -> bool:
    try:
        return bool(value != value)  # NaN
    except (TypeError, ValueError):
        return value is None


def _document(results: Any) -> dict[str, Any]:
    """A results document from a path, a dict, or load()'s DataFrame (offline part only)."""
    if hasattr(results, "groupby") and hasattr(results, "columns"):
        return {"profile": None, "offline": _frame_results(results), "live": None}
    document: dict[str, Any] = read_results(results)
    return document


def available_kinds(results: Any) -> list[Kind]:
    """The kinds ``plot`` can draw from ``results`` without ``other`` (``compare`` needs it)."""
    doc = _document(results)
    kinds: list[Kind] = []
    if doc.get("offline"):
        kinds += ["throughput", "allocation"]
    if doc.get("live"):
        kinds += ["live", "loss"]
    return kinds


def _figure(rows: int, cols: int = 1, *, width: float = 9.0, row_height: float = 0.32) -> Figure:
    from matplotlib.figure import Figure

    height = max(2.8, 1.7 + row_height * rows)
    # Constrained layout keeps titles, labels and legends clear of the axes.
    return Figure(figsize=(width, height), layout="constrained")


def _environment_line(doc: Mapping[str, Any]) -> str:
    results = list(doc.get("offline") or []) + list(doc.get("live") or [])
    env = next((r.get("environment") for r in results if r.get("environment")), None) or {}
    parts = []
    if doc.get("profile"):
        parts.append(f"{doc['profile']} profile")
    if doc.get("created_at"):
        parts.append(str(doc["created_at"])[:16].replace("T", " ") + " UTC")
    if env.get("cpu_model"):
        parts.append(f"{env['cpu_model']} x{env.get('cpu_count') or '?'}")
    if env.get("git_sha"):
        parts.append(f"git {str(env['git_sha'])[:7]}")
    return ", ".join(parts)


def _decades(values: Iterable[float]) -> bool:
    positive = [v for v in values if v > 0]
    return len(positive) > 1 and max(positive) / min(positive) >= 10


def _label(result: Mapping[str, Any]) -> str:
    name = str(result["scenario"])
    if "only the first" in str(result.get("note") or ""):
        packets = result.get("packets")
        name += f" (first {packets:,})" if isinstance(packets, int) else " (prefix)"
    return name


def _runs(result: Mapping[str, Any]) -> int:
    return len(result.get("runs") or [])


def _dots(ax: Axes, ys: Sequence[float], stats: Sequence[Stat], *, color: str | Sequence[str], marker: str = "o",
          filled: bool = True, label: str | None = None, size: float = 6.0) -> None:
    """Points at the medians with min-max whiskers where the runs differ."""
    colors = [color] * len(ys) if isinstance(color, str) else list(color)
    for i, (y, s) in enumerate(zip(ys, stats, strict=True)):
        if s.high > s.low:
            ax.plot([s.low, s.high], [y, y], color=colors[i], linewidth=1.4, solid_capstyle="butt", zorder=2)
        ax.plot([s.median], [y], marker=marker, linestyle="none", markersize=size, color=colors[i],
                markerfacecolor=colors[i] if filled else "white", zorder=3,
                label=label if i == 0 else None)


def _speed_ratios(results: Sequence[Mapping[str, Any]], case: str) -> list[tuple[str, float]]:
    """(short name, packets/s median) of the reference peers that ran on ``case``."""
    out = []
    for scenario, short, _ in REFERENCES:
        for r in results:
            if r.get("case") == case and r.get("scenario") == scenario:
                s = stat(r, "packets_per_sec")
                if s is not None and s.median > 0:
                    out.append((short, s.median))
    return out


def _offline_groups(doc: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in doc.get("offline") or []:
        groups.setdefault(str(r.get("case")), []).append(r)
    return groups


def _throughput(doc: Mapping[str, Any], metric: str, log: bool | None) -> list[Figure]:
    figures = []
    env = _environment_line(doc)
    for case, results in _offline_groups(doc).items():
        rows = [(r, s) for r in results if (s := stat(r, metric)) is not None]
        if not rows:
            continue
        fig = _figure(len(rows))
        ax = fig.add_subplot()
        ys = list(range(len(rows)))
        colors = [PEER_COLOR if str(r["scenario"]).startswith("peer-") else PACLO_COLOR for r, _ in rows]
        _dots(ax, ys, [s for _, s in rows], color=colors)
        ax.set_yticks(ys, [_label(r) for r, _ in rows])
        ax.invert_yaxis()
        use_log = _decades(s.median for _, s in rows) if log is None else log
        if use_log and all(s.low > 0 for _, s in rows):
            ax.set_xscale("log")
        refs = _speed_ratios(results, case)
        # Reference lines where the peers sit, and each row's speed as a multiple of theirs.
        for (scenario, short, long), style in zip(REFERENCES, ("--", ":"), strict=True):
            ref = next((s for r, s in rows if r["scenario"] == scenario), None)
            if ref is not None:
                ax.axvline(ref.median, color=PEER_COLOR, linestyle=style, linewidth=1, label=f"{long} ({short})")
        for y, (r, s) in zip(ys, rows, strict=True):
            pps = stat(r, "packets_per_sec")
            if pps is None or not refs:
                continue
            text = "  ".join(f"{pps.median / base:.2f}x {short}" for short, base in refs)
            ax.annotate(text, (s.high, y), xytext=(6, 0), textcoords="offset points", va="center", fontsize=7,
                        color="0.25", annotation_clip=False)
        runs = sorted({_runs(r) for r, _ in rows})
        run_text = f"{runs[0]} run" + ("s" if runs[0] != 1 else "") if len(runs) == 1 else f"{runs[0]}-{runs[-1]} runs"
        whiskers = "; whiskers min-max" if any(s.high > s.low for _, s in rows) else ""
        ax.set_xlabel(f"{METRIC_LABELS.get(metric, metric)} (median of {run_text}{whiskers})")
        ax.set_title(case)
        ax.grid(axis="x", which="both", alpha=0.25)
        ax.margins(x=0.25 if refs else 0.08)
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(loc="lower right", fontsize=7, framealpha=0.8)
        fig.suptitle(f"paclo offline {METRIC_LABELS.get(metric, metric)}, peers in grey" + (f"\n{env}" if env else ""),
                     fontsize=9)
        figures.append(fig)
    return figures


def _allocation(doc: Mapping[str, Any]) -> list[Figure]:
    figures = []
    env = _environment_line(doc)
    panels = (("native_allocated_bytes_per_packet", "native bytes/packet (Rust allocator)"),
              ("python_allocated_bytes_per_packet", "Python bytes/packet (tracemalloc)"))
    for case, results in _offline_groups(doc).items():
        fig = _figure(len(results), width=10.0)
        axes = fig.subplots(1, 2, sharey=True)
        ys = list(range(len(results)))
        drawn = False
        for ax, (metric, label) in zip(axes, panels, strict=True):
            for y, r in zip(ys, results, strict=True):
                s = stat(r, metric)
                color = PEER_COLOR if str(r["scenario"]).startswith("peer-") else PACLO_COLOR
                if s is None:
                    ax.annotate("not measured", (0, y), xytext=(4, 0), textcoords="offset points", va="center",
                                fontsize=7, color="0.5")
                    continue
                _dots(ax, [y], [s], color=color)
                ax.annotate(f"{s.median:,.1f}", (s.high, y), xytext=(5, 0), textcoords="offset points", va="center",
                            fontsize=7, color="0.25", annotation_clip=False)
                drawn = True
            ax.set_xlabel(label)
            ax.set_xlim(left=0)
            ax.margins(x=0.2)
            ax.grid(axis="x", alpha=0.25)
        axes[0].set_yticks(ys, [_label(r) for r in results])
        axes[0].invert_yaxis()
        axes[0].set_title(case)
        if not drawn:
            continue
        fig.suptitle("allocation per packet (median)" + (f"\n{env}" if env else ""), fontsize=9)
        figures.append(fig)
    return figures


def _live_results(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    results = list(doc.get("live") or [])
    if not results:
        raise ValueError("these results have no live runs (run the runner with --mode live)")
    return results


def _target(result: Mapping[str, Any]) -> float | None:
    config = result.get("config") or {}
    value = _number(config.get("target_pps"))
    if value is None:
        value = _number(result.get("target_pps"))
    if value is None:
        runs = result.get("runs") or []
        value = _number(runs[0].get("target_pps")) if runs else None
    return value


def generator_limited(result: Mapping[str, Any]) -> bool:
    """Whether the sender fell short of the target in this live result (or any of its runs)."""
    if result.get("generator_limited") is True or (result.get("sustainability") or {}).get("generator_limited") is True:
        return True
    return any(r.get("generator_limited") is True for r in result.get("runs") or [])


def _live(doc: Mapping[str, Any]) -> list[Figure]:
    results = _live_results(doc)
    by_scenario: dict[str, list[Mapping[str, Any]]] = {}
    for r in results:
        by_scenario.setdefault(str(r["scenario"]), []).append(r)
    fig = _figure(12, 2, width=12.0, row_height=0.35)
    rate_ax, loss_ax = fig.subplots(1, 2)
    offered_all: list[float] = []
    worst = 0.0
    limited_drawn = False
    for i, (scenario, group) in enumerate(by_scenario.items()):
        color = PEER_COLOR if scenario.startswith("peer-") else f"C{i % 10}"
        points = []
        for r in group:
            realized = stat(r, "realized_send_pps")
            offered = realized.median if realized is not None else _target(r)
            processed = stat(r, "sustained_processed_pps")
            if offered is None or processed is None:
                continue
            points.append((offered, processed, stat(r, "send_loss_rate"), generator_limited(r)))
        points.sort(key=lambda p: p[0])
        if not points:
            continue
        offered_all += [p[0] for p in points]
        xs = [p[0] for p in points]
        rate_ax.plot(xs, [p[1].median for p in points], color=color, linewidth=1, marker="o", markersize=4,
                     label=scenario)
        for x, processed, _, limited in points:
            if processed.high > processed.low:
                rate_ax.plot([x, x], [processed.low, processed.high], color=color, linewidth=1)
            if limited:
                rate_ax.plot([x], [processed.median], marker="o", markersize=9, markerfacecolor="none",
                             color="black", linestyle="none", label=None if limited_drawn else "generator-limited")
                limited_drawn = True
        losses = [(x, loss) for x, _, loss, _ in points if loss is not None]
        worst = max([worst, *(loss.high for _, loss in losses)])
        if losses:
            loss_ax.plot([x for x, _ in losses], [loss.median for _, loss in losses], color=color, linewidth=1,
                         marker="o", markersize=4, label=scenario)
            for x, loss in losses:
                if loss.high > loss.low:
                    loss_ax.plot([x, x], [loss.low, loss.high], color=color, linewidth=1)
    if not offered_all:
        raise ValueError("the live results have no offered and processed rates to plot")
    lo, hi = min(offered_all) * 0.8, max(offered_all) * 1.25
    rate_ax.plot([lo, hi], [lo, hi], color="black", linewidth=0.8, linestyle="--", label="processed = offered")
    rate_ax.plot([lo, hi], [lo * (1 - THRESHOLD), hi * (1 - THRESHOLD)], color="red", linewidth=0.8, linestyle=":",
                 label="0.1% loss")
    for ax in (rate_ax, loss_ax):
        ax.set_xscale("log")
        ax.set_xlabel("offered packets/s")
        ax.grid(which="both", alpha=0.25)
    rate_ax.set_yscale("log")
    rate_ax.set_ylabel("processed packets/s (median)")
    rate_ax.set_title("processed vs offered")
    rate_ax.legend(fontsize=6, loc="lower right")
    loss_ax.set_yscale("symlog", linthresh=1e-5)
    loss_ax.set_ylim(0, min(1.5, max(2 * THRESHOLD, 2 * worst)))
    loss_ax.axhline(THRESHOLD, color="red", linewidth=0.8, linestyle=":", label="0.1% threshold")
    loss_ax.set_ylabel("end-to-end loss, (sent - processed) / sent")
    loss_ax.set_title("loss")
    loss_ax.legend(fontsize=6, loc="upper left")
    env = _environment_line(doc)
    fig.suptitle("paclo live capture (offered: the generator's realized rate, or the target where it was not measured)"
                 + (f"\n{env}" if env else ""), fontsize=9)
    return [fig]


def _loss(doc: Mapping[str, Any]) -> list[Figure]:
    results = _live_results(doc)
    by_rate: dict[float, list[Mapping[str, Any]]] = {}
    for r in results:
        by_rate.setdefault(_target(r) or 0.0, []).append(r)
    figures = []
    env = _environment_line(doc)
    markers = ("o", "s", "D", "^", "v")
    for rate, group in sorted(by_rate.items()):
        fig = _figure(len(group), width=9.5)
        ax = fig.add_subplot()
        ys = list(range(len(group)))
        drawn = False
        for j, ((name, label), marker) in enumerate(zip(LOSS_STAGES, markers, strict=True)):
            offset = (j - 2) * 0.12
            pts = [(y + offset, s) for y, r in zip(ys, group, strict=True) if (s := stat(r, name)) is not None]
            if pts:
                _dots(ax, [p[0] for p in pts], [p[1] for p in pts], color=f"C{j}", marker=marker, label=label, size=5)
                drawn = True
        if not drawn:
            continue
        labels = []
        for r in group:
            suffix = " (generator-limited)" if generator_limited(r) else ""
            labels.append(f"{r['scenario']}{suffix}")
        ax.set_yticks(ys, labels)
        ax.invert_yaxis()
        worst = max((s.high for r in group for name, _ in LOSS_STAGES if (s := stat(r, name)) is not None), default=0.0)
        ax.set_xscale("symlog", linthresh=1e-5)
        ax.set_xlim(0, min(1.5, max(2 * THRESHOLD, 2 * worst)))
        ax.axvline(THRESHOLD, color="red", linewidth=0.8, linestyle=":", label="0.1% threshold")
        ax.set_xlabel("rate of packets lost at each stage (median; whiskers min-max)")
        ax.set_title(f"loss stages at {rate:,.0f} packets/s offered" if rate else "loss stages")
        ax.grid(axis="x", which="both", alpha=0.25)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.suptitle("paclo live capture, loss by stage" + (f"\n{env}" if env else ""), fontsize=9)
        figures.append(fig)
    return figures


def _compare(doc: Mapping[str, Any], other: Any, metric: str, log: bool | None, labels: tuple[str, str]) -> list[Figure]:
    before, after = doc, _document(other)
    after_index = {(r.get("case"), r.get("scenario")): r for r in after.get("offline") or []}
    figures = []
    for case, results in _offline_groups(before).items():
        rows = []
        for r in results:
            b = after_index.get((case, r.get("scenario")))
            sa, sb = stat(r, metric), (stat(b, metric) if b is not None else None)
            if b is not None and sa is not None and sb is not None:
                rows.append((r, b, sa, sb))
        if not rows:
            continue
        fig = _figure(len(rows))
        ax = fig.add_subplot()
        ys = list(range(len(rows)))
        _dots(ax, [y - 0.14 for y in ys], [row[2] for row in rows], color=PEER_COLOR, filled=False, label=labels[0])
        _dots(ax, [y + 0.14 for y in ys], [row[3] for row in rows], color=AFTER_COLOR, label=labels[1])
        for y, (r, b, sa, sb) in zip(ys, rows, strict=True):
            speed_a, speed_b = stat(r, "packets_per_sec"), stat(b, "packets_per_sec")
            if speed_a is not None and speed_b is not None and speed_a.median > 0:
                ax.annotate(f"{speed_b.median / speed_a.median:.2f}x speed", (max(sa.high, sb.high), y),
                            xytext=(6, 0), textcoords="offset points", va="center", fontsize=7, color="0.25",
                            annotation_clip=False)
        ax.set_yticks(ys, [_label(r) for r, *_ in rows])
        ax.invert_yaxis()
        values = [s.median for *_, sa, sb in rows for s in (sa, sb)]
        if (_decades(values) if log is None else log) and all(s.low > 0 for *_, sa, sb in rows for s in (sa, sb)):
            ax.set_xscale("log")
        ax.set_xlabel(f"{METRIC_LABELS.get(metric, metric)} (median; whiskers min-max)")
        ax.set_title(case)
        ax.margins(x=0.25)
        ax.grid(axis="x", which="both", alpha=0.25)
        ax.legend(loc="lower right", fontsize=7)
        env_a, env_b = _environment_line(before), _environment_line(after)
        fig.suptitle(f"{labels[0]}: {env_a or 'results'}\n{labels[1]}: {env_b or 'results'}", fontsize=8)
        figures.append(fig)
    if not figures:
        raise ValueError("the two results have no offline case and scenario in common")
    return figures


def plot(
    results: Any,
    kind: Kind = "throughput",
    *,
    other: Any = None,
    metric: str = "packets_per_sec",
    log: bool | None = None,
    labels: tuple[str, str] = ("before", "after"),
) -> list[Figure]:
    """Matplotlib figures of a results file (a path, its directory, a results dict, or for
    the offline kinds ``paclo.perf.load``'s DataFrame).

    ``kind``:

    - ``"throughput"`` (one figure per case): ``metric``'s median per scenario with min-max
      whiskers, peers in grey beside paclo, reference lines at the C ``pcap_next_ex`` loop
      (and the C mmap walk when it ran) and each row's speed as a multiple of theirs;
    - ``"allocation"`` (one per case): native and Python bytes allocated per packet;
    - ``"live"`` (one figure): processed vs offered packets/s per scenario, with the
      identity and 0.1%-loss lines, and end-to-end loss vs offered rate;
    - ``"loss"`` (one per offered rate): every loss stage's rate per scenario, with the
      0.1% threshold;
    - ``"compare"`` (one per case): ``results`` (before) beside ``other`` (after), with the
      speed ratio of each scenario.

    ``log``: None picks a log scale where the medians span a decade or more.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    doc = _document(results)
    if kind in ("throughput", "compare"):
        known = set(METRIC_LABELS) | {"packets", "bytes", "decode_errors", "unique_flows", "native_allocations",
                                      "native_allocated_bytes", "python_allocated_bytes"}
        if metric not in known:
            raise ValueError(f"metric must be one of {', '.join(sorted(known))}, got {metric!r}")
    if kind in ("throughput", "allocation", "compare") and not doc.get("offline"):
        raise ValueError("these results have no offline runs (run the runner with --mode offline)")
    if kind == "throughput":
        return _throughput(doc, metric, log)
    if kind == "allocation":
        return _allocation(doc)
    if kind == "live":
        return _live(doc)
    if kind == "loss":
        return _loss(doc)
    if other is None:
        raise ValueError("kind='compare' needs other= (the results to compare with)")
    return _compare(doc, other, metric, log, labels)
