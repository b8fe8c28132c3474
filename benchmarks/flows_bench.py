"""paclo's projection, flow tables and flow meter beside a C mmap record walk, dpkt and
nfstream, on the same files, in one run.

    python benchmarks/flows_bench.py [--count 1000000] [--datasets udp-64,mix] [--rounds 5]
                                     [--peer-rounds 2] [--peers dpkt,nfstream] [--peer-python PY] [--keep DIR]

Needs a release build (``maturin develop --release``) and, for the peers, dpkt and nfstream
6.x. Datasets: ``udp-64`` (``paclo.perf.datasets``, one flow) and ``mix``
(``benchmarks/realistic_mix.py``: many short DNS, TLS, HTTP, QUIC, NTP and SSH flows).

Every measurement runs in its own process (so its peak RSS is its own: ``ru_maxrss`` of
the process and of the children it waited for, which covers nfstream's meter process;
likewise its CPU time, user plus system, of the process and of those children, which
counts nfstream's meter and on a loaded machine is steadier than the wall time),
after an untimed warm-up of pyarrow on a tiny file; the file is in the page cache. Rounds
are interleaved (walk, each paclo variant, each peer, then again), and each line shows the
median ns/packet with the spread (min-max) over the rounds. Each line carries its check:
packets counted against the file, flows against the matching paclo table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# paclo variants: (name, flows() options). "meter" variants use nfstream's default
# timeouts (120 s idle, 1800 s active) and bidirectional flows, as nfstream does.
METER = {"bidirectional": True, "idle_timeout": 120, "active_timeout": 1800}
PACLO = [
    ("paclo flows basic", {}),
    ("paclo flows bidirectional", {"bidirectional": True}),
    ("paclo flows + statistical", {"bidirectional": True, "features": "statistical"}),
    ("paclo meter basic", METER),
    ("paclo meter statistical", {**METER, "features": "statistical"}),
    ("paclo meter splt=10", {**METER, "features": "splt", "splt": 10}),
    ("paclo meter app", {**METER, "features": "app"}),
    ("paclo meter all", {**METER, "features": "all"}),
    ("paclo flow_stream all", {**METER, "features": "all", "stream": True}),
]
# nfstream with the matching options, one meter process (one core), iterated.
NFSTREAM = [
    ("nfstream basic", {"statistical_analysis": False, "splt_analysis": 0, "n_dissections": 0}, "paclo meter basic"),
    ("nfstream statistical", {"statistical_analysis": True, "splt_analysis": 0, "n_dissections": 0}, "paclo meter statistical"),
    ("nfstream splt=10", {"statistical_analysis": False, "splt_analysis": 10, "n_dissections": 0}, "paclo meter splt=10"),
    ("nfstream app (nDPI, 20 packets)", {"statistical_analysis": False, "splt_analysis": 0, "n_dissections": 20}, "paclo meter app"),
    ("nfstream all", {"statistical_analysis": True, "splt_analysis": 10, "n_dissections": 20}, "paclo meter all"),
]


def _maxrss_kb() -> int:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, kids)


def _cpu_s() -> float:
    """CPU time (user + system) of this process and of the children it waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def child(spec: dict) -> dict:
    """One timed measurement in this process: wall and CPU time of the same part."""
    path = spec["path"]
    kind = spec["kind"]
    if kind == "paclo":
        import pyarrow.compute as pc

        import paclo

        opts = dict(spec["options"])
        stream = opts.pop("stream", False)
        # One thread, as nfstream's one meter: the figures are per core.
        threads = {} if stream else {"threads": 1}
        paclo.flows(spec["warm"], **opts, **threads)  # pyarrow's first stream import costs ~0.5 s once
        cpu0 = _cpu_s()
        t = time.perf_counter()
        if stream:
            rows = packets = 0
            for b in paclo.flow_stream(path, **opts):
                rows += b.num_rows
                packets += pc.sum(b.column("packets")).as_py()
        else:
            table = paclo.flows(path, **opts, **threads)
            rows, packets = table.num_rows, pc.sum(table.column("packets")).as_py()
        wall, cpu = time.perf_counter() - t, _cpu_s() - cpu0
        detected = None
        if not stream and "application_protocol" in table.column_names:
            detected = table.num_rows - pc.sum(pc.equal(table.column("application_protocol"), "unknown")).as_py()
        return {"wall": wall, "flows": rows, "packets": packets, "rss_kb": _maxrss_kb(), "detected": detected,
                "cpu": cpu}
    if kind == "nfstream":
        from nfstream import NFStreamer

        cpu0 = _cpu_s()
        t = time.perf_counter()
        rows = packets = detected = 0
        for f in NFStreamer(source=path, n_meters=1, idle_timeout=120, active_timeout=1800, **spec["options"]):
            rows += 1
            packets += f.bidirectional_packets
            if spec["options"]["n_dissections"] and f.application_name != "Unknown":
                detected += 1
        wall, cpu = time.perf_counter() - t, _cpu_s() - cpu0
        return {"wall": wall, "flows": rows, "packets": packets, "rss_kb": _maxrss_kb(),
                "detected": detected if spec["options"]["n_dissections"] else None, "cpu": cpu}
    if kind == "project":
        import paclo

        paclo.project(spec["warm"], threads=1)
        cpu0 = _cpu_s()
        t = time.perf_counter()
        table = paclo.project(path, threads=1)
        wall, cpu = time.perf_counter() - t, _cpu_s() - cpu0
        return {"wall": wall, "packets": table.num_rows, "rss_kb": _maxrss_kb(), "detected": None,
                "cpu": cpu}
    if kind == "dpkt":
        # The projection's columns built with dpkt, as a user would without paclo.
        import dpkt
        import pyarrow as pa

        t = time.perf_counter()
        cols: dict[str, list] = {k: [] for k in ("ts", "len", "ipv", "proto", "src", "dst", "sport", "dport")}
        mapped = b"\x00" * 10 + b"\xff\xff"
        with open(path, "rb") as f:
            for ts, buf in dpkt.pcap.Reader(f):
                cols["ts"].append(round(ts * 1e9))
                cols["len"].append(len(buf))
                ip = dpkt.ethernet.Ethernet(buf).data
                if isinstance(ip, dpkt.ip.IP):
                    cols["ipv"].append(4), cols["proto"].append(ip.p)
                    cols["src"].append(mapped + ip.src), cols["dst"].append(mapped + ip.dst)
                elif isinstance(ip, dpkt.ip6.IP6):
                    cols["ipv"].append(6), cols["proto"].append(ip.nxt)
                    cols["src"].append(ip.src), cols["dst"].append(ip.dst)
                else:
                    for k in ("ipv", "proto", "src", "dst", "sport", "dport"):
                        cols[k].append(None)
                    continue
                l4 = ip.data
                ok = isinstance(l4, (dpkt.udp.UDP, dpkt.tcp.TCP))
                cols["sport"].append(l4.sport if ok else None)
                cols["dport"].append(l4.dport if ok else None)
        table = pa.table({"ts_ns": pa.array(cols["ts"], pa.int64()), "len": pa.array(cols["len"], pa.uint32()),
                          "ip_version": pa.array(cols["ipv"], pa.uint8()), "protocol": pa.array(cols["proto"], pa.uint8()),
                          "src_ip": pa.array(cols["src"], pa.binary(16)), "dst_ip": pa.array(cols["dst"], pa.binary(16)),
                          "src_port": pa.array(cols["sport"], pa.uint16()), "dst_port": pa.array(cols["dport"], pa.uint16())})
        wall = time.perf_counter() - t
        return {"wall": wall, "packets": table.num_rows, "rss_kb": _maxrss_kb(), "detected": None}
    raise ValueError(kind)


def run_child(spec: dict, python: str = sys.executable) -> dict:
    out = subprocess.run([python, __file__, "--child", json.dumps(spec)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{spec['kind']} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def walk_binary() -> str:
    """The runner's C record walk (``paclo/perf/mmap_walk.c``), compiled into benchmarks/bin."""
    from paclo.perf.peers import compile_c

    return compile_c(HERE, "mmap_walk")


def walk(exe: str, path: str, passes: int = 5) -> dict:
    """The median of `passes` runs of the walk (each maps the file afresh; one untimed first)."""
    ns = []
    packets = 0
    for i in range(passes + 1):
        out = subprocess.run([exe, path], capture_output=True, text=True, check=True).stdout
        packets, _bytes, elapsed, _cpu, _rss = (int(x) for x in out.split())
        if i:
            ns.append(elapsed / max(packets, 1))
    return {"ns": statistics.median(ns), "packets": packets}


def dataset(name: str, count: int, directory: str) -> str:
    path = os.path.join(directory, f"{name}-{count}.pcap")
    if not os.path.exists(path):
        if name == "mix":
            sys.path.insert(0, HERE)
            import realistic_mix

            realistic_mix.generate(path, count)
        else:
            from paclo.perf import datasets

            datasets.generate(name, count, path)
    with open(path, "rb") as f:  # into the page cache
        while f.read(1 << 24):
            pass
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1_000_000)
    ap.add_argument("--datasets", default="udp-64,mix")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--peer-rounds", type=int, default=2)
    ap.add_argument("--peers", default="nfstream")
    ap.add_argument("--peer-python", default=sys.executable,
                    help="the interpreter that runs the peers (one with nfstream and dpkt; default: this one)")
    ap.add_argument("--only", help="comma-separated variant names to run (default: all)")
    ap.add_argument("--keep", help="keep the datasets in this directory")
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        print(json.dumps(child(json.loads(a.child))))
        return 0
    import paclo

    peers = [p for p in a.peers.split(",") if p]
    tmp = tempfile.TemporaryDirectory()
    directory = a.keep or tmp.name
    os.makedirs(directory, exist_ok=True)
    warm = os.path.join(tmp.name, "warm.pcap")
    from paclo.perf import datasets

    datasets.generate("udp-64", 10, warm)
    exe = walk_binary()
    only = set(a.only.split(",")) if a.only else None
    load = os.getloadavg()
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()} {os.cpu_count()} cpus; "
          f"python {platform.python_version()}; paclo {paclo.__version__}; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    print(f"# command: python benchmarks/flows_bench.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    results = []
    for name in a.datasets.split(","):
        path = dataset(name, a.count, directory)
        n = paclo._paclo.count_packets(path)[0]
        print(f"\n## {name}: {n} packets, {os.path.getsize(path)} bytes")
        runs: dict[str, list[dict]] = {}
        variants = [("paclo project", {"kind": "project", "path": path, "warm": warm})]
        variants += [(v, {"kind": "paclo", "path": path, "warm": warm, "options": o}) for v, o in PACLO]
        if "dpkt" in peers:
            variants.append(("dpkt -> projection columns", {"kind": "dpkt", "path": path}))
        if "nfstream" in peers:
            variants += [(v, {"kind": "nfstream", "path": path, "options": o}) for v, o, _ in NFSTREAM]
        variants = [v for v in variants if only is None or v[0] in only]
        for r in range(max(a.rounds, a.peer_rounds)):
            if r < a.rounds:
                runs.setdefault("C mmap record walk", []).append(walk(exe, path))
            for v, spec in variants:
                mine = spec["kind"] in ("paclo", "project")
                if r < (a.rounds if mine else a.peer_rounds):
                    runs.setdefault(v, []).append(run_child(spec, sys.executable if mine else a.peer_python))
        med: dict[str, float] = {}
        cpu_med: dict[str, float] = {}
        print(f"{'what':<34} {'ns/packet median (min-max)':>28} {'CPU ns/packet median (min-max)':>32} "
              f"{'peak RSS MB':>12}  check")
        for v, rs in runs.items():
            ns = [x["ns"] if "ns" in x else x["wall"] / n * 1e9 for x in rs]
            med[v] = statistics.median(ns)
            cpu = [x["cpu"] / n * 1e9 for x in rs if "cpu" in x]
            cpu_s = f"{'':>32}"
            if cpu:
                cpu_med[v] = statistics.median(cpu)
                cpu_s = f"{cpu_med[v]:14.1f} ({min(cpu):.1f}-{max(cpu):.1f})".ljust(32)
            rss = max(x.get("rss_kb", 0) for x in rs) / 1024
            last = rs[-1]
            check = f"packets={last['packets']}"
            if "flows" in last:
                check += f" flows={last['flows']}"
            if last.get("detected") is not None:
                check += f" app_detected={last['detected']}"
            rss_s = f"{rss:12.0f}" if rss else f"{'':>12}"
            print(f"{v:<34} {med[v]:10.1f} ({min(ns):.1f}-{max(ns):.1f}){'':>5} {cpu_s} {rss_s}  {check}")
            results.append({"dataset": name, "what": v, "ns_per_packet": ns, "cpu_ns_per_packet": cpu,
                            "peak_rss_mb": rss, "check": check})
        w = med.get("C mmap record walk")
        if w and "paclo flows basic" in med:
            print(f"flows basic / C walk: {med['paclo flows basic'] / w:.2f}x")
        if "paclo flows + statistical" in med and "paclo flows bidirectional" in med:
            print(f"statistical adds {med['paclo flows + statistical'] - med['paclo flows bidirectional']:+.1f} ns/packet"
                  " (bidirectional table, medians)")
        for v, _, mine in NFSTREAM:
            if v in med and mine in med:
                line = f"{v} / {mine}: {med[v] / med[mine]:.0f}x wall"
                if v in cpu_med and mine in cpu_med:
                    line += f", {cpu_med[v] / cpu_med[mine]:.0f}x CPU time"
                print(line)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"load": load, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
