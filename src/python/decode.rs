//! The full packet map as Python dicts.

use pyo3::exceptions::PyNotImplementedError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::source::RawPacket;

/// The full packet map for `pkt`, and whether it carries a `decode_error`.
pub fn full_map<'py>(_py: Python<'py>, _pkt: &RawPacket<'_>) -> PyResult<(Bound<'py, PyDict>, bool)> {
    Err(PyNotImplementedError::new_err("decode='full' is not built yet"))
}

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
