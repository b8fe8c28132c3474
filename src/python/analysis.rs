//! The analysis view's native parts: address columns formatted into Arrow string buffers,
//! and the name tables for protocol numbers and TCP flags (`crate::flow::text`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::flow::text;

/// The buffers of a string array.
type TextBuffers<'py> = (
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Option<Bound<'py, PyBytes>>,
    usize,
);

/// Text of `rows` 16-byte addresses, formatted with the GIL released, as the buffers of an
/// Arrow string array: `(offsets, values, validity or None, null_count)`. `validity` is the
/// input's bitmap read from bit `bit_offset`; `versions` (one byte per row) marks the rows
/// of IPv6 packets, whose mapped addresses print as `::ffff:a.b.c.d`.
#[pyfunction]
#[pyo3(signature = (rows, addrs, validity = None, bit_offset = 0, versions = None))]
pub fn address_text<'py>(
    py: Python<'py>,
    rows: usize,
    addrs: &[u8],
    validity: Option<&[u8]>,
    bit_offset: usize,
    versions: Option<&[u8]>,
) -> PyResult<TextBuffers<'py>> {
    let column = py
        .detach(|| text::address_text(rows, addrs, validity, bit_offset, versions))
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((
        PyBytes::new(py, &column.offsets),
        PyBytes::new(py, &column.values),
        column.validity.map(|v| PyBytes::new(py, &v)),
        column.null_count,
    ))
}

/// The name of every protocol number 0-255 (None where it has no common name).
#[pyfunction]
pub fn protocol_names() -> Vec<Option<&'static str>> {
    (0..=255).map(text::protocol_name).collect()
}

/// The flag letters of every TCP flags byte 0-255 (`"AS"` for 0x12).
#[pyfunction]
pub fn tcp_flag_strings() -> Vec<String> {
    (0..=255)
        .map(|f| text::tcp_flags_text(f).as_str().to_string())
        .collect()
}
