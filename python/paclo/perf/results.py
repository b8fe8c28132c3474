"""Reading, comparing and plotting results.json (schema version 2)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from .metrics import MEASURED_METRICS

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

# A results.json path, the directory holding it, or the parsed document.
ResultsSource: TypeAlias = str | os.PathLike[str] | dict[str, Any]

# Run metrics copied into load()'s DataFrame, in this order (absent ones become missing values).
RUN_COLUMNS = ("packets", "bytes", "decode_errors", "unique_flows", *MEASURED_METRICS)


def read_results(source: ResultsSource) -> dict[str, Any]:
    """A results document from a path (a results.json or the directory holding it) or a dict."""
    if isinstance(source, dict):
        document = source
    else:
        path = Path(os.fspath(source))
        if path.is_dir():
            path = path / "results.json"
        with open(path) as f:
            document = json.load(f)
    version = document.get("schema_version")
    if version != 2:
        raise ValueError(f"results schema_version must be 2, got {version!r}")
    return document


def load(source: ResultsSource) -> pd.DataFrame:
    """results.json as a pandas DataFrame: one row per measured run.

    Columns: `mode`, `case`, `scenario`, `run` (1-based), `profile`, `path`, the run metrics of
    RUN_COLUMNS, and `peer` (True for the other tools' scenarios). Live results (when present)
    have `case` set to None and `target_pps` set from their config.
    """
    import pandas as pd

    document = read_results(source)
    rows: list[dict[str, Any]] = []
    for result in document.get("offline") or []:
        for i, run in enumerate(result["runs"], 1):
            row: dict[str, Any] = {
                "mode": "offline",
                "case": result["case"],
                "scenario": result["scenario"],
                "run": i,
                "profile": document["profile"],
                "path": result["path"],
                "peer": result["scenario"].startswith("peer-"),
            }
            row.update({name: run.get(name) for name in RUN_COLUMNS})
            rows.append(row)
    for result in document.get("live") or []:
        for i, run in enumerate(result["runs"], 1):
            row = {
                "mode": "live",
                "case": None,
                "scenario": result["scenario"],
                "run": i,
                "profile": document["profile"],
                "path": None,
                "peer": False,
                "target_pps": (result.get("config") or {}).get("target_pps"),
            }
            row.update({name: run.get(name) for name in RUN_COLUMNS})
            rows.append(row)
    columns = ["mode", "case", "scenario", "run", "profile", "path", "peer", *RUN_COLUMNS]
    frame = pd.DataFrame(rows, columns=columns + (["target_pps"] if document.get("live") else []))
    return frame


def _medians(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, float]]:
    out: dict[tuple[str, str], dict[str, float]] = {}
    for result in document.get("offline") or []:
        out[(result["case"], result["scenario"])] = {
            name: stat["median"] for name, stat in result["summary"].items()
        }
    return out


def compare(a: ResultsSource, b: ResultsSource,
            metrics: Sequence[str] = ("packets_per_sec", "ns_per_packet", "native_allocated_bytes_per_packet",
                                      "python_allocated_bytes_per_packet")) -> pd.DataFrame:
    """Ratios of medians, `b / a`, for every (case, scenario) present in both results.

    Returns a pandas DataFrame indexed by (case, scenario) with, per metric, the two medians and
    their ratio (`<metric>_a`, `<metric>_b`, `<metric>_ratio`; the ratio is missing where `a`'s
    median is 0 or either is absent). For packets_per_sec a ratio above 1 means `b` is faster;
    for ns_per_packet and allocation, below 1 means `b` is better.
    """
    import pandas as pd

    ma = _medians(read_results(a))
    mb = _medians(read_results(b))
    rows: list[dict[str, Any]] = []
    for key in ma:
        if key not in mb:
            continue
        row: dict[str, Any] = {"case": key[0], "scenario": key[1]}
        for name in metrics:
            va = ma[key].get(name)
            vb = mb[key].get(name)
            row[f"{name}_a"] = va
            row[f"{name}_b"] = vb
            row[f"{name}_ratio"] = vb / va if va not in (None, 0) and vb is not None else None
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not rows:
        return frame
    return frame.set_index(["case", "scenario"])


def plot(results: ResultsSource | pd.DataFrame, *, metric: str = "packets_per_sec", log: bool = True) -> list[Figure]:
    """Matplotlib figures of offline medians: one horizontal bar chart per case.

    `results` is a results.json path, a results dict, or a DataFrame from `load`. Bars are the
    median of `metric` per scenario, with min-max error bars; peers are drawn in grey so paclo
    and the other tools sit side by side. Returns the list of figures (one per case).
    """
    import matplotlib

    if not os.environ.get("DISPLAY") and not os.environ.get("MPLBACKEND"):
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt
    import pandas as pd

    frame = results if isinstance(results, pd.DataFrame) else load(results)
    frame = frame[frame["mode"] == "offline"]
    if metric not in frame.columns:
        raise ValueError(f"metric must be one of {', '.join(RUN_COLUMNS)}, got {metric!r}")
    figures: list[Figure] = []
    for case, group in frame.groupby("case", sort=False):
        stats = group.groupby("scenario", sort=False)[metric].agg(["median", "min", "max"])
        stats = stats.dropna()
        fig, ax = plt.subplots(figsize=(8, 0.4 * max(len(stats), 1) + 1.5))
        colors = ["0.6" if name.startswith("peer-") else "C0" for name in stats.index]
        err = [stats["median"] - stats["min"], stats["max"] - stats["median"]]
        ax.barh(list(stats.index), stats["median"], xerr=err, color=colors)
        ax.invert_yaxis()
        if log and (stats["median"] > 0).all() and len(stats):
            ax.set_xscale("log")
        ax.set_xlabel(f"{metric} (median; bars min-max)")
        ax.set_title(f"{case}")
        fig.tight_layout()
        figures.append(fig)
    return figures


def markdown(source: ResultsSource) -> str:
    """A Markdown table of offline medians (one row per case and scenario), for docs and reports.

    Columns: case, scenario, packets/s, ns/packet, native B/packet, Python B/packet, and
    `x C loop` (packets/s as a multiple of the C pcap_next_ex loop on the same case) when the
    peers ran.
    """
    document = read_results(source)
    results = document.get("offline") or []
    c_loop = {
        r["case"]: r["summary"].get("packets_per_sec", {}).get("median")
        for r in results
        if r["scenario"] == "peer-c-pcap-next-ex"
    }
    header = ["case", "scenario", "packets/s", "ns/packet", "native B/packet", "Python B/packet"]
    if c_loop:
        header.append("x C loop")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|"]

    def fmt(value: float | None, digits: int = 0) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    for r in results:
        s = r["summary"]

        def med(name: str, s: dict[str, Any] = s) -> Any:
            return s.get(name, {}).get("median")

        scenario = r["scenario"] + (" (first {:,} packets)".format(r["packets"]) if "only the first" in r.get("note", "") else "")
        row = [r["case"], scenario, fmt(med("packets_per_sec")), fmt(med("ns_per_packet"), 1),
               fmt(med("native_allocated_bytes_per_packet"), 2), fmt(med("python_allocated_bytes_per_packet"), 0)]
        if c_loop:
            base = c_loop.get(r["case"])
            pps = med("packets_per_sec")
            row.append(fmt(pps / base, 2) if base and pps is not None else "-")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)
