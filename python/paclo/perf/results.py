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


# Reference peers whose speed every other row is shown as a multiple of.
SPEED_REFERENCES = (("peer-c-pcap-next-ex", "x C loop"), ("peer-c-mmap-walk", "x walk"))


def offline_table(source: ResultsSource) -> tuple[list[str], list[list[str]]]:
    """The offline medians as a header and text rows (one per case and scenario): packets/s,
    ns/packet, native and Python bytes per packet, and the speed as a multiple of the C
    pcap_next_ex loop (`x C loop`) and of the C mmap record walk (`x walk`) where those
    peers ran on the same case."""
    document = read_results(source)
    results = document.get("offline") or []

    def med(result: dict[str, Any], name: str) -> Any:
        return (result.get("summary") or {}).get(name, {}).get("median")

    refs = {
        label: {r["case"]: med(r, "packets_per_sec") for r in results if r["scenario"] == scenario}
        for scenario, label in SPEED_REFERENCES
    }
    labels = [label for label, by_case in refs.items() if by_case]
    header = ["case", "scenario", "packets/s", "ns/packet", "native B/packet", "Python B/packet", *labels]

    def fmt(value: float | None, digits: int = 0) -> str:
        return "-" if value is None else f"{value:,.{digits}f}"

    rows = []
    for r in results:
        scenario = r["scenario"] + (" (first {:,} packets)".format(r["packets"]) if "only the first" in r.get("note", "") else "")
        pps = med(r, "packets_per_sec")
        row = [r["case"], scenario, fmt(pps), fmt(med(r, "ns_per_packet"), 1),
               fmt(med(r, "native_allocated_bytes_per_packet"), 2), fmt(med(r, "python_allocated_bytes_per_packet"), 0)]
        for label in labels:
            base = refs[label].get(r["case"])
            row.append(fmt(pps / base, 2) if base and pps is not None else "-")
        rows.append(row)
    return header, rows


def markdown(source: ResultsSource) -> str:
    """A Markdown table of offline medians (one row per case and scenario), for docs and
    reports: the columns of `offline_table` (`x C loop` and `x walk` when those peers ran)."""
    header, rows = offline_table(source)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * 2 + ["---:"] * (len(header) - 2)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
