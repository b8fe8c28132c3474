"""The sink: a UDP socket bound on the runner's port for the whole live sweep.

A datagram to an unbound port makes the kernel answer with an ICMP port-unreachable (on
`lo`, in the sender's own system call), which cuts a sender's rate to about a third and, on
a connected socket, fails the next send with ECONNREFUSED. The runner therefore binds the
port before the first worker starts and holds it until the end:

- `hold` (default): a large receive buffer that is never read. Once it is full the kernel
  drops further datagrams at the socket, the cheapest thing it can do with them.
- `drain`: a thread reads and discards everything (costs the runner a CPU share).
- `none`: bind nothing (for an external receiver whose port a real service already owns).

Loopback runs bind 127.0.0.1; external runs bind every address (IPv6 dual-stack where
available). A port that is already bound fails the run with a message naming it.
"""

from __future__ import annotations

import errno
import socket
import threading
from typing import Self

from . import config

SINK_MODES = config.SINK_MODES
RCVBUF_BYTES = 16 * 1024 * 1024


class SinkError(RuntimeError):
    """The sink could not bind its port."""


class Sink:
    """A bound UDP socket on `port` (see the module doc); close() or `with` releases it."""

    def __init__(self, port: int, *, mode: str = "hold", external: bool = False) -> None:
        if mode not in SINK_MODES:
            raise ValueError(f"sink must be one of {', '.join(SINK_MODES)}, got {mode!r}")
        self.port = port
        self.mode = mode
        self.address: str | None = None
        self.received = 0
        self._socks: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if mode == "none":
            return
        try:
            if external:
                self._socks.append(self._bind_any(port))
            else:
                self._socks.append(self._bind(socket.AF_INET, ("127.0.0.1", port)))
        except OSError as exc:
            self.close()
            if exc.errno == errno.EADDRINUSE:
                raise SinkError(
                    f"UDP port {port} is already bound by another program; choose a free one with --port "
                    "(or --sink none if that program is the receiver you mean to measure)"
                ) from None
            raise SinkError(f"cannot bind the sink on UDP port {port}: {exc}") from None
        if mode == "drain":
            self._thread = threading.Thread(target=self._drain, name="paclo-perf-sink", daemon=True)
            self._thread.start()

    @staticmethod
    def _bind(family: int, addr: tuple[str, int]) -> socket.socket:
        sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
            sock.bind(addr)
        except OSError:
            sock.close()
            raise
        return sock

    def _bind_any(self, port: int) -> socket.socket:
        if socket.has_ipv6:
            try:
                sock = self._bind(socket.AF_INET6, ("::", port))
                self.address = "::"
                return sock
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    raise
        self.address = "0.0.0.0"
        return self._bind(socket.AF_INET, ("0.0.0.0", port))

    def _drain(self) -> None:
        sock = self._socks[0]
        sock.settimeout(0.05)
        buf = bytearray(65536)
        while not self._stop.is_set():
            try:
                sock.recv_into(buf)
            except TimeoutError:
                continue
            except OSError:
                return
            self.received += 1

    def describe(self) -> dict[str, object]:
        """The sink as recorded in results.json: mode, port, address, rcvbuf (bytes the kernel granted)."""
        rcvbuf = self._socks[0].getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) if self._socks else None
        if self.address is None and self._socks:
            self.address = self._socks[0].getsockname()[0]
        return {"mode": self.mode, "port": self.port, "address": self.address, "rcvbuf_bytes": rcvbuf}

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)
        for sock in self._socks:
            sock.close()
        self._socks.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
