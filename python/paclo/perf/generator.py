"""Exact-count UDP sender: `python -m paclo.perf.generator --host H --packets N --rate PPS`.

Sends exactly `--packets` datagrams (or, with `--duration-ms` instead of `--packets`, datagrams
at the rate until the deadline, fewer if the senders cannot keep up) to `--host:--port`, split over `--senders`
threads, each paced at its share of `--rate`. Prints one JSON report on stdout:
`{"host", "port", "requested_packets", "sent", "target_pps", "realized_pps", "elapsed_ns",
"frame_size", "senders", "start_delay_ms"}`. Any send failure exits non-zero.

Payload = max(1, frame_size - 28) bytes (the IPv4 and UDP headers make up the rest).
Pacing: datagram i of a sender is due at start + i / rate_i; the sender sleeps while more
than 50 µs remain and spins for the rest.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from typing import Any

from .cli import EXIT_USAGE, EXIT_VALUE, UsageError, _int, _non_negative, _positive

USAGE = """\
usage: python -m paclo.perf.generator --host HOST (--packets N | --duration-ms MS) --rate PPS
                                      [--port 39053] [--frame-size 64] [--senders 1]
                                      [--start-delay-ms 0]
"""


def split(total: int, parts: int) -> list[int]:
    """`total` split over `parts` as evenly as possible, larger shares first (10 / 3 -> [4, 3, 3])."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def _pace(due_ns: int) -> None:
    remaining = due_ns - time.perf_counter_ns()
    if remaining > 50_000:
        time.sleep((remaining - 50_000) / 1e9)
    while time.perf_counter_ns() < due_ns:
        pass


def send(host: str, port: int, rate: int, frame_size: int, senders: int, packets: int | None = None,
         duration_ms: int | None = None, start_delay_ms: int = 0) -> dict[str, Any]:
    """Send the datagrams and return the report (see the module doc)."""
    if (packets is None) == (duration_ms is None):
        raise ValueError("give exactly one of packets and duration_ms")
    addr = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
    family, _, _, _, sockaddr = addr
    payload = bytes(max(1, frame_size - 28))
    shares: list[int | None]
    if packets is not None:
        shares = list(split(packets, senders))
        rates = [rate * share / packets for share in split(packets, senders)]
    else:
        shares = [None] * senders
        rates = [rate / senders] * senders
    sockets = []
    try:
        for _ in range(senders):
            sockets.append(socket.socket(family, socket.SOCK_DGRAM))
    except OSError:
        for s in sockets:
            s.close()
        raise
    sent = [0] * senders
    errors: list[BaseException] = []
    ready = threading.Barrier(senders + 1)
    start_at = [0]

    def worker(i: int) -> None:
        sock = sockets[i]
        interval = 1e9 / rates[i] if rates[i] > 0 else 0.0
        share = shares[i]
        try:
            ready.wait(10)
            start = start_at[0]
            deadline = start + duration_ms * 1_000_000 if duration_ms is not None else None
            n = 0
            while True:
                if share is not None and n >= share:
                    break
                due = start + int(n * interval)
                if deadline is not None and (due >= deadline or time.perf_counter_ns() >= deadline):
                    break
                _pace(due)
                sock.sendto(payload, sockaddr)
                n += 1
                sent[i] = n
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(senders)]
    for t in threads:
        t.start()
    if start_delay_ms:
        time.sleep(start_delay_ms / 1000)
    start_at[0] = time.perf_counter_ns()
    try:
        ready.wait(10)
    except threading.BrokenBarrierError:
        raise RuntimeError("UDP senders did not become ready") from None
    for t in threads:
        t.join()
    elapsed = time.perf_counter_ns() - start_at[0]
    for s in sockets:
        s.close()
    if errors:
        raise errors[0]
    total = sum(sent)
    return {
        "host": sockaddr[0],
        "port": port,
        "requested_packets": packets,
        "duration_ms": duration_ms,
        "sent": total,
        "target_pps": rate,
        "realized_pps": total / (elapsed / 1e9) if elapsed > 0 else None,
        "elapsed_ns": elapsed,
        "frame_size": frame_size,
        "senders": senders,
        "start_delay_ms": start_delay_ms,
    }


def _parse(argv: list[str]) -> dict[str, Any] | None:
    known = {"--host", "--port", "--packets", "--duration-ms", "--rate", "--frame-size", "--senders",
             "--start-delay-ms"}
    raw: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            return None
        name, eq, inline = arg.partition("=")
        if name not in known:
            raise UsageError(f"unknown or incomplete argument: {arg}", EXIT_USAGE)
        if eq:
            raw[name] = inline
            i += 1
        elif i + 1 < len(argv):
            raw[name] = argv[i + 1]
            i += 2
        else:
            raise UsageError(f"unknown or incomplete argument: {arg} needs a value", EXIT_USAGE)
    if not raw.get("--host"):
        raise UsageError("host is required", EXIT_VALUE)
    if ("--packets" in raw) == ("--duration-ms" in raw):
        raise UsageError("give exactly one of --packets and --duration-ms", EXIT_USAGE)
    if "--rate" not in raw:
        raise UsageError("rate is required", EXIT_VALUE)
    opts: dict[str, Any] = {
        "host": raw["--host"],
        "rate": _positive("rate", raw["--rate"]),
        "packets": _positive("packets", raw["--packets"]) if "--packets" in raw else None,
        "duration_ms": _positive("duration-ms", raw["--duration-ms"]) if "--duration-ms" in raw else None,
        "frame_size": _positive("frame-size", raw.get("--frame-size", "64")),
        "senders": _positive("senders", raw.get("--senders", "1")),
        "start_delay_ms": _non_negative("start-delay-ms", raw.get("--start-delay-ms", "0")),
        "port": _int("port", raw.get("--port", "39053")),
    }
    if not 1 <= opts["port"] <= 65535:
        raise UsageError(f"port must be between 1 and 65535, got {opts['port']}", EXIT_VALUE)
    if opts["packets"] is not None and opts["senders"] > opts["packets"]:
        raise UsageError("senders cannot exceed packets", EXIT_VALUE)
    return opts


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = _parse(list(argv))
    except UsageError as exc:
        print(f"paclo perf generator: error: {exc}", file=sys.stderr)
        return exc.code
    if opts is None:
        sys.stdout.write(USAGE)
        return 0
    try:
        report = send(**opts)
    except Exception as exc:  # noqa: BLE001 - every failure is reported with exit code 5
        print(f"paclo perf generator: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 5
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
