//! `PcapWriter`: classic pcap files written from packets, bytes or packet dicts.

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::convert::packet::{with_buffer, Packet};
use super::gil::SIGNAL_CHECK_EVERY;

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

fn dict_int(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<i64>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract::<i64>().map_err(|_| {
            let ty = v
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            PyTypeError::new_err(format!(
                "packet dict key '{key}' must be an integer, not {ty}"
            ))
        })?)),
        _ => Ok(None),
    }
}

/// Write one item: a `Packet`, a bytes-like object, or a dict with `data` and `ts_ns`
/// (or `ts_sec`/`ts_usec`), optionally `wirelen`/`len`. `ts_ns` overrides the item's time;
/// items without a time get the current time.
fn write_item(
    py: Python<'_>,
    w: &mut crate::pcap::PcapWriter<std::fs::File>,
    linktype: u32,
    item: &Bound<'_, PyAny>,
    ts_ns: Option<i64>,
) -> PyResult<()> {
    if let Ok(p) = item.cast::<Packet>() {
        let p = p.get();
        if p.linktype != linktype {
            return Err(PyValueError::new_err(format!(
                "packet linktype {} differs from the file's linktype {linktype}",
                p.linktype
            )));
        }
        let ts = ts_ns.unwrap_or(p.ts_ns);
        return p
            .with_bytes(py, |b| w.write_packet(ts, b, p.wirelen))
            .map_err(PyErr::from);
    }
    if let Ok(d) = item.cast::<PyDict>() {
        let Some(data) = d.get_item("data")? else {
            return Err(PyValueError::new_err(
                "packet dict is missing the key 'data'",
            ));
        };
        let ts = match (ts_ns, dict_int(d, "ts_ns")?, dict_int(d, "ts_sec")?) {
            (Some(t), _, _) | (None, Some(t), _) => t,
            (None, None, Some(sec)) => {
                let usec = dict_int(d, "ts_usec")?.unwrap_or(0);
                sec.saturating_mul(1_000_000_000)
                    .saturating_add(usec.saturating_mul(1_000))
            }
            (None, None, None) => now_ns(),
        };
        let wirelen = match dict_int(d, "wirelen")? {
            Some(n) => Some(("wirelen", n)),
            None => dict_int(d, "len")?.map(|n| ("len", n)),
        };
        let wirelen = match wirelen {
            Some((key, n)) => Some(u32::try_from(n).map_err(|_| {
                PyValueError::new_err(format!(
                    "packet dict key '{key}' must be between 0 and {}, not {n}",
                    u32::MAX
                ))
            })?),
            None => None,
        };
        return with_buffer(&data, "packet dict 'data'", |b| {
            let wl = wirelen.unwrap_or(b.len() as u32);
            w.write_packet(ts, b, wl)
        })?
        .map_err(PyErr::from);
    }
    let ts = ts_ns.unwrap_or_else(now_ns);
    with_buffer(
        item,
        "a packet to write (Packet, bytes-like or dict)",
        |b| w.write_packet(ts, b, b.len() as u32),
    )?
    .map_err(PyErr::from)
}

/// A classic pcap file being written.
#[pyclass(module = "paclo", name = "PcapWriter", subclass)]
pub struct PyPcapWriter {
    inner: Option<crate::pcap::PcapWriter<std::fs::File>>,
    linktype: u32,
    count: u64,
}

#[pymethods]
impl PyPcapWriter {
    #[new]
    #[pyo3(signature = (path, *, linktype = 1, snaplen = 262_144, nanosecond = false))]
    fn new(path: PathBuf, linktype: u32, snaplen: u32, nanosecond: bool) -> PyResult<Self> {
        let w = crate::pcap::PcapWriter::create(&path, linktype, snaplen, nanosecond)?;
        Ok(PyPcapWriter {
            inner: Some(w),
            linktype,
            count: 0,
        })
    }

    /// Append a packet (see `paclo.write_pcap` for the accepted items).
    #[pyo3(signature = (packet, ts_ns = None))]
    fn write(
        &mut self,
        py: Python<'_>,
        packet: &Bound<'_, PyAny>,
        ts_ns: Option<i64>,
    ) -> PyResult<()> {
        let Some(w) = self.inner.as_mut() else {
            return Err(PyValueError::new_err("write to a closed PcapWriter"));
        };
        write_item(py, w, self.linktype, packet, ts_ns)?;
        self.count += 1;
        Ok(())
    }

    /// Write every item of an iterable; returns how many were written. Checks for signals
    /// (Ctrl-C) every 65,536 items: a native iterator (a `Reader`) runs no Python code that
    /// would. On an error, `count` still includes the items written before it.
    fn write_all(&mut self, py: Python<'_>, packets: &Bound<'_, PyAny>) -> PyResult<u64> {
        let Some(w) = self.inner.as_mut() else {
            return Err(PyValueError::new_err("write to a closed PcapWriter"));
        };
        let mut n = 0;
        for item in packets.try_iter()? {
            write_item(py, w, self.linktype, &item?, None)?;
            n += 1;
            self.count += 1;
            if n % SIGNAL_CHECK_EVERY == 0 {
                py.check_signals()?;
            }
        }
        Ok(n)
    }

    /// Packets written so far.
    #[getter]
    fn count(&self) -> u64 {
        self.count
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// Flush and close the file; idempotent.
    fn close(&mut self) -> PyResult<()> {
        if let Some(w) = self.inner.take() {
            w.finish()?;
        }
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }
}
