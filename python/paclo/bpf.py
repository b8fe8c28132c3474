"""The BPF filter DSL: Python forms to libpcap filter strings.

Forms (the reference's Clojure DSL, in Python):

- ``None`` -> ``None``.
- A protocol keyword string: ``"udp"``, ``"tcp"``, ``"icmp"``, ``"icmp6"``, ``"arp"``,
  ``"ip"``/``"ipv4"``/``"ip4"`` -> ``"ip"``, ``"ip6"``/``"ipv6"`` -> ``"ip6"``.
- Any other string passes unchanged (a libpcap expression), without validation.
- A tuple or list ``(op, *args)``: ``and``/``or`` (each argument wrapped in parentheses),
  ``not``, ``proto``, ``host``/``src-host``/``dst-host``, ``net``/``src-net``/``dst-net``,
  ``port``/``src-port``/``dst-port``, ``port-range``/``src-port-range``/``dst-port-range``.
  Every op is also accepted with underscores (``"port_range"``). A protocol keyword as op
  (``("udp",)``) gives that protocol and ignores the rest.

Errors are ``ValueError`` whose message starts with the reference's message:
``"unknown proto keyword"``, ``"unknown op in bpf"``, ``"unsupported bpf form"``; a port
that is not an integer raises ``ValueError("invalid port ...")``.
"""

from __future__ import annotations

import math
import re
from typing import Any, TypeAlias

__all__ = ["bpf", "normalize_filter"]

# What a ``filter=`` option takes: a libpcap string, a DSL form, or None.
FilterArg: TypeAlias = str | tuple[Any, ...] | list[Any] | None

_PROTOS = {
    "udp": "udp",
    "tcp": "tcp",
    "icmp": "icmp",
    "icmp6": "icmp6",
    "arp": "arp",
    "ip": "ip",
    "ipv4": "ip",
    "ip4": "ip",
    "ip6": "ip6",
    "ipv6": "ip6",
}

_PREFIXED = {
    "host": "host",
    "src-host": "src host",
    "dst-host": "dst host",
    "net": "net",
    "src-net": "src net",
    "dst-net": "dst net",
}
_PORTS = {"port": "port", "src-port": "src port", "dst-port": "dst port"}
_RANGES = {"port-range": "portrange", "src-port-range": "src portrange", "dst-port-range": "dst portrange"}
_PORT_RE = re.compile(r"[+-]?[0-9]+")


def _text(x: object) -> str:
    """Clojure's ``str``: None is the empty string."""
    return "" if x is None else str(x)


def _port(p: object, form: object) -> int:
    if isinstance(p, bool):
        raise ValueError(f"invalid port {p!r} in {form!r}: expected an integer")
    if isinstance(p, int):
        return p
    if isinstance(p, float) and math.isfinite(p):
        return int(p)
    if isinstance(p, str) and _PORT_RE.fullmatch(p):
        return int(p)
    raise ValueError(f"invalid port {p!r} in {form!r}: expected an integer")


def _proto(k: object) -> str:
    if isinstance(k, str) and k in _PROTOS:
        return _PROTOS[k]
    raise ValueError(f"unknown proto keyword: {k!r}")


def _args(form: tuple[Any, ...] | list[Any], n: int) -> list[Any]:
    args = list(form[1:])
    if len(args) < n:
        raise ValueError(f"unsupported bpf form: {form!r} (op {form[0]!r} needs {n} argument{'s' if n > 1 else ''})")
    return args


def bpf(form: object) -> str | None:
    """Convert a filter DSL form to a libpcap filter string (see the module doc)."""
    if form is None:
        return None
    if isinstance(form, str):
        return _PROTOS.get(form, form)
    if isinstance(form, (tuple, list)):
        if not form:
            raise ValueError(f"unsupported bpf form: {form!r} (empty)")
        raw_op = form[0]
        if not isinstance(raw_op, str):
            raise ValueError(f"unknown op in bpf: {raw_op!r} in {form!r}")
        op = raw_op.replace("_", "-")
        if op in ("and", "or"):
            return f" {op} ".join(f"({_text(bpf(a))})" for a in form[1:])
        if op == "not":
            (x,) = _args(form, 1)[:1]
            return f"not ({_text(bpf(x))})"
        if op == "proto":
            return _proto(_args(form, 1)[0])
        if op in _PREFIXED:
            return f"{_PREFIXED[op]} {_text(_args(form, 1)[0])}"
        if op in _PORTS:
            return f"{_PORTS[op]} {_port(_args(form, 1)[0], form)}"
        if op in _RANGES:
            a, b = _args(form, 2)[:2]
            return f"{_RANGES[op]} {_text(a)}-{_text(b)}"
        if raw_op in _PROTOS:
            return _PROTOS[raw_op]
        raise ValueError(f"unknown op in bpf: {raw_op!r} in {form!r}")
    raise ValueError(f"unsupported bpf form: {form!r}")


def normalize_filter(value: object) -> str | None:
    """The ``filter=`` option as a libpcap string: a string passes (blank means no
    filter), a DSL form goes through :func:`bpf`, ``None`` is no filter."""
    if value is None:
        return None
    if isinstance(value, str):
        return value if value.strip() else None
    if isinstance(value, (tuple, list)):
        s = bpf(value)
        return s if s and s.strip() else None
    raise TypeError(f"invalid filter: expected a BPF string, a DSL form (tuple or list) or None, not {type(value).__name__}")
