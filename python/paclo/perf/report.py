"""``python -m paclo.perf report RESULTS.json [--compare OTHER.json] --output DIR``: every plot
of a results file as PNG, and one self-contained HTML page (tables, and the plots inline as
data URIs) that opens without network access.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .plots import available_kinds, generator_limited, plot, stat
from .results import offline_table, read_results

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Report", "main", "write_report"]

EXIT_USAGE = 1
EXIT_NOT_FOUND = 2
EXIT_VALUE = 4

USAGE = """\
usage: python -m paclo.perf report RESULTS.json [--compare OTHER.json] --output DIR

Writes every plot of RESULTS.json (a results file or the directory holding it) as PNG into
DIR, and DIR/report.html: one page with the tables and the plots inline, readable offline.
With --compare, RESULTS.json is "before", OTHER.json "after", and the page adds their
comparison.
"""


@dataclass(frozen=True)
class Report:
    """What ``write_report`` wrote: the HTML page and the PNG files, in page order."""

    html: Path
    plots: tuple[Path, ...]


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _median(result: Mapping[str, Any], name: str) -> float | None:
    s = stat(result, name)
    return None if s is None else s.median


def _live_table(doc: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    header = ["target pps", "scenario", "runs", "realized send pps", "processed pps", "end-to-end loss",
              "worst stage", "passing runs", "verdict", "note"]
    stages = ("kernel_drop_rate", "interface_drop_rate", "queue_drop_rate", "consumer_gap_rate")
    rows = []
    for r in doc.get("live") or []:
        target = (r.get("config") or {}).get("target_pps")
        loss = _median(r, "send_loss_rate")
        worst = max(((name, v) for name in stages if (v := _median(r, name)) is not None), key=lambda x: x[1], default=None)
        sus = r.get("sustainability") or {}
        rows.append([
            _fmt(target if isinstance(target, (int, float)) else None), str(r.get("scenario")),
            str(len(r.get("runs") or [])), _fmt(_median(r, "realized_send_pps")), _fmt(_median(r, "sustained_processed_pps")),
            "-" if loss is None else f"{loss:.3%}",
            "-" if worst is None else f"{worst[0].removesuffix('_rate').replace('_', ' ')} {worst[1]:.3%}",
            f"{sus.get('passing_runs', '-')}/{sus.get('total_runs', '-')}" if sus else "-",
            str(sus.get("verdict") or "-"),
            "generator-limited" if generator_limited(r) else "",
        ])
    return header, rows


def _compare_table(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    index = {(r.get("case"), r.get("scenario")): r for r in after.get("offline") or []}
    header = ["case", "scenario", "packets/s before", "packets/s after", "speed after / before",
              "ns/packet before", "ns/packet after"]
    rows = []
    for r in before.get("offline") or []:
        b = index.get((r.get("case"), r.get("scenario")))
        if b is None:
            continue
        pa_, pb = _median(r, "packets_per_sec"), _median(b, "packets_per_sec")
        rows.append([str(r.get("case")), str(r.get("scenario")), _fmt(pa_), _fmt(pb),
                     _fmt(pb / pa_, 2) if pa_ and pb is not None else "-",
                     _fmt(_median(r, "ns_per_packet"), 1), _fmt(_median(b, "ns_per_packet"), 1)])
    return header, rows


def _html_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td{' class=num' if i >= 2 else ''}>{html.escape(c)}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _environment(doc: Mapping[str, Any]) -> dict[str, Any]:
    for r in list(doc.get("offline") or []) + list(doc.get("live") or []):
        if r.get("environment"):
            env: dict[str, Any] = dict(r["environment"])
            return env
    return {}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower() or "plot"


def _png(fig: Figure, path: Path, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    data = buf.getvalue()
    path.write_bytes(data)
    return data


def _figures(doc: dict[str, Any], other: dict[str, Any] | None) -> list[tuple[str, str, Figure]]:
    """(file name, section, figure) of every plot the results allow, in page order."""
    out: list[tuple[str, str, Figure]] = []
    kinds = available_kinds(doc)
    if "throughput" in kinds:
        for fig in plot(doc, "throughput"):
            out.append((f"throughput-{_slug(fig.axes[0].get_title())}.png", "Offline throughput", fig))
        for fig in plot(doc, "allocation"):
            out.append((f"allocation-{_slug(fig.axes[0].get_title())}.png", "Allocation per packet", fig))
    if "live" in kinds:
        # Live results without rates draw no rate plot; the table still shows them.
        with contextlib.suppress(ValueError):
            out.append(("live-rates.png", "Live capture", plot(doc, "live")[0]))
        for fig in plot(doc, "loss"):
            rate = re.sub(r"\D", "", fig.axes[0].get_title()) or "all"
            out.append((f"live-loss-{rate}pps.png", "Live loss by stage", fig))
    if other is not None and other.get("offline") and doc.get("offline"):
        # Nothing in common: no plot, and the comparison table says so.
        with contextlib.suppress(ValueError):
            for fig in plot(doc, "compare", other=other):
                out.append((f"compare-{_slug(fig.axes[0].get_title())}.png", "Before and after", fig))
    return out


STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:72em;
padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
th{background:#f4f4f4}figure{margin:1em 0}img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.8em;color:#555}code{font-size:.9em}
"""


def write_report(
    results: Any,
    output: str | os.PathLike[str],
    *,
    compare: Any = None,
    dpi: int = 100,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Write the plots of ``results`` as PNG files into ``output`` and ``output/report.html``.

    ``results`` and ``compare`` are results.json paths (or their directories) or results
    dicts; with ``compare``, ``results`` is the "before" run. ``progress``, if given, is
    called with a line naming each step (drawing, each PNG written). Returns what was written.
    """
    doc = read_results(results)
    other = read_results(compare) if compare is not None else None
    out = Path(os.fspath(output))
    out.mkdir(parents=True, exist_ok=True)
    env = _environment(doc)
    parts = [f"<h1>paclo performance report</h1><p>Profile <b>{html.escape(str(doc.get('profile')))}</b>, "
             f"results written {html.escape(str(doc.get('created_at')))}.</p>"]
    if doc.get("complete") is False:
        done = len(doc.get("offline") or []) + len(doc.get("live") or [])
        parts.append(f"<p><b>Incomplete run</b>: {done} steps finished; the run was stopped, killed or failed "
                     "(the same command with --resume continues it).</p>")
    sittings = doc.get("sittings")
    if isinstance(sittings, list) and len(sittings) > 1:
        rows = [[str(s.get("started_at")), str(s.get("finished_at") or "-"), str(s.get("steps")),
                 " ".join(map(str, s.get("command_line") or []))] for s in sittings if isinstance(s, Mapping)]
        parts.append("<h2>Sittings</h2><p>The run was resumed: each sitting ran the steps it counts.</p>"
                     + _html_table(["started", "finished", "steps", "command"], rows))
    if env:
        rows = [[k, " ".join(map(str, v)) if isinstance(v, list) else str(v)] for k, v in env.items()]
        parts.append("<h2>Machine and software</h2>" + _html_table(["field", "value"], rows))
    config = doc.get("config")
    if isinstance(config, Mapping):
        parts.append("<details><summary>Runner configuration</summary><pre>"
                     + html.escape(json.dumps(config, indent=1, default=str)) + "</pre></details>")
    if doc.get("offline"):
        parts.append("<h2>Offline medians</h2>" + _html_table(*offline_table(doc)))
    if doc.get("live"):
        parts.append("<h2>Live runs</h2>" + _html_table(*_live_table(doc)))
        best = doc.get("max_sustainable_by_scenario")
        if isinstance(best, Mapping) and best:
            rows = [[str(k), str(v.get("verdict") or "-"), _fmt(v.get("certified_pps")),
                     _fmt(v.get("upper_bound_pps")) if v.get("upper_bound_pps") is not None else "none (a floor)",
                     _fmt(v.get("target_pps")), _fmt(v.get("realized_send_pps")), _fmt(v.get("processed_pps"))]
                    for k, v in best.items()]
            parts.append("<h3>Highest sustained rate per scenario (every run within 0.1%)</h3>"
                         + _html_table(["scenario", "verdict", "certified pps", "failed at pps", "target pps",
                                        "realized send pps", "processed pps"], rows))
    if other is not None:
        header, rows = _compare_table(doc, other)
        parts.append("<h2>Before and after</h2><p>Before: this file; after: "
                     f"{html.escape(str(compare))} ({html.escape(str(other.get('created_at')))}).</p>")
        parts.append(_html_table(header, rows) if rows else "<p>The two results have no offline case and scenario in common.</p>")
    plots: list[Path] = []
    section = None
    if progress is not None:
        progress(f"drawing the plots into {out}")
    figures = _figures(doc, other)
    for i, (name, title, fig) in enumerate(figures, 1):
        path = out / name
        data = _png(fig, path, dpi)
        plots.append(path)
        if progress is not None:
            progress(f"{i}/{len(figures)} {name}")
        if title != section:
            parts.append(f"<h2>{html.escape(title)}</h2>")
            section = title
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        parts.append(f'<figure><img src="{uri}" alt="{html.escape(name)}"><figcaption>{html.escape(name)}</figcaption></figure>')
    page = ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>paclo performance report</title>"
            f"<style>{STYLE}</style></head><body>" + "\n".join(parts) + "</body></html>\n")
    index = out / "report.html"
    index.write_text(page, encoding="utf-8")
    return Report(index, tuple(plots))


def main(argv: Sequence[str]) -> int:
    """The ``report`` subcommand; returns the exit code (1 usage, 2 not found, 4 bad results file)."""
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(USAGE)
        return 0 if args else EXIT_USAGE
    results: str | None = None
    compare: str | None = None
    output: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in ("--compare", "--output"):
            if eq:
                value = inline
                i += 1
            elif i + 1 < len(args):
                value = args[i + 1]
                i += 2
            else:
                return _error(f"{name} needs a value", EXIT_USAGE)
            if name == "--compare":
                compare = value
            else:
                output = value
        elif arg.startswith("-"):
            return _error(f"unknown or incomplete argument: {arg}", EXIT_USAGE)
        elif results is None:
            results = arg
            i += 1
        else:
            return _error(f"one results file, got a second: {arg}", EXIT_USAGE)
    if results is None:
        return _error("a results file is needed: report RESULTS.json --output DIR", EXIT_USAGE)
    if not output:
        return _error("--output DIR is needed", EXIT_USAGE)
    for path in (results, compare):
        if path is not None and not os.path.exists(path):
            return _error(f"results file not found: {path}", EXIT_NOT_FOUND)
    try:
        report = write_report(results, output, compare=compare,
                              progress=lambda line: print(f"[perf] report: {line}", file=sys.stderr, flush=True))
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as exc:
        return _error(f"not a usable results file: {exc}", EXIT_VALUE)
    except FileNotFoundError as exc:
        return _error(f"results file not found: {exc.filename}", EXIT_NOT_FOUND)
    print(f"[perf] wrote {len(report.plots)} plots (PNG) to {Path(output)}", file=sys.stderr)
    print(f"[perf] wrote {report.html}")
    return 0


def _error(message: str, code: int) -> int:
    print(f"paclo perf report: error: {message}", file=sys.stderr)
    return code
