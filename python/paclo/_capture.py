"""Live capture: managed ``capture``, synchronous ``reduce_device``, devices, fan-out.

Options are validated here (keyword-only, messages name the option and its allowed values);
the native module opens the handle, installs the filter and runs the capture thread.
"""

from __future__ import annotations

import math
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, Literal, TypedDict, overload

from . import _paclo
from ._io import _fspath
from .bpf import normalize_filter

__all__ = ["Capture", "FanOut", "capture", "devices", "fan_out", "libpcap_version"]

Capture = _paclo.Capture
FanOut = _paclo.FanOut

_INT_MAX = 2_147_483_647
_MAX_SNAPLEN = 262_144
# Fewer slots than this in an immediate-mode ring draw a warning (see docs/capture.md).
_MIN_IMMEDIATE_SLOTS = 1024


class _LiveOptions(TypedDict):
    """The device options, validated, as the native module takes them."""

    snaplen: int
    promisc: bool
    timeout_ms: int
    buffer_size: int | None
    immediate: bool | None


@overload
def _check_int(name: str, value: Any, lo: int, hi: int, *, optional: Literal[False] = False) -> int: ...
@overload
def _check_int(name: str, value: Any, lo: int, hi: int, *, optional: bool) -> int | None: ...
def _check_int(name: str, value: Any, lo: int, hi: int, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        allowed = f"None or an integer between {lo} and {hi}" if optional else f"an integer between {lo} and {hi}"
        raise TypeError(f"{name} must be {allowed}, not {value!r}")
    if not lo <= value <= hi:
        allowed = f"None or an integer between {lo} and {hi}" if optional else f"an integer between {lo} and {hi}"
        raise ValueError(f"{name} must be {allowed}, not {value!r}")
    return value


@overload
def _check_bool(name: str, value: Any, *, optional: Literal[False] = False) -> bool: ...
@overload
def _check_bool(name: str, value: Any, *, optional: bool) -> bool | None: ...
def _check_bool(name: str, value: Any, *, optional: bool = False) -> bool | None:
    if value is None and optional:
        return None
    if not isinstance(value, bool):
        allowed = "None, True or False" if optional else "True or False"
        raise TypeError(f"{name} must be {allowed}, not {value!r}")
    return value


def _check_seconds(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be None or a positive number of seconds, not {value!r}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be None or a positive number of seconds, not {value!r}")
    return float(value)


def _check_callable(name: str, value: object) -> Callable[..., Any] | None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be None or a callable, not {value!r}")
    return value


def _check_choice(name: str, value: Any, choices: tuple[Any, ...]) -> Any:
    if value not in choices or isinstance(value, bool):
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}, not {value!r}")
    return value


def _check_filter(value: Any) -> str | None:
    # The same forms as paclo.read: a BPF string (blank = none), a DSL form, or None.
    return normalize_filter(value)


def _check_device(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"device must be a non-empty interface name (see paclo.devices()), not {value!r}")
    return value


def _user_stacklevel() -> int:
    """The ``stacklevel`` (seen from the caller of this function) of the first frame outside
    the paclo package: warnings then name the user's line, whichever entry point led here."""
    package = os.path.dirname(os.path.abspath(__file__)) + os.sep
    level, frame = 1, sys._getframe(1)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _live_options(
    device: str,
    *,
    snaplen: Any,
    promisc: Any,
    timeout_ms: Any,
    buffer_size: Any,
    immediate: Any,
) -> _LiveOptions:
    snaplen = _check_int("snaplen", snaplen, 1, _MAX_SNAPLEN)
    promisc = _check_bool("promisc", promisc)
    timeout_ms = _check_int("timeout_ms", timeout_ms, 1, _INT_MAX)
    buffer_size = _check_int("buffer_size", buffer_size, 1, _INT_MAX, optional=True)
    immediate = _check_bool("immediate", immediate, optional=True)
    if immediate:
        # Immediate mode on Linux uses TPACKET_V2: one snaplen-sized slot per packet.
        planned, slots = _paclo.immediate_plan(device, snaplen, buffer_size)
        if buffer_size is None:
            buffer_size = planned
        if slots < _MIN_IMMEDIATE_SLOTS:
            warnings.warn(
                f"immediate=True on {device!r} with snaplen={snaplen} and buffer_size={buffer_size} "
                f"leaves about {slots} packet slots in the kernel ring (immediate mode uses one "
                f"snaplen-sized slot per packet), so bursts will be dropped; use a smaller snaplen "
                f"(e.g. 2048), a larger buffer_size, or immediate=None",
                RuntimeWarning,
                stacklevel=_user_stacklevel(),
            )
    return {
        "snaplen": snaplen,
        "promisc": promisc,
        "timeout_ms": timeout_ms,
        "buffer_size": buffer_size,
        "immediate": immediate,
    }


def capture(
    device: str | None = None,
    *,
    path: str | os.PathLike[str] | None = None,
    filter: str | None = None,
    snaplen: int = 65535,
    promisc: bool = True,
    timeout_ms: int = 10,
    buffer_size: int | None = None,
    immediate: bool | None = None,
    decode: Literal["full", "flow"] | None = None,
    queue_cap: int = 1024,
    queue_mode: Literal["blocking", "dropping"] = "blocking",
    limit: int | None = None,
    duration: float | None = None,
    idle_timeout: float | None = None,
    stop_when: Callable[[Any], Any] | None = None,
    on_ready: Callable[[], Any] | None = None,
    on_stats: Callable[[dict[str, Any]], Any] | None = None,
    on_queue_stats: Callable[[dict[str, Any]], Any] | None = None,
    on_error: Callable[[BaseException], Any] | None = None,
    error_mode: Literal["raise", "pass"] = "raise",
) -> Capture:
    """Start a managed capture on a live ``device`` (or over a capture file at ``path``).

    Opening the device, installing ``filter`` and calling ``on_ready`` happen before this
    returns, so their errors raise here. A capture thread (which never holds the GIL) then
    fills a bounded queue; iterate the returned :class:`Capture` to take packets.
    ``duration`` and ``idle_timeout`` are seconds (floats allowed); ``limit`` counts
    captured packets. See docs/capture.md for every option, the statistics and the lifecycle.
    """
    if device is not None and path is not None:
        raise ValueError("capture takes either device= or path=, not both")
    if device is None and path is None:
        raise ValueError("capture requires either device= or path=")
    if path is not None:
        path = _fspath(path)
        live: _LiveOptions = {"snaplen": 65535, "promisc": True, "timeout_ms": 10, "buffer_size": None, "immediate": None}
        _check_int("snaplen", snaplen, 1, _MAX_SNAPLEN)
        _check_int("timeout_ms", timeout_ms, 1, _INT_MAX)
    else:
        device = _check_device(device)
        live = _live_options(
            device,
            snaplen=snaplen,
            promisc=promisc,
            timeout_ms=timeout_ms,
            buffer_size=buffer_size,
            immediate=immediate,
        )
    return _paclo.open_capture(
        device=device,
        path=path,
        filter=_check_filter(filter),
        decode=_check_choice("decode", decode, (None, "full", "flow")),
        queue_cap=_check_int("queue_cap", queue_cap, 1, _INT_MAX),
        queue_mode=_check_choice("queue_mode", queue_mode, ("blocking", "dropping")),
        limit=_check_int("limit", limit, 1, 2**63 - 1, optional=True),
        duration=_check_seconds("duration", duration),
        idle_timeout=_check_seconds("idle_timeout", idle_timeout),
        stop_when=_check_callable("stop_when", stop_when),
        on_ready=_check_callable("on_ready", on_ready),
        on_stats=_check_callable("on_stats", on_stats),
        on_queue_stats=_check_callable("on_queue_stats", on_queue_stats),
        on_error=_check_callable("on_error", on_error),
        error_mode=_check_choice("error_mode", error_mode, ("raise", "pass")),
        **live,
    )


def reduce_device(
    fn: Callable[[Any, Any], Any],
    init: Any,
    *,
    device: str,
    decode: Literal["full", "flow"] | None = None,
    filter: str | None = None,
    limit: int | None = None,
    report: bool = False,
    duration: float | None = None,
    idle_timeout: float | None = None,
    snaplen: int = 65535,
    promisc: bool = True,
    timeout_ms: int = 10,
    buffer_size: int | None = None,
    immediate: bool | None = None,
    stop_when: Callable[[Any], Any] | None = None,
    on_ready: Callable[[], Any] | None = None,
    on_stats: Callable[[dict[str, Any]], Any] | None = None,
    on_error: Callable[[BaseException], Any] | None = None,
    error_mode: Literal["raise", "pass"] = "raise",
) -> Any:
    """Reduce the packets of a live device synchronously: no queue, no thread.

    ``fn(acc, packet)`` returns the next accumulator; returning ``paclo.Reduced(x)`` stops at
    once with ``x``. With ``report=True`` the result is ``(acc, stats)``. Stops on ``limit``,
    ``duration``/``idle_timeout`` (seconds), ``stop_when`` (the matching packet is included),
    or Ctrl-C (``KeyboardInterrupt``). Without any of them it runs until interrupted.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking (acc, packet), not {fn!r}")
    device = _check_device(device)
    live = _live_options(
        device,
        snaplen=snaplen,
        promisc=promisc,
        timeout_ms=timeout_ms,
        buffer_size=buffer_size,
        immediate=immediate,
    )
    return _paclo.reduce_device(
        fn,
        init,
        device=device,
        decode=_check_choice("decode", decode, (None, "full", "flow")),
        filter=_check_filter(filter),
        limit=_check_int("limit", limit, 1, 2**63 - 1, optional=True),
        duration=_check_seconds("duration", duration),
        idle_timeout=_check_seconds("idle_timeout", idle_timeout),
        stop_when=_check_callable("stop_when", stop_when),
        on_ready=_check_callable("on_ready", on_ready),
        on_stats=_check_callable("on_stats", on_stats),
        on_error=_check_callable("on_error", on_error),
        error_mode=_check_choice("error_mode", error_mode, ("raise", "pass")),
        report=_check_bool("report", report),
        **live,
    )


def devices() -> list[dict[str, Any]]:
    """The capture devices: ``name``, ``description``, ``addresses`` and ``flags`` of each."""
    return _paclo.devices()


def libpcap_version() -> str:
    """The version string of the libpcap paclo uses."""
    return _paclo.libpcap_version()


_BRANCH_KEYS = ("mode", "cap")


def fan_out(capture: Capture, branches: dict[str, dict[str, Any]]) -> FanOut:
    """Distribute one fresh :class:`Capture` to several bounded branches.

    ``branches`` maps a name to ``{"mode": "blocking" | "dropping", "cap": 1024}`` (``mode``
    required, ``cap`` optional). Take each branch once with ``fo["name"]`` (or
    ``fo.branch("name")``) and iterate it from one consumer. A blocking branch backpressures
    every branch; a dropping branch discards what its consumer cannot keep up with. Closing
    the fan-out (or the last branch) stops the capture. See docs/capture.md.
    """
    if not isinstance(capture, Capture):
        raise TypeError(f"fan_out takes a paclo.Capture, not {capture!r}")
    if not isinstance(branches, dict):
        raise TypeError(f"branches must be a dict of name -> {{'mode': ..., 'cap': ...}}, not {branches!r}")
    if len(branches) < 2:
        raise ValueError("fan_out requires at least two branches")
    specs: list[tuple[str, str, int]] = []
    for name, cfg in branches.items():
        if not isinstance(name, str) or not name:
            raise TypeError(f"fan_out branch names must be non-empty strings, not {name!r}")
        if not isinstance(cfg, dict):
            raise TypeError(f"fan_out branch {name!r} config must be a dict with 'mode' and optional 'cap', not {cfg!r}")
        unknown = set(cfg) - set(_BRANCH_KEYS)
        if unknown:
            raise ValueError(
                f"fan_out branch {name!r} has unknown keys {sorted(unknown)}; allowed keys: 'mode', 'cap'"
            )
        if "mode" not in cfg:
            raise ValueError(f"fan_out branch {name!r} needs 'mode': 'blocking' or 'dropping'")
        mode = _check_choice(f"branch {name!r} mode", cfg["mode"], ("blocking", "dropping"))
        cap = _check_int(f"branch {name!r} cap", cfg.get("cap", 1024), 1, _INT_MAX)
        specs.append((name, mode, cap))
    return _paclo.start_fan_out(capture, specs)
