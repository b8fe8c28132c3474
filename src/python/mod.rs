//! Python bindings: the only module that imports pyo3.
//!
//! Bindings are thin: convert arguments, release the GIL around native loops, call the
//! core. Each area registers its own classes and functions; this file is the one export list.

mod capture;
mod common;
mod decode;
mod error;
mod flow;
mod meter;
mod perf;
mod reader;

use pyo3::prelude::*;

#[pymodule]
fn _paclo(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    reader::register(m)?;
    decode::register(m)?;
    flow::register(m)?;
    meter::register(m)?;
    capture::register(m)?;
    perf::register(m)?;
    Ok(())
}
