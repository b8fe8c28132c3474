"""The kernel ring read back through packet_diag, and the runner's sink socket."""

from __future__ import annotations

import socket
import struct

import pytest
from _live_util import LO, Receiver, live, wait_until

import paclo
from paclo.perf import ring, sink


def _nlmsg(kind: int, body: bytes) -> bytes:
    msg = struct.pack("=IHHII", 16 + len(body), kind, 2, 1, 0) + body
    return msg + b"\0" * (-len(msg) % 4)


def _attr(kind: int, payload: bytes) -> bytes:
    return struct.pack("=HH", 4 + len(payload), kind) + payload


def _packet_socket(inode: int, version: int | None, rx: tuple[int, ...] | None, bpf: bool = False) -> bytes:
    body = struct.pack("=BBHIII", ring.AF_PACKET, 3, 0x300, inode, 7, 8)
    if version is not None:
        body += _attr(ring.PACKET_DIAG_INFO, struct.pack("=IIIIII", 1, version, 0, 0, 0, 1))
    if rx is not None:
        body += _attr(ring.PACKET_DIAG_RX_RING, struct.pack("=IIIIIII", *rx))
    if bpf:
        body += _attr(ring.PACKET_DIAG_FILTER, struct.pack("=HBBI", 0x6, 0, 0, 0xFFFF))  # one "ret" insn
    return _nlmsg(20, body)


def test_parse_dump_reads_version_and_ring():
    data = (
        _packet_socket(11, 2, (262144, 64, 262144, 64, 10, 0, 0), bpf=True)
        + _packet_socket(12, 1, (4096, 7885, 2128, 7885, 0, 0, 0))
        + _packet_socket(13, 2, None)
        + _nlmsg(ring.NLMSG_DONE, b"\0\0\0\0")
    )
    entries, done = ring.parse_dump(data)
    assert done
    assert [e["inode"] for e in entries] == [11, 12, 13]
    assert entries[0]["version"] == "TPACKET_V3" and entries[0]["ifindex"] == 1
    assert [e["filter"] for e in entries] == [True, False, False]
    assert entries[0]["rx_ring"] == {"block_size": 262144, "block_count": 64, "frame_size": 262144,
                                     "frame_count": 64, "ring_bytes": 16 * 1024 * 1024, "retire_timeout_ms": 10}
    assert entries[1]["version"] == "TPACKET_V2" and entries[1]["rx_ring"]["frame_size"] == 2128
    assert entries[2]["rx_ring"] is None


def test_parse_dump_reports_errors_and_partial_buffers():
    entries, done = ring.parse_dump(_packet_socket(5, 2, None))
    assert entries[0]["inode"] == 5 and not done
    with pytest.raises(OSError, match="packet_diag dump failed"):
        ring.parse_dump(_nlmsg(ring.NLMSG_ERROR, struct.pack("=i", -1) + b"\0" * 16))
    with pytest.raises(ValueError, match="malformed netlink message"):
        ring.parse_dump(struct.pack("=IHHII", 400, 20, 0, 0, 0))


def test_a_process_without_packet_sockets_has_no_ring():
    assert ring.packet_rings() == []
    assert ring.ring_of() is None


@live
@pytest.mark.parametrize(("immediate", "version"), [(None, "TPACKET_V3"), (True, "TPACKET_V2")])
def test_the_ring_of_a_live_capture(immediate, version):
    seen: list[dict[str, object] | None] = []
    with Receiver() as rx, paclo.capture(LO, filter=rx.filter, snaplen=2048, buffer_size=4 << 20,
                                         immediate=immediate, on_ready=lambda: seen.append(ring.ring_of()),
                                         idle_timeout=0.05) as cap:
        list(cap)
    got = seen[0]
    assert got is not None and got["version"] == version
    assert got["ring_bytes"] >= 4 << 20
    if version == "TPACKET_V2":
        # one fixed slot per packet: snaplen 2048 plus the TPACKET_V2 header, aligned
        assert 2048 < got["frame_size"] < 2300 and got["frame_count"] >= (4 << 20) // 4096
    assert ring.packet_rings() == []  # closed with the capture


def test_sink_holds_the_port_and_names_a_taken_one():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        with pytest.raises(sink.SinkError, match=f"UDP port {port} is already bound"):
            sink.Sink(port)
    with sink.Sink(port) as s:
        info = s.describe()
        assert info["mode"] == "hold" and info["port"] == port and info["address"] == "127.0.0.1"
        assert isinstance(info["rcvbuf_bytes"], int) and info["rcvbuf_bytes"] > 0
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
            tx.connect(("127.0.0.1", port))
            for _ in range(3):
                tx.send(b"x")  # no ECONNREFUSED: the port is bound
    with sink.Sink(port, mode="none") as s:
        assert s.describe()["address"] is None
    with pytest.raises(ValueError, match="sink must be one of hold, drain, none"):
        sink.Sink(port, mode="read")


def test_drain_sink_reads_everything():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with sink.Sink(port, mode="drain") as s, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        for _ in range(50):
            tx.sendto(b"y", ("127.0.0.1", port))
        assert wait_until(lambda: s.received == 50)


def test_external_sink_binds_every_address():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with sink.Sink(port, external=True) as s:
        assert s.describe()["address"] in ("::", "0.0.0.0")
        with pytest.raises(sink.SinkError):
            sink.Sink(port)
