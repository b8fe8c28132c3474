//! Live capture bindings: `Capture` (managed), `reduce_device` (synchronous), devices.
//!
//! The capture thread never touches Python. Consumers wait on the queue with the GIL
//! released, in slices of [`POP_SLICE`], and check for signals between slices, so Ctrl-C
//! raises `KeyboardInterrupt` promptly and closes the capture.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pyo3::exceptions::PyRuntimeError;
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use pyo3::PyTraverseError;

use super::common::{to_python, DecodeMode};
use super::error::CaptureError;
use crate::capture::fanout::{BranchConfig, FanOut as FanOutCore, SourceItem};
use crate::capture::handle::{device_mtu, immediate_buffer_plan};
use crate::capture::{
    CaptureState, CaptureStats, Handle, Limits, LiveOptions, ManagedCapture, ManagedConfig, Next,
    OwnedPacket, PcapCounters, Pop, QueueCounters, QueueMode, SourceInfo, StopClock, StopReason,
};

/// Longest wait on the queue (or libpcap) without checking for signals.
const POP_SLICE: Duration = Duration::from_millis(50);
/// How long `close` waits for the capture thread.
const CLOSE_TIMEOUT: Duration = crate::capture::managed::CLOSE_TIMEOUT;

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

fn pcap_dict<'py>(
    py: Python<'py>,
    pcap: Option<PcapCounters>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some(p) = pcap else { return Ok(None) };
    let d = PyDict::new(py);
    d.set_item("received", p.received)?;
    d.set_item("dropped", p.dropped)?;
    d.set_item("interface_dropped", p.interface_dropped)?;
    Ok(Some(d))
}

fn queue_dict<'py>(
    py: Python<'py>,
    mode: &str,
    capacity: usize,
    q: &QueueCounters,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("mode", mode)?;
    d.set_item("capacity", capacity)?;
    d.set_item("depth", q.depth)?;
    d.set_item("max_depth", q.max_depth)?;
    d.set_item("enqueued", q.enqueued)?;
    d.set_item("dropped", q.dropped)?;
    d.set_item("abandoned", q.abandoned)?;
    d.set_item("cancelled", q.cancelled)?;
    d.set_item("blocked_events", q.blocked_events)?;
    d.set_item("blocked_ns", q.blocked_ns)?;
    Ok(d)
}

fn error_dict<'py>(py: Python<'py>, class: &str, message: &str) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("class", class)?;
    d.set_item("message", message)?;
    Ok(d)
}

fn timing_dict(py: Python<'_>, started_at_ms: u64, elapsed_ms: u64) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("started_at_ms", started_at_ms)?;
    d.set_item("elapsed_ms", elapsed_ms)?;
    Ok(d)
}

fn stats_dict<'py>(py: Python<'py>, s: &CaptureStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("schema_version", 1)?;
    d.set_item("state", s.state.as_str())?;
    d.set_item("source", source_dict(py, &s.source)?)?;
    d.set_item("timing", timing_dict(py, s.started_at_ms, s.elapsed_ms)?)?;
    let p = PyDict::new(py);
    p.set_item("captured", s.captured)?;
    p.set_item("enqueued", s.queue.enqueued)?;
    p.set_item("delivered", s.delivered)?;
    p.set_item("processed", s.processed)?;
    p.set_item("decode_errors", s.decode_errors)?;
    d.set_item("packets", p)?;
    d.set_item(
        "queue",
        queue_dict(py, s.queue_mode.as_str(), s.queue_capacity, &s.queue)?,
    )?;
    d.set_item("pcap", pcap_dict(py, s.pcap)?)?;
    d.set_item("stop_reason", s.stop_reason.map(|r| r.as_str()))?;
    match &s.error {
        Some(e) => d.set_item("error", error_dict(py, &e.class, &e.message)?)?,
        None => d.set_item("error", py.None())?,
    }
    Ok(d)
}

fn error_class_name(py: Python<'_>, err: &PyErr) -> String {
    err.get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into())
}

/// Call a user callback; its exception goes to `on_error`, and `on_error`'s own to
/// `sys.unraisablehook`.
fn call_hook(
    py: Python<'_>,
    hook: &Option<Py<PyAny>>,
    arg: Bound<'_, PyAny>,
    on_error: &Option<Py<PyAny>>,
) {
    let Some(f) = hook else { return };
    if let Err(e) = f.call1(py, (arg,)) {
        report_error(py, on_error, e);
    }
}

fn report_error(py: Python<'_>, on_error: &Option<Py<PyAny>>, err: PyErr) {
    match on_error {
        Some(h) => {
            if let Err(e2) = h.call1(py, (err.value(py).clone(),)) {
                e2.write_unraisable(py, Some(h.bind(py)));
            }
        }
        None => err.write_unraisable(py, None),
    }
}

fn live_options(
    snaplen: u32,
    promisc: bool,
    timeout_ms: u32,
    buffer_size: Option<u32>,
    immediate: Option<bool>,
) -> LiveOptions {
    LiveOptions {
        snaplen,
        promisc,
        timeout_ms,
        buffer_size,
        immediate,
    }
}

/// Seconds as a `Duration`; a value a `Duration` cannot hold (negative, NaN, too large) is
/// a `ValueError` naming `option`.
fn seconds(option: &str, value: Option<f64>) -> PyResult<Option<Duration>> {
    value
        .map(|v| {
            Duration::try_from_secs_f64(v).map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "{option} must be None or a positive number of seconds up to {:e}, not {v:?}",
                    Duration::MAX.as_secs_f64()
                ))
            })
        })
        .transpose()
}

fn limits(
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

fn open_source(
    py: Python<'_>,
    device: Option<&str>,
    path: Option<PathBuf>,
    opts: &LiveOptions,
    filter: Option<&str>,
) -> PyResult<Handle> {
    let mut handle = match (device, path) {
        (Some(dev), None) => py.detach(|| Handle::open_live(dev, opts))?,
        (None, Some(p)) => py.detach(|| Handle::open_file(&p))?,
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "capture takes exactly one of device= or path=",
            ))
        }
    };
    if let Some(f) = filter.filter(|f| !f.trim().is_empty()) {
        handle.set_filter(f)?;
    }
    Ok(handle)
}

struct Consumer {
    finished: bool,
    matched: bool,
    recycle: Option<OwnedPacket>,
    /// Calls of `__next__`, to check for signals every [`SIGNAL_CHECK_EVERY`].
    calls: u64,
}

/// Packets taken back to back between two checks for signals: a consumer written in C
/// (`list(capture)`) runs no Python code that would notice Ctrl-C.
const SIGNAL_CHECK_EVERY: u64 = 1024;

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
        if let Ok(Some(p)) = pcap_dict(py, s.pcap) {
            call_hook(py, &hooks.on_stats, p.into_any(), &hooks.on_error);
        }
        if let Ok(q) = queue_dict(py, s.queue_mode.as_str(), s.queue_capacity, &s.queue) {
            call_hook(py, &hooks.on_queue_stats, q.into_any(), &hooks.on_error);
        }
        if let (Some(e), Some(_)) = (&s.error, &hooks.on_error) {
            report_error(
                py,
                &hooks.on_error,
                CaptureError::new_err(format!("capture failed: {}", e.message)),
            );
        }
    }

    fn close_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let result = py.detach(|| self.core.close(CLOSE_TIMEOUT));
        self.finalize(py);
        result.map_err(PyErr::from)
    }

    /// The end of iteration: wait for the thread, run hooks, raise a background error.
    fn end<'py>(
        &self,
        py: Python<'py>,
        consumer: &mut Consumer,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        consumer.finished = true;
        consumer.recycle = None;
        py.detach(|| self.core.wait_done(CLOSE_TIMEOUT));
        self.finalize(py);
        if self.raise_errors {
            if let Some(e) = self.core.error() {
                if e.class == "CaptureError" {
                    return Err(CaptureError::new_err(format!(
                        "capture failed: {}",
                        e.message
                    )));
                }
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
        if consumer.finished
            || consumer.recycle.is_some()
            || self.fanned_out.swap(true, Ordering::AcqRel)
        {
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
        if consumer.calls % SIGNAL_CHECK_EVERY == 0 {
            if let Err(e) = py.check_signals() {
                consumer.finished = true;
                let _ = self.close_blocking(py);
                return Err(e);
            }
        }
        loop {
            let recycle = consumer.recycle.take();
            // A packet already queued is taken without releasing the GIL; only a wait releases it.
            let popped = match self.core.pop(Duration::ZERO, recycle) {
                Pop::Empty => py.detach(|| self.core.pop(POP_SLICE, None)),
                other => other,
            };
            match popped {
                Pop::Item(pkt) => {
                    let converted = to_python(py, self.mode, &pkt.as_raw());
                    consumer.recycle = Some(pkt);
                    let (obj, decode_error) = converted?;
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
                                self.core.fail(
                                    &error_class_name(py, &e),
                                    format!("stop_when raised: {e}"),
                                );
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

    /// A statistics snapshot (schema version 1).
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
fn open_capture(
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
    let opts = live_options(snaplen, promisc, timeout_ms, buffer_size, immediate);
    let handle = open_source(py, device.as_deref(), path, &opts, filter.as_deref())?;
    if let Some(f) = &on_ready {
        // An exception here drops (closes) the handle before the thread exists.
        f.call0(py)?;
    }
    let info = handle.info().clone();
    let config = ManagedConfig {
        queue_cap,
        queue_mode,
        limits,
        wait_slice: Duration::from_millis(25),
    };
    let core = ManagedCapture::start(Box::new(handle), info, config)?;
    Ok(Capture {
        core,
        mode,
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

/// A synchronous reduction over a live device: no queue, no thread. The GIL is released
/// only while waiting for packets; packets already in libpcap's buffer are handed to `fn`
/// directly.
#[pyfunction]
#[pyo3(signature = (fn_, init, *, device, decode, filter, limit, duration, idle_timeout, snaplen, promisc,
    timeout_ms, buffer_size, immediate, stop_when, on_ready, on_stats, on_error, error_mode, report))]
#[allow(clippy::too_many_arguments)]
fn reduce_device<'py>(
    py: Python<'py>,
    fn_: Bound<'py, PyAny>,
    init: Bound<'py, PyAny>,
    device: String,
    decode: Option<&str>,
    filter: Option<String>,
    limit: Option<u64>,
    duration: Option<f64>,
    idle_timeout: Option<f64>,
    snaplen: u32,
    promisc: bool,
    timeout_ms: u32,
    buffer_size: Option<u32>,
    immediate: Option<bool>,
    stop_when: Option<Bound<'py, PyAny>>,
    on_ready: Option<Py<PyAny>>,
    on_stats: Option<Py<PyAny>>,
    on_error: Option<Py<PyAny>>,
    error_mode: &str,
    report: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let mode = DecodeMode::parse(decode)?;
    let limits = limits(limit, duration, idle_timeout)?;
    let opts = live_options(snaplen, promisc, timeout_ms, buffer_size, immediate);
    let mut handle = open_source(py, Some(&device), None, &opts, filter.as_deref())?;
    if let Some(f) = &on_ready {
        f.call0(py)?;
    }
    let reduced_cls = py.import("paclo._io")?.getattr("Reduced")?;
    let started = Instant::now();
    let started_at_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    let mut clock = StopClock::new(limits, started);
    let (mut processed, mut decode_errors) = (0u64, 0u64);
    let mut acc = init;
    // `fatal` propagates whatever error_mode says (fn errors, KeyboardInterrupt);
    // `capture_err` is a libpcap failure, subject to error_mode.
    let mut fatal: Option<PyErr> = None;
    let mut capture_err: Option<PyErr> = None;
    let reason;
    loop {
        match handle.try_next() {
            Ok(Next::Packet(p)) => {
                let (obj, derr) = match to_python(py, mode, &p) {
                    Ok(x) => x,
                    Err(e) => {
                        fatal = Some(e);
                        reason = StopReason::Error;
                        break;
                    }
                };
                processed += 1;
                decode_errors += derr as u64;
                let keep = stop_when.as_ref().map(|_| obj.clone());
                match fn_.call1((acc.clone(), obj)) {
                    Ok(v) if v.is_instance(&reduced_cls)? => {
                        acc = v.getattr("value")?;
                        reason = StopReason::Reduced;
                        break;
                    }
                    Ok(v) => acc = v,
                    Err(e) => {
                        fatal = Some(e);
                        reason = StopReason::Error;
                        break;
                    }
                }
                if let (Some(pred), Some(o)) = (&stop_when, keep) {
                    match pred.call1((o,)).and_then(|x| x.is_truthy()) {
                        Ok(true) => {
                            reason = StopReason::Predicate;
                            break;
                        }
                        Ok(false) => {}
                        Err(e) => {
                            fatal = Some(e);
                            reason = StopReason::Error;
                            break;
                        }
                    }
                }
                if let Some(r) = clock.on_packet() {
                    reason = r;
                    break;
                }
                if processed % 64 == 0 {
                    if let Err(e) = py.check_signals() {
                        fatal = Some(e);
                        reason = StopReason::Closed;
                        break;
                    }
                }
            }
            Ok(Next::Idle) => {
                let now = Instant::now();
                if let Some(r) = clock.on_idle(now) {
                    reason = r;
                    break;
                }
                if let Err(e) = py.check_signals() {
                    fatal = Some(e);
                    reason = StopReason::Closed;
                    break;
                }
                let budget = clock.wait_budget(now, POP_SLICE);
                if let Err(e) = py.detach(|| handle.wait(budget, None)) {
                    capture_err = Some(e.into());
                    reason = StopReason::Error;
                    break;
                }
            }
            Ok(Next::End) => {
                reason = StopReason::Eof;
                break;
            }
            Err(e) => {
                capture_err = Some(e.into());
                reason = StopReason::Error;
                break;
            }
        }
    }
    let pcap = handle.stats();
    drop(handle);
    let elapsed_ms = started.elapsed().as_millis() as u64;
    if let Some(p) = pcap_dict(py, pcap)? {
        call_hook(py, &on_stats, p.into_any(), &on_error);
    }
    let failure = fatal
        .as_ref()
        .or(capture_err.as_ref())
        .map(|e| (error_class_name(py, e), e.value(py).to_string()));
    if let Some(e) = &capture_err {
        if on_error.is_some() {
            report_error(py, &on_error, e.clone_ref(py));
        }
    }
    if let Some(e) = fatal {
        return Err(e);
    }
    if let Some(e) = capture_err {
        if error_mode != "pass" {
            return Err(e);
        }
    }
    if !report {
        return Ok(acc);
    }
    let d = PyDict::new(py);
    d.set_item("schema_version", 1)?;
    let state = if failure.is_some() {
        CaptureState::Failed
    } else {
        CaptureState::Closed
    };
    d.set_item("state", state.as_str())?;
    d.set_item("source", source_dict(py, &SourceInfo::Device(device))?)?;
    d.set_item("timing", timing_dict(py, started_at_ms, elapsed_ms)?)?;
    let p = PyDict::new(py);
    p.set_item("captured", clock.count().max(processed))?;
    p.set_item("processed", processed)?;
    p.set_item("decode_errors", decode_errors)?;
    d.set_item("packets", p)?;
    d.set_item("queue", py.None())?;
    d.set_item("pcap", pcap_dict(py, pcap)?)?;
    d.set_item("stop_reason", reason.as_str())?;
    match failure {
        Some((class, message)) => d.set_item("error", error_dict(py, &class, &message)?)?,
        None => d.set_item("error", py.None())?,
    }
    Ok(PyTuple::new(py, [acc, d.into_any()])?.into_any())
}

/// The devices libpcap can capture on.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = py.detach(crate::capture::devices)?;
    let out = PyList::empty(py);
    for dev in list {
        let d = PyDict::new(py);
        d.set_item("name", &dev.name)?;
        d.set_item("description", &dev.description)?;
        let addrs = PyList::empty(py);
        for a in &dev.addresses {
            let ad = PyDict::new(py);
            ad.set_item("addr", &a.addr)?;
            ad.set_item("netmask", &a.netmask)?;
            ad.set_item("broadcast", &a.broadcast)?;
            ad.set_item("destination", &a.destination)?;
            addrs.append(ad)?;
        }
        d.set_item("addresses", addrs)?;
        d.set_item("flags", PyList::new(py, &dev.flags)?)?;
        out.append(d)?;
    }
    Ok(out)
}

/// libpcap's version string.
#[pyfunction]
fn libpcap_version() -> String {
    crate::capture::libpcap_version()
}

/// `(buffer_size, estimated_slots)` for an immediate-mode capture on `device`.
#[pyfunction]
#[pyo3(signature = (device, snaplen, buffer_size))]
fn immediate_plan(device: &str, snaplen: u32, buffer_size: Option<u32>) -> (u32, u64) {
    immediate_buffer_plan(snaplen, buffer_size, device_mtu(device))
}

/// Bounded fan-out of one managed capture to several branch iterators.
#[pyclass(module = "paclo", name = "FanOut", frozen)]
pub struct FanOut {
    core: FanOutCore<Arc<OwnedPacket>>,
    capture: Py<Capture>,
    mode: DecodeMode,
    acquired: Vec<AtomicBool>,
}

impl FanOut {
    fn close_all(&self, py: Python<'_>) -> PyResult<()> {
        let fan = py.detach(|| self.core.close(CLOSE_TIMEOUT));
        let cap = self.capture.get().close_blocking(py);
        fan?;
        cap
    }
}

fn fan_stats<'py>(
    py: Python<'py>,
    fan: &FanOutCore<Arc<OwnedPacket>>,
) -> PyResult<Bound<'py, PyDict>> {
    let s = fan.stats();
    let d = PyDict::new(py);
    d.set_item("schema_version", 1)?;
    d.set_item("state", s.state)?;
    d.set_item("timing", timing_dict(py, s.started_at_ms, s.elapsed_ms)?)?;
    let src = PyDict::new(py);
    src.set_item("received", s.received)?;
    d.set_item("source", src)?;
    let branches = PyDict::new(py);
    for b in &s.branches {
        let c = &b.counters;
        let bd = PyDict::new(py);
        bd.set_item("state", b.state.as_str())?;
        bd.set_item("offered", c.offered)?;
        bd.set_item("enqueued", c.enqueued)?;
        bd.set_item("delivered", c.delivered)?;
        bd.set_item("dropped", c.dropped)?;
        bd.set_item("cancelled", c.cancelled)?;
        bd.set_item("abandoned", c.abandoned)?;
        let buf = PyDict::new(py);
        buf.set_item("mode", b.mode.as_str())?;
        buf.set_item("capacity", b.capacity)?;
        buf.set_item("depth", c.depth)?;
        buf.set_item("max_depth", c.max_depth)?;
        buf.set_item("blocked_events", c.blocked_events)?;
        buf.set_item("blocked_ns", c.blocked_ns)?;
        bd.set_item("buffer", buf)?;
        bd.set_item("stop_reason", b.stop_reason)?;
        match &b.error {
            Some(e) => bd.set_item("error", error_dict(py, &e.class, &e.message)?)?,
            None => bd.set_item("error", py.None())?,
        }
        branches.set_item(&b.name, bd)?;
    }
    d.set_item("branches", branches)?;
    d.set_item("stop_reason", s.stop_reason.map(|r| r.as_str()))?;
    match &s.error {
        Some(e) => d.set_item("error", error_dict(py, &e.class, &e.message)?)?,
        None => d.set_item("error", py.None())?,
    }
    d.set_item("cancel_error", py.None())?;
    Ok(d)
}

#[pymethods]
impl FanOut {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.capture)
    }

    /// The iterator of branch `name` (each branch may be acquired once).
    fn branch(slf: &Bound<'_, Self>, name: &str) -> PyResult<FanOutBranch> {
        let this = slf.get();
        let Some(idx) = this.core.branch_index(name) else {
            return Err(pyo3::exceptions::PyKeyError::new_err(format!(
                "unknown fan_out branch {name:?}; branches: {}",
                this.core.branch_names().join(", ")
            )));
        };
        if this.acquired[idx].swap(true, Ordering::AcqRel) {
            return Err(PyRuntimeError::new_err(format!(
                "fan_out branch {name:?} may only be acquired once"
            )));
        }
        Ok(FanOutBranch {
            fanout: slf.clone().unbind(),
            idx,
            consumer: Mutex::new((false, 0)),
        })
    }

    fn __getitem__(slf: &Bound<'_, Self>, name: &str) -> PyResult<FanOutBranch> {
        Self::branch(slf, name)
    }

    /// Branch names in the order given.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.core.branch_names()
    }

    /// Fan-out statistics (schema version 1).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        fan_stats(py, &self.core)
    }

    /// Stop the dispatcher, abandon every branch queue, close the capture.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.close_all(py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close_all(py)?;
        Ok(false)
    }
}

/// One branch of a fan-out: an iterator for one consumer.
#[pyclass(module = "paclo", name = "FanOutBranch", frozen)]
pub struct FanOutBranch {
    fanout: Py<FanOut>,
    idx: usize,
    /// (finished, calls of `__next__`).
    consumer: Mutex<(bool, u64)>,
}

#[pymethods]
impl FanOutBranch {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.fanout)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let fan = self.fanout.get();
        let mut guard = self.consumer.try_lock().map_err(|_| {
            PyRuntimeError::new_err(
                "a fan_out branch has a single consumer; it is being iterated elsewhere",
            )
        })?;
        let (finished, calls) = &mut *guard;
        if *finished {
            return Ok(None);
        }
        *calls += 1;
        if *calls % SIGNAL_CHECK_EVERY == 0 {
            if let Err(e) = py.check_signals() {
                *finished = true;
                let _ = fan.close_all(py);
                return Err(e);
            }
        }
        loop {
            let popped = match fan.core.pop(self.idx, Duration::ZERO) {
                Pop::Empty => py.detach(|| fan.core.pop(self.idx, POP_SLICE)),
                other => other,
            };
            match popped {
                Pop::Item(pkt) => return Ok(Some(to_python(py, fan.mode, &pkt.as_raw())?.0)),
                Pop::Empty => {
                    if let Err(e) = py.check_signals() {
                        *finished = true;
                        let _ = fan.close_all(py);
                        return Err(e);
                    }
                }
                Pop::Finished => {
                    *finished = true;
                    if let Some(e) = fan.core.branch_error(self.idx) {
                        return Err(CaptureError::new_err(format!(
                            "stream source failed: {}",
                            e.message
                        )));
                    }
                    return Ok(None);
                }
            }
        }
    }

    /// Close this branch (the others continue); its queued packets are abandoned.
    fn close(&self) {
        self.fanout.get().core.close_branch(self.idx);
    }

    /// The branch name.
    #[getter]
    fn name(&self) -> String {
        self.fanout.get().core.branch_names()[self.idx].clone()
    }
}

/// Start a fan-out over a fresh managed capture. Branches are validated by the wrapper.
#[pyfunction]
fn start_fan_out(
    capture: Bound<'_, Capture>,
    branches: Vec<(String, String, usize)>,
) -> PyResult<FanOut> {
    let cap = capture.get();
    let configs = branches
        .into_iter()
        .map(|(name, mode, capacity)| {
            Ok(BranchConfig {
                name,
                mode: QueueMode::parse("mode", &mode)?,
                capacity,
            })
        })
        .collect::<crate::Result<Vec<_>>>()?;
    if configs.len() < 2 {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "fan_out requires at least two branches",
        ));
    }
    cap.take_for_fanout()?;
    let reader = cap.core().reader();
    let stopper = reader.clone();
    let source = Box::new(move |timeout: Duration| match reader.pop(timeout) {
        Pop::Item(p) => SourceItem::Item(Arc::new(p)),
        Pop::Empty => SourceItem::Empty,
        Pop::Finished => match reader.error() {
            Some(e) if e.class == "CaptureError" => SourceItem::Failed(e.message),
            _ => SourceItem::End,
        },
    });
    let cancel = Box::new(move || stopper.request_stop(StopReason::Consumer));
    let n = configs.len();
    let core = FanOutCore::start(source, cancel, configs)?;
    Ok(FanOut {
        core,
        mode: cap.mode(),
        capture: capture.unbind(),
        acquired: (0..n).map(|_| AtomicBool::new(false)).collect(),
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Capture>()?;
    m.add_function(wrap_pyfunction!(open_capture, m)?)?;
    m.add_function(wrap_pyfunction!(reduce_device, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(libpcap_version, m)?)?;
    m.add_function(wrap_pyfunction!(immediate_plan, m)?)?;
    m.add_class::<FanOut>()?;
    m.add_class::<FanOutBranch>()?;
    m.add_function(wrap_pyfunction!(start_fan_out, m)?)?;
    Ok(())
}
