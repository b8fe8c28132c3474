"""paclo.project and paclo.flows against dpkt and nfstream on the same file, in one run.

    python benchmarks/flows_bench.py [--count 1000000] [--case udp-64] [--repeat 2] [--peers dpkt,nfstream]

Builds a release extension first (``maturin develop --release``). Each paclo figure is the
best of ``--repeat`` runs; peers run once (they are 50-500x slower). Every line carries its
correctness check: paclo's rows and flow counters against the generator's count, dpkt's
columns against paclo's, nfstream's flow table against paclo's.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc

import paclo


def _generate(case: str, count: int, path: str) -> None:
    from paclo.perf import datasets

    datasets.generate(case, count, path)


def _best(fn, repeat: int):
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def dpkt_columns(path: str) -> pa.Table:
    """The projection's columns built with dpkt, as a user would without paclo."""
    import dpkt

    ts, caplen, length, ipv, proto, src, dst, sport, dport = ([] for _ in range(9))
    mapped = b"\x00" * 10 + b"\xff\xff"
    with open(path, "rb") as f:
        for t, buf in dpkt.pcap.Reader(f):
            ts.append(int(round(t * 1e9)))
            caplen.append(len(buf))
            length.append(len(buf))
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if isinstance(ip, dpkt.ip.IP):
                ipv.append(4)
                proto.append(ip.p)
                src.append(mapped + ip.src)
                dst.append(mapped + ip.dst)
            elif isinstance(ip, dpkt.ip6.IP6):
                ipv.append(6)
                proto.append(ip.nxt)
                src.append(ip.src)
                dst.append(ip.dst)
            else:
                ipv.append(None), proto.append(None), src.append(None), dst.append(None)
                sport.append(None), dport.append(None)
                continue
            l4 = ip.data
            if isinstance(l4, (dpkt.udp.UDP, dpkt.tcp.TCP)):
                sport.append(l4.sport)
                dport.append(l4.dport)
            else:
                sport.append(None)
                dport.append(None)
    return pa.table({
        "ts_ns": pa.array(ts, pa.int64()), "caplen": pa.array(caplen, pa.uint32()), "len": pa.array(length, pa.uint32()),
        "ip_version": pa.array(ipv, pa.uint8()), "protocol": pa.array(proto, pa.uint8()),
        "src_ip": pa.array(src, pa.binary(16)), "dst_ip": pa.array(dst, pa.binary(16)),
        "src_port": pa.array(sport, pa.uint16()), "dst_port": pa.array(dport, pa.uint16()),
    })


def nfstream_flows(path: str):
    from nfstream import NFStreamer

    return NFStreamer(source=path, n_meters=1, statistical_analysis=False, n_dissections=0,
                      splt_analysis=0, idle_timeout=10**9, active_timeout=10**9).to_pandas()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--case", default="udp-64")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--peers", default="dpkt,nfstream")
    ap.add_argument("--keep", help="write the dataset here instead of a temporary file")
    a = ap.parse_args(argv)
    peers = [p for p in a.peers.split(",") if p]
    n = a.count
    tmp = tempfile.TemporaryDirectory()
    path = a.keep or os.path.join(tmp.name, f"{a.case}.pcap")
    if not os.path.exists(path):
        _generate(a.case, n, path)
    with open(path, "rb") as f:  # into the page cache
        while f.read(1 << 24):
            pass

    print(f"# {a.case}, {n} packets, {os.path.getsize(path)} bytes; {platform.machine()} "
          f"{platform.processor() or ''} {os.cpu_count()} cpus; python {platform.python_version()}; "
          f"pyarrow {pa.__version__}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'what':<34} {'ns/packet':>10}  check")

    # Warm-up: pyarrow's first stream import costs ~0.5 s once per process.
    small = os.path.join(tmp.name, "warm.pcap")
    _generate(a.case, 10, small)
    paclo.project(small), paclo.flows(small)

    from paclo import _paclo

    t, counted = _best(lambda: _paclo.count_packets(path), a.repeat)
    print(f"{'record walk (count_packets)':<34} {t / n * 1e9:>10.1f}  packets={counted[0]} (the floor)")

    t, proj = _best(lambda: paclo.project(path), a.repeat)
    ok = proj.num_rows == n and proj.column("src_port").null_count == 0
    print(f"{'paclo.project':<34} {t / n * 1e9:>10.1f}  rows={proj.num_rows} ok={ok}")

    t, fl = _best(lambda: paclo.flows(path), a.repeat)
    ok = pc.sum(fl.column("packets")).as_py() == n
    print(f"{'paclo.flows':<34} {t / n * 1e9:>10.1f}  flows={fl.num_rows} packets_ok={ok}")

    t, flb = _best(lambda: paclo.flows(path, bidirectional=True), a.repeat)
    ok = pc.sum(flb.column("packets")).as_py() == n
    print(f"{'paclo.flows(bidirectional=True)':<34} {t / n * 1e9:>10.1f}  flows={flb.num_rows} packets_ok={ok}")

    if "dpkt" in peers:
        t0 = time.perf_counter()
        dp = dpkt_columns(path)
        t = time.perf_counter() - t0
        same = all(dp.column(c).equals(proj.column(c)) for c in dp.column_names if c != "ts_ns")
        print(f"{'dpkt -> same columns':<34} {t / n * 1e9:>10.1f}  rows={dp.num_rows} equal_to_paclo={same}")

    if "nfstream" in peers:
        t0 = time.perf_counter()
        df = nfstream_flows(path)
        t = time.perf_counter() - t0
        same = len(df) == flb.num_rows and int(df["bidirectional_packets"].sum()) == n
        print(f"{'nfstream flow table (1 meter)':<34} {t / n * 1e9:>10.1f}  flows={len(df)} equal_counts={same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
