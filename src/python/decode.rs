//! `decode_bytes` and `set_decode_hooks`: the packet map of raw bytes, and the hooks
//! `paclo.decode_ext` registers (applied by every source).

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};

use super::convert::packet_map::{full_map_with, set_hooks};
use crate::source::RawPacket;

/// The packet map of raw bytes (timestamps 0, caplen = len = `len(data)`).
#[pyfunction]
#[pyo3(signature = (data, linktype))]
pub fn decode_bytes<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    linktype: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data.as_bytes();
    let n = u32::try_from(b.len()).unwrap_or(u32::MAX);
    let pkt = RawPacket {
        ts_ns: 0,
        caplen: n,
        wirelen: n,
        linktype,
        data: b,
    };
    Ok(full_map_with(py, &pkt, Some(data.as_any()))?.0)
}

/// Replace the hooks applied to full maps (a tuple of callables, in order).
#[pyfunction]
pub fn set_decode_hooks(hooks: Bound<'_, PyTuple>) {
    set_hooks(hooks);
}
