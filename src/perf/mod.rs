//! Deterministic perf datasets and measurement helpers.
