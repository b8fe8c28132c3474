"""`python -m paclo.perf`: the performance runner (`main` is also what `paclo perf` calls)."""

import sys

from .cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
