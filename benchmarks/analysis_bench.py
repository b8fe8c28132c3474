"""The cost of the analysis view per row, beside the lossless table it converts.

    python benchmarks/analysis_bench.py [--count 1000000] [--repeat 5]

Projects a generated ``mixed`` capture (IPv4 UDP and TCP) into a lossless table, makes an
IPv6 twin of it (the same rows with random IPv6 addresses, half of them with zero runs, and
``ip_version`` 6), and times, on both, ``paclo.analysis_view``, ``paclo.to_pandas`` (both
dtype backends) beside pyarrow's plain ``to_pandas``, and ``paclo.to_polars`` beside
``pl.from_arrow``; plus one address column formatted natively against Python's
``ipaddress`` (on the first 100,000 rows). Figures are ns per table row, wall and process
CPU time: the median of ``--repeat`` runs (wall with min-max; on a shared machine CPU time is
the steadier). Every line carries its check (row counts, nulls kept, the text equal to
``ipaddress``'s). Needs a release build, pandas and polars.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

import paclo
from paclo._analysis import address_strings


def timed(fn: Callable[[], Any], repeat: int) -> tuple[list[tuple[int, int]], Any]:
    """(wall ns, process CPU ns) of ``repeat`` calls, and the last result."""
    times: list[tuple[int, int]] = []
    out: Any = None
    for _ in range(repeat):
        t, c = time.perf_counter_ns(), time.process_time_ns()
        out = fn()
        times.append((time.perf_counter_ns() - t, time.process_time_ns() - c))
    return times, out


def ipv6_twin(table: pa.Table, seed: int = 7) -> pa.Table:
    """``table`` with random IPv6 addresses (every other one with a zero run) and version 6."""
    rng = np.random.default_rng(seed)
    n = table.num_rows

    def column() -> pa.Array:
        raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
        raw[:, 0:2] = (0x20, 0x01)
        raw[::2, 4:12] = 0  # 2001:xx::... forms, compressed
        return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(raw.tobytes())])

    out = table.set_column(table.schema.get_field_index("src_ip"), "src_ip", column())
    out = out.set_column(out.schema.get_field_index("dst_ip"), "dst_ip", column())
    return out.set_column(out.schema.get_field_index("ip_version"), "ip_version", pa.array(np.full(n, 6, np.uint8)))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()

    import pandas as pd
    import polars as pl

    from paclo.perf import datasets

    print(f"# {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs, {platform.processor() or platform.machine()}")
    print(f"# Python {platform.python_version()}, paclo {paclo.__version__}, pyarrow {pa.__version__}, "
          f"pandas {pd.__version__}, polars {pl.__version__}")
    print(f"# command: python {' '.join(sys.argv)}")
    rows: list[tuple[str, str, list[tuple[int, int]], int, str]] = []
    with tempfile.TemporaryDirectory(prefix="paclo-analysis-bench-") as tmp:
        path = os.path.join(tmp, "mixed.pcap")
        datasets.generate("mixed", args.count, path)
        t, table4 = timed(lambda: paclo.project(path, threads=1), args.repeat)
        rows.append(("ipv4", "paclo.project (the lossless table, for scale)", t, table4.num_rows,
                     f"rows {table4.num_rows} == {args.count}"))
        assert table4.num_rows == args.count
    table6 = ipv6_twin(table4)

    for label, table in (("ipv4", table4), ("ipv6", table6)):
        n = table.num_rows
        t, view = timed(lambda table=table: paclo.analysis_view(table), args.repeat)
        first = ipaddress.ip_address(table.column("src_ip")[0].as_py())
        want = str(first.ipv4_mapped or first) if isinstance(first, ipaddress.IPv6Address) else str(first)
        got = view.column("src_ip")[0].as_py()
        assert got == want and view.num_rows == n, (got, want)
        assert view.column("src_port").null_count == table.column("src_port").null_count
        rows.append((label, "paclo.analysis_view", t, n, f"src_ip[0] {got!r} == ipaddress; port nulls kept"))

        t, _ = timed(lambda table=table: address_strings(table.column("src_ip"), table.column("ip_version")), args.repeat)
        rows.append((label, "one address column, native text", t, n, "in analysis_view above"))

        sub = table.column("src_ip").slice(0, min(n, 100_000))

        def stdlib(sub: pa.ChunkedArray = sub) -> list[str]:
            out = []
            for b in sub.to_pylist():
                a = ipaddress.IPv6Address(b)
                out.append(str(a.ipv4_mapped or a))
            return out

        t, texts = timed(stdlib, max(1, args.repeat // 2))
        native = address_strings(sub).to_pylist()
        assert texts == native, "ipaddress and paclo disagree"
        rows.append((label, "one address column, ipaddress in a loop (first 100k)", t, len(sub), "equal to the native text"))

        t, df = timed(table.to_pandas, args.repeat)
        rows.append((label, "table.to_pandas() (pyarrow's default: float64 NaN ports)", t, n, f"dtype src_port {df['src_port'].dtype}"))
        t, df = timed(lambda table=table: paclo.to_pandas(table), args.repeat)
        assert str(df["src_port"].dtype) == "UInt16" and df["src_port"].isna().sum() == table.column("src_port").null_count
        rows.append((label, "paclo.to_pandas (numpy_nullable)", t, n, f"dtype src_port {df['src_port'].dtype}, NA kept"))
        t, df = timed(lambda table=table: paclo.to_pandas(table, dtype_backend="pyarrow"), args.repeat)
        rows.append((label, "paclo.to_pandas (pyarrow)", t, n, f"dtype src_port {df['src_port'].dtype}"))
        t, _ = timed(lambda table=table: pl.from_arrow(table), args.repeat)
        rows.append((label, "pl.from_arrow(table)", t, n, ""))
        t, pf = timed(lambda table=table: paclo.to_polars(table), args.repeat)
        assert pf.height == n and pf["src_ip"].dtype == pl.String
        rows.append((label, "paclo.to_polars", t, n, "String addresses"))
        del df, pf

    print()
    print("| addresses | what | wall ns/row, median (min-max) | CPU ns/row, median | check |")
    print("|---|---|---:|---:|---|")
    for label, what, times, n, check in rows:
        wall = [w / n for w, _ in times]
        cpu = statistics.median(c / n for _, c in times)
        print(f"| {label} | {what} | {statistics.median(wall):,.1f} ({min(wall):,.1f}-{max(wall):,.1f}) | {cpu:,.1f} | {check} |")
    print(f"\n# runs per figure: {args.repeat} ({max(1, args.repeat // 2)} for ipaddress), rows: {args.count:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
