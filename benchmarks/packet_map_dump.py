"""Dump packet maps, one line each, to compare two builds of paclo `repr` for `repr`.

Each line is the map's `repr` and which of its dicts are GC-tracked (in `repr` order). The
maps are those of `paclo.read(path, decode="full")` over the three perf datasets, and of
`paclo.decode` over frames of the datasets and of the test suite's builders, each also cut
at every length and with random bytes changed, under several link types.

    python benchmarks/packet_map_dump.py OUT.txt            # with one build
    python benchmarks/packet_map_dump.py OUT2.txt           # with the other
    cmp OUT.txt OUT2.txt

The last line is the count of maps.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

import paclo
import paclo.perf.datasets as datasets

CASES = ("udp-64", "tcp-512", "mixed")
LINKTYPES = ("ethernet", 101, 113, 276, 0, 228, 229)


def tracked(obj: Any, out: list[str]) -> None:
    if isinstance(obj, dict):
        out.append("T" if gc.is_tracked(obj) else "u")
        for v in obj.values():
            tracked(v, out)
    elif isinstance(obj, list):
        for v in obj:
            tracked(v, out)


def line(m: dict[str, Any]) -> str:
    flags: list[str] = []
    tracked(m, flags)
    return f"{m!r} {''.join(flags)}\n"


def suite_frames() -> list[bytes]:
    tests = Path(__file__).resolve().parent.parent / "tests"
    sys.path.insert(0, str(tests))
    try:
        import test_decode_alloc  # the test suite's frames: VLAN, IPv6 extension, DNS, TLS
    except ImportError:
        return []
    return list(test_decode_alloc.FRAMES)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--packets", type=int, default=20_000, help="packets per dataset file")
    ap.add_argument("--frames", type=int, default=40, help="frames per dataset to cut and change")
    args = ap.parse_args(argv)
    n = 0
    with args.out.open("w") as out, tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            path = Path(tmp) / f"{case}.pcap"
            datasets.generate(case, args.packets, path)
            for m in paclo.read(str(path), decode="full"):
                out.write(line(m))
                n += 1
        frames = [datasets.frame(c, i) for c in CASES for i in range(args.frames)]
        frames += suite_frames()
        n += decode_variants(frames, out)
        out.write(f"{n} maps\n")
    print(f"{n} maps written to {args.out}")
    return 0


def decode_variants(frames: list[bytes], out: TextIO) -> int:
    rnd = random.Random(5)
    n = 0
    for f in frames:
        variants = [f[:i] for i in range(len(f) + 1)]
        for _ in range(20):
            b = bytearray(f)
            for _ in range(rnd.randint(1, 4)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            variants.append(bytes(b))
        for v in variants:
            for lt in LINKTYPES:
                out.write(line(paclo.decode(v, linktype=lt)))
                n += 1
    return n


if __name__ == "__main__":
    raise SystemExit(main())
