//! Progress reports from native loops to the Python side's one progress display
//! (`paclo._progress.Progress`, which draws only on a terminal and rate-limits itself).

use pyo3::prelude::*;

/// Packets between two reports: each report is a call into Python.
pub const PROGRESS_EVERY: u64 = 8192;

/// A display to report to: any object with `update(done, total)` and `close()`.
pub struct ProgressSink(Py<PyAny>);

impl ProgressSink {
    /// The sink for `display`, `None` for none.
    pub fn new(display: Option<Py<PyAny>>) -> Option<Self> {
        display.map(ProgressSink)
    }

    /// The position reached (absolute) of `total`.
    pub fn update(&self, py: Python<'_>, done: u64, total: u64) -> PyResult<()> {
        self.0.call_method1(py, "update", (done, total))?;
        Ok(())
    }

    /// The work ended at `done` of `total`: the final state, then the display is closed.
    pub fn finish(self, py: Python<'_>, done: u64, total: u64) -> PyResult<()> {
        self.update(py, done, total)?;
        self.0.call_method0(py, "close")?;
        Ok(())
    }
}
