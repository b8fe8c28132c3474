"""paclo.fingerprints(device=...): a live capture on lo gives the rows a capture file of
the same packets gives.

TLS handshakes (Python's ssl) and plain HTTP requests to servers bound to ephemeral ports
on 127.0.0.1, fingerprinted live while tcpdump writes the same packets (the same filter)
to a file; the two tables must agree method by method.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path

import _fingerprint_traffic as T
import pyarrow as pa
import pytest
from _live_util import LO, live

import paclo

DURATION = 8.0


def _rows(t: pa.Table) -> Counter[tuple[str, str, str | None]]:
    d = t.to_pydict()
    out: Counter[tuple[str, str, str | None]] = Counter()
    for m, v, r in zip(d["method"], d["value"], d["raw"], strict=True):
        # JA4L's latency comes from capture times, which two captures stamp separately:
        # compare its TTL (and the other parts) only.
        if m in ("ja4l_c", "ja4l_s"):
            v = v.split("_", 1)[1]
        out[(m, v, r)] += 1
    return out


@live
def test_live_fingerprints_equal_the_file_of_the_same_packets(tmp_path: Path) -> None:
    tls, plain, cert = T.servers(tmp_path)
    bpf = f"tcp port {tls.port} or tcp port {plain.port}"
    pcap = tmp_path / "same.pcap"
    ran: dict[str, object] = {}

    def clients() -> None:
        ran["tls"] = T.tls_clients(tls.port, cert)
        ran["http"] = T.http_clients(plain.port)
        ran["done"] = time.monotonic()

    client = threading.Thread(target=clients, daemon=True)
    try:
        with T.tcpdump(pcap, bpf) as dump:
            t0 = time.monotonic()
            table = paclo.fingerprints(device=LO, filter=bpf, methods="all", duration=DURATION, on_ready=client.start)
            client.join(20)
    finally:
        tls.close()
        plain.close()
    assert "done" in ran, "the clients did not finish"
    assert dump.problem(pcap) is None
    assert isinstance(ran["done"], float) and ran["done"] - t0 < DURATION, "the clients outlasted the capture"
    assert len(ran["tls"]) == 6, ran  # type: ignore[arg-type]
    live_rows = _rows(table)
    file_rows = _rows(paclo.fingerprints(pcap, methods="all"))
    methods = Counter(m for m, _, _ in live_rows.elements())
    assert methods["ja4"] == methods["ja4s"] == len(tls.versions) >= 6, methods
    assert methods["ja4h"] >= 5 and methods["ja4t"] >= 12 and methods["ja4ts"] >= 12, methods
    assert live_rows == file_rows


def test_a_device_and_a_source_together_raise(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="either a source or device="):
        paclo.fingerprints(tmp_path / "x.pcap", device=LO, duration=1)
    with pytest.raises(ValueError, match="needs duration= or limit="):
        paclo.fingerprints(device=LO)
    with pytest.raises(TypeError, match="live options: duration"):
        paclo.fingerprints(tmp_path / "x.pcap", duration=1)
