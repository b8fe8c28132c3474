"""The flow meter on the loopback device: application hints on real traffic the test makes
(a DNS query to a server the test starts, TLS with SNI and ALPN from Python's ssl, HTTP from
a local server and client), and flow_stream(device=) expiring an idle flow on the wall
clock. Every port is ephemeral and every filter names the test's own ports."""

from __future__ import annotations

import http.server
import socket
import ssl
import struct
import threading
import time
import urllib.request

import pytest
from _live_util import ETH_IP_UDP, LO, Receiver, live, send

import paclo

pytestmark = [pytest.mark.live, live]


def dns_query(name: str, qid: int = 0x5AC1) -> bytes:
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack("!HH", 1, 1)


class DnsServer:
    """Answers one query (the question echoed with QR set and no answers)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(5)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            msg, peer = self.sock.recvfrom(2048)
            self.sock.sendto(msg[:2] + struct.pack("!H", 0x8180) + msg[4:], peer)
        except OSError:
            pass

    def close(self) -> None:
        self.thread.join(5)
        self.sock.close()


class SilentTcpServer:
    """Accepts one connection, reads what comes, then closes (the TLS peer that never
    answers: the client's ClientHello is on the wire either way)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(5)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
            with conn:
                conn.settimeout(2)
                conn.recv(65536)
        except OSError:
            pass

    def close(self) -> None:
        self.thread.join(5)
        self.sock.close()


class Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"paclo"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_application_hints_on_loopback(tmp_path):
    dns = DnsServer()
    tls = SilentTcpServer()
    web = http.server.HTTPServer(("127.0.0.1", 0), Quiet)
    web_thread = threading.Thread(target=web.handle_request, daemon=True)
    web_thread.start()
    ports = {"dns": dns.port, "tls": tls.port, "http": web.server_address[1]}
    flt = " or ".join(f"port {p}" for p in ports.values())
    cap = paclo.capture(LO, filter=flt, idle_timeout=1.0)
    try:
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.settimeout(5)
        client.sendto(dns_query("paclo-dns.example"), ("127.0.0.1", dns.port))
        client.recvfrom(2048)
        client.close()

        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", tls.port), timeout=5) as raw:
            try:
                with ctx.wrap_socket(raw, server_hostname="sni.paclo.example"):
                    pass
            except (ssl.SSLError, OSError):
                pass  # the server never answers the hello

        req = urllib.request.Request(f"http://127.0.0.1:{ports['http']}/x", headers={"User-Agent": "paclo-test/1.0"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.read() == b"paclo"
        packets = list(cap)
    finally:
        cap.close()
        dns.close()
        tls.close()
        web_thread.join(5)
        web.server_close()
    path = tmp_path / "lo.pcap"
    paclo.write_pcap(path, packets)
    table = paclo.flows(path, bidirectional=True, features="app")
    by_port = {}
    for row in table.to_pylist():
        for name, port in ports.items():
            if port in (row["src_port"], row["dst_port"]):
                by_port[name] = row
    assert set(by_port) == set(ports)
    assert (by_port["dns"]["application_protocol"], by_port["dns"]["requested_server_name"]) == ("dns", "paclo-dns.example")
    t = by_port["tls"]
    assert (t["application_protocol"], t["requested_server_name"], t["alpn"]) == ("tls", "sni.paclo.example", "h2,http/1.1")
    h = by_port["http"]
    assert h["application_protocol"] == "http"
    assert h["requested_server_name"] == f"127.0.0.1:{ports['http']}"
    assert h["user_agent"] == "paclo-test/1.0"
    assert all(r["alpn"] is None for r in (by_port["dns"], h))


def test_flow_stream_on_loopback_expires_an_idle_flow_on_wall_time():
    with Receiver() as rx:
        sent_at: list[float] = []

        def on_ready() -> None:
            assert send(rx.port, 3) == 3
            sent_at.append(time.monotonic())

        # duration bounds the test: without the wall clock the flow would come only then.
        stream = paclo.flow_stream(
            device=LO, filter=rx.filter, idle_timeout=1.0, duration=10, on_ready=on_ready, features="statistical"
        )
        with stream:
            batch = next(stream)
            got_at = time.monotonic()
            rows = batch.to_pylist()
            assert [(r["packets"], r["dst_port"], r["expiration_reason"]) for r in rows] == [(3, rx.port, "idle")]
            assert rows[0]["min_ps"] == rows[0]["max_ps"] == ETH_IP_UDP + 16
            # Expired by the wall clock while no packet arrived: within idle_timeout + 1 s.
            assert 0.95 <= got_at - sent_at[0] <= 2.0, got_at - sent_at[0]
            assert stream.stats()["flows_yielded"] == 1
            stream.stop()
            assert list(stream) == []
            stats = stream.stats()
            assert (stats["packets"], stats["flows_live"]) == (3, 0)
            assert stats["source"]["stop_reason"] == "consumer"
