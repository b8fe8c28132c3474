"""Validation of the options every entry point shares, and the description of a live source.

Messages name the option and its allowed values. Nothing here imports another paclo module
but the native one and the filter DSL, so every entry point (``_io``, ``_capture``,
``_flows``) can use it without import cycles.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, Literal, TypedDict, overload

from . import _paclo
from .bpf import normalize_filter

__all__ = [
    "INT_MAX",
    "MAX_LIMIT",
    "LiveOptions",
    "LiveSource",
    "check_bool",
    "check_callable",
    "check_choice",
    "check_decode",
    "check_device",
    "check_int",
    "check_limit",
    "check_one_source",
    "check_seconds",
    "check_step",
    "fspath",
    "live_options",
    "live_source",
    "normalize_filter",
    "user_stacklevel",
]

INT_MAX = 2_147_483_647
MAX_LIMIT = 2**63 - 1
MAX_SNAPLEN = 262_144
DECODE_MODES = (None, "full", "flow")
# Fewer slots than this in an immediate-mode ring draw a warning (see docs/capture.md).
MIN_IMMEDIATE_SLOTS = 1024


def fspath(path: object, what: str = "path") -> str:
    """``path`` as a ``str`` (str, os.PathLike or bytes), or a TypeError naming ``what``."""
    try:
        p = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        raise TypeError(f"{what} must be a str or os.PathLike, not {type(path).__name__}") from None
    return os.fsdecode(p)


def check_decode(decode: Any) -> Literal["full", "flow"] | None:
    if decode not in DECODE_MODES or isinstance(decode, bool):
        raise ValueError(f"decode must be None, 'full' or 'flow', not {decode!r}")
    return decode  # type: ignore[no-any-return]


def check_one_source(what: str, **sources: object) -> None:
    """Exactly one of two source options (``path=`` a file, ``device=`` a live device) is
    given; the message names them in the caller's order."""
    names = " or ".join(f"{name}=" for name in sources)
    given = sum(value is not None for value in sources.values())
    if given == 0:
        raise ValueError(f"{what} requires either {names}")
    if given > 1:
        raise ValueError(f"{what} takes either {names}, not both")


def check_step(fn: object) -> None:
    """A reduction's step function."""
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking (acc, packet), not {fn!r}")


def check_limit(limit: object) -> None:
    """A file's ``limit``: a non-negative integer or None."""
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be a non-negative integer or None, not {type(limit).__name__}")
    if not 0 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be a non-negative integer up to {MAX_LIMIT} or None, not {limit}")


class LiveOptions(TypedDict):
    """The device options, validated, as the native module takes them."""

    snaplen: int
    promisc: bool
    timeout_ms: int
    buffer_size: int | None
    immediate: bool | None


class LiveSource(LiveOptions):
    """A live device with its stop conditions, as the native consumers take it."""

    device: str
    limit: int | None
    duration: float | None
    idle_timeout: float | None
    on_ready: Callable[..., Any] | None


@overload
def check_int(name: str, value: Any, lo: int, hi: int, *, optional: Literal[False] = False) -> int: ...
@overload
def check_int(name: str, value: Any, lo: int, hi: int, *, optional: bool) -> int | None: ...
def check_int(name: str, value: Any, lo: int, hi: int, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    allowed = f"None or an integer between {lo} and {hi}" if optional else f"an integer between {lo} and {hi}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be {allowed}, not {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be {allowed}, not {value!r}")
    return value


@overload
def check_bool(name: str, value: Any, *, optional: Literal[False] = False) -> bool: ...
@overload
def check_bool(name: str, value: Any, *, optional: bool) -> bool | None: ...
def check_bool(name: str, value: Any, *, optional: bool = False) -> bool | None:
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        allowed = "None, True or False" if optional else "True or False"
        raise TypeError(f"{name} must be {allowed}, not {value!r}")
    return value


def check_seconds(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be None or a positive number of seconds, not {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be None or a positive number of seconds, not {value!r}")
    return float(value)


def check_callable(name: str, value: object) -> Callable[..., Any] | None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be None or a callable, not {value!r}")
    return value


def check_choice(name: str, value: Any, choices: tuple[Any, ...]) -> Any:
    if value not in choices or isinstance(value, bool):
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}, not {value!r}")
    return value


def check_device(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"device must be a non-empty interface name (see paclo.devices()), not {value!r}")
    return value


def user_stacklevel() -> int:
    """The ``stacklevel`` (seen from the caller of this function) of the first frame outside
    the paclo package: warnings then name the user's line, whichever entry point led here."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def live_options(
    device: str,
    *,
    snaplen: Any,
    promisc: Any,
    timeout_ms: Any,
    buffer_size: Any,
    immediate: Any,
) -> LiveOptions:
    """The validated options of a live handle (immediate mode sizes its ring, and warns
    when the ring is too small)."""
    snaplen = check_int("snaplen", snaplen, 1, MAX_SNAPLEN)
    promisc = check_bool("promisc", promisc)
    timeout_ms = check_int("timeout_ms", timeout_ms, 1, INT_MAX)
    buffer_size = check_int("buffer_size", buffer_size, 1, INT_MAX, optional=True)
    immediate = check_bool("immediate", immediate, optional=True)
    # Immediate mode on Linux uses TPACKET_V2: one snaplen-sized slot per packet (no plan
    # elsewhere: BPF has no fixed slots).
    plan = _paclo.immediate_plan(device, snaplen, buffer_size) if immediate else None
    if plan is not None:
        planned, slots = plan
        if buffer_size is None:
            buffer_size = planned
        if slots < MIN_IMMEDIATE_SLOTS:
            warnings.warn(
                f"immediate=True on {device!r} with snaplen={snaplen} and buffer_size={buffer_size} "
                f"leaves about {slots} packet slots in the kernel ring (immediate mode uses one "
                f"snaplen-sized slot per packet), so bursts will be dropped; use a smaller snaplen "
                f"(e.g. 2048), a larger buffer_size, or immediate=None",
                RuntimeWarning,
                stacklevel=user_stacklevel(),
            )
    return {
        "snaplen": snaplen,
        "promisc": promisc,
        "timeout_ms": timeout_ms,
        "buffer_size": buffer_size,
        "immediate": immediate,
    }


def live_source(
    device: Any,
    *,
    limit: Any = None,
    duration: Any = None,
    idle_timeout: Any = None,
    on_ready: Any = None,
    snaplen: Any = 65535,
    promisc: Any = True,
    timeout_ms: Any = 10,
    buffer_size: Any = None,
    immediate: Any = None,
) -> LiveSource:
    """The description of a live device the native consumers take: the device, its live
    options, the stop conditions and ``on_ready`` (called once the device is open and
    filtered, before the first packet is read)."""
    device = check_device(device)
    live = live_options(
        device, snaplen=snaplen, promisc=promisc, timeout_ms=timeout_ms, buffer_size=buffer_size, immediate=immediate
    )
    return {
        "device": device,
        "snaplen": live["snaplen"],
        "promisc": live["promisc"],
        "timeout_ms": live["timeout_ms"],
        "buffer_size": live["buffer_size"],
        "immediate": live["immediate"],
        "limit": check_int("limit", limit, 1, MAX_LIMIT, optional=True),
        "duration": check_seconds("duration", duration),
        "idle_timeout": check_seconds("idle_timeout", idle_timeout),
        "on_ready": check_callable("on_ready", on_ready),
    }
