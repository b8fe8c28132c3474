"""Builders of capture files for the foundation tests (classic pcap and pcapng bytes),
and a ctypes loop over libpcap's own reader for cross-checks."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import signal
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class Rec:
    ts_ns: int
    data: bytes
    wirelen: int | None = None


def classic(
    records: list[Rec],
    *,
    big_endian: bool = False,
    nanosecond: bool = False,
    snaplen: int = 65535,
    linktype: int = 1,
    modified: bool = False,
) -> bytes:
    """A classic pcap file (``modified``: Kuznetzov's format with 24-byte record headers)."""
    e = ">" if big_endian else "<"
    magic = 0xA1B2CD34 if modified else 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    out = bytearray(struct.pack(e + "IHHiIII", magic, 2, 4, 0, 0, snaplen, linktype))
    for r in records:
        sec, sub = divmod(r.ts_ns, 1_000_000_000)
        frac = sub if nanosecond else sub // 1000
        wl = len(r.data) if r.wirelen is None else r.wirelen
        out += struct.pack(e + "IIII", sec, frac, len(r.data), wl)
        if modified:
            out += struct.pack(e + "IHBx", 2, 0x0800, 0)
        out += r.data
    return bytes(out)


class Ng:
    """A pcapng file builder."""

    def __init__(self, big_endian: bool = False) -> None:
        self.e = ">" if big_endian else "<"
        self.out = bytearray()

    def block(self, kind: int, body: bytes) -> Ng:
        body = body + b"\0" * (-len(body) % 4)
        n = len(body) + 12
        self.out += struct.pack(self.e + "II", kind, n) + body + struct.pack(self.e + "I", n)
        return self

    def shb(self) -> Ng:
        return self.block(0x0A0D0D0A, struct.pack(self.e + "IHHq", 0x1A2B3C4D, 1, 0, -1))

    def idb(self, linktype: int, snaplen: int = 0, tsresol: int | None = None, tsoffset: int | None = None) -> Ng:
        body = struct.pack(self.e + "HHI", linktype, 0, snaplen)
        if tsresol is not None:
            body += struct.pack(self.e + "HHB3x", 9, 1, tsresol)
        if tsoffset is not None:
            body += struct.pack(self.e + "HHq", 14, 8, tsoffset)
        body += struct.pack(self.e + "HH", 0, 0)
        return self.block(1, body)

    def epb(self, iface: int, ts_units: int, data: bytes, wirelen: int | None = None) -> Ng:
        wl = len(data) if wirelen is None else wirelen
        hdr = struct.pack(self.e + "IIIII", iface, ts_units >> 32, ts_units & 0xFFFFFFFF, len(data), wl)
        return self.block(6, hdr + data)

    def spb(self, data: bytes, wirelen: int | None = None) -> Ng:
        wl = len(data) if wirelen is None else wirelen
        return self.block(3, struct.pack(self.e + "I", wl) + data)

    def bytes(self) -> bytes:
        return bytes(self.out)


def udp_frame(dport: int = 53, payload: bytes = b"") -> bytes:
    """An Ethernet/IPv4/UDP frame 10.0.0.1:12000 -> 10.0.0.2:dport."""
    ip_len = 20 + 8 + len(payload)
    eth = bytes.fromhex("101112131415202122232425") + b"\x08\x00"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 1, 0x4000, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    udp = struct.pack("!HHHH", 12000, dport, 8 + len(payload), 0)
    return eth + ip + udp + payload


def tcp_frame(dport: int = 443) -> bytes:
    eth = bytes.fromhex("101112131415202122232425") + b"\x08\x00"
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, 1, 0x4000, 64, 6, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    tcp = struct.pack("!HHIIHHHH", 12000, dport, 1, 0, 0x5002, 65535, 0, 0)
    return eth + ip + tcp


class _Timeval(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_usec", ctypes.c_long)]


class _PktHdr(ctypes.Structure):
    _fields_ = [("ts", _Timeval), ("caplen", ctypes.c_uint32), ("len", ctypes.c_uint32)]


def _libpcap() -> ctypes.CDLL:
    name = ctypes.util.find_library("pcap") or "libpcap.so.0.8"
    lib = ctypes.CDLL(name)
    lib.pcap_open_offline_with_tstamp_precision.restype = ctypes.c_void_p
    lib.pcap_open_offline_with_tstamp_precision.argtypes = [ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p]
    lib.pcap_next_ex.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.POINTER(_PktHdr)), ctypes.POINTER(ctypes.c_void_p)]
    lib.pcap_datalink.argtypes = [ctypes.c_void_p]
    lib.pcap_close.argtypes = [ctypes.c_void_p]
    lib.pcap_geterr.argtypes = [ctypes.c_void_p]
    lib.pcap_geterr.restype = ctypes.c_char_p
    return lib


def libpcap_read(path: str) -> tuple[list[tuple[int, int, int, bytes]], int]:
    """Every packet libpcap reads from ``path`` as (ts_ns, caplen, wirelen, data), with the
    file's DLT, at nanosecond precision. Raises OSError if libpcap reports an error."""
    lib = _libpcap()
    err = ctypes.create_string_buffer(256)
    handle = lib.pcap_open_offline_with_tstamp_precision(path.encode(), 1, err)  # 1 = NANO
    if not handle:
        raise OSError(err.value.decode())
    out = []
    try:
        hdr = ctypes.POINTER(_PktHdr)()
        data = ctypes.c_void_p()
        while True:
            rc = lib.pcap_next_ex(handle, ctypes.byref(hdr), ctypes.byref(data))
            if rc == -2:
                break
            if rc != 1:
                raise OSError(lib.pcap_geterr(handle).decode())
            h = hdr.contents
            ts = h.ts.tv_sec * 1_000_000_000 + h.ts.tv_usec
            out.append((ts, h.caplen, h.len, ctypes.string_at(data, h.caplen)))
        return out, lib.pcap_datalink(handle)
    finally:
        lib.pcap_close(handle)


@contextlib.contextmanager
def keyboard_interrupt_after(seconds: float):
    """Raise KeyboardInterrupt from a SIGALRM handler ``seconds`` from now: Ctrl-C without
    another thread (which could not run while native code holds the GIL). The garbage
    collector is paused meanwhile, so the handler cannot run inside a gc callback (as
    Hypothesis installs), where Python would ignore the exception. Enter it inside
    ``pytest.raises(KeyboardInterrupt)``, so that an alarm which fires before the body starts
    (a busy machine) is still caught there."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if gc_was_enabled:
            gc.enable()
