//! Flow projection, flow tables, top-n flows and raw batches, over files or a device:
//! thin wrappers of the core's flow loops, run with the GIL released.

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::options::{LiveArg, SourceArg};
use super::error::{warn_oversized, warn_truncated};
use super::gil::{interruptible, interruptible_progress, WalkProgress};
use super::interop::ArrowStream;
use super::progress::ProgressSink;
use crate::flow::parallel;
use crate::flow::text::{endpoint, proto_name};
use crate::flow::{
    self, columns, flows_source, project_source, project_source_with_ids, FeatureSpec, FlowOptions,
    FlowTable, FlowTuple, Notices, RawBatches, Walk,
};
use crate::pcap::FileReader;
use crate::source::{Limits, SourceLoop};

/// Rows of a projection batch read from a device (a file's batches are sized by the file).
const LIVE_BATCH_ROWS: usize = 65_536;

/// Warn about what a walk noticed: one warning per file with records longer than their
/// snaplen, then the first truncated last record.
pub(crate) fn warn(py: Python<'_>, notices: Notices) -> PyResult<()> {
    for m in &notices.oversized {
        warn_oversized(py, m, 2)?;
    }
    match notices.truncated {
        Some(e) => warn_truncated(py, &e, "every complete packet before it was used", 2),
        None => Ok(()),
    }
}

pub(crate) fn nonempty(paths: Vec<PathBuf>) -> PyResult<Vec<PathBuf>> {
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "source must name at least one capture file",
        ));
    }
    Ok(paths)
}

/// The display for `progress` over `paths` (their total size), or an error for a device,
/// which has no size to report against.
fn file_progress(
    progress: Option<Py<PyAny>>,
    source: &SourceArg,
) -> PyResult<Option<WalkProgress>> {
    let Some(sink) = ProgressSink::new(progress) else {
        return Ok(None);
    };
    match source {
        SourceArg::Files(paths) => {
            // A file that cannot be opened fails the walk itself, with its own message.
            let total = paths
                .iter()
                .filter_map(|p| std::fs::metadata(p).ok())
                .map(|m| m.len())
                .sum();
            Ok(WalkProgress::new(Some(sink), total))
        }
        SourceArg::Device(_) => Err(PyValueError::new_err(
            "progress reports the bytes read of capture files; a device has none",
        )),
    }
}

/// The threads that read one capture file: `threads` (checked positive; `None` is every
/// core). A device is read on one thread: it takes no other value.
fn file_threads(threads: Option<usize>, source: &SourceArg) -> PyResult<usize> {
    if let Some(n) = threads {
        positive("threads", n)?;
    }
    match source {
        SourceArg::Files(_) => Ok(parallel::resolve_threads(threads)),
        SourceArg::Device(_) if threads.is_none_or(|n| n == 1) => Ok(1),
        SourceArg::Device(_) => Err(PyValueError::new_err(
            "threads applies to capture files: a device is read on one thread",
        )),
    }
}

pub(crate) fn positive(name: &str, n: usize) -> PyResult<usize> {
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
///
/// With `flow_id`, files are read in order and a `flow_id` column holds each packet's
/// flow id in the flow table of the same options (`bidirectional`, timeouts,
/// `max_flows`). `progress` (files only) is told the bytes read of the files' total size.
#[pyfunction]
#[pyo3(signature = (
    source, *, filter = None, batch_size = 1_048_576, flow_id = false, bidirectional = false,
    idle_timeout = None, active_timeout = None, max_flows = None, progress = None, threads = None,
))]
#[allow(clippy::too_many_arguments)]
pub fn flow_project(
    py: Python<'_>,
    source: SourceArg,
    filter: Option<String>,
    batch_size: usize,
    flow_id: bool,
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    max_flows: Option<usize>,
    progress: Option<Py<PyAny>>,
    threads: Option<usize>,
) -> PyResult<ArrowStream> {
    let batch_size = positive("batch_size", batch_size)?;
    let threads = file_threads(threads, &source)?;
    let progress = file_progress(progress, &source)?;
    let opts = flow_options(
        bidirectional,
        idle_timeout,
        active_timeout,
        &[],
        1,
        max_flows,
        false,
        false,
    )?;
    let filter = filter.as_deref();
    let (batches, notices) = match source {
        SourceArg::Files(paths) => {
            let paths = nonempty(paths)?;
            let one = paths.len() == 1;
            let parallel = (!one && !flow_id) || (one && threads > 1);
            interruptible_progress(py, parallel, progress.as_ref(), |stop| {
                match paths.as_slice() {
                    [path] if flow_id => parallel::project_file_with_ids(
                        path, filter, batch_size, opts, threads, stop,
                    ),
                    [path] => parallel::project_file(path, filter, batch_size, threads, stop),
                    _ if flow_id => {
                        flow::project_files_with_ids(&paths, filter, batch_size, opts, stop)
                    }
                    _ => flow::project_files(&paths, filter, batch_size, stop),
                }
            })?
        }
        SourceArg::Device(live) => {
            let mut lp = live.open(py, filter)?;
            let rows = batch_size.min(LIVE_BATCH_ROWS);
            interruptible(py, false, |stop| {
                if flow_id {
                    let mut table = FlowTable::new(opts);
                    project_source_with_ids(&mut lp, rows, &mut table, stop)
                } else {
                    project_source(&mut lp, rows, stop)
                }
            })?
        }
    };
    warn(py, notices)?;
    Ok(ArrowStream::from_batches(
        columns::projection_schema_with(flow_id),
        batches,
    ))
}

/// The options of a flow table or meter, checked: `features` names the feature groups
/// (`splt` packets for `"splt"`), `reasons` asks for `expiration_reason` always, `flow_id`
/// for the `flow_id` column.
#[allow(clippy::too_many_arguments)]
pub(crate) fn flow_options(
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    features: &[String],
    splt: u32,
    max_flows: Option<usize>,
    reasons: bool,
    flow_id: bool,
) -> PyResult<FlowOptions> {
    if max_flows == Some(0) {
        return Err(PyValueError::new_err(
            "max_flows must be a positive integer or None, not 0",
        ));
    }
    Ok(FlowOptions {
        bidirectional,
        idle_timeout_ns: seconds_to_ns("idle_timeout", idle_timeout)?,
        active_timeout_ns: seconds_to_ns("active_timeout", active_timeout)?,
        key_vlan: true,
        max_flows,
        features: FeatureSpec::parse(features, splt)?,
        reasons,
        flow_id,
    })
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
    progress: Option<Py<PyAny>>,
    threads: Option<usize>,
) -> PyResult<FlowTable> {
    let filter = filter.as_deref();
    let progress = file_progress(progress, &source)?;
    let threads = file_threads(threads, &source)?;
    let (table, notices) = match source {
        SourceArg::Files(paths) => {
            let paths = nonempty(paths)?;
            let parallel = paths.len() > 1 || (threads > 1 && !opts.ordered());
            interruptible_progress(py, parallel, progress.as_ref(), |stop| {
                match paths.as_slice() {
                    [path] => parallel::flows_file(path, filter, opts, threads, stop),
                    _ => flow::flows_files(&paths, filter, opts, stop),
                }
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

/// Aggregate the packets of `source` into a flow table (an Arrow stream of one batch),
/// with the feature groups `features` names; `progress` as for [`flow_project`].
#[pyfunction]
#[pyo3(signature = (
    source, *, bidirectional = false, idle_timeout = None, active_timeout = None, filter = None,
    features = Vec::new(), splt = 10, max_flows = None, flow_id = false, progress = None,
    threads = None,
))]
#[allow(clippy::too_many_arguments)]
pub fn flow_table(
    py: Python<'_>,
    source: SourceArg,
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    filter: Option<String>,
    features: Vec<String>,
    splt: u32,
    max_flows: Option<usize>,
    flow_id: bool,
    progress: Option<Py<PyAny>>,
    threads: Option<usize>,
) -> PyResult<ArrowStream> {
    let opts = flow_options(
        bidirectional,
        idle_timeout,
        active_timeout,
        &features,
        splt,
        max_flows,
        false,
        flow_id,
    )?;
    let table = build_table(py, source, filter, opts, progress, threads)?;
    let batch = py.detach(|| table.to_batch());
    Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
}

/// The `n` largest flows as rows `{"flow": {"proto", "src", "dst"}, "packets", "bytes"}`,
/// plus (flows, packets) totals; `progress` as for [`flow_project`].
#[pyfunction]
#[pyo3(signature = (source, n, *, by_bytes, bidirectional, filter, progress = None, threads = None))]
#[allow(clippy::too_many_arguments)]
pub fn flow_topn<'py>(
    py: Python<'py>,
    source: SourceArg,
    n: usize,
    by_bytes: bool,
    bidirectional: bool,
    filter: Option<String>,
    progress: Option<Py<PyAny>>,
    threads: Option<usize>,
) -> PyResult<(Bound<'py, PyList>, usize, u64)> {
    let opts = FlowOptions {
        bidirectional,
        ..Default::default()
    };
    let table = build_table(py, source, filter, opts, progress, threads)?;
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
