//! The one statistics type to Python dicts, with the one `schema_version`.
//!
//! Every read, reduce and capture reports [`Stats`] as
//! `{schema_version, state, source, timing, packets, bytes, queue, pcap, stop_reason, error,
//! truncated, oversized_records}`; `packets` has `enqueued` and `delivered` when there is a queue. A fan-out
//! reports [`FanOutStats`] from the same parts (timing, queue counters, errors).

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::python::error::failure_parts;
use crate::source::{PcapCounters, SourceInfo};
use crate::stats::{Failure, FanOutStats, QueueStats, Stats, Timing, SCHEMA_VERSION};

fn source_dict<'py>(py: Python<'py>, info: &SourceInfo) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match info {
        SourceInfo::Device(name) => {
            d.set_item("type", "device")?;
            d.set_item("name", name)?;
        }
        SourceInfo::Path(path) => {
            d.set_item("type", "path")?;
            d.set_item("path", path.to_string_lossy())?;
        }
    }
    Ok(d)
}

fn timing_dict(py: Python<'_>, t: Timing) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("started_at_ms", t.started_at_ms)?;
    d.set_item("elapsed_ms", t.elapsed_ms)?;
    Ok(d)
}

/// The kernel's counters: `{received, dropped, interface_dropped}` (`on_stats`).
pub fn pcap_dict(py: Python<'_>, p: PcapCounters) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("received", p.received)?;
    d.set_item("dropped", p.dropped)?;
    d.set_item("interface_dropped", p.interface_dropped)?;
    Ok(d)
}

/// The fields every bounded queue reports: policy, capacity, depth, blocking.
fn buffer_dict<'py>(py: Python<'py>, q: &QueueStats) -> PyResult<Bound<'py, PyDict>> {
    let c = &q.counters;
    let d = PyDict::new(py);
    d.set_item("mode", q.mode.as_str())?;
    d.set_item("capacity", q.capacity)?;
    d.set_item("depth", c.depth)?;
    d.set_item("max_depth", c.max_depth)?;
    d.set_item("blocked_events", c.blocked_events)?;
    d.set_item("blocked_ns", c.blocked_ns)?;
    Ok(d)
}

/// A capture's queue block (`on_queue_stats`).
pub fn queue_dict<'py>(py: Python<'py>, q: &QueueStats) -> PyResult<Bound<'py, PyDict>> {
    let c = &q.counters;
    let d = buffer_dict(py, q)?;
    d.set_item("enqueued", c.enqueued)?;
    d.set_item("dropped", c.dropped)?;
    d.set_item("abandoned", c.abandoned)?;
    d.set_item("cancelled", c.cancelled)?;
    Ok(d)
}

fn error_obj<'py>(py: Python<'py>, f: Option<&Failure>) -> PyResult<Bound<'py, PyAny>> {
    let Some(f) = f else {
        return Ok(py.None().into_bound(py));
    };
    let (class, message) = failure_parts(f);
    let d = PyDict::new(py);
    d.set_item("class", class)?;
    d.set_item("message", message)?;
    Ok(d.into_any())
}

/// The statistics dict of a read, a reduce or a capture.
pub fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("schema_version", SCHEMA_VERSION)?;
    d.set_item("state", s.state.as_str())?;
    d.set_item("source", source_dict(py, &s.source)?)?;
    d.set_item("timing", timing_dict(py, s.timing)?)?;
    let p = PyDict::new(py);
    p.set_item("captured", s.captured)?;
    if let Some(q) = &s.queue {
        p.set_item("enqueued", q.counters.enqueued)?;
        p.set_item("delivered", q.counters.delivered)?;
    }
    p.set_item("processed", s.processed)?;
    p.set_item("decode_errors", s.decode_errors)?;
    d.set_item("packets", p)?;
    d.set_item("bytes", s.bytes)?;
    match &s.queue {
        Some(q) => d.set_item("queue", queue_dict(py, q)?)?,
        None => d.set_item("queue", py.None())?,
    }
    match s.pcap {
        Some(c) => d.set_item("pcap", pcap_dict(py, c)?)?,
        None => d.set_item("pcap", py.None())?,
    }
    d.set_item("stop_reason", s.stop_reason.map(|r| r.as_str()))?;
    d.set_item("error", error_obj(py, s.error.as_ref())?)?;
    d.set_item("truncated", s.truncated)?;
    d.set_item("oversized_records", s.oversized_records)?;
    Ok(d)
}

/// The statistics dict of a fan-out.
pub fn fan_out_dict<'py>(py: Python<'py>, s: &FanOutStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("schema_version", SCHEMA_VERSION)?;
    d.set_item("state", s.state.as_str())?;
    d.set_item("timing", timing_dict(py, s.timing)?)?;
    let src = PyDict::new(py);
    src.set_item("received", s.received)?;
    d.set_item("source", src)?;
    let branches = PyDict::new(py);
    for b in &s.branches {
        let c = &b.queue.counters;
        let bd = PyDict::new(py);
        bd.set_item("state", b.state.as_str())?;
        bd.set_item("offered", c.offered)?;
        bd.set_item("enqueued", c.enqueued)?;
        bd.set_item("delivered", c.delivered)?;
        bd.set_item("dropped", c.dropped)?;
        bd.set_item("cancelled", c.cancelled)?;
        bd.set_item("abandoned", c.abandoned)?;
        bd.set_item("buffer", buffer_dict(py, &b.queue)?)?;
        bd.set_item("stop_reason", b.stop_reason)?;
        bd.set_item("error", error_obj(py, b.error.as_ref())?)?;
        branches.set_item(&b.name, bd)?;
    }
    d.set_item("branches", branches)?;
    d.set_item("stop_reason", s.stop_reason.map(|r| r.as_str()))?;
    d.set_item("error", error_obj(py, s.error.as_ref())?)?;
    d.set_item("cancel_error", py.None())?;
    Ok(d)
}
