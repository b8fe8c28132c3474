//! Arguments that name a source and its stop conditions. Values are validated by the
//! Python wrappers; these conversions check what Rust needs (ranges of durations).

use std::path::PathBuf;
use std::time::Duration;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::capture::LiveOptions;
use crate::source::{Limits, PacketSource, SourceLoop, SourceSpec};

/// A live device as the wrappers describe it: a dict with `device`, the live options
/// (`snaplen`, `promisc`, `timeout_ms`, `buffer_size`, `immediate`), the stop conditions
/// (`limit`, `duration`, `idle_timeout`) and `on_ready`. `capture(path=)` opens a file
/// through the same struct (a file spec).
pub struct LiveArg {
    /// The device and how to open it.
    pub spec: SourceSpec,
    /// When to stop.
    pub limits: Limits,
    /// Called after the device is open and filtered, before the first packet is read.
    pub on_ready: Option<Py<PyAny>>,
}

/// Where a consumer reads: capture files (in order) or a live device.
pub enum SourceArg {
    /// One or more capture files.
    Files(Vec<PathBuf>),
    /// A live device.
    Device(LiveArg),
}

/// Seconds as a `Duration`; a value a `Duration` cannot hold (negative, NaN, too large) is
/// a `ValueError` naming `option`.
pub fn seconds(option: &str, value: Option<f64>) -> PyResult<Option<Duration>> {
    value
        .map(|v| {
            Duration::try_from_secs_f64(v).map_err(|_| {
                PyValueError::new_err(format!(
                    "{option} must be None or a positive number of seconds up to {:e}, not {v:?}",
                    Duration::MAX.as_secs_f64()
                ))
            })
        })
        .transpose()
}

/// The stop conditions of a pass.
pub fn limits(
    limit: Option<u64>,
    duration: Option<f64>,
    idle_timeout: Option<f64>,
) -> PyResult<Limits> {
    Ok(Limits {
        max_packets: limit,
        max_time: seconds("duration", duration)?,
        idle_timeout: seconds("idle_timeout", idle_timeout)?,
    })
}

fn item<'py, T: for<'a> FromPyObject<'a, 'py>>(d: &Bound<'py, PyDict>, key: &str) -> PyResult<T>
where
    for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    match d.get_item(key)? {
        Some(v) => v.extract::<T>().map_err(Into::into),
        None => Err(PyValueError::new_err(format!(
            "the live source description lacks {key:?}"
        ))),
    }
}

impl LiveArg {
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<LiveArg> {
        let options = LiveOptions {
            snaplen: item(d, "snaplen")?,
            promisc: item(d, "promisc")?,
            timeout_ms: item(d, "timeout_ms")?,
            buffer_size: item(d, "buffer_size")?,
            immediate: item(d, "immediate")?,
        };
        Ok(LiveArg {
            spec: SourceSpec::Device {
                name: item(d, "device")?,
                options,
            },
            limits: limits(
                item(d, "limit")?,
                item(d, "duration")?,
                item(d, "idle_timeout")?,
            )?,
            on_ready: item(d, "on_ready")?,
        })
    }
}

impl<'a, 'py> FromPyObject<'a, 'py> for SourceArg {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        if let Ok(d) = obj.cast::<PyDict>() {
            return LiveArg::from_dict(&d).map(SourceArg::Device);
        }
        if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
            return Ok(SourceArg::Files(obj.extract()?));
        }
        match obj.extract::<PathBuf>() {
            Ok(p) => Ok(SourceArg::Files(vec![p])),
            Err(_) => Err(PyTypeError::new_err(format!(
                "source must be a path, a list of paths or a live device description, not {}",
                obj.get_type().name()?
            ))),
        }
    }
}

impl LiveArg {
    /// Open the source (the GIL released), install `filter`, then call `on_ready`; an
    /// exception from `on_ready` closes the source and is raised. The one opener of the
    /// bindings that take a device (reduce, flows, capture; capture also takes a file).
    pub fn open(
        self,
        py: Python<'_>,
        filter: Option<&str>,
    ) -> PyResult<SourceLoop<Box<dyn PacketSource>>> {
        let spec = self.spec;
        let source = py.detach(|| spec.open())?;
        let mut lp = SourceLoop::new(source, filter, self.limits)?;
        if let Some(f) = &self.on_ready {
            f.call0(py)?;
        }
        // Time limits count from here, when the caller's traffic may start.
        lp.restart_clock();
        Ok(lp)
    }
}

/// `limit=` of a file read: a non-negative integer or None.
pub fn parse_limit(limit: Option<i64>) -> PyResult<Option<u64>> {
    match limit {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as u64)),
        Some(n) => Err(PyValueError::new_err(format!(
            "limit must be a non-negative integer or None, not {n}"
        ))),
    }
}
