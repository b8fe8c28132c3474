//! The UDP load generator (`crate::perf::generator`): sender threads run without the GIL.

use std::time::Duration;

use pyo3::exceptions::{PyKeyboardInterrupt, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::gil;
use crate::perf::generator::{self, Config, GeneratorError, Report};

fn to_py(err: GeneratorError) -> PyErr {
    let message = err.to_string();
    match err {
        GeneratorError::InvalidArgument(_) => PyValueError::new_err(message),
        GeneratorError::Resolve { source, .. }
        | GeneratorError::Socket { source, .. }
        | GeneratorError::Send { source, .. } => match source.raw_os_error() {
            // OSError(errno, message) becomes the matching subclass (ConnectionRefusedError, ...).
            Some(errno) => PyOSError::new_err((errno, message)),
            None => PyOSError::new_err(message),
        },
        GeneratorError::NotReady => PyRuntimeError::new_err(message),
        GeneratorError::Interrupted => PyKeyboardInterrupt::new_err(()),
    }
}

fn report_dict<'py>(py: Python<'py>, cfg: &Config, r: &Report) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("host", cfg.dest.ip().to_string())?;
    d.set_item("port", cfg.dest.port())?;
    d.set_item("family", if cfg.dest.is_ipv4() { "ipv4" } else { "ipv6" })?;
    d.set_item("requested_packets", cfg.packets)?;
    d.set_item(
        "duration_ms",
        cfg.duration
            .map(|x| x.as_millis().min(u128::from(u64::MAX)) as u64),
    )?;
    d.set_item("sent", r.sent)?;
    d.set_item("target_pps", cfg.rate)?;
    d.set_item("realized_pps", r.realized_pps())?;
    d.set_item("elapsed_ns", r.elapsed_ns)?;
    d.set_item("window_ns", r.window_ns)?;
    d.set_item("retries", r.retries)?;
    d.set_item("stop", r.stop.name())?;
    d.set_item("frame_size", cfg.frame_size)?;
    d.set_item("payload_bytes", r.payload_len)?;
    d.set_item("senders", cfg.senders)?;
    d.set_item("batch", cfg.batch)?;
    d.set_item(
        "start_delay_ms",
        cfg.start_delay.as_millis().min(u128::from(u64::MAX)) as u64,
    )?;
    d.set_item("cpus", (!cfg.cpus.is_empty()).then(|| cfg.cpus.clone()))?;
    let per = PyList::empty(py);
    for s in &r.senders {
        let e = PyDict::new(py);
        e.set_item("requested", s.requested)?;
        e.set_item("target_pps", s.target_pps)?;
        e.set_item("sent", s.sent)?;
        e.set_item("realized_pps", s.realized_pps())?;
        e.set_item("calls", s.calls)?;
        e.set_item("retries", s.retries)?;
        e.set_item("first_ns", s.first_ns)?;
        e.set_item("last_ns", s.last_ns)?;
        e.set_item("cpu", s.cpu)?;
        e.set_item("loop_allocations", s.loop_allocations)?;
        per.append(e)?;
    }
    d.set_item("per_sender", per)?;
    Ok(d)
}

/// Send UDP datagrams to `host:port` at `rate` per second (see `crate::perf::generator`) and
/// return the report dict. Ctrl-C stops the senders and raises KeyboardInterrupt.
#[pyfunction]
#[pyo3(signature = (host, port, rate, *, packets=None, duration_ms=None, frame_size=64,
                    senders=1, batch=64, start_delay_ms=0, cpus=None))]
#[allow(clippy::too_many_arguments)]
pub fn udp_generate<'py>(
    py: Python<'py>,
    host: &str,
    port: u16,
    rate: u64,
    packets: Option<u64>,
    duration_ms: Option<u64>,
    frame_size: usize,
    senders: usize,
    batch: usize,
    start_delay_ms: u64,
    cpus: Option<Vec<usize>>,
) -> PyResult<Bound<'py, PyDict>> {
    let dest = py
        .detach(|| generator::resolve(host, port))
        .map_err(to_py)?;
    let cfg = Config {
        packets,
        duration: duration_ms.map(Duration::from_millis),
        frame_size,
        senders,
        batch,
        start_delay: Duration::from_millis(start_delay_ms),
        cpus: cpus.unwrap_or_default(),
        ..Config::new(dest, rate)
    };
    // Ctrl-C: the calling thread checks for signals while the senders run; an exception
    // from a handler stops them and is raised here.
    let result = gil::interruptible(py, false, |stop| match generator::run(&cfg, stop) {
        Err(GeneratorError::Interrupted) => Ok(None),
        other => Ok(Some(other)),
    })?;
    report_dict(py, &cfg, &result.map_err(to_py)?)
}
