"""Helpers of the flow tests that make real traffic on the loopback device: one-shot servers
on ephemeral ports, an HTTP server, a TLS client context, and a table's rows by port."""

from __future__ import annotations

import contextlib
import http.server
import socket
import ssl
import threading
import urllib.request
from collections.abc import Iterable
from typing import Any


class OneShotServer:
    """A socket on an ephemeral 127.0.0.1 port served by one thread: `serve(sock)` handles
    one exchange; OSError (a timeout, a reset) ends it quietly."""

    def __init__(self, kind: int = socket.SOCK_STREAM) -> None:
        if kind == socket.SOCK_STREAM:
            self.sock = socket.create_server(("127.0.0.1", 0))
        else:
            self.sock = socket.socket(socket.AF_INET, kind)
            self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(5)
        self.port: int = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(OSError):
            self.serve(self.sock)

    def serve(self, sock: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.thread.join(5)
        self.sock.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"paclo"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class HttpServer:
    """Answers one GET with 200 and the body b"paclo"."""

    def __init__(self) -> None:
        self.server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
        self.port: int = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.handle_request, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.thread.join(5)
        self.server.server_close()


def http_get(port: int, headers: dict[str, str]) -> bytes:
    """One GET of /x from 127.0.0.1:`port` with `headers`: the body."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/x", headers=headers)
    with urllib.request.urlopen(req, timeout=5) as resp:
        body: bytes = resp.read()
        return body


def tls_client_context(alpn: list[str]) -> ssl.SSLContext:
    """A client context that offers `alpn` and checks no certificate."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(alpn)
    return ctx


def port_filter(ports: Iterable[int], proto: str = "") -> str:
    """A capture filter for the test's own ports."""
    word = f"{proto} port" if proto else "port"
    return " or ".join(f"{word} {p}" for p in ports)


def rows_by_port(rows: Iterable[dict[str, Any]], ports: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Each name of `ports` -> the flow row that has its port at either end."""
    return {name: r for r in rows for name, p in ports.items() if p in (r["src_port"], r["dst_port"])}
