//! `Capture`: the managed capture (a thread, a bounded queue, one consumer) over a device
//! or a file, and `open_capture`.
//!
//! The capture thread never touches Python. The consumer waits on the queue with the GIL
//! released, in slices of [`POP_SLICE`], and checks for signals between slices, so Ctrl-C
//! raises `KeyboardInterrupt` promptly and closes the capture.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple, PyType};
use pyo3::PyTraverseError;

use super::convert::options::{limits, LiveArg};
use super::convert::packet::{Packet, PacketPool};
use super::convert::stats::{pcap_dict, queue_dict, stats_dict};
use super::convert::{generic_alias, to_python, DecodeMode};
use super::error::{
    capture_failed, consumer_failure, warn_oversized, warn_truncated, CaptureError,
};
use super::gil::QUEUE_SIGNAL_CHECK_EVERY;
use super::hooks::{call_hook, report_error};
use crate::capture::queue::{Pop, QueueMode};
use crate::capture::{LiveOptions, ManagedCapture, ManagedConfig, OwnedPacket};
use crate::source::{SourceInfo, SourceSpec};
use crate::stats::{Failure, StopReason};

/// Longest wait on the queue without checking for signals.
pub const POP_SLICE: Duration = Duration::from_millis(50);
/// Free buffers a capture keeps for its raw packets (more are freed).
const POOL_CAP: usize = 256;
/// How long `close` waits for the capture thread.
pub const CLOSE_TIMEOUT: Duration = crate::capture::managed::CLOSE_TIMEOUT;

struct Consumer {
    finished: bool,
    matched: bool,
    /// A buffer to give back to the queue at the next pop (decoded modes: the last packet's).
    recycle: Option<OwnedPacket>,
    /// Calls of `__next__`, to check for signals every [`QUEUE_SIGNAL_CHECK_EVERY`].
    calls: u64,
}

/// The user callbacks of a capture, behind a lock so the garbage collector can clear them
/// (a callback that refers back to its capture makes a reference cycle).
#[derive(Default)]
struct Hooks {
    stop_when: Option<Py<PyAny>>,
    on_stats: Option<Py<PyAny>>,
    on_queue_stats: Option<Py<PyAny>>,
    on_error: Option<Py<PyAny>>,
}

impl Hooks {
    fn clone_ref(&self, py: Python<'_>) -> Hooks {
        let c = |h: &Option<Py<PyAny>>| h.as_ref().map(|f| f.clone_ref(py));
        Hooks {
            stop_when: c(&self.stop_when),
            on_stats: c(&self.on_stats),
            on_queue_stats: c(&self.on_queue_stats),
            on_error: c(&self.on_error),
        }
    }
}

/// A managed live (or file) capture: an iterator for one consumer, a context manager.
#[pyclass(module = "paclo", name = "Capture", frozen)]
pub struct Capture {
    core: ManagedCapture,
    mode: DecodeMode,
    /// The buffers `Packet`s keep (raw mode) and give back when freed.
    pool: Py<PacketPool>,
    /// Never held while Python code runs: callers take new references and release it.
    hooks: Mutex<Hooks>,
    has_stop_when: bool,
    raise_errors: bool,
    consumer: Mutex<Consumer>,
    finalized: AtomicBool,
    fanned_out: AtomicBool,
}

impl Capture {
    /// New references to the callbacks (empty once the garbage collector cleared them).
    fn hooks(&self, py: Python<'_>) -> Hooks {
        self.hooks
            .lock()
            .map(|h| h.clone_ref(py))
            .unwrap_or_default()
    }

    /// Run the end-of-capture hooks once, after the thread has finished.
    fn finalize(&self, py: Python<'_>) {
        if !self.core.is_done() || self.finalized.swap(true, Ordering::AcqRel) {
            return;
        }
        let hooks = self.hooks(py);
        let s = self.core.stats();
        if let Some(p) = s.pcap {
            if let Ok(p) = pcap_dict(py, p) {
                call_hook(py, &hooks.on_stats, p.into_any(), &hooks.on_error);
            }
        }
        if let Some(Ok(q)) = s.queue.as_ref().map(|q| queue_dict(py, q)) {
            call_hook(py, &hooks.on_queue_stats, q.into_any(), &hooks.on_error);
        }
        if let (Some(e), Some(_)) = (&s.error, &hooks.on_error) {
            report_error(
                py,
                &hooks.on_error,
                CaptureError::new_err(format!("capture failed: {}", e.message())),
            );
        }
    }

    pub(crate) fn close_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let result = py.detach(|| self.core.close(CLOSE_TIMEOUT));
        self.finalize(py);
        // A Ctrl-C that landed in a hook (re-armed there) raises here.
        py.check_signals()?;
        result.map_err(PyErr::from)
    }

    /// The end of iteration: wait for the thread, run hooks, warn about records longer
    /// than their snaplen and a truncated file, raise a source error.
    fn end<'py>(
        &self,
        py: Python<'py>,
        consumer: &mut Consumer,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        consumer.finished = true;
        consumer.recycle = None;
        py.detach(|| self.core.wait_done(CLOSE_TIMEOUT));
        self.finalize(py);
        py.check_signals()?;
        if let Some(m) = self.core.take_oversized() {
            warn_oversized(py, &m, 1)?;
        }
        if let Some(t) = self.core.take_truncation() {
            let read = self.core.stats().captured;
            warn_truncated(py, &t, &format!("{read} packets were read before it"), 1)?;
        }
        if self.raise_errors {
            if let Some(Failure::Source(e)) = self.core.error() {
                return Err(capture_failed(e));
            }
        }
        Ok(None)
    }

    pub(crate) fn core(&self) -> &ManagedCapture {
        &self.core
    }

    pub(crate) fn mode(&self) -> DecodeMode {
        self.mode
    }

    /// Hand the queue to a fan-out; the capture itself can no longer be iterated.
    pub(crate) fn take_for_fanout(&self) -> PyResult<()> {
        if self.has_stop_when {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "fan_out needs a capture without stop_when (stop_when runs in the single consumer)",
            ));
        }
        let consumer = self.consumer.try_lock().map_err(|_| {
            PyRuntimeError::new_err("the capture is being iterated; fan_out needs a fresh capture")
        })?;
        if consumer.finished || consumer.calls > 0 || self.fanned_out.swap(true, Ordering::AcqRel) {
            return Err(PyRuntimeError::new_err(
                "the capture was already consumed; fan_out needs a fresh capture",
            ));
        }
        self.core.set_decode_errors_unobserved();
        Ok(())
    }
}

#[pymethods]
impl Capture {
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // The lock is only taken with the GIL held and released before any Python code
        // runs, so it is free whenever the collector traverses.
        if let Ok(h) = self.hooks.try_lock() {
            visit.call(&h.stop_when)?;
            visit.call(&h.on_stats)?;
            visit.call(&h.on_queue_stats)?;
            visit.call(&h.on_error)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // Dropped after the lock is released: a callback's destructor may run Python code.
        let hooks = self.hooks.lock().map(|mut h| std::mem::take(&mut *h));
        drop(hooks);
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.fanned_out.load(Ordering::Acquire) {
            return Err(PyRuntimeError::new_err(
                "this capture feeds a fan_out; iterate its branches instead",
            ));
        }
        let mut guard = self.consumer.try_lock().map_err(|_| {
            PyRuntimeError::new_err(
                "a capture has a single consumer; it is being iterated elsewhere",
            )
        })?;
        let consumer = &mut *guard;
        if consumer.finished {
            return Ok(None);
        }
        if consumer.matched {
            self.core.clear_queue();
            return self.end(py, consumer);
        }
        consumer.calls += 1;
        if consumer.calls % QUEUE_SIGNAL_CHECK_EVERY == 0 {
            if let Err(e) = py.check_signals() {
                consumer.finished = true;
                let _ = self.close_blocking(py);
                return Err(e);
            }
        }
        loop {
            let recycle = match self.mode {
                DecodeMode::Raw => self.pool.get().take(),
                _ => consumer.recycle.take(),
            };
            // A packet already queued is taken without releasing the GIL; only a wait releases it.
            let popped = match self.core.pop(Duration::ZERO, recycle) {
                Pop::Empty => py.detach(|| self.core.pop(POP_SLICE, None)),
                other => other,
            };
            match popped {
                Pop::Item(pkt) => {
                    let (obj, decode_error) = match self.mode {
                        DecodeMode::Raw => {
                            let p = Packet::from_pooled(py, &self.pool, pkt);
                            (Bound::new(py, p)?.into_any(), false)
                        }
                        _ => {
                            let converted = to_python(py, self.mode, &pkt.as_raw());
                            consumer.recycle = Some(pkt);
                            converted?
                        }
                    };
                    self.core.count_processed(decode_error);
                    let pred = if self.has_stop_when {
                        self.hooks
                            .lock()
                            .ok()
                            .and_then(|h| h.stop_when.as_ref().map(|f| f.clone_ref(py)))
                    } else {
                        None
                    };
                    if let Some(pred) = &pred {
                        let matched = pred.call1(py, (obj.clone(),)).and_then(|r| r.is_truthy(py));
                        match matched {
                            Ok(true) => {
                                self.core.request_stop(StopReason::Predicate);
                                consumer.matched = true;
                            }
                            Ok(false) => {}
                            Err(e) => {
                                let message = format!("stop_when raised: {e}");
                                self.core.fail(consumer_failure(py, &e, message));
                                consumer.finished = true;
                                py.detach(|| self.core.close(CLOSE_TIMEOUT)).ok();
                                self.finalize(py);
                                return Err(e);
                            }
                        }
                    }
                    return Ok(Some(obj));
                }
                Pop::Empty => {
                    if let Err(e) = py.check_signals() {
                        consumer.finished = true;
                        let _ = self.close_blocking(py);
                        return Err(e);
                    }
                }
                Pop::Finished => return self.end(py, consumer),
            }
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close_blocking(py)?;
        Ok(false)
    }

    /// Ask the capture to stop (asynchronous, idempotent). Packets already queued are still
    /// delivered; `close()` discards them.
    fn stop(&self) {
        self.core.request_stop(StopReason::Consumer);
    }

    /// Stop, discard queued packets, and wait (at most 5 s) for the capture thread.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.close_blocking(py)
    }

    /// `starting`, `running`, `stopping`, `closed` or `failed`.
    #[getter]
    fn state(&self) -> &'static str {
        self.core.state().as_str()
    }

    /// A statistics snapshot (see docs/stats.md).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.core.stats())
    }

    fn __repr__(&self) -> String {
        let s = self.core.stats();
        let src = match &s.source {
            SourceInfo::Device(d) => format!("device={d:?}"),
            SourceInfo::Path(p) => format!("path={:?}", p.display().to_string()),
        };
        format!(
            "<paclo.Capture {src} state={} captured={}>",
            s.state.as_str(),
            s.captured
        )
    }
}

/// Open a managed capture: open the source, install the filter, call `on_ready`, start
/// the capture thread. Options are validated by the Python wrapper.
#[pyfunction]
#[pyo3(signature = (*, device, path, filter, snaplen, promisc, timeout_ms, buffer_size, immediate, decode,
    queue_cap, queue_mode, limit, duration, idle_timeout, stop_when, on_ready, on_stats, on_queue_stats,
    on_error, error_mode))]
#[allow(clippy::too_many_arguments)]
pub fn open_capture(
    py: Python<'_>,
    device: Option<String>,
    path: Option<PathBuf>,
    filter: Option<String>,
    snaplen: u32,
    promisc: bool,
    timeout_ms: u32,
    buffer_size: Option<u32>,
    immediate: Option<bool>,
    decode: Option<&str>,
    queue_cap: usize,
    queue_mode: &str,
    limit: Option<u64>,
    duration: Option<f64>,
    idle_timeout: Option<f64>,
    stop_when: Option<Py<PyAny>>,
    on_ready: Option<Py<PyAny>>,
    on_stats: Option<Py<PyAny>>,
    on_queue_stats: Option<Py<PyAny>>,
    on_error: Option<Py<PyAny>>,
    error_mode: &str,
) -> PyResult<Capture> {
    let mode = DecodeMode::parse(decode)?;
    let queue_mode = QueueMode::parse("queue_mode", queue_mode)?;
    let limits = limits(limit, duration, idle_timeout)?;
    let spec = match (device, path) {
        (Some(name), None) => SourceSpec::Device {
            name,
            options: LiveOptions {
                snaplen,
                promisc,
                timeout_ms,
                buffer_size,
                immediate,
            },
        },
        (None, Some(p)) => SourceSpec::File(p),
        _ => {
            return Err(PyValueError::new_err(
                "capture takes exactly one of device= or path=",
            ))
        }
    };
    // An exception from on_ready drops (closes) the source before the thread exists.
    let live = LiveArg {
        spec,
        limits,
        on_ready,
    };
    let lp = live.open(py, filter.as_deref())?;
    let config = ManagedConfig {
        queue_cap,
        queue_mode,
        wait_slice: Duration::from_millis(25),
    };
    let core = ManagedCapture::start(lp, config)?;
    Ok(Capture {
        core,
        mode,
        pool: Py::new(py, PacketPool::new(POOL_CAP))?,
        has_stop_when: stop_when.is_some(),
        hooks: Mutex::new(Hooks {
            stop_when,
            on_stats,
            on_queue_stats,
            on_error,
        }),
        raise_errors: error_mode != "pass",
        consumer: Mutex::new(Consumer {
            finished: false,
            matched: false,
            recycle: None,
            calls: 0,
        }),
        finalized: AtomicBool::new(false),
        fanned_out: AtomicBool::new(false),
    })
}
