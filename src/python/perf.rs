//! Perf helpers: dataset generation and the native allocation counters.

use pyo3::prelude::*;

/// (allocations, bytes) requested from the Rust allocator by the whole process so far.
#[pyfunction]
fn native_alloc_counts() -> (u64, u64) {
    let c = crate::alloc::process_counts();
    (c.allocs, c.bytes)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(native_alloc_counts, m)?)?;
    Ok(())
}
