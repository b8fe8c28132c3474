//! Perf helpers: dataset generation and the native allocation counters.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::progress::ProgressSink;
use crate::perf::datasets::{self, Case};

/// (allocations, bytes) requested from the Rust allocator by the whole process so far.
#[pyfunction]
pub fn native_alloc_counts() -> (u64, u64) {
    let c = crate::alloc::process_counts();
    (c.allocs, c.bytes)
}

fn check_count(count: i64) -> PyResult<u64> {
    u64::try_from(count).map_err(|_| {
        PyValueError::new_err(format!("count must be a non-negative integer, not {count}"))
    })
}

/// Write `count` packets of `case` to `path`; returns (packets, bytes, file_size). Checks for
/// signals (Ctrl-C) every 65,536 packets and tells `progress` (an object with
/// `update(done, total)` and `close()`) the packets written of `count` then and at the end.
#[pyfunction]
#[pyo3(signature = (case, count, path, *, progress = None))]
pub fn generate_dataset(
    py: Python<'_>,
    case: &str,
    count: i64,
    path: PathBuf,
    progress: Option<Py<PyAny>>,
) -> PyResult<(u64, u64, u64)> {
    let case = Case::parse(case)?;
    let count = check_count(count)?;
    let bar = ProgressSink::new(progress);
    // Ctrl-C: the loop runs without the GIL and takes it back now and then to check for
    // signals; an exception from a handler (or the display) stops it and removes the
    // partial file.
    let mut raised: Option<PyErr> = None;
    let mut reached = 0;
    let d = py.detach(|| {
        datasets::generate_interruptible(case, count, &path, &mut |written| {
            reached = written;
            Python::attach(|py| {
                py.check_signals()?;
                bar.as_ref()
                    .map_or(Ok(()), |b| b.update(py, written, count))
            })
            .map_err(|e| raised = Some(e))
            .is_err()
        })
    });
    let done = if matches!(d, Ok(Some(_))) {
        count
    } else {
        reached
    };
    let closed = bar.map_or(Ok(()), |b| b.finish(py, done, count));
    match (d?, raised) {
        (Some(d), _) => {
            closed?;
            Ok((d.packets, d.bytes, d.file_size))
        }
        (None, Some(e)) => Err(e),
        (None, None) => Err(PyValueError::new_err("dataset generation was interrupted")),
    }
}

/// (captured bytes, file size) of `count` packets of `case`.
#[pyfunction]
pub fn dataset_expected(case: &str, count: i64) -> PyResult<(u64, u64)> {
    let case = Case::parse(case)?;
    let count = check_count(count)?;
    Ok((case.expected_bytes(count)?, case.expected_file_size(count)?))
}

/// The frame bytes of packet `index` of `case`.
#[pyfunction]
pub fn dataset_frame<'py>(
    py: Python<'py>,
    case: &str,
    index: i64,
) -> PyResult<Bound<'py, PyBytes>> {
    let case = Case::parse(case)?;
    let (size, traffic) = case.frame_kind(check_count(index)?);
    Ok(PyBytes::new(py, &datasets::frame(size, traffic)?))
}
