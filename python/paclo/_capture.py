"""Live capture."""

from __future__ import annotations

__all__ = ["Capture", "FanOut", "capture", "devices", "fan_out", "libpcap_version"]


class Capture:
    pass


class FanOut:
    pass


def capture(device=None, **options):
    raise NotImplementedError("paclo.capture")


def devices():
    raise NotImplementedError("paclo.devices")


def libpcap_version():
    raise NotImplementedError("paclo.libpcap_version")


def fan_out(capture, branches):
    raise NotImplementedError("paclo.fan_out")
