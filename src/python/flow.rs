//! Flow projection, flow tables and Arrow export.

use pyo3::exceptions::PyNotImplementedError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::source::RawPacket;

/// The flat flow dict for `pkt`, and whether it carries a `decode_error`.
pub fn flow_dict<'py>(_py: Python<'py>, _pkt: &RawPacket<'_>) -> PyResult<(Bound<'py, PyDict>, bool)> {
    Err(PyNotImplementedError::new_err("decode='flow' is not built yet"))
}

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
