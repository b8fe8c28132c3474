//! Flow projection, flow tables, top-n flows and raw batches, over files or a device:
//! thin wrappers of the core's flow loops, run with the GIL released.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::options::{LiveArg, SourceArg};
use super::error::{warn_oversized, warn_truncated};
use super::gil::interruptible;
use super::interop::ArrowStream;
use crate::flow::text::{endpoint, proto_name};
use crate::flow::{
    self, columns, flows_source, project_source, FlowOptions, FlowTable, FlowTuple, Notices,
    RawBatches, Walk,
};
use crate::pcap::FileReader;
use crate::source::{Limits, SourceLoop};

/// Rows of a projection batch read from a device (a file's batches are sized by the file).
const LIVE_BATCH_ROWS: usize = 65_536;

/// Warn about what a walk noticed: one warning per file with records longer than their
/// snaplen, then the first truncated last record.
fn warn(py: Python<'_>, notices: Notices) -> PyResult<()> {
    for m in &notices.oversized {
        warn_oversized(py, m, 2)?;
    }
    match notices.truncated {
        Some(e) => warn_truncated(py, &e, "every complete packet before it was used", 2),
        None => Ok(()),
    }
}

fn nonempty(paths: Vec<PathBuf>) -> PyResult<Vec<PathBuf>> {
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "source must name at least one capture file",
        ));
    }
    Ok(paths)
}

fn positive(name: &str, n: usize) -> PyResult<usize> {
    if n == 0 {
        return Err(PyValueError::new_err(format!(
            "{name} must be a positive integer"
        )));
    }
    Ok(n)
}

/// Project the packets of `source` (paths, or a live device) into an Arrow stream. A
/// file's batches default to 2^20 rows: large batches let the columns sit on huge pages,
/// which removes most of the cost of filling fresh memory.
#[pyfunction]
#[pyo3(signature = (source, *, filter = None, batch_size = 1_048_576))]
pub fn flow_project(
    py: Python<'_>,
    source: SourceArg,
    filter: Option<String>,
    batch_size: usize,
) -> PyResult<ArrowStream> {
    let batch_size = positive("batch_size", batch_size)?;
    let filter = filter.as_deref();
    let (batches, notices) = match source {
        SourceArg::Files(paths) => {
            let paths = nonempty(paths)?;
            interruptible(py, paths.len() > 1, |stop| {
                flow::project_files(&paths, filter, batch_size, stop)
            })?
        }
        SourceArg::Device(live) => {
            let mut lp = live.open(py, filter)?;
            let rows = batch_size.min(LIVE_BATCH_ROWS);
            interruptible(py, false, |stop| project_source(&mut lp, rows, stop))?
        }
    };
    warn(py, notices)?;
    Ok(ArrowStream::from_batches(
        columns::projection_schema(),
        batches,
    ))
}

fn seconds_to_ns(name: &str, v: Option<f64>) -> PyResult<Option<i64>> {
    match v {
        None => Ok(None),
        Some(s) if s.is_finite() && s > 0.0 && s < 9.2e9 => Ok(Some((s * 1e9).round() as i64)),
        Some(s) => Err(PyValueError::new_err(format!(
            "{name} must be a positive number of seconds or None, not {s}"
        ))),
    }
}

fn build_table(
    py: Python<'_>,
    source: SourceArg,
    filter: Option<String>,
    opts: FlowOptions,
) -> PyResult<FlowTable> {
    let filter = filter.as_deref();
    let (table, notices) = match source {
        SourceArg::Files(paths) => {
            let paths = nonempty(paths)?;
            interruptible(py, paths.len() > 1, |stop| {
                flow::flows_files(&paths, filter, opts, stop)
            })?
        }
        SourceArg::Device(live) => device_table(py, live, filter, opts)?,
    };
    warn(py, notices)?;
    Ok(table)
}

fn device_table(
    py: Python<'_>,
    live: LiveArg,
    filter: Option<&str>,
    opts: FlowOptions,
) -> PyResult<(FlowTable, Notices)> {
    let mut lp = live.open(py, filter)?;
    interruptible(py, false, |stop| {
        let mut table = FlowTable::new(opts);
        Ok(match flows_source(&mut lp, &mut table, stop)? {
            Walk::Done => Some((table, Notices::default())),
            Walk::Stopped => None,
        })
    })
}

/// Aggregate the packets of `source` into a flow table (an Arrow stream of one batch).
#[pyfunction]
#[pyo3(signature = (source, *, bidirectional = false, idle_timeout = None, active_timeout = None, filter = None))]
pub fn flow_table(
    py: Python<'_>,
    source: SourceArg,
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    filter: Option<String>,
) -> PyResult<ArrowStream> {
    let opts = FlowOptions {
        bidirectional,
        idle_timeout_ns: seconds_to_ns("idle_timeout", idle_timeout)?,
        active_timeout_ns: seconds_to_ns("active_timeout", active_timeout)?,
        key_vlan: true,
    };
    let table = build_table(py, source, filter, opts)?;
    let batch = py.detach(|| table.to_batch());
    Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
}

/// The `n` largest flows as rows `{"flow": {"proto", "src", "dst"}, "packets", "bytes"}`,
/// plus (flows, packets) totals.
#[pyfunction]
#[pyo3(signature = (source, n, *, by_bytes, bidirectional, filter))]
pub fn flow_topn<'py>(
    py: Python<'py>,
    source: SourceArg,
    n: usize,
    by_bytes: bool,
    bidirectional: bool,
    filter: Option<String>,
) -> PyResult<(Bound<'py, PyList>, usize, u64)> {
    let opts = FlowOptions {
        bidirectional,
        ..Default::default()
    };
    let table = build_table(py, source, filter, opts)?;
    let (packets, _) = table.counts();
    let flows = table.len();
    let top: Vec<(FlowTuple, flow::FlowStats)> = py.detach(|| table.top(n, by_bytes));
    let out = PyList::empty(py);
    for (k, s) in top {
        let f = PyDict::new(py);
        match proto_name(k.protocol) {
            Some(name) => f.set_item("proto", name)?,
            None => f.set_item("proto", k.protocol)?,
        }
        f.set_item("src", endpoint(k.ip_version, &k.src, k.src_port))?;
        f.set_item("dst", endpoint(k.ip_version, &k.dst, k.dst_port))?;
        let row = PyDict::new(py);
        row.set_item("flow", f)?;
        row.set_item("packets", s.packets)?;
        row.set_item("bytes", s.bytes)?;
        out.append(row)?;
    }
    Ok((out, flows, packets))
}

/// Raw packets of `source` (one path, or a live device) as a lazy Arrow stream of batches
/// (iterated, or exported whole through the PyCapsule interface).
#[pyfunction]
#[pyo3(signature = (source, *, batch_size = 65536, filter = None))]
pub fn read_batches(
    py: Python<'_>,
    source: SourceArg,
    batch_size: usize,
    filter: Option<String>,
) -> PyResult<ArrowStream> {
    let batch_size = positive("batch_size", batch_size)?;
    let filter = filter.as_deref();
    Ok(match source {
        SourceArg::Files(paths) => {
            let [path] = paths.as_slice() else {
                return Err(PyValueError::new_err("read_batches reads one capture file"));
            };
            let lp = SourceLoop::new(FileReader::open(path)?, filter, Limits::default())?;
            ArrowStream::lazy(Box::new(RawBatches::new(lp, batch_size)))
        }
        SourceArg::Device(live) => {
            let lp = live.open(py, filter)?;
            ArrowStream::lazy(Box::new(RawBatches::new(lp, batch_size)))
        }
    })
}
