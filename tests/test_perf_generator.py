"""The native UDP generator (`paclo._paclo.udp_generate`) and its command line
(`python -m paclo.perf.generator`), over sockets bound on the loopback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from paclo import _paclo

GEN = [sys.executable, "-m", "paclo.perf.generator"]


class Sink:
    """A UDP socket on the loopback that is read after the run: every datagram that reached it
    is either queued (drained and counted here) or dropped for lack of room (the kernel's
    per-socket `drops` column in /proc/net/udp{,6})."""

    def __init__(self, family: int = socket.AF_INET) -> None:
        self.family = family
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.sizes: set[int] = set()

    def _drops(self) -> int:
        inode = str(os.fstat(self.sock.fileno()).st_ino)
        table = "/proc/net/udp6" if self.family == socket.AF_INET6 else "/proc/net/udp"
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[9] == inode:
                    return int(cols[-1])
        raise AssertionError("sink socket not found in " + table)

    def arrived(self) -> int:
        self.sock.setblocking(False)
        queued = 0
        while True:
            try:
                self.sizes.add(len(self.sock.recv(65536)))
            except BlockingIOError:
                break
            queued += 1
        return queued + self._drops()

    def close(self) -> None:
        self.sock.close()


def _unbound_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_count_is_split_exactly_and_every_datagram_arrives():
    sink = Sink()
    try:
        report = _paclo.udp_generate("127.0.0.1", sink.port, 10_000, packets=10, senders=3, frame_size=100)
        assert report["sent"] == 10
        assert [s["sent"] for s in report["per_sender"]] == [4, 3, 3]
        assert [s["requested"] for s in report["per_sender"]] == [4, 3, 3]
        assert [s["target_pps"] for s in report["per_sender"]] == [3334, 3333, 3333]
        assert sink.arrived() == 10 and sink.sizes == {72}  # frame size - 28
    finally:
        sink.close()


def test_report_fields():
    # "localhost" goes to the resolver's first address: 127.0.0.1, or ::1 where /etc/hosts
    # names both (as a Debian install's does)
    family, _, _, _, address = socket.getaddrinfo("localhost", 9, type=socket.SOCK_DGRAM)[0]
    sink = Sink(family)
    try:
        r = _paclo.udp_generate("localhost", sink.port, 50_000, packets=1000, senders=2, batch=16, cpus=[0])
    finally:
        sink.close()
    assert set(r) == {"host", "port", "family", "requested_packets", "duration_ms", "sent", "target_pps",
                      "realized_pps", "elapsed_ns", "window_ns", "retries", "stop", "frame_size", "payload_bytes",
                      "senders", "batch", "start_delay_ms", "cpus", "per_sender"}
    assert (r["host"], r["port"]) == (address[0], sink.port)
    assert r["family"] == ("ipv6" if family == socket.AF_INET6 else "ipv4")
    assert (r["requested_packets"], r["duration_ms"], r["sent"], r["stop"]) == (1000, None, 1000, "count")
    headers = 48 if family == socket.AF_INET6 else 28  # IP and UDP headers
    assert (r["frame_size"], r["payload_bytes"], r["senders"], r["batch"], r["cpus"]) == (64, 64 - headers, 2, 16, [0])
    # the realized rate: (sent - senders) intervals over the window from the first to the last
    # accepted datagram (each sender's first datagram opens its own count)
    assert r["realized_pps"] == pytest.approx((r["sent"] - 2) / (r["window_ns"] / 1e9), rel=1e-9)
    # paced by absolute deadlines: datagram i of a sender never leaves before start + i / rate
    for s in r["per_sender"]:
        assert s["last_ns"] >= (s["sent"] - 1) * 1_000_000_000 // s["target_pps"]
    assert r["elapsed_ns"] >= r["window_ns"]
    for s in r["per_sender"]:
        assert s["cpu"] == 0 and s["calls"] >= 1 and s["loop_allocations"] == 0
        assert s["first_ns"] <= s["last_ns"] and s["retries"] >= 0


def test_a_bounded_one_second_run_at_200k_sends_exactly_the_count():
    sink = Sink()
    try:
        r = _paclo.udp_generate("127.0.0.1", sink.port, 200_000, packets=200_000, duration_ms=10_000, senders=2)
        assert r["sent"] == 200_000 and r["stop"] == "count"
        assert sink.arrived() == 200_000
    finally:
        sink.close()
    # never ahead of the schedule: each sender's last datagram was due 99,999 intervals of 10 us in
    assert all(s["last_ns"] >= 99_999 * 10_000 for s in r["per_sender"])


def test_duration_bounds_the_run():
    sink = Sink()
    try:
        r = _paclo.udp_generate("127.0.0.1", sink.port, 2_000, duration_ms=500)
        # 1,000 datagrams are due before the deadline; a sender behind when it passes stops there
        assert 0 < r["sent"] <= 1000 and r["stop"] == "deadline"
        assert r["elapsed_ns"] >= 499_000_000
        assert sink.arrived() == r["sent"]
    finally:
        sink.close()


def test_ipv6():
    try:
        sink = Sink(socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        r = _paclo.udp_generate("::1", sink.port, 10_000, packets=50, frame_size=100)
        assert (r["family"], r["host"], r["payload_bytes"], r["sent"]) == ("ipv6", "::1", 52, 50)
        assert sink.arrived() == 50 and sink.sizes == {52}
    finally:
        sink.close()


def test_bad_values_raise_naming_the_option():
    with pytest.raises(ValueError, match="rate must be positive"):
        _paclo.udp_generate("127.0.0.1", 9, 0, packets=1)
    with pytest.raises(ValueError, match="senders cannot exceed packets"):
        _paclo.udp_generate("127.0.0.1", 9, 10, packets=2, senders=3)
    with pytest.raises(ValueError, match="give packets, duration or both"):
        _paclo.udp_generate("127.0.0.1", 9, 10)
    with pytest.raises(ValueError, match="batch must be between 1 and 1024"):
        _paclo.udp_generate("127.0.0.1", 9, 10, packets=1, batch=0)
    with pytest.raises(OSError, match="cannot resolve host"):
        _paclo.udp_generate("no-such-host.invalid", 9, 10, packets=1)


def test_a_refused_send_raises():
    # Nothing listens on the port: lo answers the first datagram with an ICMP port-unreachable
    # and a later send on the connected socket fails. (The kernel rate-limits ICMP, so send for
    # long enough to draw at least one.)
    with pytest.raises(ConnectionRefusedError, match="nothing listens on that port"):
        _paclo.udp_generate("127.0.0.1", _unbound_port(), 100_000, packets=200_000, duration_ms=5000)


def test_command_line_report_and_exit_codes():
    sink = Sink()
    try:
        proc = subprocess.run([*GEN, "--host", "127.0.0.1", "--port", str(sink.port), "--packets", "7", "--rate",
                               "1000", "--frame-size", "10", "--senders", "2"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        report = json.loads(proc.stdout)
        assert report["sent"] == 7 and [s["sent"] for s in report["per_sender"]] == [4, 3]
        assert sink.arrived() == 7 and sink.sizes == {1}
    finally:
        sink.close()
    cases = [
        (["--packets", "5", "--rate", "10"], 4, "host is required"),
        (["--host", "x", "--packets", "2", "--rate", "10", "--senders", "3"], 4, "senders cannot exceed packets"),
        (["--host", "x", "--rate", "10"], 1, "give --packets, --duration-ms or both"),
        (["--host", "x", "--packets", "1", "--rate", "10", "--bogus", "1"], 1, "unknown or incomplete argument"),
        (["--host", "x", "--packets", "1", "--rate", "10", "--cpus", "a"], 4, "cpus must be a comma list"),
        (["--host", "no-such-host.invalid", "--packets", "1", "--rate", "10"], 5, "no-such-host.invalid"),
        (["--host", "127.0.0.1", "--port", str(_unbound_port()), "--packets", "200000", "--rate", "100000"], 5,
         "ConnectionRefusedError"),
    ]
    for argv, code, message in cases:
        proc = subprocess.run([*GEN, *argv], capture_output=True, text=True)
        assert proc.returncode == code, (argv, proc.stderr)
        assert message in proc.stderr, (argv, proc.stderr)


def test_wait_go_sends_only_after_the_line():
    sink = Sink()
    try:
        proc = subprocess.Popen([*GEN, "--host", "127.0.0.1", "--port", str(sink.port), "--packets", "20",
                                 "--rate", "10000", "--wait-go"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "ready"
        assert sink.arrived() == 0
        out, err = proc.communicate("go\n", timeout=30)
        assert proc.returncode == 0, err
        assert json.loads(out)["sent"] == 20 and sink.arrived() == 20
        # the parent went away without a go: nothing is sent
        proc = subprocess.Popen([*GEN, "--host", "127.0.0.1", "--port", str(sink.port), "--packets", "20",
                                 "--rate", "10000", "--wait-go"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out, err = proc.communicate("", timeout=30)
        assert proc.returncode == 5 and "stdin closed before go" in err
        assert out.strip() == "ready" and sink.arrived() == 0
    finally:
        sink.close()
