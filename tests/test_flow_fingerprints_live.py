"""Fingerprint columns of flow tables on real handshakes the test makes on the loopback
device (Python's ssl as client and server, TLS 1.2 so the certificate is on the wire, and an
HTTP request): JA4, JA4S, JA4T, JA4TS and JA4H equal a small independent computation from
the captured bytes (FoxIO's specification); the stream gives the table's values. Every port
is ephemeral and the filter names the test's own ports."""

from __future__ import annotations

import hashlib
import re
import socket
import ssl
import struct
import subprocess
from pathlib import Path

import pytest
from _flow_live import HttpServer, OneShotServer, http_get, port_filter, rows_by_port, tls_client_context
from _live_util import LO, live

import paclo

COLUMNS = ["ja4", "ja4s", "ja4h", "ja4t", "ja4ts", "ja4l_c", "ja4l_s", "ja4ssh", "ja4x"]
TLS_VERSIONS = {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3"}


def grease(v: int) -> bool:
    return v & 0x0F0F == 0x0A0A and v >> 8 == v & 0xFF


def sha12(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12] if text else "0" * 12


def hexes(values: list[int]) -> str:
    return ",".join(f"{v:04x}" for v in values)


def tcp_segments(packets: list[paclo.Packet]) -> list[tuple[int, int, int, bytes, bytes, int]]:
    """(sport, dport, flags, options, payload, window) of each Ethernet/IPv4/TCP frame."""
    out = []
    for p in packets:
        d = p.data
        if d[12:14] != b"\x08\x00" or d[23] != 6:
            continue
        ip = 14 + (d[14] & 0x0F) * 4
        tlen = struct.unpack_from("!H", d, 16)[0]
        off = (d[ip + 12] >> 4) * 4
        sport, dport = struct.unpack_from("!HH", d, ip)
        window = struct.unpack_from("!H", d, ip + 14)[0]
        out.append((sport, dport, d[ip + 13], d[ip + 20 : ip + off], d[ip + off : 14 + tlen], window))
    return out


def ja4t(window: int, options: bytes) -> str:
    kinds, mss, wscale, i = [], 0, 0, 0
    while i < len(options):
        kind = options[i]
        kinds.append(str(kind))
        if kind in (0, 1):
            i += 1
            continue
        size = options[i + 1]
        if kind == 2:
            mss = struct.unpack_from("!H", options, i + 2)[0]
        if kind == 3:
            wscale = options[i + 2]
        i += size
    return f"{window}_{'-'.join(kinds)}_{mss}_{wscale}"


def hello_extensions(body: bytes, i: int) -> list[tuple[int, bytes]]:
    (total,) = struct.unpack_from("!H", body, i)
    i, end, exts = i + 2, i + 2 + total, []
    while i < end:
        kind, size = struct.unpack_from("!HH", body, i)
        exts.append((kind, body[i + 4 : i + 4 + size]))
        i += 4 + size
    return exts


def handshake(record_stream: bytes, hs_type: int) -> bytes:
    """The body of the first handshake message of `hs_type` in a stream of TLS records."""
    data, i = b"", 0
    while i + 5 <= len(record_stream):
        size = struct.unpack_from("!H", record_stream, i + 3)[0]
        if record_stream[i] == 22:
            data += record_stream[i + 5 : i + 5 + size]
        i += 5 + size
    j = 0
    while j + 4 <= len(data):
        size = int.from_bytes(data[j + 1 : j + 4], "big")
        if data[j] == hs_type:
            return data[j + 4 : j + 4 + size]
        j += 4 + size
    raise AssertionError(f"no handshake message {hs_type}")


def alpn_code(value: bytes) -> str:
    return chr(value[0]) + chr(value[-1]) if value else "00"


def ja4(body: bytes) -> str:
    i = 2 + 32
    i += 1 + body[i]
    (n,) = struct.unpack_from("!H", body, i)
    ciphers = [c for c in struct.unpack_from(f"!{n // 2}H", body, i + 2) if not grease(c)]
    i += 2 + n
    i += 1 + body[i]
    exts = [(k, v) for k, v in hello_extensions(body, i) if not grease(k)]
    ext = dict(exts)
    version = struct.unpack_from("!H", body)[0]
    if 0x002B in ext:
        v = ext[0x002B]
        version = max(x for x in struct.unpack_from(f"!{v[0] // 2}H", v, 1) if not grease(x))
    alpn = ext.get(0x0010)
    first_alpn = alpn[3 : 3 + alpn[2]] if alpn else b""
    a = f"t{TLS_VERSIONS[version]}{'d' if 0x0000 in ext else 'i'}{len(ciphers):02d}{len(exts):02d}{alpn_code(first_alpn)}"
    kinds = sorted(k for k, _ in exts if k not in (0x0000, 0x0010))
    c = hexes(kinds)
    if 0x000D in ext:
        sig = ext[0x000D]
        c += "_" + hexes(list(struct.unpack_from(f"!{len(sig) // 2 - 1}H", sig, 2)))
    return f"{a}_{sha12(hexes(sorted(ciphers)))}_{sha12(c)}"


def ja4s(body: bytes) -> str:
    i = 2 + 32
    i += 1 + body[i]
    (cipher,) = struct.unpack_from("!H", body, i)
    exts = hello_extensions(body, i + 3)
    ext = dict(exts)
    version = struct.unpack_from("!H", body)[0]
    if 0x002B in ext:
        (version,) = struct.unpack("!H", ext[0x002B])
    alpn = ext.get(0x0010)
    chosen = alpn[3 : 3 + alpn[2]] if alpn else b""
    a = f"t{TLS_VERSIONS[version]}{len(exts):02d}{alpn_code(chosen)}"
    return f"{a}_{cipher:04x}_{sha12(hexes([k for k, _ in exts]))}"


def ja4h(head: bytes) -> str:
    lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
    method, _, version = lines[0].split(" ")
    names = [line.split(":", 1)[0] for line in lines[1:]]
    kept = [n for n in names if n.lower() not in ("cookie", "referer")]
    lang = "0000"
    a = f"{method[:2].lower()}{version[5] + version[7]}nn{len(kept):02d}{lang}"
    return f"{a}_{sha12(','.join(kept))}_{'0' * 12}_{'0' * 12}"


class TlsServer(OneShotServer):
    """A TLS 1.2 server with a self-signed certificate: one handshake, then close."""

    def __init__(self, tmp: Path) -> None:
        key, cert = tmp / "key.pem", tmp / "cert.pem"
        argv = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert]
        subprocess.run(
            [*argv, "-days", "1", "-subj", "/CN=paclo.example"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        self.ctx.load_cert_chain(cert, key)
        self.ctx.set_alpn_protocols(["http/1.1"])
        super().__init__()

    def serve(self, sock: socket.socket) -> None:
        conn, _ = sock.accept()
        with self.ctx.wrap_socket(conn, server_side=True) as s:
            s.settimeout(5)
            s.recv(16)


@pytest.mark.live
@live
def test_fingerprint_columns_on_real_handshakes(tmp_path):
    tls = TlsServer(tmp_path)
    web = HttpServer()
    ports = {"tls": tls.port, "http": web.port}
    cap = paclo.capture(LO, filter=port_filter(ports.values(), "tcp"), idle_timeout=1.0)
    try:
        ctx = tls_client_context(["h2", "http/1.1"])
        with (
            socket.create_connection(("127.0.0.1", tls.port), timeout=5) as raw,
            ctx.wrap_socket(raw, server_hostname="sni.paclo.example") as s,
        ):
            assert s.version() == "TLSv1.2"
            s.sendall(b"bye")
        assert http_get(web.port, {"User-Agent": "paclo-test/1.0", "X-Test": "1"}) == b"paclo"
        packets = list(cap)
    finally:
        cap.close()
        tls.close()
        web.close()
    path = tmp_path / "lo.pcap"
    paclo.write_pcap(path, packets)

    # The independent values, from the captured bytes.
    segs = tcp_segments(packets)
    expect: dict[str, dict[str, str]] = {}
    for name, port in ports.items():
        mine = [s for s in segs if port in (s[0], s[1])]
        to_server = b"".join(s[4] for s in mine if s[1] == port)
        from_server = b"".join(s[4] for s in mine if s[0] == port)
        syn = next(s for s in mine if s[2] & 0x12 == 0x02)
        synack = next(s for s in mine if s[2] & 0x12 == 0x12)
        expect[name] = {"ja4t": ja4t(syn[5], syn[3]), "ja4ts": ja4t(synack[5], synack[3])}
        if name == "tls":
            expect[name]["ja4"] = ja4(handshake(to_server, 1))
            expect[name]["ja4s"] = ja4s(handshake(from_server, 2))
        else:
            expect[name]["ja4h"] = ja4h(to_server)

    table = paclo.flows(path, bidirectional=True, features="fingerprints")
    assert table.column_names[-len(COLUMNS) :] == COLUMNS
    rows = rows_by_port(table.to_pylist(), ports)
    assert set(rows) == set(ports) and table.num_rows == 2
    for name, values in expect.items():
        assert {k: rows[name][k] for k in values} == values, name
        for k in ("ja4l_c", "ja4l_s"):
            assert re.fullmatch(r"\d+_\d+", rows[name][k]), (name, k, rows[name][k])
        assert rows[name]["ja4ssh"] is None
    assert re.fullmatch(r"[0-9a-f]{12}_[0-9a-f]{12}_[0-9a-f]{12}", rows["tls"]["ja4x"])
    assert rows["tls"]["ja4"].startswith("t12d") or rows["tls"]["ja4"].startswith("t13d")
    assert (rows["tls"]["ja4h"], rows["http"]["ja4"], rows["http"]["ja4x"]) == (None, None, None)

    # One column alone; the stream gives the table's values.
    only = paclo.flows(path, bidirectional=True, features=["ja4"])
    assert [c for c in only.column_names if c.startswith("ja4")] == ["ja4"]
    assert sorted(filter(None, only.column("ja4").to_pylist())) == [expect["tls"]["ja4"]]
    streamed = [r for b in paclo.flow_stream(path, bidirectional=True, features="fingerprints") for r in b.to_pylist()]
    assert sorted((r["src_port"], r["dst_port"], *(r[c] for c in COLUMNS)) for r in streamed) == sorted(
        (r["src_port"], r["dst_port"], *(r[c] for c in COLUMNS)) for r in table.to_pylist()
    )


def test_fingerprint_feature_names_are_checked(tmp_path):
    path = tmp_path / "empty.pcap"
    paclo.write_pcap(path, [])
    with pytest.raises(ValueError, match=r"'ja4ssh'.*not 'ja4d'"):
        paclo.flows(path, features="ja4d")
    t = paclo.flows(path, features=["all", "fingerprints"])
    assert t.num_rows == 0 and t.column_names[-len(COLUMNS) :] == COLUMNS
    assert "ja4" not in paclo.flows(path, features="all").column_names
