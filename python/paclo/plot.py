"""Plots of flow and projection tables for analysts: traffic over time, top talkers, and
the distribution of flow sizes.

Each function takes a table from ``paclo.project`` or ``paclo.flows`` (lossless or its
analysis view), draws into ``ax`` when one is given (else into a new figure made without
pyplot), and returns the figure. matplotlib is imported on first use (``pip install
"paclo[plot]"``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._analysis import address_strings
from ._analysis import as_table as _table

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["flow_sizes", "top_talkers", "traffic"]

NICE_SECONDS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900,
                1800, 3600, 7200, 21600, 43200, 86400)


def _axes(ax: Axes | None, width: float = 8.0, height: float = 3.6) -> Axes:
    if ax is not None:
        return ax
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained").add_subplot()


def _figure_of(ax: Axes) -> Figure:
    """The figure ``ax`` is drawn on (the root figure of a subfigure)."""
    from matplotlib.figure import Figure

    fig: Any = ax.figure
    while not isinstance(fig, Figure):
        fig = fig.figure
    return fig


def _nanoseconds(table: pa.Table, names: tuple[str, ...]) -> np.ndarray[Any, np.dtype[np.int64]] | None:
    for name in names:
        if name in table.column_names:
            col = table.column(name)
            if pa.types.is_timestamp(col.type):
                col = col.cast(pa.timestamp("ns", tz=col.type.tz)).cast(pa.int64())
            return np.asarray(col.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
    return None


def _values(table: pa.Table, name: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    return np.asarray(table.column(name).cast(pa.float64()).fill_null(0).to_numpy(), dtype=np.float64)


def _interval(span_ns: int, bins: int) -> float:
    """A round bin width in seconds that cuts ``span_ns`` into about ``bins`` bins."""
    want = max(span_ns / 1e9 / bins, 1e-9)
    return next((s for s in NICE_SECONDS if s >= want), math.ceil(want / 86400) * 86400.0)


def traffic(
    table: Any,
    *,
    by: Literal["bytes", "packets"] = "bytes",
    interval: float | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Traffic over time: ``by`` per second in bins of ``interval`` seconds (None: a round
    width that gives about 100 bins).

    A projection table (one row per packet) gives the exact traffic: each packet's ``len``
    (wire length) in its own bin. A flow table has no per-packet times, so each flow's
    ``bytes`` or ``packets`` count in the bin of its first packet; the axis says so.
    """
    if by not in ("bytes", "packets"):
        raise ValueError(f"by must be 'bytes' or 'packets', not {by!r}")
    t = _table(table)
    ts = _nanoseconds(t, ("ts_ns", "ts"))
    per_packet = ts is not None
    if ts is None:
        ts = _nanoseconds(t, ("first_ts_ns", "first_ts"))
    if ts is None:
        raise ValueError("traffic needs a projection table (ts_ns) or a flow table (first_ts_ns)")
    # Per packet: the wire length (or one); per flow: the flow's counter.
    per_row = "len" if by == "bytes" else None
    weights = (_values(t, per_row) if per_row else np.ones(len(ts))) if per_packet else _values(t, by)
    ax = _axes(ax)
    if len(ts) == 0:
        ax.set_title("traffic over time (no rows)")
        return _figure_of(ax)
    t0, t1 = int(ts.min()), int(ts.max())
    width_s = interval if interval is not None else _interval(t1 - t0, 100)
    if width_s <= 0:
        raise ValueError(f"interval must be a positive number of seconds, not {interval!r}")
    width_ns = max(1, round(width_s * 1e9))
    start = t0 - t0 % width_ns
    index = (ts - start) // width_ns
    sums = np.bincount(index, weights=weights)
    # Bin edges as UTC datetime64 (one more than the bins, so the last bin has its width).
    edges = (start + np.arange(len(sums) + 1, dtype=np.int64) * width_ns).astype("datetime64[ns]")
    rate = sums / width_s
    unit = "bits/s" if by == "bytes" else "packets/s"
    values = rate * 8 if by == "bytes" else rate
    heights = np.append(values, values[-1])
    ax.step(edges, heights, where="post", color="C0", linewidth=1)
    ax.fill_between(edges, heights, step="post", alpha=0.3, color="C0")
    ax.set_ylabel(unit)
    ax.set_ylim(bottom=0)
    what = "packets" if per_packet else "flows, counted at their first packet"
    ax.set_xlabel(f"time (UTC), {width_s:g} s bins of {what}")
    ax.set_title(f"traffic over time ({'wire ' if by == 'bytes' else ''}{by})")
    ax.grid(alpha=0.25)
    fig = _figure_of(ax)
    for label in ax.get_xticklabels():
        label.set_rotation(20)
        label.set_horizontalalignment("right")
    return fig


def top_talkers(
    table: Any,
    n: int = 10,
    *,
    by: Literal["bytes", "packets"] = "bytes",
    key: Literal["src_ip", "dst_ip"] = "src_ip",
    ax: Axes | None = None,
) -> Figure:
    """The ``n`` addresses with the most ``by`` as ``key`` (summed over flows, or over
    packets of a projection, whose ``bytes`` are the wire lengths), largest first."""
    if by not in ("bytes", "packets"):
        raise ValueError(f"by must be 'bytes' or 'packets', not {by!r}")
    if key not in ("src_ip", "dst_ip"):
        raise ValueError(f"key must be 'src_ip' or 'dst_ip', not {key!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, not {n!r}")
    t = _table(table)
    if key not in t.column_names:
        raise ValueError(f"top_talkers needs a {key} column")
    if by in t.column_names:
        measure = t.column(by)
    elif by == "bytes" and "len" in t.column_names:
        measure = t.column("len")  # a projection: wire length per packet
    elif by == "packets":
        measure = pa.chunked_array([pa.array(np.ones(t.num_rows, dtype=np.uint64))])
    else:
        raise ValueError(f"top_talkers needs a {by} column (a flow table) or len (a projection)")
    keys = t.column(key)
    grouped = pa.table({"key": keys, "m": measure.cast(pa.uint64())}).filter(pc.is_valid(keys))
    sums = grouped.group_by("key").aggregate([("m", "sum")]).sort_by([("m_sum", "descending"), ("key", "ascending")])
    top = sums.slice(0, n)
    names = top.column("key")
    if pa.types.is_fixed_size_binary(names.type) or pa.types.is_binary(names.type):
        names = address_strings(names)
    labels = [str(x) for x in names.to_pylist()]
    values = top.column("m_sum").to_pylist()
    ax = _axes(ax, height=max(2.6, 1.4 + 0.3 * len(labels)))
    ys = list(range(len(labels)))
    ax.barh(ys, values, color="C0")
    ax.set_yticks(ys, labels)
    ax.invert_yaxis()
    ax.set_xlabel(f"{by} (sum{' of wire lengths' if by == 'bytes' else ''})")
    ax.set_title(f"top {len(labels)} {'sources' if key == 'src_ip' else 'destinations'} by {by}")
    ax.grid(axis="x", alpha=0.25)
    for y, v in zip(ys, values, strict=True):
        ax.annotate(f"{v:,}", (v, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
    ax.margins(x=0.15)
    return _figure_of(ax)


def flow_sizes(
    table: Any,
    *,
    by: Literal["bytes", "packets"] = "bytes",
    ax: Axes | None = None,
) -> Figure:
    """The distribution of flow sizes: a histogram of ``by`` per flow on log-spaced bins,
    with the median and the 99th percentile marked. Needs a flow table."""
    if by not in ("bytes", "packets"):
        raise ValueError(f"by must be 'bytes' or 'packets', not {by!r}")
    t = _table(table)
    if by not in t.column_names or "ts_ns" in t.column_names or "ts" in t.column_names:
        raise ValueError("flow_sizes needs a flow table (from paclo.flows), with a packets and a bytes column")
    sizes = _values(t, by)
    ax = _axes(ax)
    if len(sizes) == 0:
        ax.set_title("flow sizes (no flows)")
        return _figure_of(ax)
    low, high = max(1.0, float(sizes.min())), max(2.0, float(sizes.max()))
    # A little room at both ends, so the extreme sizes fall inside the first and last bins.
    edges = np.logspace(math.log10(low / 1.0001), math.log10(high * 1.0001), num=min(50, max(5, len(sizes) // 4 + 2)))
    ax.hist(sizes, bins=edges.tolist(), color="C0", alpha=0.8)
    ax.set_xscale("log")
    med, p99 = (float(x) for x in np.percentile(sizes, [50, 99]))
    ax.axvline(med, color="black", linestyle="--", linewidth=1, label=f"median {med:,.0f}")
    ax.axvline(p99, color="red", linestyle=":", linewidth=1, label=f"99th percentile {p99:,.0f}")
    ax.set_xlabel(f"{by} per flow (log scale)")
    ax.set_ylabel("flows")
    ax.set_title(f"flow sizes ({len(sizes):,} flows)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.25)
    return _figure_of(ax)
