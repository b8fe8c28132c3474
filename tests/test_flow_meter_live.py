"""The flow meter on the loopback device: application hints on real traffic the test makes
(a DNS query to a server the test starts, TLS with SNI and ALPN from Python's ssl, HTTP from
a local server and client), and flow_stream(device=) expiring an idle flow on the wall
clock. Every port is ephemeral and every filter names the test's own ports."""

from __future__ import annotations

import socket
import ssl
import struct
import time

import pytest
from _flow_live import HttpServer, OneShotServer, http_get, port_filter, rows_by_port, tls_client_context
from _live_util import ETH_IP_UDP, LO, Receiver, live, send

import paclo

pytestmark = [pytest.mark.live, live]


def dns_query(name: str, qid: int = 0x5AC1) -> bytes:
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.split("."):
        q += bytes([len(label)]) + label.encode()
    return q + b"\x00" + struct.pack("!HH", 1, 1)


class DnsServer(OneShotServer):
    """Answers one query (the question echoed with QR set and no answers)."""

    def __init__(self) -> None:
        super().__init__(socket.SOCK_DGRAM)

    def serve(self, sock: socket.socket) -> None:
        msg, peer = sock.recvfrom(2048)
        sock.sendto(msg[:2] + struct.pack("!H", 0x8180) + msg[4:], peer)


class SilentTcpServer(OneShotServer):
    """Accepts one connection, reads what comes, then closes (the TLS peer that never
    answers: the client's ClientHello is on the wire either way)."""

    def serve(self, sock: socket.socket) -> None:
        conn, _ = sock.accept()
        with conn:
            conn.settimeout(2)
            conn.recv(65536)


def test_application_hints_on_loopback(tmp_path):
    dns = DnsServer()
    tls = SilentTcpServer()
    web = HttpServer()
    ports = {"dns": dns.port, "tls": tls.port, "http": web.port}
    cap = paclo.capture(LO, filter=port_filter(ports.values()), idle_timeout=1.0)
    try:
        client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        client.settimeout(5)
        client.sendto(dns_query("paclo-dns.example"), ("127.0.0.1", dns.port))
        client.recvfrom(2048)
        client.close()

        ctx = tls_client_context(["h2", "http/1.1"])
        with socket.create_connection(("127.0.0.1", tls.port), timeout=5) as raw:
            try:
                with ctx.wrap_socket(raw, server_hostname="sni.paclo.example"):
                    pass
            except (ssl.SSLError, OSError):
                pass  # the server never answers the hello

        assert http_get(web.port, {"User-Agent": "paclo-test/1.0"}) == b"paclo"
        packets = list(cap)
    finally:
        cap.close()
        dns.close()
        tls.close()
        web.close()
    path = tmp_path / "lo.pcap"
    paclo.write_pcap(path, packets)
    table = paclo.flows(path, bidirectional=True, features="app")
    by_port = rows_by_port(table.to_pylist(), ports)
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
