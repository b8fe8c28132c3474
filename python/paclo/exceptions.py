"""paclo's exceptions and warnings."""

from __future__ import annotations

__all__ = ["CaptureError", "OversizedRecordWarning", "PacloError", "PcapFormatError", "TruncatedCaptureWarning"]


class PacloError(Exception):
    """Base class of every paclo error."""


class PcapFormatError(PacloError, ValueError):
    """A file that is not a valid pcap/pcapng capture.

    Attributes name where the problem is: ``path``, ``index`` (the record being read,
    0-based) and ``offset`` (the byte offset in the file).
    """

    def __init__(
        self,
        message: str,
        path: str | None = None,
        index: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.index = index
        self.offset = offset


class CaptureError(PacloError, RuntimeError):
    """A live capture failed: unknown device, activation or read error."""


class TruncatedCaptureWarning(UserWarning):
    """The capture file ends inside a record; every complete packet was delivered."""


class OversizedRecordWarning(UserWarning):
    """A record is longer than the snaplen of its file (or pcapng interface); it was read
    whole, as tshark reads it. Given once per file; ``stats()["oversized_records"]``
    counts such records."""
