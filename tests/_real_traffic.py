"""Make real traffic on the loopback device and capture it with real tools.

Run inside a private network namespace (``ip netns exec NS python3 _real_traffic.py OUT``;
lo is brought up here), so the captures hold this script's traffic only: TCP connect,
transfer and close, UDP, ICMP and ICMPv6 echo, DNS to a local server on port 53, TLS
handshakes with SNI and ALPN (Python's ssl and ``openssl s_client``), HTTP, each over IPv4
and IPv6 where the protocol allows. Three captures run at once, each with a filter naming
the servers' ports (bound here, port 0 where the port is free to choose):

    OUT/tcpdump.pcap     tcpdump -i lo        classic pcap, Ethernet
    OUT/dumpcap.pcapng   dumpcap -i lo        pcapng
    OUT/any.pcap         tcpdump -i any       Linux cooked v2 (SLL2)

``OUT/manifest.json`` names the ports and the SNI / ALPN values sent. Every loop is
bounded in count and time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import socketserver
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

TIMEOUT = 10.0
SNI = "paclo.test"
ALPN = ["h2", "http/1.1"]
OPENSSL_SNI = "s-client.paclo.test"
OPENSSL_ALPN = "http/1.1"
QNAMES = ["a.paclo.test", "aaaa.paclo.test"]


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


# ---- servers -------------------------------------------------------------------------


class TcpListener(threading.Thread):
    """Accepts connections on an ephemeral port and hands each to serve() until closed."""

    def __init__(self, family: int, host: str) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.bind((host, 0))
        self.sock.listen(8)
        self.sock.settimeout(TIMEOUT)
        self.port = self.sock.getsockname()[1]

    def serve(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.settimeout(TIMEOUT)
            self.serve(conn)


class TcpSink(TcpListener):
    """Echoes what it reads until the peer closes."""

    def serve(self, conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)


class UdpEcho(threading.Thread):
    def __init__(self, family: int, host: str, port: int = 0) -> None:
        super().__init__(daemon=True)
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind((host, port))
        self.sock.settimeout(TIMEOUT)
        self.port = self.sock.getsockname()[1]

    def reply(self, data: bytes) -> bytes:
        return data

    def run(self) -> None:
        while True:
            try:
                data, peer = self.sock.recvfrom(65536)
            except OSError:
                return
            self.sock.sendto(self.reply(data), peer)


class Dns(UdpEcho):
    """Answers every query with one A (127.0.0.53) or AAAA (::53) record."""

    def reply(self, q: bytes) -> bytes:
        ident, _flags, qd = struct.unpack("!HHH", q[:6])
        end = q.index(b"\x00", 12) + 5
        qtype = struct.unpack("!H", q[end - 4:end - 2])[0]
        rdata = socket.inet_pton(socket.AF_INET6, "::53") if qtype == 28 else socket.inet_aton("127.0.0.53")
        answer = b"\xc0\x0c" + struct.pack("!HHIH", qtype, 1, 60, len(rdata)) + rdata
        return struct.pack("!HHHHHH", ident, 0x8180, qd, 1, 0, 0) + q[12:end] + answer


def dns_query(ident: int, name: str, qtype: int) -> bytes:
    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".")) + b"\x00"
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", qtype, 1)


class TlsServer(TcpListener):
    """Completes TLS handshakes (ALPN h2 or http/1.1), then closes."""

    def __init__(self, family: int, host: str, cert: Path, key: Path) -> None:
        super().__init__(family, host)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.ctx.set_alpn_protocols(ALPN)

    def serve(self, conn: socket.socket) -> None:
        try:
            with self.ctx.wrap_socket(conn, server_side=True) as tls:
                tls.recv(100)
        except (OSError, ssl.SSLError):
            conn.close()


class Http(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"paclo\n" * 100
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class ThreadedHttp(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True


# ---- captures ------------------------------------------------------------------------


def start_capture(cmd: list[str], ready: str) -> subprocess.Popen[bytes]:
    """Start a capture tool and wait until its stderr says it is capturing."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert p.stderr is not None
    deadline = time.monotonic() + TIMEOUT
    seen = b""
    while ready.encode() not in seen:
        if time.monotonic() > deadline or p.poll() is not None:
            p.kill()
            raise RuntimeError(f"{cmd[0]} did not start: {seen.decode(errors='replace')}")
        seen += p.stderr.readline()
    return p


def stop_capture(p: subprocess.Popen[bytes]) -> str:
    """Stop a capture tool; returns the rest of its stderr (its packet counts)."""
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return err.decode(errors="replace").strip()


# ---- traffic -------------------------------------------------------------------------


def icmp_checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def ping(family: int, host: str, ident: int, count: int = 2) -> int:
    """Echo requests over a raw socket; returns the replies received."""
    v6 = family == socket.AF_INET6
    proto = socket.IPPROTO_ICMPV6 if v6 else socket.IPPROTO_ICMP
    req = 128 if v6 else 8
    got = 0
    with socket.socket(family, socket.SOCK_RAW, proto) as s:
        s.settimeout(2.0)
        for seq in range(count):
            body = struct.pack("!BBHHH", req, 0, 0, ident, seq) + b"paclo-ping"
            if not v6:  # the kernel fills in ICMPv6 checksums of raw sockets
                body = body[:2] + struct.pack("!H", icmp_checksum(body)) + body[4:]
            s.sendto(body, (host, 0))
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                data = s.recv(2048)
                icmp = data if v6 else data[(data[0] & 0x0F) * 4:]
                if icmp[0] in (0, 129) and struct.unpack("!H", icmp[4:6])[0] == ident:
                    got += 1
                    break
    return got


def tcp_transfer(family: int, host: str, port: int, size: int) -> None:
    with socket.create_connection((host, port), timeout=TIMEOUT) as c:
        payload = bytes(range(256)) * (size // 256)
        c.sendall(payload)
        c.shutdown(socket.SHUT_WR)
        got = 0
        while data := c.recv(65536):
            got += len(data)
        assert got == len(payload), (got, len(payload))


def udp_exchange(family: int, host: str, port: int, n: int) -> None:
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.settimeout(TIMEOUT)
        for i in range(n):
            s.sendto(b"paclo-udp-%d" % i * (i + 1), (host, port))
            s.recv(65536)


def dns_lookup(family: int, host: str, ident: int, name: str, qtype: int) -> None:
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.settimeout(TIMEOUT)
        s.sendto(dns_query(ident, name, qtype), (host, 53))
        s.recv(512)


def tls_handshake(host: str, port: int) -> str | None:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.set_alpn_protocols(ALPN)
    with socket.create_connection((host, port), timeout=TIMEOUT) as raw, ctx.wrap_socket(raw, server_hostname=SNI) as tls:
        tls.sendall(b"bye")
        return tls.selected_alpn_protocol()


def openssl_handshake(port: int) -> bool:
    cmd = ["openssl", "s_client", "-connect", f"127.0.0.1:{port}", "-servername", OPENSSL_SNI,
           "-alpn", OPENSSL_ALPN, "-brief"]
    r = subprocess.run(cmd, input=b"bye\n", capture_output=True, timeout=TIMEOUT)
    return r.returncode == 0


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    sh("ip", "link", "set", "lo", "up")
    key, cert = out / "key.pem", out / "cert.pem"
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=paclo.test",
       "-keyout", str(key), "-out", str(cert))

    v4, v6 = (socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")
    tcp = {name: TcpSink(*fam) for name, fam in (("v4", v4), ("v6", v6))}
    udp = {name: UdpEcho(*fam) for name, fam in (("v4", v4), ("v6", v6))}
    dns = {name: Dns(*fam, port=53) for name, fam in (("v4", v4), ("v6", v6))}
    tls = {name: TlsServer(*fam, cert, key) for name, fam in (("v4", v4), ("v6", v6))}
    http = ThreadedHttp(("127.0.0.1", 0), Http)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    for s in [*tcp.values(), *udp.values(), *dns.values(), *tls.values()]:
        s.start()
    ports = sorted({53, http.server_address[1], *(s.port for s in [*tcp.values(), *udp.values(), *tls.values()])})
    ident = os.getpid() & 0xFFFF
    bpf = " or ".join(f"port {p}" for p in ports)
    bpf = f"((tcp or udp) and ({bpf})) or ((icmp or icmp6) and (icmp[4:2] = {ident} or ip6[44:2] = {ident}))"

    caps = [
        start_capture(["tcpdump", "-i", "lo", "--immediate-mode", "-B", "65536", "-U", "-n", "-w", str(out / "tcpdump.pcap"), bpf], "listening on"),
        start_capture(["dumpcap", "-i", "lo", "-f", bpf, "-w", str(out / "dumpcap.pcapng")], "Capturing on"),
        start_capture(["tcpdump", "-i", "any", "-y", "LINUX_SLL2", "--immediate-mode", "-B", "65536", "-U", "-n", "-w", str(out / "any.pcap"), bpf],
                      "listening on"),
    ]
    try:
        replies = ping(*v4, ident) + ping(*v6, ident)
        for name, (fam, host) in (("v4", v4), ("v6", v6)):
            tcp_transfer(fam, host, tcp[name].port, 100_000)
            udp_exchange(fam, host, udp[name].port, 5)
        dns_lookup(*v4, 0x1001, QNAMES[0], 1)
        dns_lookup(*v6, 0x1002, QNAMES[1], 28)
        alpn = [tls_handshake("127.0.0.1", tls["v4"].port), tls_handshake("::1", tls["v6"].port)]
        openssl_ok = openssl_handshake(tls["v4"].port)
        with urllib.request.urlopen(f"http://127.0.0.1:{http.server_address[1]}/", timeout=TIMEOUT) as r:
            assert len(r.read()) == 600
        time.sleep(1.5)
    finally:
        reports = [stop_capture(p) for p in caps]
        http.shutdown()
    manifest = {
        "ports": ports,
        "tls_ports": sorted(s.port for s in tls.values()),
        "http_port": http.server_address[1],
        "sni": SNI,
        "alpn": ALPN,
        "openssl": {"ok": openssl_ok, "sni": OPENSSL_SNI, "alpn": [OPENSSL_ALPN]},
        "selected_alpn": alpn,
        "qnames": QNAMES,
        "ping_replies": replies,
        "files": ["tcpdump.pcap", "dumpcap.pcapng", "any.pcap"],
        "capture_reports": reports,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


if __name__ == "__main__":
    main()
