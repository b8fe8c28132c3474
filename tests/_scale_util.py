"""Helpers of the scale-out tests: a set of small captures whose flows span files."""

from __future__ import annotations

import random
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from _flows_util import eth, icmp, ipv4, ipv6, tcp, udp

import paclo
from paclo.parquet import read_manifest, to_parquet
from paclo.perf import datasets

SYN, ACK, FIN, PSH = 0x02, 0x10, 0x01, 0x08


def _frames(rng: random.Random, n_flows: int) -> list[bytes]:
    """One frame template per flow: UDP and TCP over IPv4 and IPv6, VLAN tags, ICMP
    (no ports) and ARP (no IP)."""
    out = []
    for i in range(n_flows):
        a, b = f"10.0.{i // 250}.{i % 250 + 1}", f"192.168.1.{rng.randrange(1, 9)}"
        kind = i % 6
        if kind == 0:
            out.append(eth(0x0800, ipv4(17, a, b, udp(10_000 + i, 53, rng.randrange(4, 60)))))
        elif kind == 1:
            out.append(eth(0x0800, ipv4(6, a, b, tcp(20_000 + i, 443, SYN, rng.randrange(0, 40)))))
        elif kind == 2:
            out.append(eth(0x86DD, ipv6(f"2001:db8::{i:x}", "2001:db8::1", 17, udp(30_000 + i, 123, 12))))
        elif kind == 3:
            out.append(eth(0x0800, ipv4(17, a, b, udp(40_000 + i, 514, 20)), tags=[(0x8100, 100 + i % 3)]))
        elif kind == 4:
            out.append(eth(0x0800, ipv4(1, a, b, icmp())))
        else:
            # The reply direction of a TCP flow, so bidirectional keys merge both ways.
            out.append(eth(0x0800, ipv4(6, b, a, tcp(443, 20_000 + i - 4, ACK, 8))))
    return out


def _with_flags(frame: bytes, flags: int) -> bytes:
    # Ethernet (14) + IPv4 (20) + TCP flags at byte 13 of the TCP header.
    return frame[:47] + bytes([flags]) + frame[48:]


def write_captures(directory: Path, files: int = 5, packets: int = 400, n_flows: int = 30, seed: int = 7) -> list[Path]:
    """``files`` captures of ``packets`` packets each, drawn from ``n_flows`` flows, with
    time running on across files (so most flows have packets in several files) and TCP
    flags that change from file to file (so the merged flag union needs every file)."""
    rng = random.Random(seed)
    frames = _frames(rng, n_flows)
    arp = eth(0x0806, bytes(28))
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    ts = 1_700_000_000_000_000_000
    for k in range(files):
        items = []
        for _ in range(packets):
            ts += rng.randrange(1_000, 2_000_000)
            if rng.random() < 0.02:
                items.append(paclo.Packet(arp, ts_ns=ts))
                continue
            f = frames[rng.randrange(n_flows)]
            if f[12:14] == b"\x08\x00" and f[23] == 6:
                f = _with_flags(f, rng.choice([SYN, ACK, ACK | PSH, FIN | ACK]) if k else SYN)
            items.append(paclo.Packet(f, ts_ns=ts))
        p = directory / f"part-{k:03d}.pcap"
        paclo.write_pcap(p, items, nanosecond=True)
        paths.append(p)
    return paths


def sort_flows(table: pa.Table) -> pa.Table:
    """Rows in flow-key order, for comparing tables whose row order differs."""
    key = ["ip_version", "protocol", "src_ip", "dst_ip", "src_port", "dst_port", "vlan_id"]
    return table.sort_by([(c, "ascending") for c in key])


def outputs(out: Path) -> dict[str, tuple[int, int]]:
    """Every visible Parquet file under ``out``: (inode, mtime_ns)."""
    found = {}
    for p in out.rglob("*.parquet"):
        st = p.stat()
        found[str(p.relative_to(out))] = (st.st_ino, st.st_mtime_ns)
    return found


# Captures large enough that SIGINT lands while one is being written (kind="packets"
# streams each in batches of 2^18 packets).
BIG_PACKETS = 600_000
BIG_FILES = 3


def big_captures(root: Path) -> list[Path]:
    """BIG_FILES captures of BIG_PACKETS packets."""
    paths = []
    for i in range(BIG_FILES):
        p = root / f"big-{i}.pcap"
        datasets.generate("udp-64", BIG_PACKETS, p)
        paths.append(p)
    return paths


def partials(out: Path) -> list[Path]:
    return list(out.rglob(".*.partial")) if out.exists() else []


def interrupt_when_writing(cmd: list[str], out: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Start ``cmd``, send SIGINT as soon as a temporary output exists, wait for the end."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    try:
        while not partials(out):
            assert proc.poll() is None, f"ended before it was interrupted: {proc.communicate()}"
            assert time.monotonic() < deadline, "no temporary output appeared in 60 s"
            time.sleep(0.002)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def check_after_interrupt(big_caps: list[Path], out: Path) -> None:
    """Nothing under an output's name is incomplete; a re-run converts the rest and the
    result equals the captures."""
    entries = {e["output"]: e for e in read_manifest(out)}
    assert len(entries) < BIG_FILES, "the run was not interrupted"
    for name in outputs(out):
        pq.read_metadata(out / name)  # a whole Parquet file (footer and all)
    for name, e in entries.items():
        assert (out / name).stat().st_size == e["output_size"]
    report = to_parquet(big_caps, out, kind="packets", workers=1, progress=False)
    assert sorted(r.status for r in report.results).count("skipped") == len(entries)
    assert not partials(out)
    for cap in big_caps:
        got = pq.read_table(out / (cap.name + ".parquet")).drop_columns(["capture"])
        assert got.num_rows == BIG_PACKETS
        assert got.equals(pa.Table.from_batches(list(paclo.read_batches(cap))))


