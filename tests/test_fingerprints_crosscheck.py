"""paclo.fingerprints against the independent `ja4plus` package on real handshakes.

Traffic on lo between local clients (Python's ssl with TLS 1.2/1.3, ALPN and SNI
variants; curl; openssl s_client; raw HTTP requests with varied headers; an SSH session to
a throwaway sshd) and servers bound to ephemeral ports, captured by tcpdump with a filter
naming those ports. Both implementations read the same capture; every method both give
must agree value for value (as multisets), and the raw forms too.

One known difference is asserted as such: for an ALPN value whose first or last byte is
not a letter or digit, the JA4 specification writes the first and last hex digits of the
value; `ja4plus` writes the two bytes themselves.
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import _fingerprint_traffic as T
import ja4plus  # noqa: F401  (the independent implementation: the test extra installs it)
import pytest
from _live_util import live

# Methods ja4plus gives that paclo compares (ja4_o: the original-order raw form).
COMPARED = ["ja4", "ja4s", "ja4h", "ja4t", "ja4ts", "ja4l_c", "ja4l_s", "ja4x", "ja4ssh"]


def _run_traffic(d: Path) -> tuple[Path, dict[str, list[str]], str | None]:
    """One capture of every client against fresh servers: the file, what ran, and why the
    capture cannot be trusted (None when it can)."""
    tls, plain, cert = T.servers(d)
    pcap = d / "handshakes.pcap"
    ran: dict[str, list[str]] = {}
    try:
        with T.sshd(d) as ssh_port:
            ports = [tls.port, plain.port, ssh_port]
            with T.tcpdump(pcap, " or ".join(f"tcp port {p}" for p in ports)) as dump:
                ran["tls"] = T.tls_clients(tls.port, cert)
                ran["tools"] = T.tool_clients(tls.port)
                ran["http"] = [str(T.http_clients(plain.port))]
                T.ssh_session(ssh_port)
    finally:
        tls.close()
        plain.close()
    ran["versions"] = tls.versions
    return pcap, ran, dump.problem(pcap)


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]]]:
    """The capture, and what ran: client variants, and `versions` (every TLS handshake the
    server completed). tcpdump is another process on a shared machine: when it did not
    capture the traffic whole (it ended early, or its file does not hold what it counted),
    the traffic runs once more under a new tcpdump, and the test fails if that capture is
    not whole either."""
    problems = []
    for _ in range(2):
        pcap, ran, problem = _run_traffic(tmp_path_factory.mktemp("fingerprints"))
        if problem is None:
            if problems:
                warnings.warn(f"the first capture was not whole, the second was: {problems[0]}", stacklevel=1)
            return pcap, ran
        problems.append(problem)
    pytest.fail(f"no whole capture of the traffic: {problems}")


@live
def test_the_traffic_ran(capture: tuple[Path, dict[str, list[str]]]) -> None:
    _, ran = capture
    assert len(ran["tls"]) == 6, ran
    assert len(ran["tools"]) == 5, ran  # 3 curl, 2 openssl s_client
    assert ran["http"] == [str(len(T.HTTP_REQUESTS) + 1)] or ran["http"] == [str(len(T.HTTP_REQUESTS))]


@live
@pytest.mark.parametrize("method", COMPARED)
def test_values_agree_with_ja4plus(capture: tuple[Path, dict[str, list[str]]], method: str) -> None:
    pcap, _ = capture
    mine = T.paclo_values(pcap).get(method, [])
    theirs = T.ja4plus_values(pcap).get(method, [])
    assert mine, f"paclo gave no {method}"
    if method == "ja4":
        # The one documented difference: the ALPN code of a non-alphanumeric value.
        odd_m = [v for v, _ in mine if v[8:10] == "71"]
        odd_t = [v for v, _ in theirs if v[8:10] == "x!"]
        assert len(odd_m) == len(odd_t) == 1
        assert odd_m[0][:8] + "x!" + odd_m[0][10:] == odd_t[0]
        mine = [(v, r) for v, r in mine if v not in odd_m]
        theirs = [(v, r) for v, r in theirs if v not in odd_t]
    assert Counter(v for v, _ in mine) == Counter(v for v, _ in theirs)
    if method in ("ja4", "ja4s", "ja4h", "ja4x"):
        assert Counter(r for _, r in mine) == Counter(r for _, r in theirs)


@live
def test_original_order_raw_agrees(capture: tuple[Path, dict[str, list[str]]]) -> None:
    pcap, _ = capture
    mine = Counter(r for v, r in T.paclo_values(pcap)["ja4_o"] if v[8:10] != "71")
    theirs = Counter(r for _, r in T.ja4plus_values(pcap)["ja4_o"] if r and r[8:10] != "x!")
    assert mine and mine == theirs


@live
def test_every_handshake_is_fingerprinted(capture: tuple[Path, dict[str, list[str]]]) -> None:
    pcap, ran = capture
    got = T.paclo_values(pcap)
    versions = ran["versions"]
    assert len(versions) >= len(ran["tls"]) + len(ran["tools"])
    assert len(got["ja4"]) == len(versions)
    assert len(got["ja4s"]) == len(versions)
    # TLS 1.2 handshakes show their (one) certificate; TLS 1.3 ones encrypt it.
    assert len(got["ja4x"]) == versions.count("TLSv1.2") > 0


@live
def test_flow_columns_equal_fingerprints(capture: tuple[Path, dict[str, list[str]]]) -> None:
    """Each flow's fingerprint columns hold the first value `paclo.fingerprints` gives its
    connection, for every method, and no flow has a value the table of fingerprints lacks."""
    pcap, ran = capture
    want = T.first_values_by_connection(pcap)
    got = T.flow_columns_by_connection(pcap)
    assert got == want
    seen = {m for cells in got.values() for m in cells}
    assert seen == set(T.FLOW_COLUMNS), seen
    assert len([c for c in got.values() if "ja4" in c]) == len(ran["versions"])


def test_quic_rfc_initials_agree_with_ja4plus(tmp_path: Path) -> None:
    """The protected client and server Initial packets of RFC 9001 Appendix A, in UDP."""
    from _decoder_util import eth, ipv4, udp, write_pcap

    data = Path(__file__).resolve().parents[1] / "src" / "fingerprint" / "testdata"
    client = bytes.fromhex(data.joinpath("rfc9001_a2_client_initial.hex").read_text().replace("\n", ""))
    server = bytes.fromhex(data.joinpath("rfc9001_a3_server_initial.hex").read_text().replace("\n", ""))
    a, b = b"\n\x00\x00\x01", b"\n\x00\x00\x02"
    p = tmp_path / "quic.pcap"
    write_pcap(p, [eth(0x0800, ipv4(17, udp(50000, 443, client), src=a, dst=b)),
                   eth(0x0800, ipv4(17, udp(443, 50000, server), src=b, dst=a))])
    mine, theirs = T.paclo_values(p), T.ja4plus_values(p)
    assert mine["ja4"] == theirs["ja4"] == [
        ("q13d0211an_62ed6f6ca7ad_4d634acda6c0",
         "q13d0211an_1301,1302_0005,000a,000d,001c,002b,002d,0033,0039,ff01_0403,0503,0603,0203,0804,0805,0806")]
    assert mine["ja4s"] == theirs["ja4s"] == [("q130200_1301_234ea6891581", "q130200_1301_0033,002b")]
    assert [r for _, r in mine["ja4_o"]] == [r for _, r in theirs["ja4_o"]]
