"""The performance runner: `python -m paclo.perf`."""
