"""Real handshakes on loopback for the fingerprint tests: a TLS and a plain HTTP server
bound to 127.0.0.1 on ephemeral ports, clients with varied TLS versions, ALPN and SNI
(Python's ssl, curl, openssl s_client), HTTP requests with varied headers, an SSH session
to a throwaway sshd, all captured by tcpdump with a filter naming those ports.

Every loop is bounded in count and time; every process started here is ended in finally.
"""

from __future__ import annotations

import contextlib
import datetime
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def self_signed(dirpath: Path) -> tuple[Path, Path]:
    """A throwaway certificate and key (made with the cryptography package)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "paclo tests"),
            x509.NameAttribute(NameOID.COMMON_NAME, "localhost"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    c, k = dirpath / "cert.pem", dirpath / "key.pem"
    c.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    k.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )
    return c, k


def _read_head(conn: Any, deadline: float) -> None:
    buf = b""
    while b"\r\n\r\n" not in buf and time.monotonic() < deadline and len(buf) < 65536:
        try:
            chunk = conn.recv(4096)
        except (OSError, ssl.SSLError):
            return
        if not chunk:
            return
        buf += chunk


class Server:
    """Accepts connections on 127.0.0.1:0 until closed; TLS when `ctx` is given. Each
    connection: handshake, read a request head, answer 200, close."""

    def __init__(self, ctx: ssl.SSLContext | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(32)
        self.sock.settimeout(0.2)
        self.port: int = self.sock.getsockname()[1]
        self.ctx = ctx
        #: The TLS version of every handshake that completed.
        self.versions: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        end = time.monotonic() + 120
        while not self.stop.is_set() and time.monotonic() < end:
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(3)
        try:
            c: Any = conn
            if self.ctx is not None:
                c = self.ctx.wrap_socket(conn, server_side=True)
                self.versions.append(str(c.version()))
            _read_head(c, time.monotonic() + 3)
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        except (OSError, ssl.SSLError):
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


def servers(dirpath: Path) -> tuple[Server, Server, Path]:
    """A TLS server (a throwaway certificate, ALPN h2 and http/1.1), a plain HTTP server,
    and the certificate's path."""
    cert, key = self_signed(dirpath)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2", "http/1.1"])
    return Server(ctx), Server(None), cert


class Tcpdump:
    """What a tcpdump run reported once it stopped."""

    def __init__(self) -> None:
        #: tcpdump's stderr (its start line and its exit summary).
        self.stderr = ""
        #: Whether tcpdump had exited before the traffic block ended.
        self.ended_early = False
        #: The summary's "N packets captured" (None when the summary has no such line).
        self.captured: int | None = None

    def problem(self, path: Path) -> str | None:
        """Why this capture cannot be trusted, or None: tcpdump ended before the traffic
        did, captured nothing, or the file does not hold what it says it captured."""
        if self.ended_early:
            return f"tcpdump ended before the traffic did: {self.stderr!r}"
        if not self.captured:
            return f"tcpdump captured no packets: {self.stderr!r}"
        in_file = count_packets(path)
        if in_file != self.captured:
            return f"tcpdump says {self.captured} packets captured, its file holds {in_file}: {self.stderr!r}"
        return None


def count_packets(path: Path) -> int:
    """Records in a classic pcap file, read with scapy (independent of paclo)."""
    from scapy.utils import PcapReader

    with PcapReader(str(path)) as r:
        return sum(1 for _ in r)


def _settle(path: Path, quiet: float = 0.5, limit: float = 5.0) -> None:
    """Wait until `path` has not grown for `quiet` seconds (at most `limit` seconds)."""
    end = time.monotonic() + limit
    size, since = -1, time.monotonic()
    while time.monotonic() < end:
        now = path.stat().st_size if path.exists() else 0
        if now != size:
            size, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
        time.sleep(0.05)


@contextlib.contextmanager
def tcpdump(path: Path, bpf: str) -> Iterator[Tcpdump]:
    """Capture `bpf` on lo into `path` while the block runs. Immediate mode with a flush
    per packet and a 64 MiB buffer, so every packet reaches the file as it arrives; after the block, waits
    until the file stops growing, then stops tcpdump with SIGINT and waits for its exit
    summary, which must report no kernel drops. The yielded record says whether tcpdump
    was still running when the block ended and how many packets it captured."""
    exe = shutil.which("tcpdump")
    assert exe, "tcpdump is needed (installed by .ci/run)"
    info = Tcpdump()
    p = subprocess.Popen(
        # Immediate mode gives each packet a ring frame of the snapshot length (256 KiB):
        # 64 MiB of buffer holds 256 of them, the default 2 MiB only 8, which a burst fills.
        [exe, "-i", "lo", "--immediate-mode", "-B", "65536", "-U", "-n", "-s", "0", "-w", str(path), bpf],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    start = ""
    try:
        assert p.stderr is not None
        deadline = time.monotonic() + 10
        line = ""
        while time.monotonic() < deadline and "listening on" not in line:
            line = p.stderr.readline()
            start += line
            if not line and p.poll() is not None:
                raise RuntimeError(f"tcpdump exited: {p.returncode}: {start!r}")
        yield info
        _settle(path)
        info.ended_early = p.poll() is not None
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    # tcpdump's summary: every packet the kernel offered reached the file.
    summary = p.stderr.read() if p.stderr is not None else ""
    info.stderr = start + summary
    captured = re.search(r"(\d+) packets? captured", summary)
    info.captured = int(captured.group(1)) if captured else None
    dropped = re.search(r"(\d+) packets? dropped by kernel", summary)
    assert dropped is not None and dropped.group(1) == "0", f"tcpdump: {info.stderr!r}"


def tls_clients(port: int, cafile: Path) -> list[str]:
    """Handshakes with Python's ssl: TLS 1.2 and 1.3, with and without ALPN and SNI, and
    an HTTP request inside each. Returns what was run."""
    done = []
    variants: list[tuple[str, Any, Any, list[str] | None, str | None]] = [
        ("tls12 alpn sni", ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2, ["h2", "http/1.1"], "localhost"),
        ("tls12 no-alpn sni", ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2, None, "localhost"),
        ("tls12 alpn no-sni", ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_2, ["http/1.1"], None),
        ("tls13 alpn sni", ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3, ["h2", "http/1.1"], "localhost"),
        ("tls13 no-alpn no-sni", ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_3, None, None),
        ("any alpn-odd sni", ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.MAXIMUM_SUPPORTED, ["x-odd!", "h2"], "a.test"),
    ]
    for name, lo, hi, alpn, sni in variants:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.minimum_version = lo
        ctx.maximum_version = hi
        if alpn:
            ctx.set_alpn_protocols(alpn)
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            try:
                with ctx.wrap_socket(raw, server_hostname=sni) as s:
                    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    s.recv(256)
            except (OSError, ssl.SSLError):
                continue
        done.append(name)
    return done


def tool_clients(port: int) -> list[str]:
    """curl and openssl s_client handshakes (both tools are needed; .ci/run installs them)."""
    done = []
    curl = shutil.which("curl")
    assert curl, "curl is needed (installed by .ci/run)"
    for args in (["--tlsv1.2", "--tls-max", "1.2"], ["--tlsv1.3"], ["--tlsv1.2", "--no-alpn"]):
        r = subprocess.run(
            [curl, "-sk", "--http1.1", "--max-time", "5", *args, f"https://localhost:{port}/"],
            capture_output=True,
            timeout=10,
        )
        if r.returncode == 0:
            done.append("curl " + " ".join(args))
    openssl = shutil.which("openssl")
    assert openssl, "openssl is needed (installed by .ci/run)"
    for args in (["-tls1_2", "-servername", "s.test", "-alpn", "http/1.1"], ["-tls1_3", "-noservername"]):
        r = subprocess.run(
            [openssl, "s_client", "-connect", f"127.0.0.1:{port}", *args],
            input=b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            capture_output=True,
            timeout=10,
        )
        # The server closes without close_notify, which s_client reports as an error
        # after the handshake: the handshake summary is what counts.
        if b"SSL handshake has read" in r.stdout:
            done.append("openssl " + " ".join(args))
    return done


HTTP_REQUESTS = [
    b"GET / HTTP/1.1\r\nHost: localhost\r\nUser-Agent: paclo-test/1\r\nAccept: */*\r\n\r\n",
    b"GET /a?b=c HTTP/1.1\r\nHost: localhost\r\nUser-Agent: x\r\nAccept-Language: en-US,en;q=0.9\r\n"
    b"Cookie: session=abc; theme=dark; a=1\r\nReferer: http://localhost/\r\n\r\n",
    b"POST /form HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Accept-Language: da, en-GB;q=0.8\r\nContent-Length: 0\r\n\r\n",
    b"PUT /x HTTP/1.0\r\nHost: localhost\r\nCookie: z=9; y=8\r\n\r\n",
    b"HEAD / HTTP/1.1\r\nHost: localhost\r\nAccept-Language: fr\r\nConnection: close\r\n\r\n",
]


def http_clients(port: int) -> int:
    """Plain HTTP requests with varied headers; returns how many were answered."""
    n = 0
    for req in HTTP_REQUESTS:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(req)
            with contextlib.suppress(OSError):
                if s.recv(256):
                    n += 1
    curl = shutil.which("curl")
    assert curl, "curl is needed (installed by .ci/run)"
    r = subprocess.run(
        [curl, "-s", "--max-time", "5", "-H", "Accept-Language: de-DE", "-b", "k=v", f"http://127.0.0.1:{port}/c"],
        capture_output=True,
        timeout=10,
    )
    n += r.returncode == 0
    return n


@contextlib.contextmanager
def sshd(dirpath: Path) -> Iterator[int]:
    """A throwaway sshd on 127.0.0.1 (an ephemeral port, a new host key). sshd, ssh and
    ssh-keygen are needed (.ci/run installs openssh-server and openssh-client)."""
    exe = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
    assert exe, "sshd is needed (openssh-server, installed by .ci/run)"
    assert shutil.which("ssh-keygen") and shutil.which("ssh"), "ssh and ssh-keygen are needed (openssh-client)"
    key = dirpath / "host_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True, timeout=30)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.makedirs("/run/sshd", exist_ok=True)
    p = subprocess.Popen(
        [exe, "-D", "-e", "-f", "/dev/null", "-h", str(key), "-o", f"ListenAddress=127.0.0.1:{port}",
         "-o", "PidFile=none", "-o", "UsePAM=no", "-o", "PasswordAuthentication=no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    # Wait for the banner, so this probe's packets are over before any
                    # capture of the sessions starts.
                    s.settimeout(5)
                    with contextlib.suppress(OSError):
                        s.recv(256)
                    break
            time.sleep(0.05)
        yield port
    finally:
        p.terminate()
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def ssh_session(port: int) -> None:
    """An SSH connection that gets as far as authentication (no account is needed to see
    the banner, key exchange and encrypted packets), a few times."""
    for _ in range(2):
        subprocess.run(
            ["ssh", "-p", str(port), "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "PreferredAuthentications=publickey,none",
             "nobody@127.0.0.1", "true"],
            capture_output=True,
            timeout=20,
        )


def ja4plus_values(path: Path) -> dict[str, list[tuple[str, str | None]]]:
    """Every fingerprint (value, raw form) the ja4plus package gives for the capture, by
    paclo's method names (JA4's original-order raw form as `ja4_o`)."""
    from ja4plus import Processor
    from scapy.utils import PcapReader

    out: dict[str, list[tuple[str, str | None]]] = {}
    proc = Processor(thread_safe=False)
    with PcapReader(str(path)) as r:
        for pkt in r:
            for res in proc.process_packet(pkt):
                name, value = res.type, res.fingerprint
                if name == "ja4l":
                    side, _, value = value.partition("=")
                    name = "ja4l_c" if side.upper().endswith("C") else "ja4l_s"
                out.setdefault(name, []).append((value, res.raw))
                if name == "ja4" and res.raw_original_order:
                    out.setdefault("ja4_o", []).append(("", res.raw_original_order))
    for w in proc.close_open_windows():
        out.setdefault(str(w.get("type", "ja4ssh")), []).append((str(w.get("fingerprint")), None))
    return out


def paclo_values(path: Path) -> dict[str, list[tuple[str, str | None]]]:
    """The same from `paclo.fingerprints(path, methods="all")`."""
    import paclo

    t = paclo.fingerprints(path, methods="all").to_pydict()
    out: dict[str, list[tuple[str, str | None]]] = {}
    for m, v, r in zip(t["method"], t["value"], t["raw"], strict=True):
        out.setdefault(m, []).append((v, r))
    return out


# The per-flow fingerprint columns of `paclo.flows(..., features="fingerprints")`.
FLOW_COLUMNS = ["ja4", "ja4s", "ja4h", "ja4t", "ja4ts", "ja4l_c", "ja4l_s", "ja4ssh", "ja4x"]

Connection = tuple[int, frozenset[tuple[bytes, int]]]


def first_values_by_connection(path: Path) -> dict[Connection, dict[str, str]]:
    """The first value of each flow-column method per connection (protocol and the pair of
    endpoints), from `paclo.fingerprints(path, methods="all")`."""
    import paclo

    out: dict[Connection, dict[str, str]] = {}
    for r in paclo.fingerprints(path, methods="all").to_pylist():
        if r["method"] in FLOW_COLUMNS:
            key = (r["protocol"], frozenset([(r["src_ip"], r["src_port"]), (r["dst_ip"], r["dst_port"])]))
            out.setdefault(key, {}).setdefault(r["method"], r["value"])
    return out


def flow_columns_by_connection(path: Path) -> dict[Connection, dict[str, str]]:
    """The non-null fingerprint cells of each flow of the bidirectional flow table with
    `features="fingerprints"` (flows without any are left out)."""
    import paclo

    out: dict[Connection, dict[str, str]] = {}
    for r in paclo.flows(path, bidirectional=True, features="fingerprints").to_pylist():
        key = (r["protocol"], frozenset([(r["src_ip"], r["src_port"]), (r["dst_ip"], r["dst_port"])]))
        assert key not in out, f"two flows of one connection without timeouts: {key}"
        cells = {c: r[c] for c in FLOW_COLUMNS if r[c] is not None}
        if cells:
            out[key] = cells
    return out
