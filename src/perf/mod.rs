//! Deterministic perf datasets and measurement helpers.

pub mod datasets;
pub mod generator;
