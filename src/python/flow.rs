//! Flow projection, flow tables and Arrow export.
//!
//! Tables leave Rust through the Arrow PyCapsule interface: [`ArrowStream`] exposes
//! `__arrow_c_stream__` and `__arrow_c_schema__`, which pyarrow, polars and duckdb import
//! without copying. Native loops run with the GIL released and check for signals
//! (Ctrl-C) between chunks of [`flow::CHUNK_RECORDS`] records.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use arrow_array::ffi::FFI_ArrowSchema;
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::{ArrowError, SchemaRef};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList, PyString};

use super::error::TruncatedCaptureWarning;
use crate::decode::addr;
use crate::decode::fastpath::{self, FlowFields};
use crate::error::{Error, Result};
use crate::flow::{
    self, columns, FeatureSpec, FlowKey, FlowOptions, FlowTable, KeepAll, PacketFilter,
    RawBatchBuilder, Stop,
};
use crate::pcap::bpf::FileFilter;
use crate::pcap::FileReader;
use crate::source::{PacketSource, RawPacket};

/// Interned dict keys of the flow dict, in their fixed order.
static KEYS: PyOnceLock<[Py<PyString>; 10]> = PyOnceLock::new();
const KEY_NAMES: [&str; 10] = [
    "ts_sec",
    "ts_usec",
    "caplen",
    "len",
    "ip_version",
    "protocol",
    "src_ip",
    "dst_ip",
    "src_port",
    "dst_port",
];
static DECODE_ERROR: PyOnceLock<Py<PyString>> = PyOnceLock::new();

/// The flat flow dict for `pkt`, and whether it carries a `decode_error`.
///
/// Keys in this order: `ts_sec, ts_usec, caplen, len, ip_version, protocol, src_ip, dst_ip,
/// src_port, dst_port`, then `decode_error` (a message) when the walk stopped on a cut or
/// invalid header. Addresses are 16-byte `bytes` (IPv4-mapped for IPv4), as in the tables;
/// fields that do not apply are `None`.
pub fn flow_dict<'py>(
    py: Python<'py>,
    pkt: &RawPacket<'_>,
) -> PyResult<(Bound<'py, PyDict>, bool)> {
    let keys = KEYS.get_or_init(py, || KEY_NAMES.map(|k| PyString::intern(py, k).unbind()));
    let mut f = FlowFields::default();
    fastpath::parse(pkt.linktype, pkt.data, &mut f);
    let d = PyDict::new(py);
    let k = |i: usize| keys[i].bind(py);
    d.set_item(k(0), pkt.ts_sec())?;
    d.set_item(k(1), pkt.ts_usec())?;
    d.set_item(k(2), pkt.caplen)?;
    d.set_item(k(3), pkt.wirelen)?;
    let l3 = f.ip_version != 0;
    d.set_item(k(4), l3.then_some(f.ip_version))?;
    d.set_item(k(5), f.has_protocol.then_some(f.protocol))?;
    d.set_item(k(6), l3.then(|| PyBytes::new(py, &f.src)))?;
    d.set_item(k(7), l3.then(|| PyBytes::new(py, &f.dst)))?;
    d.set_item(k(8), f.has_ports.then_some(f.src_port))?;
    d.set_item(k(9), f.has_ports.then_some(f.dst_port))?;
    if let Some(e) = f.error {
        let key = DECODE_ERROR.get_or_init(py, || PyString::intern(py, "decode_error").unbind());
        d.set_item(key.bind(py), e.message())?;
    }
    Ok((d, f.error.is_some()))
}

/// A BPF program applied to one file, compiled for each link type it meets.
struct Bpf(FileFilter);

impl PacketFilter for Bpf {
    #[inline]
    fn keep(&mut self, pkt: &RawPacket<'_>) -> Result<bool> {
        self.0.matches(pkt)
    }
}

/// The filter for `reader`'s file: compiled now, so a bad expression fails before any
/// packet is read.
pub(crate) fn make_filter(expr: Option<&str>, reader: &FileReader) -> Result<Box<dyn PacketFilter + Send>> {
    match expr {
        None => Ok(Box::new(KeepAll)),
        Some(e) => {
            let linktype = reader.linktype().unwrap_or(fastpath::linktype::ETHERNET);
            Ok(Box::new(Bpf(FileFilter::new(
                e,
                linktype,
                reader.snaplen().max(1),
            )?)))
        }
    }
}

pub(crate) fn warn_truncated(py: Python<'_>, warn: Option<Error>) -> PyResult<()> {
    if let Some(e) = warn {
        let message = CString::new(format!("{e}; every complete packet before it was used"))
            .unwrap_or_default();
        PyErr::warn(py, &py.get_type::<TruncatedCaptureWarning>(), &message, 2)?;
    }
    Ok(())
}

type BoxedReader = Box<dyn RecordBatchReader + Send>;

/// What an [`ArrowStream`] holds until it is consumed.
enum Content {
    /// Batches built already, or any other reader.
    Batches(BoxedReader),
    /// The raw packets of a file, read as they are asked for.
    Raw(Box<RawReader>),
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
    fn from_batches(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
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
        let ffi = FFI_ArrowSchema::try_from(self.schema.as_ref())
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        PyCapsule::new_with_value(py, ffi, c"arrow_schema")
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
            Content::Raw(r) => r,
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
                    match py.detach(|| raw.pull()) {
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
            // A signal that arrived while the batch was read: raise now, keep the batch.
            if let Err(e) = py.check_signals() {
                raw.ready = Some(out);
                return Err(e);
            }
        }
        Ok(Some(out))
    }
}

/// `batch` as a pyarrow RecordBatch (through the PyCapsule interface, no copy; pyarrow is
/// imported on first use).
pub(crate) fn to_pyarrow(
    py: Python<'_>,
    schema: SchemaRef,
    batch: RecordBatch,
) -> PyResult<Py<PyAny>> {
    let one = ArrowStream::from_batches(schema, vec![batch]);
    Ok(py
        .import("pyarrow")?
        .getattr("RecordBatchReader")?
        .call_method1("from_stream", (one,))?
        .call_method0("read_next_batch")?
        .unbind())
}

/// How often a call waiting for worker threads wakes to check for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(10);

/// Run `work` with the GIL released, passing it a [`Stop`] check that runs the Python
/// signal handlers: the native loop calls it between chunks of records, and a handler's
/// exception (KeyboardInterrupt for Ctrl-C) ends the loop and is raised here.
///
/// With `parallel`, `work` (which fans out to rayon) runs on a scoped thread while this
/// thread wakes every [`SIGNAL_POLL`] to check for signals; on an exception it sets the
/// flag the workers' check reads and joins them before raising.
fn interruptible<T: Send>(
    py: Python<'_>,
    parallel: bool,
    work: impl FnOnce(Stop<'_>) -> Result<Option<T>> + Send,
) -> PyResult<T> {
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let result = if parallel {
        let stop = AtomicBool::new(false);
        let flag = || stop.load(Ordering::Relaxed);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = std::thread::current();
            let done = &done;
            let worker = s.spawn(move || {
                let out = work(&flag);
                // Set before the wake-up, so the waiter does not park again for nothing.
                done.store(true, Ordering::Release);
                waiter.unpark();
                out
            });
            while !done.load(Ordering::Acquire) && !worker.is_finished() {
                py.detach(|| std::thread::park_timeout(SIGNAL_POLL));
                if let Err(e) = py.check_signals() {
                    stop.store(true, Ordering::Relaxed);
                    *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    break;
                }
            }
            py.detach(|| worker.join())
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    } else {
        let check = || {
            Python::attach(|py| match py.check_signals() {
                Ok(()) => false,
                Err(e) => {
                    *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    true
                }
            })
        };
        py.detach(|| work(&check))
    };
    if let Some(e) = raised.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    result?.ok_or_else(|| PyRuntimeError::new_err("a native loop stopped without a signal"))
}

pub(crate) fn nonempty(paths: Vec<PathBuf>) -> PyResult<Vec<PathBuf>> {
    if paths.is_empty() {
        return Err(PyValueError::new_err(
            "source must name at least one capture file",
        ));
    }
    Ok(paths)
}

fn factory(filter: Option<String>) -> impl Fn(&FileReader) -> Result<Box<dyn PacketFilter>> + Sync {
    move |r| make_filter(filter.as_deref(), r).map(|f| f as Box<dyn PacketFilter>)
}

/// Project the packets of `paths` into an Arrow stream. Batches default to 2^20 rows:
/// large batches let the columns sit on huge pages, which removes most of the cost of
/// filling fresh memory.
///
/// With `flow_id`, the files are read in order and a `flow_id` column holds each
/// packet's flow id in the flow table of the same options (`bidirectional`, timeouts,
/// `max_flows`).
#[pyfunction]
#[pyo3(signature = (
    paths, *, filter = None, batch_size = 1_048_576, flow_id = false, bidirectional = false,
    idle_timeout = None, active_timeout = None, max_flows = None,
))]
#[allow(clippy::too_many_arguments)]
fn flow_project(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    filter: Option<String>,
    batch_size: usize,
    flow_id: bool,
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    max_flows: Option<usize>,
) -> PyResult<ArrowStream> {
    let paths = nonempty(paths)?;
    if batch_size == 0 {
        return Err(PyValueError::new_err(
            "batch_size must be a positive integer",
        ));
    }
    let make = factory(filter);
    let parallel = paths.len() > 1 && !flow_id;
    let opts = flow_options(
        bidirectional,
        idle_timeout,
        active_timeout,
        Vec::new(),
        1,
        max_flows,
        false,
    )?;
    let (batches, warn) = interruptible(py, parallel, |stop| {
        if flow_id {
            flow::project_files_with_ids(&paths, &make, batch_size, opts, stop)
        } else {
            flow::project_files(&paths, &make, batch_size, stop)
        }
    })?;
    warn_truncated(py, warn)?;
    Ok(ArrowStream::from_batches(
        columns::projection_schema_with(flow_id),
        batches,
    ))
}

/// `max_flows`, which must be positive when given.
pub(crate) fn check_max_flows(max_flows: Option<usize>) -> PyResult<Option<usize>> {
    match max_flows {
        Some(0) => Err(PyValueError::new_err(
            "max_flows must be a positive integer or None, not 0",
        )),
        m => Ok(m),
    }
}

/// The options of a flow table or meter, checked.
#[allow(clippy::too_many_arguments)]
pub(crate) fn flow_options(
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    features: Vec<String>,
    splt: u32,
    max_flows: Option<usize>,
    reasons: bool,
) -> PyResult<FlowOptions> {
    Ok(FlowOptions {
        bidirectional,
        idle_timeout_ns: seconds_to_ns("idle_timeout", idle_timeout)?,
        active_timeout_ns: seconds_to_ns("active_timeout", active_timeout)?,
        key_vlan: true,
        max_flows: check_max_flows(max_flows)?,
        features: FeatureSpec::parse(&features, splt)?,
        reasons,
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
    paths: Vec<PathBuf>,
    filter: Option<String>,
    opts: FlowOptions,
) -> PyResult<FlowTable> {
    let paths = nonempty(paths)?;
    let make = factory(filter);
    let parallel = paths.len() > 1;
    let (table, warn) = interruptible(py, parallel, |stop| {
        flow::flows_files(&paths, &make, opts, stop)
    })?;
    warn_truncated(py, warn)?;
    Ok(table)
}

/// Aggregate the packets of `paths` into a flow table (an Arrow stream of one batch),
/// with the feature groups `features` names.
#[pyfunction]
#[pyo3(signature = (
    paths, *, bidirectional = false, idle_timeout = None, active_timeout = None, filter = None,
    features = Vec::new(), splt = 10, max_flows = None,
))]
#[allow(clippy::too_many_arguments)]
fn flow_table(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    bidirectional: bool,
    idle_timeout: Option<f64>,
    active_timeout: Option<f64>,
    filter: Option<String>,
    features: Vec<String>,
    splt: u32,
    max_flows: Option<usize>,
) -> PyResult<ArrowStream> {
    let opts = flow_options(
        bidirectional,
        idle_timeout,
        active_timeout,
        features,
        splt,
        max_flows,
        false,
    )?;
    let table = build_table(py, paths, filter, opts)?;
    let batch = py.detach(|| table.to_batch());
    Ok(ArrowStream::from_batches(batch.schema(), vec![batch]))
}

const MAPPED_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// Text of a 16-byte address: dotted IPv4 for version 4, RFC 5952 IPv6 otherwise (an
/// IPv4-mapped IPv6 address in the mixed form `::ffff:a.b.c.d`, RFC 5952 §5).
fn write_addr(out: &mut String, version: u8, a: &[u8; 16]) {
    let v4 = [a[12], a[13], a[14], a[15]];
    if version == 4 {
        out.push_str(addr::ipv4(&v4).as_str());
    } else if a[..12] == MAPPED_PREFIX {
        out.push_str("::ffff:");
        out.push_str(addr::ipv4(&v4).as_str());
    } else {
        out.push_str(addr::ipv6_compact(a).as_str());
    }
}

fn addr_text(version: u8, a: &[u8; 16]) -> String {
    let mut s = String::with_capacity(39);
    write_addr(&mut s, version, a);
    s
}

fn endpoint(version: u8, a: &[u8; 16], port: Option<u16>) -> String {
    let ip = addr_text(version, a);
    match port {
        Some(p) if version == 6 => format!("[{ip}]:{p}"),
        Some(p) => format!("{ip}:{p}"),
        None => ip,
    }
}

fn proto_name(py: Python<'_>, p: u8) -> PyResult<Bound<'_, PyAny>> {
    Ok(match p {
        1 => "icmp".into_pyobject(py)?.into_any(),
        6 => "tcp".into_pyobject(py)?.into_any(),
        17 => "udp".into_pyobject(py)?.into_any(),
        58 => "icmp6".into_pyobject(py)?.into_any(),
        n => n.into_pyobject(py)?.into_any(),
    })
}

/// The `n` largest flows as rows `{"flow": {"proto", "src", "dst"}, "packets", "bytes"}`,
/// plus (flows, packets) totals.
#[pyfunction]
#[pyo3(signature = (paths, n, *, by_bytes, bidirectional, filter))]
fn flow_topn<'py>(
    py: Python<'py>,
    paths: Vec<PathBuf>,
    n: usize,
    by_bytes: bool,
    bidirectional: bool,
    filter: Option<String>,
) -> PyResult<(Bound<'py, PyList>, usize, u64)> {
    let opts = FlowOptions {
        bidirectional,
        ..Default::default()
    };
    let table = build_table(py, paths, filter, opts)?;
    let (packets, _) = table.counts();
    let flows = table.len();
    let top: Vec<(FlowKey, flow::FlowStats)> = py.detach(|| table.top(n, by_bytes));
    let out = PyList::empty(py);
    for (k, s) in top {
        let f = PyDict::new(py);
        f.set_item("proto", proto_name(py, k.protocol)?)?;
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

/// Raw packets of one file, read batch by batch as the consumer asks.
struct RawReader {
    source: FileReader,
    filter: Box<dyn PacketFilter + Send>,
    builder: RawBatchBuilder,
    pending: Option<Error>,
    done: bool,
    schema: SchemaRef,
    /// A batch converted for Python and held back by a signal, returned next.
    ready: Option<Py<PyAny>>,
}

/// What one [`RawReader::pull`] found.
enum Pull {
    Batch(RecordBatch),
    /// [`flow::CHUNK_RECORDS`] records were read without filling a batch: call again.
    Pending,
    End,
}

impl RawReader {
    /// The next batch, reading at most [`flow::CHUNK_RECORDS`] records (kept or rejected
    /// by the filter) before returning `Pending`. A read error after some rows first
    /// returns those rows, then the error.
    fn pull(&mut self) -> Result<Pull> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if self.done {
            return Ok(Pull::End);
        }
        for _ in 0..flow::CHUNK_RECORDS {
            match self.source.next_packet() {
                Ok(Some(pkt)) => {
                    if self.filter.keep(&pkt).inspect_err(|_| self.done = true)? {
                        self.builder.push(&pkt);
                        if self.builder.is_full() {
                            return Ok(self.builder.finish().map_or(Pull::Pending, Pull::Batch));
                        }
                    }
                }
                Ok(None) => {
                    self.done = true;
                    return Ok(self.builder.finish().map_or(Pull::End, Pull::Batch));
                }
                Err(e) => {
                    self.done = true;
                    return match self.builder.finish() {
                        Some(b) => {
                            self.pending = Some(e);
                            Ok(Pull::Batch(b))
                        }
                        None => Err(e),
                    };
                }
            }
        }
        Ok(Pull::Pending)
    }
}

impl Iterator for RawReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.pull() {
                Ok(Pull::Batch(b)) => return Some(Ok(b)),
                Ok(Pull::Pending) => {}
                Ok(Pull::End) => return None,
                Err(e) => return Some(Err(ArrowError::ExternalError(Box::new(e)))),
            }
        }
    }
}

impl RecordBatchReader for RawReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// Raw packets of `path` as a lazy Arrow stream of batches (iterated, or exported whole
/// through the PyCapsule interface).
#[pyfunction]
#[pyo3(signature = (path, *, batch_size = 65536, filter = None))]
fn read_batches(path: PathBuf, batch_size: usize, filter: Option<String>) -> PyResult<ArrowStream> {
    if batch_size == 0 {
        return Err(PyValueError::new_err(
            "batch_size must be a positive integer",
        ));
    }
    let schema = columns::raw_schema();
    let source = FileReader::open(path)?;
    let filter = make_filter(filter.as_deref(), &source)?;
    let reader = RawReader {
        source,
        filter,
        builder: RawBatchBuilder::new(batch_size),
        pending: None,
        done: false,
        schema: schema.clone(),
        ready: None,
    };
    Ok(ArrowStream {
        schema,
        reader: Mutex::new(Some(Content::Raw(Box::new(reader)))),
    })
}

/// Text of the 16-byte addresses in `buf` (None where the `valid` byte is 0); `versions`
/// (one byte per address) marks IPv6 rows whose address is IPv4-mapped, printed as IPv6.
#[pyfunction]
#[pyo3(signature = (buf, valid, versions = None))]
fn addresses_to_str<'py>(
    py: Python<'py>,
    buf: &[u8],
    valid: &[u8],
    versions: Option<&[u8]>,
) -> PyResult<Bound<'py, PyList>> {
    if buf.len() != valid.len() * 16 || versions.is_some_and(|v| v.len() != valid.len()) {
        return Err(PyValueError::new_err(
            "address buffer, validity and versions differ in length",
        ));
    }
    // Format every address into one buffer with the GIL released, then make the strings.
    let (text, ends): (String, Vec<Option<usize>>) = py.detach(|| {
        let mut text = String::with_capacity(valid.len() * 16);
        let ends = valid
            .iter()
            .enumerate()
            .map(|(i, ok)| {
                (*ok != 0).then(|| {
                    let a: [u8; 16] = buf[i * 16..i * 16 + 16].try_into().expect("16 bytes");
                    let v6 = versions.is_some_and(|v| v[i] == 6);
                    let version = if a[..12] == MAPPED_PREFIX && !v6 {
                        4
                    } else {
                        6
                    };
                    write_addr(&mut text, version, &a);
                    text.len()
                })
            })
            .collect();
        (text, ends)
    });
    let out = PyList::empty(py);
    let mut start = 0;
    for end in ends {
        match end {
            Some(e) => {
                out.append(PyString::new(py, &text[start..e]))?;
                start = e;
            }
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(flow_project, m)?)?;
    m.add_function(wrap_pyfunction!(flow_table, m)?)?;
    m.add_function(wrap_pyfunction!(flow_topn, m)?)?;
    m.add_function(wrap_pyfunction!(read_batches, m)?)?;
    m.add_function(wrap_pyfunction!(addresses_to_str, m)?)?;
    Ok(())
}
