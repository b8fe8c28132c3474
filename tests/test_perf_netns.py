"""External mode across a network namespace: the generator sends from inside a namespace over
a veth pair, the runner captures the other end with --expected-packets and the default filter.

Needs root and iproute2. The namespace, the pair and their addresses are this test's own
(named after the pid) and removed in `finally`.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading

import pytest

from paclo.perf import ring

pytestmark = [
    pytest.mark.live,
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2"),
]

RATE = 20_000
PACKETS = 20_000


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


def _free_subnet() -> tuple[str, str]:
    """Two addresses of a /30 in 10.0.0.0/8 that no interface of this host uses."""
    used = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=True).stdout
    pid = os.getpid()
    for k in range(256):
        a, b = 100 + (pid + k) % 100, (pid // 100 + k) % 256
        prefix = f"10.{a}.{b}."
        if prefix not in used:
            return prefix + "1", prefix + "2"
    raise RuntimeError("no free 10.x.y.0/30 subnet")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("0.0.0.0", 0))
        return int(s.getsockname()[1])


def _filtered_socket_on(ifindex: int) -> bool:
    """Whether some packet socket is bound to `ifindex` with a BPF filter attached (packet_diag)."""
    return any(s["ifindex"] == ifindex and s["filter"] for s in ring.packet_sockets())


def test_external_mode_counts_exactly_what_the_namespace_sent(tmp_path):
    pid = os.getpid()
    ns, host_if, ns_if = f"paclo-live-{pid}", f"plv{pid}a"[:15], f"plv{pid}b"[:15]
    host_addr, ns_addr = _free_subnet()
    port = _free_port()
    report_path = tmp_path / "generator.json"
    out = tmp_path / "out"
    runner = None
    try:
        _ip("netns", "add", ns)
        _ip("link", "add", host_if, "type", "veth", "peer", "name", ns_if)
        _ip("link", "set", ns_if, "netns", ns)
        _ip("addr", "add", f"{host_addr}/30", "dev", host_if)
        _ip("link", "set", host_if, "up")
        _ip("-n", ns, "addr", "add", f"{ns_addr}/30", "dev", ns_if)
        _ip("-n", ns, "link", "set", ns_if, "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        # A static neighbour entry: no datagram waits (or is dropped) behind ARP resolution.
        with open(f"/sys/class/net/{host_if}/address") as f:
            mac = f.read().strip()
        _ip("-n", ns, "neigh", "replace", host_addr, "lladdr", mac, "dev", ns_if, "nud", "permanent")
        ifindex = socket.if_nametoindex(host_if)

        runner = subprocess.Popen(
            [sys.executable, "-m", "paclo.perf", "--mode", "live", "--source", "external", "--device", host_if,
             "--port", str(port), "--rates", str(RATE), "--expected-packets", str(PACKETS),
             "--scenarios", "live-sync-raw", "--warmups", "0", "--runs", "1", "--duration-ms", "30000",
             "--generator-report", str(report_path), "--output", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        lines: list[str] = []
        ready = threading.Event()

        def read_stderr() -> None:
            assert runner is not None and runner.stderr is not None
            for line in runner.stderr:
                lines.append(line)
                if "[perf] capture ready" in line:
                    ready.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        assert ready.wait(60), "".join(lines)
        # ready only after open + filter: a filtered packet socket on the device exists now
        assert _filtered_socket_on(ifindex)

        with open(report_path, "w") as f:
            gen = subprocess.run(
                ["ip", "netns", "exec", ns, sys.executable, "-m", "paclo.perf.generator", "--host", host_addr,
                 "--port", str(port), "--packets", str(PACKETS), "--rate", str(RATE)],
                stdout=f, stderr=subprocess.PIPE, text=True, timeout=60,
            )
        assert gen.returncode == 0, gen.stderr
        stdout, _ = runner.communicate(timeout=90)
        reader.join(5)
        assert runner.returncode == 0, "".join(lines) + stdout
    finally:
        if runner is not None and runner.poll() is None:
            runner.kill()
            runner.wait()
        subprocess.run(["ip", "link", "del", host_if], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    assert not os.path.exists(f"/sys/class/net/{host_if}")

    report = json.loads(report_path.read_text())
    doc = json.loads((out / "results.json").read_text())
    result = doc["live"][0]
    run = result["runs"][0]
    assert result["config"]["filter"] == f"udp dst port {port}"
    assert report["sent"] == PACKETS
    assert run["sent"] == PACKETS and run["sent_source"] == "external_expected"
    assert run["packets"] == PACKETS  # processed equals sent, exactly
    assert run["stop_reason"] == "max_packets"
    assert run["stage_counts"]["send_loss"] == 0
    assert run["realized_send_source"] == "generator"
    assert run["realized_send_pps"] == report["realized_pps"]
    assert run["generator"]["sent"] == PACKETS
    # the capture window is about PACKETS / RATE = 1 s, so the processed rate is near 20k, not 20k / 30 s
    assert run["sustained_processed_pps"] > RATE / 2
    assert result["sustainability"]["verdict"] in ("pass", "limited")
