"""The performance runner and its results.

- `python -m paclo.perf --profile quick --mode offline`: run the benchmark (see docs/performance.md).
- `load(path)`: results.json as a pandas DataFrame, one row per measured run.
- `compare(a, b)`: ratios of medians (b / a) between two results files.
- `plot(results, kind=...)`: matplotlib figures (throughput, allocation, live, loss, compare).
- `markdown(results)`, `offline_table(results)`: the offline medians as a table.
- `write_report(results, out_dir)` (`python -m paclo.perf report`): PNG plots and one HTML page.
"""

from __future__ import annotations

from .plots import plot
from .report import write_report
from .results import compare, load, markdown, offline_table, read_results

__all__ = ["compare", "load", "main", "markdown", "offline_table", "plot", "read_results", "write_report"]


def main(argv: list[str] | None = None) -> int:
    """Run the performance runner with `argv`; returns the exit code (see `paclo.perf.cli`)."""
    from .cli import main as _main

    return _main(argv)
