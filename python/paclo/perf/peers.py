"""Peer scenarios: the same datasets read by the tools a user would otherwise pick.

- `peer-c-mmap-walk`: the floor of a raw read, a C walk over the mmapped records (caplen, last
  byte, next); in every default run, the yardstick of `x walk`.
- `peer-c-pcap-next-ex`: libpcap's `pcap_next_ex` loop in C (compiled by the runner with `cc`).
- `peer-dpkt-raw`: `dpkt.pcap.Reader` iteration, no decode.
- `peer-dpkt-5tuple`: dpkt Ethernet/IP/TCP-UDP decode and a dict keyed by the 5-tuple.
- `peer-scapy-raw`: `scapy.utils.RawPcapReader` iteration, no dissection.
- `peer-scapy-decode`: `scapy.utils.PcapReader`, full dissection of every packet.

scapy reads only the first `config.SCAPY_MAX_PACKETS` packets of each dataset (it is about
two orders of magnitude slower); its results say so in `note` and count only those packets.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .scenarios import Scenario, ScenarioFields, _iter

if TYPE_CHECKING:
    from .metrics import AllocationProbe

# The C programs shipped beside this module: name -> (what needs it, source, link flags).
C_PROGRAMS = {
    "mmap_walk": ("peer-c-mmap-walk", "mmap_walk.c", []),
    "pcap_next_ex_loop": ("peer-c-pcap-next-ex", "pcap_next_ex_loop.c", ["-lpcap"]),
    "pcap_live_count": ("peer-c-libpcap-live", "pcap_live_count.c", ["-lpcap"]),
    "udp_sendmmsg": ("the C reference sender", "udp_sendmmsg.c", ["-pthread"]),
}


# The offline peers that are C programs timing themselves: scenario -> program of C_PROGRAMS.
C_PEERS = {"peer-c-mmap-walk": "mmap_walk", "peer-c-pcap-next-ex": "pcap_next_ex_loop"}


class SelfTimedFields(ScenarioFields):
    """The fields of a peer that times itself in another process (the worker takes these
    figures in place of its own)."""

    _elapsed_ns: int
    _process_cpu_ns: int
    _peak_rss_bytes: int


class PeerUnavailable(RuntimeError):
    """A peer tool cannot run on this machine (missing module or compiler)."""


def compile_c(out_dir: str | os.PathLike[str], name: str) -> str:
    """Compile the C program `name` of C_PROGRAMS into `out_dir/bin` (when missing or older
    than its source); return the executable's path."""
    user, source_name, flags = C_PROGRAMS[name]
    source = Path(__file__).with_name(source_name)
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise PeerUnavailable(f"{user} needs a C compiler (cc) and libpcap headers")
    bin_dir = Path(out_dir) / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / name
    if exe.exists() and exe.stat().st_mtime >= source.stat().st_mtime:
        return str(exe)
    try:
        proc = subprocess.run([cc, "-O2", "-o", str(exe), str(source), *flags], capture_output=True, text=True)
    except OSError as exc:
        raise PeerUnavailable(f"{user} needs a C compiler: running {cc} failed: {exc}") from None
    if proc.returncode != 0:
        raise PeerUnavailable(f"compiling {source.name} failed (needs libpcap-dev):\n{proc.stderr.strip()}")
    return str(exe)


def compile_c_peer(out_dir: str | os.PathLike[str], scenario: str = "peer-c-pcap-next-ex") -> str:
    """Compile the C program of the offline peer `scenario` (a key of C_PEERS) into `out_dir/bin`."""
    return compile_c(out_dir, C_PEERS[scenario])


def compile_c_live_peer(out_dir: str | os.PathLike[str]) -> str:
    """Compile the plain-libpcap live receiver (the live C peer) into `out_dir/bin`."""
    return compile_c(out_dir, "pcap_live_count")


def compile_c_sender(out_dir: str | os.PathLike[str]) -> str:
    """Compile the C sendmmsg reference sender into `out_dir/bin`."""
    return compile_c(out_dir, "udp_sendmmsg")


def c_self_timed(binary: str, path: str, count: int) -> Callable[[], SelfTimedFields]:
    """One pass of a C peer of C_PEERS; timing, CPU and peak RSS come from the C process itself."""

    def run() -> SelfTimedFields:
        proc = subprocess.run([binary, path], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{binary} failed with exit {proc.returncode}: {proc.stderr.strip()}")
        packets, nbytes, elapsed, cpu, rss = (int(x) for x in proc.stdout.split())
        return {
            "packets": packets,
            "bytes": nbytes,
            "decode_errors": 0,
            "_elapsed_ns": elapsed,
            "_process_cpu_ns": cpu,
            "_peak_rss_bytes": rss,
        }

    return run


def dpkt_raw(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import dpkt

    def run() -> ScenarioFields:
        n = nbytes = 0
        with open(path, "rb") as f:
            for _ts, buf in _iter(dpkt.pcap.Reader(f), probe):
                n += 1
                nbytes += len(buf)
        return {"packets": n, "bytes": nbytes, "decode_errors": 0}

    return run


def dpkt_5tuple(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    import dpkt

    def run() -> ScenarioFields:
        n = nbytes = errors = 0
        flows: dict[tuple[Any, ...], int] = {}
        with open(path, "rb") as f:
            for _ts, buf in _iter(dpkt.pcap.Reader(f), probe):
                n += 1
                nbytes += len(buf)
                try:
                    eth = dpkt.ethernet.Ethernet(buf)
                except dpkt.UnpackError:
                    errors += 1
                    continue
                ip = eth.data
                if not isinstance(ip, dpkt.ip.IP):
                    continue
                l4 = ip.data
                if isinstance(l4, (dpkt.tcp.TCP, dpkt.udp.UDP)):
                    key = (ip.p, ip.src, l4.sport, ip.dst, l4.dport)
                else:
                    key = (ip.p, ip.src, None, ip.dst, None)
                flows[key] = flows.get(key, 0) + 1
        return {"packets": n, "bytes": nbytes, "decode_errors": errors, "unique_flows": len(flows)}

    return run


def scapy_raw(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    from scapy.utils import RawPcapReader

    def run() -> ScenarioFields:
        n = nbytes = 0
        with RawPcapReader(path) as reader:
            for data, _meta in _iter(reader, probe):
                n += 1
                nbytes += len(data)
                if n >= count:
                    break
        return {"packets": n, "bytes": nbytes, "decode_errors": 0}

    return run


def scapy_decode(path: str, count: int, probe: AllocationProbe | None = None) -> Callable[[], ScenarioFields]:
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.packet import Raw
    from scapy.utils import PcapReader

    def run() -> ScenarioFields:
        n = nbytes = errors = 0
        flows: dict[tuple[Any, ...], int] = {}
        with PcapReader(path) as reader:
            for pkt in _iter(reader, probe):
                n += 1
                nbytes += len(pkt)
                if isinstance(pkt, Raw):
                    errors += 1
                elif IP in pkt:
                    ip = pkt[IP]
                    l4 = pkt[TCP] if TCP in pkt else pkt.getlayer(UDP)
                    key = (ip.proto, ip.src, ip.dst, getattr(l4, "sport", None), getattr(l4, "dport", None))
                    flows[key] = flows.get(key, 0) + 1
                if n >= count:
                    break
        return {"packets": n, "bytes": nbytes, "decode_errors": errors, "unique_flows": len(flows)}

    return run


PEERS: dict[str, Scenario] = {
    "peer-dpkt-raw": dpkt_raw,
    "peer-dpkt-5tuple": dpkt_5tuple,
    "peer-scapy-raw": scapy_raw,
    "peer-scapy-decode": scapy_decode,
}

NOTES = {
    "peer-c-mmap-walk": "C walk over the mmapped classic-pcap records (caplen, touch the last byte, next): the floor of a raw read; timed inside the C process",
    "peer-c-pcap-next-ex": "libpcap pcap_next_ex loop in C, counting packets and caplen; timed inside the C process",
    "peer-dpkt-raw": "dpkt.pcap.Reader iteration, no decode",
    "peer-dpkt-5tuple": "dpkt Ethernet/IP decode and a dict keyed by the 5-tuple",
    "peer-scapy-raw": "scapy RawPcapReader iteration, no dissection; reads only the first {n} packets of the dataset",
    "peer-scapy-decode": "scapy PcapReader with full dissection and a dict keyed by the 5-tuple; reads only the first {n} packets of the dataset",
}
