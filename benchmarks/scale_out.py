"""A directory of captures to Parquet and onto Dask, with wall times for 1 and 2 workers.

    python benchmarks/scale_out.py --dir DIR [--files 50] [--packets 1000000] [--flows 20000]
                                   [--workers 1,2] [--repeat 3] [--parts parquet,processes,dask,duckdb]

Generates ``--files`` captures of ``--packets`` 64-byte frames each (UDP and TCP over
``--flows`` flows, time running on across files, so every flow spans files) under
DIR/captures, unless they are there already, then measures, alternating the worker counts
in every repeat so that both see the same load:

- ``parquet``: ``paclo.to_parquet`` of every capture, ``kind="flows"`` and
  ``kind="projection"``, into a fresh directory (threads, as the library runs it);
- ``processes``: the same projection export with one process per worker instead of
  threads (the design's alternative), each process calling ``to_parquet`` on its share;
- ``dask``: ``paclo.dask.read_flows`` + ``merge_flows`` and ``read_projection`` + a
  groupby, computed on a ``distributed.LocalCluster`` of that many single-threaded
  worker processes (cluster start-up not timed); the merged flows are checked against
  ``paclo.flows`` of all files;
- ``duckdb``: two queries over the Parquet outputs.

Each figure is the median of ``--repeat`` runs with the minimum and maximum, and the
median CPU time (this process's threads and ended children; for Dask, the worker
processes'), which a shared machine disturbs less than wall time. Prints one
JSON document (machine, date, command, load average before and after, every figure) on
stdout. Needs a release build and the dask extra; delete DIR afterwards (50 x 1M packets
is 4 GB of captures).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa

import paclo
from paclo.perf import datasets

BASE_TS_NS = 1_700_000_000_000_000_000


def _frames(n_flows: int) -> list[bytes]:
    """A 64-byte UDP or TCP frame per flow: the perf dataset templates with the source
    address and port varied."""
    udp, tcp = datasets.frame("udp-64", 0), datasets.frame("tcp-512", 0)[:64]
    out = []
    for i in range(n_flows):
        t = udp if i % 4 else tcp
        src = bytes([10, 1 + i // 65536, (i // 256) % 256, i % 256])
        port = (20_000 + i % 40_000).to_bytes(2, "big")
        out.append(t[:26] + src + t[30:34] + port + t[36:])
    return out


def generate(directory: Path, files: int, packets: int, n_flows: int) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    frames = _frames(n_flows)
    paths = []
    for k in range(files):
        p = directory / f"trace-{k:04d}.pcap"
        paths.append(p)
        if p.exists() and p.stat().st_size == 24 + packets * (16 + 64):
            continue
        tmp = p.with_suffix(".tmp")
        with paclo.PcapWriter(tmp, nanosecond=True) as w:
            start = k * packets
            for i in range(start, start + packets):
                # Flow i mod n: every flow has packets in every file; 1 us apart.
                w.write(frames[(i * 7919) % n_flows], BASE_TS_NS + i * 1000)
        tmp.rename(p)
    return paths


def _cpu_s() -> float:
    """CPU time of this process (every thread) and of its children that ended."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _summary(times: list[float], cpu: list[float] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3), "max_s": round(max(times), 3), "runs": len(times)}
    if cpu:
        out["cpu_median_s"] = round(statistics.median(cpu), 3)
    return out


def _runs(fn: Callable[[], Any], repeat: int, cpu: Callable[[], float] = _cpu_s) -> dict[str, Any]:
    times, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), cpu()
        fn()
        times.append(time.perf_counter() - t)
        cpus.append(cpu() - c)
    return _summary(times, cpus)


def _export(paths: list[Path], out: Path, kind: str, workers: int) -> paclo.parquet.ParquetReport:
    shutil.rmtree(out, ignore_errors=True)
    report = paclo.to_parquet(paths, out, kind=kind, workers=workers, progress=False)
    assert report.ok and len(report.written) == len(paths), report.summary()
    return report


def _export_share(paths: list[str], out: str, kind: str) -> int:
    report = paclo.to_parquet(paths, out, kind=kind, workers=1, progress=False)
    assert report.ok
    return len(report.written)


def _export_processes(paths: list[Path], out: Path, kind: str, workers: int) -> None:
    shutil.rmtree(out, ignore_errors=True)
    shares = [[str(p) for p in paths[i::workers]] for i in range(workers)]
    with ProcessPoolExecutor(workers) as pool:
        done = sum(pool.map(_export_share, shares, [str(out / f"w{i}") for i in range(workers)], [kind] * workers))
    assert done == len(paths)


def _dask_figures(paths: list[Path], workers: int, repeat: int, want_flows: pa.Table) -> dict[str, Any]:
    import distributed

    import paclo.dask as pdask

    with distributed.LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        scheduler_port=0,
        dashboard_address=None,
        worker_dashboard_address=None,
    ) as cluster, distributed.Client(cluster) as client:
        client.run(lambda: __import__("paclo.dask"))  # warm the workers' imports

        def cluster_cpu() -> float:
            # CPU time of the worker processes (the client's share is small).
            return sum(client.run(_cpu_s).values())

        def merged() -> None:
            got = pdask.merge_flows(pdask.read_flows(paths)).compute()
            assert len(got) == want_flows.num_rows and int(got["packets"].sum()) == int(pa.compute.sum(want_flows["packets"]).as_py())

        def protocols() -> None:
            # split_out=1: a few groups need no shuffle (dask may pick one for many partitions).
            got = pdask.read_projection(paths).groupby("protocol")["len"].sum(split_out=1).compute()
            assert int(got.sum()) == len(paths) * PACKETS * 64

        return {"merge_flows": _runs(merged, repeat, cluster_cpu), "projection_groupby": _runs(protocols, repeat, cluster_cpu)}


def _duckdb_figures(flows_out: Path, proj_out: Path, repeat: int) -> dict[str, Any]:
    import duckdb

    con = duckdb.connect()
    top = f"""
        select src_ip, src_port, dst_ip, dst_port, protocol, sum(packets) as packets, sum(bytes) as bytes
        from read_parquet('{flows_out}/**/*.parquet')
        group by all order by bytes desc limit 10"""
    per_proto = f"select protocol, count(*), sum(len) from read_parquet('{proj_out}/**/*.parquet') group by protocol"
    return {
        "flows_top10_merged": _runs(lambda: con.sql(top).fetchall(), repeat),
        "projection_per_protocol": _runs(lambda: con.sql(per_proto).fetchall(), repeat),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _autogroup() -> str | None:
    """Whether the kernel shares CPU between sessions (then a second worker in this
    session gains nothing while other sessions keep the CPUs busy)."""
    try:
        return Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip()
    except OSError:
        return None


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


PACKETS = 0


def main(argv: list[str] | None = None) -> int:
    global PACKETS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", required=True, type=Path)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--flows", type=int, default=20_000)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--parts", default="parquet,processes,dask,duckdb")
    args = ap.parse_args(argv)
    PACKETS = args.packets
    workers = [int(w) for w in args.workers.split(",")]
    parts = set(args.parts.split(","))

    doc: dict[str, Any] = {
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"cpu": _cpu_model(), "cpus": os.cpu_count(), "python": platform.python_version(),
                    "paclo": paclo.__version__, "pyarrow": pa.__version__},
        "load_before": [round(x, 2) for x in os.getloadavg()],
    }
    t = time.perf_counter()
    paths = generate(args.dir / "captures", args.files, args.packets, args.flows)
    doc["generate_s"] = round(time.perf_counter() - t, 1)
    doc["captures"] = {"files": len(paths), "packets_per_file": args.packets, "flows": args.flows,
                       "bytes": sum(p.stat().st_size for p in paths)}
    for p in paths:  # into the page cache, as every measured run will find them
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass

    want = paclo.flows(paths)
    doc["local_flows_of_all_files"] = _runs(lambda: paclo.flows(paths), args.repeat)
    doc["local_flows_rows"] = want.num_rows
    figures: dict[str, dict[str, Any]] = {}
    for _ in range(args.repeat):
        for w in workers:
            fig = figures.setdefault(str(w), {})
            if "parquet" in parts:
                for kind in ("flows", "projection"):
                    out = args.dir / f"out-{kind}"
                    t, c = time.perf_counter(), _cpu_s()
                    _export(paths, out, kind, w)
                    fig.setdefault(f"to_parquet_{kind}", []).append(time.perf_counter() - t)
                    fig.setdefault(f"to_parquet_{kind}_cpu", []).append(_cpu_s() - c)
                    fig[f"to_parquet_{kind}_bytes"] = _du(out)
            if "processes" in parts:
                t, c = time.perf_counter(), _cpu_s()
                _export_processes(paths, args.dir / "out-processes", "projection", w)
                fig.setdefault("processes_projection", []).append(time.perf_counter() - t)
                fig.setdefault("processes_projection_cpu", []).append(_cpu_s() - c)
    for fig in figures.values():
        for k in [k for k, v in fig.items() if isinstance(v, list) and not k.endswith("_cpu")]:
            fig[k] = _summary(fig[k], fig.pop(f"{k}_cpu"))
    if "dask" in parts:
        for w in workers:
            figures.setdefault(str(w), {})["dask"] = _dask_figures(paths, w, args.repeat, want)
    doc["workers"] = figures
    if "duckdb" in parts and "parquet" in parts:
        doc["duckdb"] = _duckdb_figures(args.dir / "out-flows", args.dir / "out-projection", args.repeat)
    doc["load_after"] = [round(x, 2) for x in os.getloadavg()]
    doc["autogroup"] = _autogroup()
    print(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
