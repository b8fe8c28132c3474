//! `flow_stream`: the flow meter over capture files, yielding expired flows as pyarrow
//! RecordBatches while it reads.

use std::path::PathBuf;
use std::sync::Mutex;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_schema::SchemaRef;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict, PyTuple};

use super::flow::{flow_options, make_filter, nonempty, to_pyarrow, warn_truncated};
use crate::flow::stream::{FileFlowStream, OwnedFilterFactory, Pull};
use crate::flow::{FlowTable, PacketFilter};
use crate::pcap::FileReader;

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

impl Counters {
    fn of(table: &FlowTable, rows: u64) -> Self {
        let (packets, not_aggregated) = table.counts();
        Counters {
            packets,
            not_aggregated,
            live: table.live(),
            evicted: table.evicted(),
            rows,
        }
    }
}

/// Expired flows as pyarrow RecordBatches, then the flows still live at the end (an
/// iterator; Ctrl-C raises KeyboardInterrupt while it reads and the stream stays usable).
#[pyclass(module = "paclo._paclo", frozen)]
pub struct FlowStream {
    schema: SchemaRef,
    inner: Mutex<Option<FileFlowStream>>,
    counters: Mutex<Counters>,
}

impl FlowStream {
    fn busy() -> PyErr {
        PyRuntimeError::new_err("this flow stream is being read by another thread")
    }

    fn record(&self, c: Counters) {
        *self.counters.lock().unwrap_or_else(|p| p.into_inner()) = c;
    }
}

#[pymethods]
impl FlowStream {
    /// The schema of every batch, as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let ffi = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        PyCapsule::new_with_value(py, ffi, c"arrow_schema")
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch of flows. Reads with the GIL released, checking for signals
    /// between chunks of records.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut guard = self.inner.try_lock().map_err(|_| Self::busy())?;
        let Some(s) = guard.as_mut() else {
            return Ok(None);
        };
        let rows = self.counters.lock().unwrap_or_else(|p| p.into_inner()).rows;
        let batch = loop {
            let pulled = py.detach(|| s.pull());
            warn_truncated(py, s.take_warning())?;
            match pulled {
                Ok(Pull::Batch(b)) => break b,
                Ok(Pull::Pending) => {
                    self.record(Counters::of(s.table(), rows));
                    py.check_signals()?;
                }
                Ok(Pull::End) => {
                    self.record(Counters::of(s.table(), rows));
                    *guard = None;
                    return Ok(None);
                }
                Err(e) => {
                    self.record(Counters::of(s.table(), rows));
                    *guard = None;
                    return Err(e.into());
                }
            }
        };
        self.record(Counters::of(s.table(), rows + batch.num_rows() as u64));
        Ok(Some(to_pyarrow(py, self.schema.clone(), batch)?))
    }

    /// Counters so far: `packets` (read after the filter), `packets_not_aggregated`,
    /// `flows_live`, `flows_evicted`, `flows_yielded`.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = *self.counters.lock().unwrap_or_else(|p| p.into_inner());
        let d = PyDict::new(py);
        d.set_item("packets", c.packets)?;
        d.set_item("packets_not_aggregated", c.not_aggregated)?;
        d.set_item("flows_live", c.live)?;
        d.set_item("flows_evicted", c.evicted)?;
        d.set_item("flows_yielded", c.rows)?;
        Ok(d)
    }

    /// End the stream now: the file is closed and no more batches come.
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

/// A flow meter over `paths` (one capture, in order), yielding batches of at most
/// `batch_rows` expired flows.
#[pyfunction]
#[pyo3(signature = (
    paths, *, bidirectional = false, idle_timeout = None, active_timeout = None, filter = None,
    features = Vec::new(), splt = 10, max_flows = None, batch_rows = 65536,
))]
#[allow(clippy::too_many_arguments)]
fn flow_stream(
    paths: Vec<PathBuf>,
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    filter: Option<String>,
    features: Vec<String>,
    splt: u32,
    max_flows: Option<usize>,
    batch_rows: usize,
) -> PyResult<FlowStream> {
    let paths = nonempty(paths)?;
    if batch_rows == 0 {
        return Err(PyValueError::new_err(
            "batch_rows must be a positive integer",
        ));
    }
    let opts = flow_options(
        bidirectional,
        idle_timeout,
        active_timeout,
        features,
        splt,
        max_flows,
        true,
    )?;
    let factory: OwnedFilterFactory = Box::new(move |r: &FileReader| {
        make_filter(filter.as_deref(), r).map(|f| f as Box<dyn PacketFilter + Send>)
    });
    let stream = FileFlowStream::new(paths, factory, FlowTable::new(opts), batch_rows)?;
    Ok(FlowStream {
        schema: stream.schema(),
        counters: Mutex::new(Counters::of(stream.table(), 0)),
        inner: Mutex::new(Some(stream)),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<FlowStream>()?;
    m.add_function(wrap_pyfunction!(flow_stream, m)?)?;
    Ok(())
}
