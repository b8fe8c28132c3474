"""The performance runner and its results.

- `python -m paclo.perf --profile quick --mode offline`: run the benchmark (see docs/performance.md).
- `load(path)`: results.json as a pandas DataFrame, one row per measured run.
- `compare(a, b)`: ratios of medians (b / a) between two results files.
- `plot(results)`: matplotlib figures of a results file or of `load`'s DataFrame.
"""

from __future__ import annotations

from .results import compare, load, plot, read_results

__all__ = ["compare", "load", "main", "plot", "read_results"]


def main(argv: list[str] | None = None) -> int:
    """Run the performance runner with `argv`; returns the exit code (see `paclo.perf.cli`)."""
    from .cli import main as _main

    return _main(argv)
