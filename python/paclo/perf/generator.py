"""Exact-count UDP sender: `python -m paclo.perf.generator --host H --packets N --rate PPS`.

The sending is paclo's native generator (`paclo._paclo.udp_generate`): sender threads that
never take the GIL, one connected UDP socket each (IPv4 or IPv6), `sendmmsg` batches, pacing
by absolute deadlines (datagram i of a sender is due at start + i / rate; everything already
due goes out in one call of at most `--batch` datagrams), the count split exactly across
senders (10 over 3 -> 4, 3, 3). A datagram counts as sent only when the kernel accepted it;
ENOBUFS/EAGAIN are retried and counted.

Sends exactly `--packets` datagrams, or with `--duration-ms` every datagram due before the
deadline (fewer if the senders cannot keep up; with both, whichever ends first) to
`--host:--port`. Prints one JSON report on stdout: `host`, `port`, `family`,
`requested_packets`, `duration_ms`, `sent`, `target_pps`, `realized_pps` (`sent - senders`
intervals over the window from the first to the last accepted datagram, so perfect pacing
gives the target exactly), `elapsed_ns`, `window_ns`,
`retries`, `stop` (`count` or `deadline`), `frame_size`, `payload_bytes` (frame size minus
the IP and UDP headers, at least 1), `senders`, `batch`, `start_delay_ms`, `cpus` and
`per_sender` (`requested`, `target_pps`, `sent`, `realized_pps`, `calls`, `retries`,
`first_ns`, `last_ns`, `cpu`, `loop_allocations`).

Exit codes: 0 sent; 1 unknown or incomplete argument; 4 bad value; 5 the send failed (an
unknown host, a refused or failed send: a datagram to a port nobody listens on draws an
ICMP port-unreachable and the next send fails with ECONNREFUSED).

`--wait-go` (used by the live runner): resolve the host, print `ready` on stdout, wait for
the line `go` on stdin, then send (stdin closed without it: exit 5, nothing sent).
"""

from __future__ import annotations

import json
import socket
import sys
from typing import Any

from .options import (
    EXIT_FAILED,
    EXIT_USAGE,
    EXIT_VALUE,
    UsageError,
    parse_cpus,
    parse_int,
    parse_non_negative,
    parse_positive,
    tokens,
)

USAGE = """\
usage: python -m paclo.perf.generator --host HOST (--packets N | --duration-ms MS) --rate PPS
                                      [--port 39053] [--frame-size 64] [--senders 1]
                                      [--batch 64] [--cpus 0,1] [--start-delay-ms 0]
                                      [--wait-go]
"""

_VALUE_FLAGS = {"--host", "--port", "--packets", "--duration-ms", "--rate", "--frame-size", "--senders",
                "--start-delay-ms", "--batch", "--cpus"}


def send(host: str, port: int, rate: int, frame_size: int = 64, senders: int = 1, packets: int | None = None,
         duration_ms: int | None = None, start_delay_ms: int = 0, batch: int = 64,
         cpus: list[int] | None = None) -> dict[str, Any]:
    """Send the datagrams and return the report (see the module doc)."""
    from paclo import _paclo

    return _paclo.udp_generate(host, port, rate, packets=packets, duration_ms=duration_ms, frame_size=frame_size,
                               senders=senders, batch=batch, start_delay_ms=start_delay_ms, cpus=cpus)


def parse(argv: list[str]) -> dict[str, Any] | None:
    """Validated options for `send` (plus `wait_go`); None for --help; UsageError otherwise."""
    raw = tokens(argv, _VALUE_FLAGS, {"--wait-go"})
    if "--help" in raw:
        return None
    if not raw.get("--host"):
        raise UsageError("host is required", EXIT_VALUE)
    if "--packets" not in raw and "--duration-ms" not in raw:
        raise UsageError("give --packets, --duration-ms or both", EXIT_USAGE)
    if "--rate" not in raw:
        raise UsageError("rate is required", EXIT_VALUE)
    opts: dict[str, Any] = {
        "host": raw["--host"],
        "rate": parse_positive("rate", raw["--rate"]),
        "packets": parse_positive("packets", raw["--packets"]) if "--packets" in raw else None,
        "duration_ms": parse_positive("duration-ms", raw["--duration-ms"]) if "--duration-ms" in raw else None,
        "frame_size": parse_positive("frame-size", raw.get("--frame-size", "64")),
        "senders": parse_positive("senders", raw.get("--senders", "1")),
        "batch": parse_positive("batch", raw.get("--batch", "64")),
        "start_delay_ms": parse_non_negative("start-delay-ms", raw.get("--start-delay-ms", "0")),
        "port": parse_int("port", raw.get("--port", "39053")),
        "cpus": parse_cpus("cpus", raw["--cpus"]) if "--cpus" in raw else None,
        "wait_go": "--wait-go" in raw,
    }
    if not 1 <= opts["port"] <= 65535:
        raise UsageError(f"port must be between 1 and 65535, got {opts['port']}", EXIT_VALUE)
    if opts["frame_size"] > 65535:
        raise UsageError(f"frame-size must be at most 65535, got {opts['frame_size']}", EXIT_VALUE)
    if opts["batch"] > 1024:
        raise UsageError(f"batch must be between 1 and 1024, got {opts['batch']}", EXIT_VALUE)
    if opts["packets"] is not None and opts["senders"] > opts["packets"]:
        raise UsageError("senders cannot exceed packets", EXIT_VALUE)
    if opts["senders"] > opts["rate"]:
        raise UsageError("senders cannot exceed rate", EXIT_VALUE)
    return opts


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        opts = parse(list(argv))
    except UsageError as exc:
        print(f"paclo perf generator: error: {exc}", file=sys.stderr)
        return exc.code
    if opts is None:
        sys.stdout.write(USAGE)
        return 0
    wait_go = opts.pop("wait_go")
    try:
        try:
            socket.getaddrinfo(opts["host"], opts["port"], type=socket.SOCK_DGRAM)
        except socket.gaierror as exc:
            raise OSError(f"cannot resolve host {opts['host']!r}: {exc.strerror}") from None
        if wait_go:
            print("ready", flush=True)
            if sys.stdin.readline().strip() != "go":
                print("paclo perf generator: error: stdin closed before go; nothing sent", file=sys.stderr)
                return EXIT_FAILED
        report = send(**opts)
    except KeyboardInterrupt:
        print("paclo perf generator: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - every failure is reported with exit code 5
        print(f"paclo perf generator: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(json.dumps(report), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
