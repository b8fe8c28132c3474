"""Live capture: managed ``capture``, synchronous ``reduce_device``, devices, fan-out.

Options are validated here (keyword-only, messages name the option and its allowed values);
the native module opens the handle, installs the filter and runs the capture thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal, TypeVar, overload

from . import _paclo
from ._options import (
    INT_MAX,
    MAX_LIMIT,
    MAX_SNAPLEN,
    LiveOptions,
    check_bool,
    check_callable,
    check_choice,
    check_decode,
    check_device,
    check_int,
    check_one_source,
    check_seconds,
    check_step,
    fspath,
    live_options,
    live_source,
    normalize_filter,
)
from ._reduce import Reduced

__all__ = ["Capture", "FanOut", "capture", "devices", "fan_out", "libpcap_version", "reduce_device"]

Capture = _paclo.Capture
FanOut = _paclo.FanOut
Packet = _paclo.Packet
_T = TypeVar("_T")


@overload
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
    decode: None = None,
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
) -> Capture[Packet]: ...
@overload
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
    decode: Literal["full", "flow"],
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
) -> Capture[dict[str, Any]]: ...
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
) -> Capture[Packet] | Capture[dict[str, Any]]:
    """Start a managed capture on a live ``device`` (or over a capture file at ``path``).

    Opening the device, installing ``filter`` and calling ``on_ready`` happen before this
    returns, so their errors raise here. A capture thread (which never holds the GIL) then
    fills a bounded queue; iterate the returned :class:`Capture` to take packets.
    ``duration`` and ``idle_timeout`` are seconds (floats allowed); ``limit`` counts
    captured packets. See docs/capture.md for every option, the statistics and the lifecycle.
    """
    check_one_source("capture", device=device, path=path)
    if path is not None:
        path = fspath(path)
        live: LiveOptions = {"snaplen": 65535, "promisc": True, "timeout_ms": 10, "buffer_size": None, "immediate": None}
        check_int("snaplen", snaplen, 1, MAX_SNAPLEN)
        check_int("timeout_ms", timeout_ms, 1, INT_MAX)
    else:
        device = check_device(device)
        live = live_options(
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
        filter=normalize_filter(filter),
        decode=check_decode(decode),
        queue_cap=check_int("queue_cap", queue_cap, 1, INT_MAX),
        queue_mode=check_choice("queue_mode", queue_mode, ("blocking", "dropping")),
        limit=check_int("limit", limit, 1, MAX_LIMIT, optional=True),
        duration=check_seconds("duration", duration),
        idle_timeout=check_seconds("idle_timeout", idle_timeout),
        stop_when=check_callable("stop_when", stop_when),
        on_ready=check_callable("on_ready", on_ready),
        on_stats=check_callable("on_stats", on_stats),
        on_queue_stats=check_callable("on_queue_stats", on_queue_stats),
        on_error=check_callable("on_error", on_error),
        error_mode=check_choice("error_mode", error_mode, ("raise", "pass")),
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
    check_step(fn)
    report = check_bool("report", report)
    source = live_source(
        device,
        limit=limit,
        duration=duration,
        idle_timeout=idle_timeout,
        on_ready=on_ready,
        snaplen=snaplen,
        promisc=promisc,
        timeout_ms=timeout_ms,
        buffer_size=buffer_size,
        immediate=immediate,
    )
    acc, stats = _paclo.reduce(
        fn,
        init,
        source,
        reduced_type=Reduced,
        decode=check_decode(decode),
        filter=normalize_filter(filter),
        stop_when=check_callable("stop_when", stop_when),
        on_stats=check_callable("on_stats", on_stats),
        on_error=check_callable("on_error", on_error),
        error_mode=check_choice("error_mode", error_mode, ("raise", "pass")),
    )
    return (acc, stats) if report else acc


def devices() -> list[dict[str, Any]]:
    """The capture devices: ``name``, ``description``, ``addresses`` and ``flags`` of each."""
    return _paclo.devices()


def libpcap_version() -> str:
    """The version string of the libpcap paclo uses."""
    return _paclo.libpcap_version()


_BRANCH_KEYS = ("mode", "cap")


def fan_out(capture: Capture[_T], branches: dict[str, dict[str, Any]]) -> FanOut[_T]:
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
        mode = check_choice(f"branch {name!r} mode", cfg["mode"], ("blocking", "dropping"))
        cap = check_int(f"branch {name!r} cap", cfg.get("cap", 1024), 1, INT_MAX)
        specs.append((name, mode, cap))
    return _paclo.start_fan_out(capture, specs)
