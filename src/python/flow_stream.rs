//! `flow_stream`: the flow meter over capture files or a live device, yielding expired
//! flows as pyarrow RecordBatches while it reads (a thin wrapper of
//! [`crate::flow::stream::FlowStream`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use arrow_schema::SchemaRef;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use super::convert::options::SourceArg;
use super::convert::stats::stats_dict;
use super::flows::{flow_options, nonempty, positive, warn};
use super::interop::{schema_capsule, to_pyarrow};
use crate::error::Result;
use crate::flow::stream::{file_stream, FlowStream as CoreStream};
use crate::flow::{FlowTable, Notices, Pull};
use crate::source::PacketSource;
use crate::stats::Stats;

/// The meter's counters: packets, packets in no flow, live flows, evicted flows, rows
/// yielded.
#[derive(Clone, Copy, Default)]
struct Counters {
    packets: u64,
    not_aggregated: u64,
    live: usize,
    evicted: u64,
    rows: u64,
}

/// A flow stream over any source, seen through one object-safe trait.
trait Meter: Send {
    fn pull(&mut self) -> Result<Pull>;
    fn stop(&mut self);
    fn take_notices(&mut self) -> Notices;
    fn table(&self) -> &FlowTable;
    fn stats(&self) -> Option<Stats>;
}

impl<S: PacketSource> Meter for CoreStream<S> {
    fn pull(&mut self) -> Result<Pull> {
        CoreStream::pull(self)
    }
    fn stop(&mut self) {
        CoreStream::stop(self);
    }
    fn take_notices(&mut self) -> Notices {
        CoreStream::take_notices(self)
    }
    fn table(&self) -> &FlowTable {
        CoreStream::table(self)
    }
    fn stats(&self) -> Option<Stats> {
        CoreStream::stats(self)
    }
}

/// A snapshot for `stats()`, kept outside the stream's lock so that it reads while a
/// batch is being read.
#[derive(Clone, Default)]
struct Snapshot {
    counters: Counters,
    source: Option<Stats>,
}

impl Snapshot {
    fn of(m: &dyn Meter, rows: u64) -> Self {
        let t = m.table();
        let (packets, not_aggregated) = t.counts();
        Snapshot {
            counters: Counters {
                packets,
                not_aggregated,
                live: t.live(),
                evicted: t.evicted(),
                rows,
            },
            source: m.stats(),
        }
    }
}

/// Expired flows as pyarrow RecordBatches, then the flows still live at the end (an
/// iterator; Ctrl-C raises KeyboardInterrupt while it reads and the stream stays usable).
#[pyclass(module = "paclo._paclo", frozen)]
pub struct FlowStream {
    schema: SchemaRef,
    inner: Mutex<Option<Box<dyn Meter>>>,
    snapshot: Mutex<Snapshot>,
    stop_requested: AtomicBool,
}

impl FlowStream {
    fn busy() -> PyErr {
        PyRuntimeError::new_err("this flow stream is being read by another thread")
    }

    fn record(&self, s: Snapshot) {
        *self.snapshot.lock().unwrap_or_else(|p| p.into_inner()) = s;
    }

    fn rows(&self) -> u64 {
        self.snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .counters
            .rows
    }
}

#[pymethods]
impl FlowStream {
    /// The schema of every batch, as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch of flows. Reads with the GIL released, checking for signals and
    /// for `stop()` between chunks of records and while a device is idle.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut guard = self.inner.try_lock().map_err(|_| Self::busy())?;
        let Some(s) = guard.as_mut() else {
            return Ok(None);
        };
        let rows = self.rows();
        let batch = loop {
            if self.stop_requested.load(Ordering::Relaxed) {
                s.stop();
            }
            let pulled = py.detach(|| s.pull());
            warn(py, s.take_notices())?;
            match pulled {
                Ok(Pull::Batch(b)) => break b,
                Ok(Pull::Pending) => {
                    self.record(Snapshot::of(s.as_ref(), rows));
                    py.check_signals()?;
                }
                Ok(Pull::End) => {
                    self.record(Snapshot::of(s.as_ref(), rows));
                    *guard = None;
                    return Ok(None);
                }
                Err(e) => {
                    self.record(Snapshot::of(s.as_ref(), rows));
                    *guard = None;
                    return Err(e.into());
                }
            }
        };
        self.record(Snapshot::of(s.as_ref(), rows + batch.num_rows() as u64));
        Ok(Some(to_pyarrow(py, self.schema.clone(), batch)?))
    }

    /// Counters so far: `packets` (read after the filter), `packets_not_aggregated`,
    /// `flows_live`, `flows_evicted`, `flows_yielded`, and `source`, the statistics of
    /// the pass being read (or read last; docs/stats.md), or None before the first.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let snap = self
            .snapshot
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let c = snap.counters;
        let d = PyDict::new(py);
        d.set_item("packets", c.packets)?;
        d.set_item("packets_not_aggregated", c.not_aggregated)?;
        d.set_item("flows_live", c.live)?;
        d.set_item("flows_evicted", c.evicted)?;
        d.set_item("flows_yielded", c.rows)?;
        match &snap.source {
            Some(s) => d.set_item("source", stats_dict(py, s)?)?,
            None => d.set_item("source", py.None())?,
        }
        Ok(d)
    }

    /// Stop reading (asynchronous, idempotent): the flows still live are yielded as
    /// the last batches (reason `"end"`, or `"idle"` past their timeout).
    fn stop(&self) {
        self.stop_requested.store(true, Ordering::Relaxed);
    }

    /// End the stream now: the source is closed and no more batches come.
    fn close(&self) -> PyResult<()> {
        *self.inner.try_lock().map_err(|_| Self::busy())? = None;
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }
}

/// A flow meter over `source` (paths read in order as one capture, or a live device),
/// yielding batches of at most `batch_rows` expired flows.
#[pyfunction]
#[pyo3(signature = (
    source, *, bidirectional = false, idle_timeout = None, active_timeout = None, filter = None,
    features = Vec::new(), splt = 10, max_flows = None, batch_rows = 65536,
))]
#[allow(clippy::too_many_arguments)]
pub fn flow_stream(
    py: Python<'_>,
    source: SourceArg,
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    filter: Option<String>,
    features: Vec<String>,
    splt: u32,
    max_flows: Option<usize>,
    batch_rows: usize,
) -> PyResult<FlowStream> {
    let batch_rows = positive("batch_rows", batch_rows)?;
    let opts = flow_options(
        bidirectional,
        idle_timeout,
        active_timeout,
        &features,
        splt,
        max_flows,
        true,
        true,
    )?;
    let table = FlowTable::new(opts);
    let meter: Box<dyn Meter> = match source {
        SourceArg::Files(paths) => {
            let paths = nonempty(paths)?;
            Box::new(py.detach(|| file_stream(paths, filter, table, batch_rows))?)
        }
        SourceArg::Device(live) => {
            let lp = live.open(py, filter.as_deref())?;
            let none: crate::flow::stream::NextPass<Box<dyn PacketSource>> = Box::new(|| Ok(None));
            Box::new(CoreStream::new(lp, none, table, batch_rows))
        }
    };
    let schema = meter.table().schema();
    Ok(FlowStream {
        schema: std::sync::Arc::new(schema),
        snapshot: Mutex::new(Snapshot::of(meter.as_ref(), 0)),
        inner: Mutex::new(Some(meter)),
        stop_requested: AtomicBool::new(false),
    })
}
