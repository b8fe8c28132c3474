//! `Packet`, `Reader` and the file-reading entry points.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use super::common::{to_python, DecodeMode};
use crate::pcap::FileReader;
use crate::source::{PacketSource, RawPacket};

/// One captured packet.
#[pyclass(module = "paclo", frozen, freelist = 256)]
pub struct Packet {
    #[pyo3(get)]
    ts_ns: i64,
    #[pyo3(get)]
    caplen: u32,
    #[pyo3(get)]
    wirelen: u32,
    #[pyo3(get)]
    linktype: u32,
    data: Py<PyBytes>,
}

impl Packet {
    /// Copy a borrowed packet into a Python object.
    pub fn from_raw(py: Python<'_>, pkt: &RawPacket<'_>) -> Packet {
        Packet {
            ts_ns: pkt.ts_ns,
            caplen: pkt.caplen,
            wirelen: pkt.wirelen,
            linktype: pkt.linktype,
            data: PyBytes::new(py, pkt.data).unbind(),
        }
    }
}

#[pymethods]
impl Packet {
    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }

    fn __bytes__(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data.clone_ref(py)
    }

    fn __repr__(&self) -> String {
        format!(
            "Packet(ts_ns={}, caplen={}, wirelen={}, linktype={})",
            self.ts_ns, self.caplen, self.wirelen, self.linktype
        )
    }
}

/// An open capture file: an iterator of packets.
#[pyclass(module = "paclo", unsendable)]
pub struct Reader {
    inner: Option<FileReader>,
    mode: DecodeMode,
}

#[pymethods]
impl Reader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mode = self.mode;
        let Some(inner) = self.inner.as_mut() else { return Ok(None) };
        match inner.next_packet()? {
            Some(pkt) => Ok(Some(to_python(py, mode, &pkt)?.0)),
            None => Ok(None),
        }
    }

    fn close(&mut self) {
        self.inner = None;
    }
}

/// Open a capture file for reading.
#[pyfunction]
#[pyo3(signature = (path, *, decode = None))]
fn read(path: PathBuf, decode: Option<&str>) -> PyResult<Reader> {
    let mode = DecodeMode::parse(decode)?;
    Ok(Reader { inner: Some(FileReader::open(path)?), mode })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Packet>()?;
    m.add_class::<Reader>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    Ok(())
}
