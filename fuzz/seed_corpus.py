"""Write the fuzz corpus seeds from the golden test frames.

    python fuzz/seed_corpus.py    # writes fuzz/seeds/decode/*

Each seed is one byte selecting the link type (index into the target's LINKTYPES) followed by
the frame.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import test_decode_dpkt  # noqa: E402
import test_decode_property  # noqa: E402
import test_decode_truncation  # noqa: E402

INDEX = {"null": 0, "ethernet": 1, "raw": 4, "loop": 5, "linux_sll": 6, "linux_sll2": 7}


def main() -> None:
    out = HERE / "seeds" / "decode"
    out.mkdir(parents=True, exist_ok=True)
    seeds = [(INDEX[lt], frame) for _, lt, frame, _, _ in test_decode_truncation.CASES]
    seeds += [(1, f) for f in test_decode_property.SEEDS]
    seeds += [(1, f) for f in test_decode_dpkt.corpus(n=60, seed=11)]
    for index, frame in seeds:
        data = bytes([index]) + frame
        (out / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)
    print(f"{len(seeds)} seeds in {out}")


if __name__ == "__main__":
    main()
