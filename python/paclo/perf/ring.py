"""The kernel ring libpcap set up, read back from the kernel (Linux `packet_diag`).

libpcap chooses the ring itself (TPACKET_V3 blocks, or TPACKET_V2 fixed slots in immediate
mode), so a live result records what the kernel reports for the capture's packet socket:
`version`, `block_size`, `block_count`, `frame_size`, `frame_count`, `ring_bytes` and
`retire_timeout_ms`. The packet sockets of a process are found through `/proc/<pid>/fd`
and matched by inode against a `NETLINK_SOCK_DIAG` dump of every packet socket.

Elsewhere, or without `packet_diag` in the kernel, `packet_rings` returns an empty list and
results say `ring: null`.
"""

from __future__ import annotations

import os
import socket
import struct
from typing import Any

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
NLMSG_ERROR = 2
NLMSG_DONE = 3
AF_PACKET = 17
PACKET_SHOW_INFO = 0x1
PACKET_SHOW_RING_CFG = 0x4
PACKET_SHOW_FILTER = 0x20
PACKET_DIAG_INFO = 0
PACKET_DIAG_RX_RING = 2
PACKET_DIAG_FILTER = 7
VERSIONS = {0: "TPACKET_V1", 1: "TPACKET_V2", 2: "TPACKET_V3"}

_NLMSG = struct.Struct("=IHHII")
_REQ = struct.Struct("=BBHIIII")
_MSG = struct.Struct("=BBHIII")
_RTA = struct.Struct("=HH")
_INFO = struct.Struct("=IIIIII")
_RING = struct.Struct("=IIIIIII")


def socket_inodes(pid: int | None = None) -> set[int]:
    """Inodes of the sockets process `pid` (default: this one) has open."""
    base = f"/proc/{pid if pid is not None else 'self'}/fd"
    inodes: set[int] = set()
    try:
        names = os.listdir(base)
    except OSError:
        return inodes
    for name in names:
        try:
            target = os.readlink(os.path.join(base, name))
        except OSError:
            continue
        if target.startswith("socket:[") and target.endswith("]"):
            inodes.add(int(target[8:-1]))
    return inodes


def parse_dump(data: bytes) -> tuple[list[dict[str, Any]], bool]:
    """Packet sockets in one netlink reply buffer, and whether the dump ended in it.

    Each entry: `inode`, `version` (e.g. `TPACKET_V3`, or None without the info attribute),
    `ifindex` (0: bound to every device), `rx_ring` (None when the socket has no receive ring)
    and `filter` (whether a BPF program is attached).
    """
    out: list[dict[str, Any]] = []
    off = 0
    while off + _NLMSG.size <= len(data):
        length, kind, _flags, _seq, _pid = _NLMSG.unpack_from(data, off)
        if length < _NLMSG.size or off + length > len(data):
            raise ValueError(f"malformed netlink message at offset {off}")
        if kind == NLMSG_DONE:
            return out, True
        if kind == NLMSG_ERROR:
            (errno,) = struct.unpack_from("=i", data, off + _NLMSG.size)
            raise OSError(-errno, f"packet_diag dump failed: {os.strerror(-errno)}")
        body = off + _NLMSG.size
        family, _type, _num, inode, _c0, _c1 = _MSG.unpack_from(data, body)
        entry: dict[str, Any] = {"inode": inode, "version": None, "ifindex": None, "rx_ring": None, "filter": False}
        attr = body + _MSG.size
        end = off + length
        while attr + _RTA.size <= end:
            alen, atype = _RTA.unpack_from(data, attr)
            if alen < _RTA.size:
                break
            payload = attr + _RTA.size
            if atype == PACKET_DIAG_INFO and alen >= _RTA.size + _INFO.size:
                index, version, *_ = _INFO.unpack_from(data, payload)
                entry["ifindex"] = index
                entry["version"] = VERSIONS.get(version, f"TPACKET_V{version + 1}")
            elif atype == PACKET_DIAG_RX_RING and alen >= _RTA.size + _RING.size:
                block_size, block_nr, frame_size, frame_nr, retire_tmo, _priv, _feat = _RING.unpack_from(data, payload)
                entry["rx_ring"] = {
                    "block_size": block_size,
                    "block_count": block_nr,
                    "frame_size": frame_size,
                    "frame_count": frame_nr,
                    "ring_bytes": block_size * block_nr,
                    "retire_timeout_ms": retire_tmo,
                }
            elif atype == PACKET_DIAG_FILTER and alen > _RTA.size:
                entry["filter"] = True
            attr += (alen + 3) & ~3
        if family == AF_PACKET:
            out.append(entry)
        off += (length + 3) & ~3
    return out, False


def packet_sockets() -> list[dict[str, Any]]:
    """Every packet socket of the network namespace (see `parse_dump` for the entries)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(2.0)
        req = _REQ.pack(AF_PACKET, 0, 0, 0, PACKET_SHOW_INFO | PACKET_SHOW_RING_CFG | PACKET_SHOW_FILTER,
                       0xFFFFFFFF, 0xFFFFFFFF)
        nl.send(_NLMSG.pack(_NLMSG.size + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + req)
        sockets: list[dict[str, Any]] = []
        while True:
            entries, done = parse_dump(nl.recv(1 << 16))
            sockets.extend(entries)
            if done:
                return sockets


def packet_rings(pid: int | None = None) -> list[dict[str, Any]]:
    """The receive rings of process `pid`'s packet sockets (default: this process).

    Each entry: `version` and the `rx_ring` fields flattened (`block_size`, `block_count`,
    `frame_size`, `frame_count`, `ring_bytes`, `retire_timeout_ms`). Empty when the process
    has no packet socket with a ring, or the kernel cannot say.
    """
    inodes = socket_inodes(pid)
    if not inodes:
        return []
    try:
        sockets = packet_sockets()
    except (OSError, ValueError):
        return []
    rings = []
    for s in sockets:
        if s["inode"] in inodes and s["rx_ring"] is not None:
            rings.append({"version": s["version"], **s["rx_ring"]})
    return rings


def ring_of(pid: int | None = None) -> dict[str, Any] | None:
    """The single capture ring of a process, or None when it has none or several."""
    rings = packet_rings(pid)
    return rings[0] if len(rings) == 1 else None
