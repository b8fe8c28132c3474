"""The ``paclo`` command line: flow-topn, pcap-filter, pcap-stats, to-parquet and perf.

Data goes to stdout, metadata and warnings (``paclo: warning: ...``) to stderr. Exit codes:
0 success, 1 usage (missing arguments), 2 input or output directory not found, 3 invalid
choice, 4 bad flag value or unknown flag, 5 input unreadable (a directory, not a capture
file, read error). Every failure prints one ``ERROR:`` line on stderr. Nothing is capped:
every packet of the input is read.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import math
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TextIO, cast

FORMATS = ("table", "jsonl", "json", "csv")
MODES = ("unidir", "bidir")
METRICS = ("packets", "bytes")
KINDS = ("flows", "projection", "packets")


class CliError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's exit codes instead of argparse's single code 2."""

    def error(self, message: str) -> NoReturn:
        if "required" in message:
            self.print_usage(sys.stderr)
            raise CliError(1, f"missing arguments: {message.split(':', 1)[-1].strip()}")
        if message.startswith("unrecognized arguments"):
            raise CliError(4, f"unknown flag: {message.split(':', 1)[1].strip()}")
        if "expected one argument" in message:
            flag = message.split(":", 1)[0].replace("argument", "").strip().split("/")[-1]
            raise CliError(4, f"{flag} requires a value")
        if "invalid choice" in message:
            raise CliError(3, message)
        raise CliError(4, message)


def _input(path: str, *, directories: bool = False) -> str:
    """An existing capture file (or directory of captures, with ``directories``)."""
    if not os.path.exists(path):
        raise CliError(2, f"input PCAP not found: {os.path.abspath(path)}")
    if not directories and os.path.isdir(path):
        raise CliError(5, f"input is a directory, not a capture file: {os.path.abspath(path)}")
    return path


def _output(path: str) -> str:
    """A file the command may create: its directory exists and it is no directory itself."""
    full = os.path.abspath(path)
    if os.path.isdir(full):
        raise CliError(4, f"OUT is a directory: {full}")
    parent = os.path.dirname(full)
    if not os.path.isdir(parent):
        raise CliError(2, f"output directory not found: {parent}")
    return path


def _choice(what: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise CliError(3, f"invalid {what}: {value} (allowed: {', '.join(allowed)})")
    return value


def _count(flag: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise CliError(4, f"{flag} requires a non-negative integer, got {value!r}")
    return n


def _filter(value: str | None) -> str | None:
    """``--filter ''`` (or ``none``) reads every packet."""
    if value is None or value.strip() == "" or value.strip().lower() == "none":
        return None
    return value


def _emit(rows: list[dict[str, Any]], fmt: str, columns: Sequence[str], out: TextIO | None = None) -> None:
    out = out or sys.stdout
    if fmt == "json":
        out.write(json.dumps(rows) + "\n")
    elif fmt == "jsonl":
        for r in rows:
            out.write(json.dumps(r) + "\n")
    elif fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(columns)
        for r in _flat(rows):
            w.writerow([r.get(c, "") for c in columns])
    else:
        flat = _flat(rows)
        cells = [[str(c).upper() for c in columns]] + [["" if r.get(c) is None else str(r.get(c)) for c in columns] for r in flat]
        widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
        numeric = [all(row[i].replace(".", "", 1).lstrip("-").isdigit() for row in cells[1:]) and len(cells) > 1
                   for i in range(len(columns))]
        for row in cells:
            line = "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(row, widths, numeric, strict=True))
            out.write(line.rstrip() + "\n")


def _flat(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        f: dict[str, Any] = {}
        for k, v in r.items():
            if isinstance(v, dict):
                f.update(v)
            else:
                f[k] = v
        out.append(f)
    return out


def _meta(**items: Any) -> None:
    print(" ".join(f"{k}={v}" for k, v in items.items()), file=sys.stderr)


# ---- subcommands ----------------------------------------------------------------------


def flow_topn(args: argparse.Namespace) -> int:
    from ._flows import _topn

    path = _input(args.input)
    mode = _choice("mode", args.mode, MODES)
    by = _choice("metric", args.by, METRICS)
    fmt = _choice("format", args.format, FORMATS)
    n = _count("--top", args.top)
    bpf = _filter(args.filter)
    rows, nflows, npackets = _topn(path, n, by=by, bidirectional=mode == "bidir", filter=bpf, progress=True)
    columns = ["proto", "src", "dst", "packets", "bytes"]
    if args.fingerprints is not None:
        _attach_fingerprints(rows, path, args.fingerprints, bpf, bidirectional=mode == "bidir", joined=fmt in ("table", "csv"))
        columns.append("fingerprints")
    if fmt == "table":
        notes = [_no_ports_note(r["flow"]) for r in rows]
        if any(notes):
            rows = [{**r, "note": note} for r, note in zip(rows, notes, strict=True)]
            columns.append("note")
    _emit(rows, fmt, columns)
    _meta(flows=nflows, rows=len(rows), packets=npackets, top=n, mode=mode, by=by, filter=json.dumps(bpf))
    return 0


def _endpoint(version: int, addr: str, port: int) -> str:
    """``ip:port`` as flow-topn writes it (``[ip]:port`` for IPv6)."""
    return f"[{addr}]:{port}" if version == 6 else f"{addr}:{port}"


def _attach_fingerprints(
    rows: list[dict[str, Any]], path: str, methods: str, bpf: str | None, *, bidirectional: bool, joined: bool
) -> None:
    """Add to each top-N row the distinct fingerprints seen on its flow, as
    ``method=value`` strings (joined by spaces for table and csv output)."""
    import paclo

    names = methods.split(",") if methods != "all" else "all"
    try:
        t = paclo.fingerprints(path, methods=names, filter=bpf).to_pydict()
    except ValueError as e:
        raise CliError(3, str(e)) from e
    src = paclo.ip_to_str(t["src_ip"])
    dst = paclo.ip_to_str(t["dst_ip"])
    seen: dict[tuple[str, str, str], list[str]] = {}
    for i, m in enumerate(t["method"]):
        ver, proto = t["ip_version"][i], {6: "tcp", 17: "udp"}.get(t["protocol"][i])
        a, b = _endpoint(ver, src[i], t["src_port"][i]), _endpoint(ver, dst[i], t["dst_port"][i])
        item = f"{m}={t['value'][i]}"
        keys = [(str(proto), a, b)] + ([(str(proto), b, a)] if bidirectional else [])
        for k in keys:
            lst = seen.setdefault(k, [])
            if item not in lst:
                lst.append(item)
    for r in rows:
        f = r["flow"]
        found = seen.get((f["proto"], f["src"], f["dst"]), [])
        if bidirectional:
            found = found + [x for x in seen.get((f["proto"], f["dst"], f["src"]), []) if x not in found]
        r["fingerprints"] = " ".join(found) if joined else found
def _has_port(endpoint: str) -> bool:
    """``ip:port`` and ``[v6]:port`` carry a port; a bare IPv4 (no colon) or IPv6 (two or
    more colons, no brackets) address does not."""
    return endpoint.startswith("[") or endpoint.count(":") == 1


def _no_ports_note(flow: dict[str, Any]) -> str | None:
    """Why a flow-topn row has no ports, or None when it has them."""
    if _has_port(flow["src"]):
        return None
    if flow["proto"] in ("tcp", "udp"):
        return "no ports: non-first fragments (or a cut TCP/UDP header)"
    return f"no ports: {flow['proto']} is not TCP/UDP"


def pcap_filter(args: argparse.Namespace) -> int:
    import paclo

    src = _input(args.input)
    fmt = _choice("format", args.format, FORMATS)
    min_caplen = None if args.min_caplen is None else _count("--min-caplen", args.min_caplen)
    bpf = _filter(args.filter)
    if os.path.abspath(args.output) == os.path.abspath(src):
        raise CliError(4, "OUT must differ from IN")
    _output(args.output)
    linktype = 1
    with paclo.read(src) as probe:
        for pkt in probe:
            linktype = pkt.linktype
            break
    from . import _paclo

    in_packets, in_bytes = _paclo.count_packets(src)
    out_packets = out_bytes = 0
    with paclo.read(src, filter=bpf) as kept, paclo.PcapWriter(args.output, linktype=linktype, nanosecond=True) as w:
        for pkt in kept:
            if min_caplen is not None and pkt.caplen < min_caplen:
                continue
            w.write(pkt)
            out_packets += 1
            out_bytes += pkt.caplen
    drop = 0.0 if in_packets == 0 else round(100.0 * (1 - out_packets / in_packets), 6)
    report = {"in": src, "out": args.output, "filter": bpf, "min_caplen": min_caplen,
              "in_packets": in_packets, "out_packets": out_packets, "in_bytes": in_bytes,
              "out_bytes": out_bytes, "drop_pct": drop}
    if fmt == "json":
        # One report: one JSON object (flow-topn's rows are a list).
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        _emit([report], fmt, list(report))
    _meta(wrote=out_packets, out=args.output)
    return 0


def _iso(ts_ns: int | None) -> str | None:
    if ts_ns is None:
        return None
    t = _dt.datetime.fromtimestamp(ts_ns // 1_000_000_000, tz=_dt.UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ts_ns % 1_000_000_000:09d}Z"


L4_NAMES = {1: "icmp", 2: "igmp", 6: "tcp", 17: "udp", 47: "gre", 50: "esp", 51: "ah", 58: "icmp6", 132: "sctp"}


def stats_of(path: str, bpf: str | None, top: int) -> dict[str, Any]:
    import pyarrow.compute as pc

    import paclo

    t = paclo.project(path, filter=bpf, progress=True)
    n = t.num_rows
    caplen = t.column("caplen")
    ts = t.column("ts_ns")
    first = pc.min(ts).as_py() if n else None
    last = pc.max(ts).as_py() if n else None
    l3: dict[str, int] = {}
    for v, c in zip(*_value_counts(t.column("ip_version")), strict=True):
        l3["ipv4" if v == 4 else "ipv6" if v == 6 else "non_ip"] = c
    l4: dict[str, int] = {}
    for v, c in zip(*_value_counts(t.column("protocol")), strict=True):
        if v is not None:
            l4[L4_NAMES.get(v, str(v))] = c
    stats = {
        "packets": n,
        "bytes": pc.sum(t.column("len")).as_py() or 0,
        "captured_bytes": pc.sum(caplen).as_py() or 0,
        "caplen": {"min": pc.min(caplen).as_py(), "avg": round(pc.mean(caplen).as_py(), 3) if n else None,
                   "max": pc.max(caplen).as_py()},
        "times": {"first": _iso(first), "last": _iso(last),
                  "duration_s": None if first is None else (last - first) / 1e9},
        "proto": {"l3": dict(sorted(l3.items())), "l4": dict(sorted(l4.items(), key=lambda kv: (-kv[1], kv[0])))},
        "top": {"src": _top_addresses(t, "src_ip", top), "dst": _top_addresses(t, "dst_ip", top)},
    }
    return stats


def _value_counts(col: Any) -> tuple[list[Any], list[int]]:
    vc = col.value_counts()
    values = vc.field("values").to_pylist()
    counts = vc.field("counts").to_pylist()
    return values, counts


def _top_addresses(t: Any, column: str, top: int) -> list[dict[str, Any]]:
    import paclo

    col = t.column(column)
    values, counts = _value_counts(col)
    pairs = [(c, v) for v, c in zip(values, counts, strict=True) if v is not None]
    pairs.sort(key=lambda p: (-p[0], p[1]))
    keys = paclo.ip_to_str([v for _, v in pairs[:top]])
    return [{"key": k, "count": c} for k, (c, _) in zip(keys, pairs[:top], strict=True)]


def pcap_stats(args: argparse.Namespace) -> int:
    path = _input(args.input)
    fmt = _choice("format", args.format, FORMATS)
    top = _count("--top", args.top)
    bpf = _filter(args.filter)
    stats = stats_of(path, bpf, top)
    if fmt in ("json", "jsonl"):
        sys.stdout.write(json.dumps(stats, indent=2 if fmt == "json" else None) + "\n")
    else:
        rows = []
        for section, value in stats.items():
            if section == "top":
                for side in ("src", "dst"):
                    for i, e in enumerate(value[side]):
                        rows.append({"key": f"top.{side}.{i + 1}", "value": f"{e['key']} {e['count']}"})
            elif isinstance(value, dict):
                for k, v in value.items():
                    if isinstance(v, dict):
                        for k2, v2 in v.items():
                            rows.append({"key": f"{section}.{k}.{k2}", "value": v2})
                    else:
                        rows.append({"key": f"{section}.{k}", "value": v})
            else:
                rows.append({"key": section, "value": value})
        _emit(rows, fmt, ["key", "value"])
    _meta(filter=json.dumps(bpf), top=top, format=fmt)
    return 0


def _seconds(flag: str, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        s = float(value)
    except ValueError:
        s = math.nan
    if not (math.isfinite(s) and s > 0):
        raise CliError(4, f"{flag} requires a positive number of seconds, got {value!r}")
    return s


def to_parquet(args: argparse.Namespace) -> int:
    from ._scale import Kind, Options, captures
    from .parquet import COMPRESSIONS, _export

    inputs, out = args.inputs, args.output
    for p in inputs:
        _input(p, directories=True)
    kind = cast("Kind", _choice("kind", args.kind, KINDS))
    mode = _choice("mode", args.mode, MODES)
    compression = _choice("compression", args.compression, COMPRESSIONS)
    fmt = _choice("format", args.format, FORMATS)
    idle, active = _seconds("--idle-timeout", args.idle_timeout), _seconds("--active-timeout", args.active_timeout)
    if kind != "flows" and (mode == "bidir" or idle is not None or active is not None):
        raise CliError(4, "--mode bidir, --idle-timeout and --active-timeout apply to --kind flows only")
    workers = None if args.workers is None else _count("--workers", args.workers)
    if workers == 0:
        raise CliError(4, f"--workers requires a positive integer, got {args.workers!r}")
    if os.path.exists(out) and not os.path.isdir(out):
        raise CliError(4, f"OUT must be a directory: {os.path.abspath(out)}")
    if not captures(inputs, exclude=out):
        raise CliError(2, f"no capture files in: {', '.join(os.path.abspath(p) for p in inputs)}")
    options = Options.make(kind, filter=_filter(args.filter), bidirectional=mode == "bidir", idle_timeout=idle, active_timeout=active)
    report = _export(inputs, out, options, workers=workers, compression=compression, progress=True)
    rows = [{"input": r.input, "output": r.output, "status": r.status, "rows": r.rows, "error": r.error} for r in report.results]
    _emit(rows, fmt, ["input", "output", "status", "rows", "error"])
    _meta(captures=len(report.results), written=len(report.written), skipped=len(report.skipped), failed=len(report.failed),
          out=report.out_dir, kind=kind, seconds=round(report.seconds, 3))
    if report.failed:
        first = report.failed[0]
        raise CliError(5, f"{len(report.failed)} of {len(report.results)} captures failed; the first: {first.input}: {first.error}")
    return 0


def perf(argv: list[str]) -> int:
    try:
        from .perf.__main__ import main as perf_main
    except ImportError as e:
        raise CliError(1, f"the perf runner is not available: {e}") from None
    rc = perf_main(argv)
    return int(rc or 0)


def _parser() -> _Parser:
    from . import __version__

    p = _Parser(prog="paclo", description="Packet capture, decode and flow analysis.")
    p.add_argument("--version", action="version", version=f"paclo {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    fmt_help = f"output format ({'|'.join(FORMATS)}, default table)"

    t = sub.add_parser("flow-topn", help="the largest flows of a capture",
                       description="The N largest flows of a capture, by packets or bytes.")
    t.add_argument("input", metavar="IN", help="capture file (pcap or pcapng)")
    t.add_argument("--filter", default="udp or tcp", metavar="BPF",
                   help="BPF expression (default 'udp or tcp'; '' for every packet)")
    t.add_argument("--top", default="10", metavar="N", help="rows to print (default 10)")
    t.add_argument("--mode", default="unidir", help="unidir|bidir (default unidir)")
    t.add_argument("--by", default="packets", help="packets|bytes (default packets)")
    t.add_argument("--format", default="table", help=fmt_help)
    t.add_argument("--fingerprints", nargs="?", const="ja4", default=None, metavar="METHODS",
                   help="add the fingerprints seen on each flow: ja4 (the default), a comma list, or all "
                        "(JA4+ methods are under the FoxIO License 1.1, see docs/fingerprints.md)")
    t.set_defaults(run=flow_topn)

    f = sub.add_parser("pcap-filter", help="copy the packets that pass a filter",
                       description="Copy the packets of IN that pass --filter and --min-caplen to OUT "
                                   "(timestamps kept, nanosecond pcap); the counts go to stdout.")
    f.add_argument("input", metavar="IN", help="capture file (pcap or pcapng)")
    f.add_argument("output", metavar="OUT", help="pcap file to write")
    f.add_argument("--filter", default=None, metavar="BPF", help="BPF expression (default: every packet)")
    f.add_argument("--min-caplen", default=None, metavar="N", help="drop packets with fewer captured bytes")
    f.add_argument("--format", default="table", help=fmt_help)
    f.set_defaults(run=pcap_filter)

    s = sub.add_parser("pcap-stats", help="summary statistics of a capture",
                       description="Packets, bytes, caplen, time span, protocol counts and top addresses.")
    s.add_argument("input", metavar="IN", help="capture file (pcap or pcapng)")
    s.add_argument("--filter", default=None, metavar="BPF", help="BPF expression (default: every packet)")
    s.add_argument("--top", default="5", metavar="N", help="top sources/destinations (default 5)")
    s.add_argument("--format", default="table", help=fmt_help)
    s.set_defaults(run=pcap_stats)

    q = sub.add_parser("to-parquet", help="captures to Parquet, one file per capture",
                       description="Convert each capture of IN (files or directories) to OUT/<name>.parquet, in "
                                   "parallel; complete outputs are skipped on a re-run. One row per capture on stdout.")
    q.add_argument("inputs", nargs="+", metavar="IN", help="capture files or directories")
    q.add_argument("output", metavar="OUT", help="output directory (created if missing)")
    q.add_argument("--kind", default="flows", help=f"{'|'.join(KINDS)} (default flows)")
    q.add_argument("--mode", default="unidir", help="unidir|bidir flows (default unidir)")
    q.add_argument("--filter", default=None, metavar="BPF", help="BPF expression (default: every packet)")
    q.add_argument("--idle-timeout", default=None, metavar="S", help="split flows idle for S seconds")
    q.add_argument("--active-timeout", default=None, metavar="S", help="split flows lasting S seconds")
    q.add_argument("--workers", default=None, metavar="N", help="captures converted at once (default: CPUs)")
    q.add_argument("--compression", default="zstd", help="zstd|snappy|lz4|gzip|brotli|none (default zstd)")
    q.add_argument("--format", default="table", help=fmt_help)
    q.set_defaults(run=to_parquet)

    sub.add_parser("perf", help="the performance runner (python -m paclo.perf)", add_help=False)
    return p


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as ``paclo: warning: <message>``: no source file, line or category."""
    print(f"paclo: warning: {message}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> int:
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    if argv is None:
        # As a command: Ctrl-C stops at once, also inside a native loop that holds no GIL
        # checkpoint (the default handler only sets a flag Python reads after the loop).
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:
        from . import __version__

        print(f"paclo {__version__}")
        return 0
    if argv and argv[0] == "perf":
        try:
            return perf(argv[1:])
        except CliError as e:
            print(f"ERROR: {e}", file=sys.stderr)
            return e.code
    parser = _parser()
    commands = ("flow-topn", "pcap-filter", "pcap-stats", "to-parquet", "perf")
    if argv and not argv[0].startswith("-") and argv[0] not in commands:
        print(f"ERROR: invalid command: {argv[0]} (allowed: {', '.join(commands)})", file=sys.stderr)
        return 3
    try:
        args = parser.parse_args(argv)
        if args.command is None:
            parser.print_usage(sys.stderr)
            raise CliError(1, f"missing COMMAND ({', '.join(commands)})")
        run: Callable[[argparse.Namespace], int] = args.run
        return run(args)
    except CliError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return e.code
    except FileNotFoundError as e:
        print(f"ERROR: not found: {os.path.abspath(e.filename or '')}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as e:
        code = 5 if type(e).__name__ == "PcapFormatError" else 4
        print(f"ERROR: {e}", file=sys.stderr)
        return code
    except BrokenPipeError:
        return 0
    except OSError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 5


if __name__ == "__main__":
    sys.exit(main())
