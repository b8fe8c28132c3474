"""The `paclo` command line."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("ERROR: no subcommands yet", file=sys.stderr)
    return 1
