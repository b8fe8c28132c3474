//! Interop: Arrow record batches leave Rust through the Arrow PyCapsule interface.
//!
//! [`ArrowStream`] exposes `__arrow_c_stream__` and `__arrow_c_schema__`, which pyarrow,
//! polars and duckdb import without copying, and iterates as pyarrow RecordBatches.

use std::sync::Mutex;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::SchemaRef;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use super::error::warn_oversized;
use crate::error::Result;
use crate::flow::{columns, Pull, RawBatches};
use crate::source::PacketSource;

type BoxedReader = Box<dyn RecordBatchReader + Send>;

/// Raw packets of a pass, read batch by batch as they are asked for: a
/// [`RawBatches`] over any source, seen through one object-safe trait.
pub trait PullBatches: Send {
    /// The next batch, [`Pull::Pending`] after a chunk of records, or the end.
    ///
    /// # Errors
    /// A source error, after the rows read before it.
    fn pull(&mut self) -> Result<Pull>;

    /// The warning about records read whole although longer than their snaplen, once.
    fn take_oversized(&mut self) -> Option<String>;

    /// The rest of the batches as an Arrow reader (for the C stream export).
    fn into_reader(self: Box<Self>) -> BoxedReader;
}

impl<S: PacketSource + 'static> PullBatches for RawBatches<S> {
    fn pull(&mut self) -> Result<Pull> {
        RawBatches::pull(self)
    }

    fn take_oversized(&mut self) -> Option<String> {
        RawBatches::take_oversized(self)
    }

    fn into_reader(self: Box<Self>) -> BoxedReader {
        self
    }
}

/// A lazily read stream: its batches, and a batch converted for Python but held back by
/// a signal (returned next).
pub struct RawStream {
    batches: Box<dyn PullBatches>,
    ready: Option<Py<PyAny>>,
}

/// What an [`ArrowStream`] holds until it is consumed.
enum Content {
    /// Batches built already, or any other reader.
    Batches(BoxedReader),
    /// The raw packets of a pass, read as they are asked for.
    Raw(RawStream),
}

/// A stream of Arrow record batches, exported once through the Arrow PyCapsule interface,
/// or iterated as pyarrow RecordBatches (the stream of `read_batches` is read as it is
/// iterated, and checks for signals while it reads).
#[pyclass(module = "paclo._paclo", frozen)]
pub struct ArrowStream {
    schema: SchemaRef,
    reader: Mutex<Option<Content>>,
}

impl ArrowStream {
    /// A stream of batches built already.
    pub fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        let it = RecordBatchIterator::new(batches.into_iter().map(Ok), schema.clone());
        ArrowStream {
            schema,
            reader: Mutex::new(Some(Content::Batches(Box::new(it)))),
        }
    }
}

#[pymethods]
impl ArrowStream {
    /// The schema as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }

    /// The batches as an `arrow_array_stream` capsule (once; the stream is then consumed).
    /// `requested_schema` is accepted and not applied, as the interface allows.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader: BoxedReader = match self
            .reader
            .try_lock()
            .map_err(|_| {
                PyRuntimeError::new_err("this Arrow stream is being read by another thread")
            })?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("this Arrow stream was already consumed"))?
        {
            Content::Batches(r) => r,
            Content::Raw(r) => r.batches.into_reader(),
        };
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(reader), c"arrow_array_stream")
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next batch as a pyarrow RecordBatch (pyarrow is imported on first use). A
    /// `read_batches` stream reads with the GIL released and checks for signals between
    /// chunks of records and before it returns a batch, so Ctrl-C raises
    /// KeyboardInterrupt here and loses no batch: the stream stays open and goes on where
    /// it stopped. At the end or after an error the file is closed.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut guard = self.reader.try_lock().map_err(|_| {
            PyRuntimeError::new_err("this Arrow stream is being read by another thread")
        })?;
        let batch = match guard.as_mut() {
            None => return Ok(None),
            Some(Content::Batches(r)) => match r.next() {
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    *guard = None;
                    return Err(PyRuntimeError::new_err(e.to_string()));
                }
                None => {
                    *guard = None;
                    return Ok(None);
                }
            },
            Some(Content::Raw(raw)) => {
                if let Some(b) = raw.ready.take() {
                    return Ok(Some(b));
                }
                loop {
                    match py.detach(|| raw.batches.pull()) {
                        Ok(Pull::Batch(b)) => break b,
                        Ok(Pull::Pending) => py.check_signals()?,
                        Ok(Pull::End) => {
                            *guard = None;
                            return Ok(None);
                        }
                        Err(e) => {
                            *guard = None;
                            return Err(e.into());
                        }
                    }
                }
            }
        };
        let out = to_pyarrow(py, self.schema.clone(), batch)?;
        if let Some(Content::Raw(raw)) = guard.as_mut() {
            if let Some(m) = raw.batches.take_oversized() {
                if let Err(e) = warn_oversized(py, &m, 1) {
                    raw.ready = Some(out);
                    return Err(e);
                }
            }
            // A signal that arrived while the batch was read: raise now, keep the batch.
            if let Err(e) = py.check_signals() {
                raw.ready = Some(out);
                return Err(e);
            }
        }
        Ok(Some(out))
    }
}

impl ArrowStream {
    /// A stream read batch by batch as it is iterated or exported.
    pub fn lazy(batches: Box<dyn PullBatches>) -> Self {
        ArrowStream {
            schema: columns::raw_schema(),
            reader: Mutex::new(Some(Content::Raw(RawStream {
                batches,
                ready: None,
            }))),
        }
    }
}

/// `schema` as an `arrow_schema` capsule.
pub fn schema_capsule<'py>(py: Python<'py>, schema: &SchemaRef) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    PyCapsule::new_with_value(py, ffi, c"arrow_schema")
}

/// `batch` as a pyarrow RecordBatch (through the PyCapsule interface, no copy; pyarrow is
/// imported on first use).
pub fn to_pyarrow(py: Python<'_>, schema: SchemaRef, batch: RecordBatch) -> PyResult<Py<PyAny>> {
    let one = ArrowStream::from_batches(schema, vec![batch]);
    Ok(py
        .import("pyarrow")?
        .getattr("RecordBatchReader")?
        .call_method1("from_stream", (one,))?
        .call_method0("read_next_batch")?
        .unbind())
}
