"""Reading, reducing and writing capture files."""

from __future__ import annotations

from . import _paclo

__all__ = ["PcapWriter", "Reduced", "read", "reduce", "write_pcap"]


def read(path, *, decode=None):
    return _paclo.read(path, decode=decode)


class Reduced:
    """Wrap an accumulator to stop a reduction at once."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def reduce(fn, init, *, path=None, device=None, **options):
    raise NotImplementedError("paclo.reduce")


def write_pcap(path, packets, **options):
    raise NotImplementedError("paclo.write_pcap")


class PcapWriter:
    def __init__(self, path, **options):
        raise NotImplementedError("paclo.PcapWriter")
