//! `read` (the `Reader` iterator), `reduce` over files and devices, and the native counting
//! probe: thin wrappers of [`SourceLoop`], [`fold`] and [`for_each_packet`].

use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use super::convert::options::{parse_limit, SourceArg};
use super::convert::packet::MappedPackets;
use super::convert::stats::{pcap_dict, stats_dict};
use super::convert::{generic_alias, to_python, to_python_mapped, DecodeMode};
use super::error::{consumer_failure, warn_oversized, warn_truncated};
use super::gil::{interruptible, PyHost, SIGNAL_CHECK_EVERY};
use super::hooks::{call_hook, report_error};
use super::progress::{ProgressSink, PROGRESS_EVERY};
use crate::flow::{for_each_packet, Walk};
use crate::pcap::{FileFormat, FileReader};
use crate::source::{fold, Control, Folded, Limits, PacketSource, RawPacket, SourceLoop};
use crate::stats::{Stats, StopReason};

/// An open file: the pass and the packets of its map.
struct ReaderState {
    lp: SourceLoop<FileReader>,
    packets: MappedPackets,
}

/// An open capture file: an iterator of packets (or of dicts with `decode=`).
#[pyclass(module = "paclo")]
pub struct Reader {
    inner: Option<ReaderState>,
    /// Statistics kept after `close()`.
    closed_stats: Option<Stats>,
    mode: DecodeMode,
    /// The progress display: bytes read of the file's size.
    progress: Option<ProgressSink>,
}

impl Reader {
    fn stats_now(&self) -> Option<Stats> {
        self.inner
            .as_ref()
            .map(|s| s.lp.stats())
            .or_else(|| self.closed_stats.clone())
    }

    /// Report the final position to the progress display, if any, and close it.
    fn end_progress(&mut self, py: Python<'_>) -> PyResult<()> {
        let at = self.inner.as_ref().and_then(|s| s.lp.source().progress());
        match (self.progress.take(), at) {
            (Some(bar), Some((at, total))) => bar.finish(py, at, total),
            _ => Ok(()),
        }
    }
}

fn read_before(packets: u64) -> String {
    format!("{packets} packets were read before it")
}

#[pymethods]
impl Reader {
    #[classmethod]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mode = self.mode;
        let Some(ReaderState { lp, packets }) = self.inner.as_mut() else {
            return Ok(None);
        };
        // A consumer in C (`list(reader)`) runs no Python code that would notice Ctrl-C.
        let n = lp.packets();
        if n % SIGNAL_CHECK_EVERY == 0 && n != 0 {
            py.check_signals()?;
        }
        if n % PROGRESS_EVERY == 0 && n != 0 {
            if let (Some(bar), Some((at, total))) = (&self.progress, lp.source().progress()) {
                bar.update(py, at, total)?;
            }
        }
        let step = lp.next_with(&mut PyHost(py), |p| to_python_mapped(py, mode, p, packets))?;
        match step {
            Ok(Some(converted)) => {
                let (obj, decode_error) = converted?;
                if decode_error {
                    lp.count_decode_error();
                }
                if let Some(m) = lp.take_oversized() {
                    warn_oversized(py, &m, 1)?;
                }
                Ok(Some(obj))
            }
            Ok(None) => {
                packets.release();
                let truncation = lp.take_truncation().map(|t| (t, read_before(lp.packets())));
                self.end_progress(py)?;
                if let Some((t, before)) = truncation {
                    warn_truncated(py, &t, &before, 1)?;
                }
                Ok(None)
            }
            Err(e) => {
                // The error is the one to raise; a failing display does not replace it.
                let _ = self.end_progress(py);
                Err(e.into())
            }
        }
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    /// Statistics of the read so far (see docs/stats.md).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        match self.stats_now() {
            Some(s) => stats_dict(py, &s),
            None => Err(PyValueError::new_err("reader has no statistics")),
        }
    }

    /// Unmap the file (packets already yielded stay valid) and close the progress display;
    /// idempotent.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let ended = self.end_progress(py);
        if let Some(st) = self.inner.take() {
            self.closed_stats = Some(st.lp.close());
        }
        ended
    }

    /// True once `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// The file format: `"pcap"` or `"pcapng"` (None once closed).
    #[getter]
    fn format(&self) -> Option<&'static str> {
        self.inner.as_ref().map(|s| match s.lp.source().format() {
            FileFormat::Pcap => "pcap",
            FileFormat::PcapNg => "pcapng",
        })
    }

    /// The file's link type (pcapng: the first interface's), None if unknown or closed.
    #[getter]
    fn linktype(&self) -> Option<u32> {
        self.inner.as_ref().and_then(|s| s.lp.source().linktype())
    }

    /// The snapshot length of the file header (pcapng: 262144), None once closed.
    #[getter]
    fn snaplen(&self) -> Option<u32> {
        self.inner.as_ref().map(|s| s.lp.source().snaplen())
    }

    fn __repr__(&self) -> String {
        match self.stats_now() {
            Some(s) => {
                let path = match &s.source {
                    crate::source::SourceInfo::Path(p) => p.display().to_string(),
                    crate::source::SourceInfo::Device(d) => d.clone(),
                };
                format!(
                    "<paclo.Reader {path:?} {} packets={}>",
                    s.state.as_str(),
                    s.processed
                )
            }
            None => "<paclo.Reader>".into(),
        }
    }
}

fn open_file(
    path: &PathBuf,
    filter: Option<&str>,
    limit: Option<i64>,
) -> PyResult<SourceLoop<FileReader>> {
    let limits = Limits {
        max_packets: parse_limit(limit)?,
        ..Default::default()
    };
    Ok(SourceLoop::new(FileReader::open(path)?, filter, limits)?)
}

/// Open a capture file for reading. `filter` is a BPF string (already normalised);
/// `progress` an object with `update(done, total)` and `close()` told the bytes read of the
/// file's size every [`PROGRESS_EVERY`] packets and at the end.
#[pyfunction]
#[pyo3(signature = (path, *, filter = None, decode = None, limit = None, progress = None, strict = false))]
pub fn read(
    py: Python<'_>,
    path: PathBuf,
    filter: Option<&str>,
    decode: Option<&str>,
    limit: Option<i64>,
    progress: Option<Py<PyAny>>,
    strict: bool,
) -> PyResult<Reader> {
    let mode = DecodeMode::parse(decode)?;
    let lp = open_file(&path, filter, limit)?.strict(strict);
    let packets = MappedPackets::new(py, lp.source().shared_map())?;
    Ok(Reader {
        inner: Some(ReaderState { lp, packets }),
        closed_stats: None,
        mode,
        progress: ProgressSink::new(progress),
    })
}

/// A reduction's Python side: the step function, the stop conditions it checks, the
/// accumulator.
struct Reduction<'py> {
    func: Bound<'py, PyAny>,
    reduced_type: Bound<'py, PyType>,
    stop_when: Option<Bound<'py, PyAny>>,
}

impl<'py> Reduction<'py> {
    /// Fold over the pass; `convert` makes each packet's Python object.
    fn run<S: PacketSource>(
        &self,
        py: Python<'py>,
        lp: &mut SourceLoop<S>,
        acc: &mut Bound<'py, PyAny>,
        mut convert: impl FnMut(&RawPacket<'_>) -> PyResult<(Bound<'py, PyAny>, bool)>,
    ) -> Result<(), Folded<PyErr>> {
        let mut decode_errors = 0;
        let outcome = fold(lp, &mut PyHost(py), acc, |acc, p| {
            let (obj, decode_error) = convert(p)?;
            decode_errors += u64::from(decode_error);
            let keep = self.stop_when.as_ref().map(|_| obj.clone());
            let next = self.func.call1((acc.clone(), obj))?;
            if next.is_instance(&self.reduced_type)? {
                *acc = next.getattr("value")?;
                return Ok(Control::Stop(StopReason::Reduced));
            }
            *acc = next;
            if let (Some(pred), Some(o)) = (&self.stop_when, keep) {
                if pred.call1((o,))?.is_truthy()? {
                    return Ok(Control::Stop(StopReason::Predicate));
                }
            }
            Ok(Control::Continue)
        });
        lp.count_decode_errors(decode_errors);
        outcome
    }
}

/// Fold `func(acc, packet)` over a file (a path) or a live device (a description dict);
/// returns `(acc, stats)`. A result that is an instance of `reduced_type` stops at once
/// with its `.value`; `stop_when(packet)` true stops after that packet. A device's
/// `on_stats` gets the kernel's counters at the end, `on_error` a device error, which
/// `error_mode="pass"` does not raise. A truncated file warns (`strict=True` raises).
#[pyfunction]
#[pyo3(signature = (func, init, source, *, reduced_type, filter = None, decode = None, limit = None,
    strict = false, stop_when = None, on_stats = None, on_error = None, error_mode = "raise"))]
#[allow(clippy::too_many_arguments)]
pub fn reduce<'py>(
    py: Python<'py>,
    func: Bound<'py, PyAny>,
    init: Bound<'py, PyAny>,
    source: SourceArg,
    reduced_type: Bound<'py, PyType>,
    filter: Option<&str>,
    decode: Option<&str>,
    limit: Option<i64>,
    strict: bool,
    stop_when: Option<Bound<'py, PyAny>>,
    on_stats: Option<Py<PyAny>>,
    on_error: Option<Py<PyAny>>,
    error_mode: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let mode = DecodeMode::parse(decode)?;
    let r = Reduction {
        func,
        reduced_type,
        stop_when,
    };
    let mut acc = init;
    let (outcome, lp_end) = match source {
        SourceArg::Files(paths) => {
            let [path] = paths.as_slice() else {
                return Err(PyValueError::new_err("reduce reads one capture file"));
            };
            let mut lp = open_file(path, filter, limit)?.strict(strict);
            let mut packets = MappedPackets::new(py, lp.source().shared_map())?;
            let outcome = r.run(py, &mut lp, &mut acc, |p| {
                to_python_mapped(py, mode, p, &mut packets)
            });
            let ended = end(py, lp, &outcome);
            (outcome, ended)
        }
        SourceArg::Device(live) => {
            let mut lp = live.open(py, filter)?;
            let outcome = r.run(py, &mut lp, &mut acc, |p| to_python(py, mode, p));
            let ended = end(py, lp, &outcome);
            (outcome, ended)
        }
    };
    let (stats, truncation, oversized) = lp_end;
    if let Some(p) = stats.pcap {
        call_hook(py, &on_stats, pcap_dict(py, p)?.into_any(), &on_error);
        // A Ctrl-C that landed in the hook (re-armed there) raises here.
        py.check_signals()?;
    }
    match outcome {
        Ok(()) => {}
        Err(Folded::Interrupted(e) | Folded::Consumer(e)) => return Err(e),
        Err(Folded::Source(e)) => {
            if on_error.is_some() {
                report_error(py, &on_error, e.clone().into());
            }
            if error_mode != "pass" {
                return Err(e.into());
            }
        }
    }
    if let Some(m) = oversized {
        warn_oversized(py, &m, 2)?;
    }
    if let Some(t) = truncation {
        warn_truncated(py, &t, &read_before(stats.processed), 2)?;
    }
    Ok((acc, stats_dict(py, &stats)?))
}

/// Record how a fold ended, close the pass (the device's counters are read, the handle
/// closed): the final statistics, a truncation and records longer than their snaplen to
/// warn about.
fn end<S: PacketSource>(
    py: Python<'_>,
    mut lp: SourceLoop<S>,
    outcome: &Result<(), Folded<PyErr>>,
) -> (Stats, Option<crate::error::Error>, Option<String>) {
    if let Err(Folded::Consumer(e)) = outcome {
        lp.fail(consumer_failure(py, e, e.value(py).to_string()));
    }
    let truncation = lp.take_truncation();
    let oversized = lp.take_oversized();
    (lp.close(), truncation, oversized)
}

/// The native loop probe: count packets and captured bytes of a file (after `filter`),
/// with no Python object per packet and the GIL released. Checks for signals (Ctrl-C)
/// between chunks of packets. A truncated last record ends the count (no warning).
#[pyfunction]
#[pyo3(signature = (path, *, filter = None, limit = None))]
pub fn count_packets(
    py: Python<'_>,
    path: PathBuf,
    filter: Option<&str>,
    limit: Option<i64>,
) -> PyResult<(u64, u64)> {
    let mut lp = open_file(&path, filter, limit)?;
    interruptible(py, false, |stop| {
        Ok(match for_each_packet(&mut lp, stop, |_| {})? {
            Walk::Done => Some(()),
            Walk::Stopped => None,
        })
    })?;
    Ok((lp.packets(), lp.bytes()))
}
