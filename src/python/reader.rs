//! `Packet`, `Reader`, `reduce` over files and the native counting probe.

use std::ffi::CString;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use memmap2::Mmap;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};

use super::common::{to_python_mapped, DecodeMode};
use super::error::{OversizedRecordWarning, TruncatedCaptureWarning};
use crate::error::Error;
use crate::pcap::{FileFilter, FileFormat, FileReader};
use crate::source::{PacketSource, RawPacket};

/// A mapped capture file shared by the packets read from it (a Python reference count is
/// cheaper per packet than an atomic one).
#[pyclass(module = "paclo", frozen)]
pub struct MappedFile(pub Arc<Mmap>);

/// One captured packet. From a file the bytes stay in the shared map until `data` is first
/// read; from a live capture they are copied at creation.
///
/// No `freelist`: pyo3's freelist takes a mutex per allocation and per free, which measured
/// slower (about 13 ns per packet) than CPython's own allocator.
#[pyclass(module = "paclo", frozen)]
pub struct Packet {
    #[pyo3(get)]
    ts_ns: i64,
    #[pyo3(get)]
    caplen: u32,
    #[pyo3(get)]
    wirelen: u32,
    #[pyo3(get)]
    linktype: u32,
    /// The mapped file and the offset of the bytes in it (None for owned packets).
    map: Option<(Py<MappedFile>, usize)>,
    data: OnceLock<Py<PyBytes>>,
}

impl Packet {
    /// Copy a borrowed packet into a Python object.
    pub fn from_raw(py: Python<'_>, pkt: &RawPacket<'_>) -> Packet {
        let data = OnceLock::new();
        let _ = data.set(PyBytes::new(py, pkt.data).unbind());
        Packet {
            ts_ns: pkt.ts_ns,
            caplen: pkt.caplen,
            wirelen: pkt.wirelen,
            linktype: pkt.linktype,
            map: None,
            data,
        }
    }

    /// A packet whose bytes are `pkt.data`, at `offset` in `map`, copied on first access.
    pub fn from_mapped(
        py: Python<'_>,
        map: &Py<MappedFile>,
        offset: usize,
        pkt: &RawPacket<'_>,
    ) -> Packet {
        Packet {
            ts_ns: pkt.ts_ns,
            caplen: pkt.caplen,
            wirelen: pkt.wirelen,
            linktype: pkt.linktype,
            map: Some((map.clone_ref(py), offset)),
            data: OnceLock::new(),
        }
    }

    /// The captured bytes, without creating a Python object when they are still mapped.
    fn with_bytes<R>(&self, py: Python<'_>, f: impl FnOnce(&[u8]) -> R) -> R {
        if let Some(b) = self.data.get() {
            return f(b.bind(py).as_bytes());
        }
        match &self.map {
            Some((map, off)) => f(map
                .get()
                .0
                .get(*off..*off + self.caplen as usize)
                .unwrap_or_default()),
            None => f(&[]),
        }
    }

    fn bytes_obj(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data
            .get_or_init(|| self.with_bytes(py, |b| PyBytes::new(py, b).unbind()))
            .clone_ref(py)
    }
}

/// `Packet` constructor arguments: (data, ts_ns, wirelen, linktype).
type PacketArgs = (Py<PyBytes>, i64, u32, u32);

#[pymethods]
impl Packet {
    /// A packet from bytes: `Packet(data, ts_ns=0, wirelen=None, linktype=1)`; `wirelen`
    /// defaults to `len(data)`.
    #[new]
    #[pyo3(signature = (data, ts_ns = 0, wirelen = None, linktype = 1))]
    fn py_new(
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        ts_ns: i64,
        wirelen: Option<u32>,
        linktype: u32,
    ) -> PyResult<Packet> {
        with_buffer(data, "data", |b| {
            let caplen = u32::try_from(b.len())
                .map_err(|_| PyValueError::new_err("data is longer than 4 GiB"))?;
            let raw = RawPacket {
                ts_ns,
                caplen,
                wirelen: wirelen.unwrap_or(caplen),
                linktype,
                data: b,
            };
            Ok(Packet::from_raw(py, &raw))
        })?
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyType>, PacketArgs)> {
        let p = slf.get();
        let py = slf.py();
        Ok((
            py.get_type::<Packet>(),
            (p.bytes_obj(py), p.ts_ns, p.wirelen, p.linktype),
        ))
    }

    /// The captured bytes.
    #[getter]
    fn data(&self, py: Python<'_>) -> Py<PyBytes> {
        self.bytes_obj(py)
    }

    /// Timestamp in float seconds since the epoch.
    #[getter]
    fn ts(&self) -> f64 {
        self.ts_ns as f64 / 1e9
    }

    /// Whole seconds of the timestamp.
    #[getter]
    fn ts_sec(&self) -> i64 {
        self.ts_ns.div_euclid(1_000_000_000)
    }

    /// Microseconds within the second.
    #[getter]
    fn ts_usec(&self) -> i64 {
        self.ts_ns.rem_euclid(1_000_000_000) / 1_000
    }

    /// The buffer protocol: a read-only view of the captured bytes without a copy
    /// (`memoryview(pkt)`, `numpy.frombuffer(pkt, numpy.uint8)`).
    unsafe fn __getbuffer__(
        slf: Bound<'_, Self>,
        view: *mut pyo3::ffi::Py_buffer,
        flags: std::ffi::c_int,
    ) -> PyResult<()> {
        let py = slf.py();
        let (ptr, len) = slf.get().with_bytes(py, |b| (b.as_ptr(), b.len()));
        // SAFETY: the bytes live in the packet's map or its cached `bytes` object, both
        // kept alive by the packet, which the view holds a reference to (`obj`) until it
        // is released; the buffer is marked read-only, so nothing writes through it.
        let rc = unsafe {
            pyo3::ffi::PyBuffer_FillInfo(
                view,
                slf.as_ptr(),
                ptr as *mut std::ffi::c_void,
                len as pyo3::ffi::Py_ssize_t,
                1,
                flags,
            )
        };
        if rc == -1 {
            return Err(PyErr::fetch(py));
        }
        Ok(())
    }

    fn __bytes__(&self, py: Python<'_>) -> Py<PyBytes> {
        self.bytes_obj(py)
    }

    fn __len__(&self) -> usize {
        self.caplen as usize
    }

    /// The full packet map of this packet (as `decode="full"` yields).
    fn decode<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let (ts_ns, caplen, wirelen, linktype) =
            (self.ts_ns, self.caplen, self.wirelen, self.linktype);
        self.with_bytes(py, |data| {
            let raw = RawPacket {
                ts_ns,
                caplen,
                wirelen,
                linktype,
                data,
            };
            super::decode::full_map(py, &raw).map(|(d, _)| d)
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Packet(ts_ns={}, caplen={}, wirelen={}, linktype={})",
            self.ts_ns, self.caplen, self.wirelen, self.linktype
        )
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let Ok(other) = other.cast::<Packet>() else {
            return Ok(py.NotImplemented());
        };
        let o = other.get();
        let same = (self.ts_ns, self.caplen, self.wirelen, self.linktype)
            == (o.ts_ns, o.caplen, o.wirelen, o.linktype)
            && self.with_bytes(py, |a| o.with_bytes(py, |b| a == b));
        Ok(same.into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __hash__(&self, py: Python<'_>) -> u64 {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.ts_ns, self.caplen, self.wirelen, self.linktype).hash(&mut h);
        self.with_bytes(py, |b| b.hash(&mut h));
        h.finish() >> 2
    }
}

/// Counters and outcome of one read, in the reference §1.6 statistics shape.
#[derive(Debug)]
struct ReadStats {
    path: String,
    started_at_ms: u64,
    started: Instant,
    finished: Option<Instant>,
    /// Packets read that passed the filter.
    captured: u64,
    /// Packets handed to the consumer.
    processed: u64,
    decode_errors: u64,
    bytes: u64,
    truncated: bool,
    /// Records read whole although longer than their snaplen.
    oversized_records: u64,
    state: &'static str,
    stop_reason: Option<&'static str>,
    error: Option<(String, String)>,
}

impl ReadStats {
    fn new(path: &Path) -> ReadStats {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        ReadStats {
            path: abs.display().to_string(),
            started_at_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            started: Instant::now(),
            finished: None,
            captured: 0,
            processed: 0,
            decode_errors: 0,
            bytes: 0,
            truncated: false,
            oversized_records: 0,
            state: "running",
            stop_reason: None,
            error: None,
        }
    }

    fn finish(&mut self, state: &'static str, reason: &'static str) {
        if self.finished.is_none() {
            self.finished = Some(Instant::now());
            self.state = state;
            self.stop_reason = Some(reason);
        }
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("schema_version", 1)?;
        d.set_item("state", self.state)?;
        let source = PyDict::new(py);
        source.set_item("type", "path")?;
        source.set_item("path", &self.path)?;
        d.set_item("source", source)?;
        let timing = PyDict::new(py);
        timing.set_item("started_at_ms", self.started_at_ms)?;
        let end = self.finished.unwrap_or_else(Instant::now);
        timing.set_item(
            "elapsed_ms",
            end.duration_since(self.started).as_millis() as u64,
        )?;
        d.set_item("timing", timing)?;
        let packets = PyDict::new(py);
        packets.set_item("captured", self.captured)?;
        packets.set_item("processed", self.processed)?;
        packets.set_item("decode_errors", self.decode_errors)?;
        d.set_item("packets", packets)?;
        d.set_item("bytes", self.bytes)?;
        d.set_item("queue", py.None())?;
        d.set_item("pcap", py.None())?;
        d.set_item("stop_reason", self.stop_reason)?;
        match &self.error {
            Some((class, message)) => {
                let e = PyDict::new(py);
                e.set_item("class", class)?;
                e.set_item("message", message)?;
                d.set_item("error", e)?;
            }
            None => d.set_item("error", py.None())?,
        }
        d.set_item("truncated", self.truncated)?;
        d.set_item("oversized_records", self.oversized_records)?;
        Ok(d)
    }
}

/// A progress bar on stderr: bytes read of the file size, redrawn at most every 200 ms.
struct Progress {
    total: u64,
    countdown: u32,
    last: Instant,
    drawn: bool,
}

impl Progress {
    const CHECK_EVERY: u32 = 8192;

    /// A bar when stderr is a terminal, else None.
    fn on_tty(total: u64) -> Option<Progress> {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(2) } == 1;
        tty.then(|| Progress {
            total,
            countdown: Self::CHECK_EVERY,
            last: Instant::now(),
            drawn: false,
        })
    }

    #[inline]
    fn tick(&mut self, position: u64) {
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = Self::CHECK_EVERY;
            if self.last.elapsed().as_millis() >= 200 {
                self.draw(position);
            }
        }
    }

    #[cold]
    fn draw(&mut self, position: u64) {
        self.last = Instant::now();
        self.drawn = true;
        let frac = if self.total == 0 {
            1.0
        } else {
            position as f64 / self.total as f64
        };
        let width = 30;
        let filled = ((frac * width as f64) as usize).min(width);
        eprint!(
            "\r[{}{}] {:5.1}% {:.1}/{:.1} MB",
            "#".repeat(filled),
            "-".repeat(width - filled),
            frac * 100.0,
            position as f64 / 1e6,
            self.total as f64 / 1e6
        );
    }

    fn done(&mut self, position: u64) {
        if self.drawn {
            self.draw(position);
            eprintln!();
        }
    }
}

/// The read loop shared by `Reader`, `reduce` and the probe: filter, limit, counters.
struct FileLoop {
    reader: FileReader,
    filter: Option<FileFilter>,
    limit: Option<u64>,
    stats: ReadStats,
    progress: Option<Progress>,
    /// Whether the warning about records longer than their snaplen was given.
    oversized_warned: bool,
}

/// A packet of the map, by position: no borrow of the loop.
#[derive(Clone, Copy)]
struct PacketRef {
    ts_ns: i64,
    caplen: u32,
    wirelen: u32,
    linktype: u32,
    offset: usize,
}

impl PacketRef {
    #[inline]
    fn raw<'a>(&self, map: &'a [u8]) -> RawPacket<'a> {
        RawPacket {
            ts_ns: self.ts_ns,
            caplen: self.caplen,
            wirelen: self.wirelen,
            linktype: self.linktype,
            data: map
                .get(self.offset..self.offset + self.caplen as usize)
                .unwrap_or_default(),
        }
    }
}

/// What `FileLoop::next` found.
enum Next {
    Packet(PacketRef),
    /// The filter rejected [`SCAN_BUDGET`] records in a row: call again (after checking
    /// for signals) to go on.
    Pending,
    /// The end: eof, limit or an error already recorded.
    End,
}

/// Records the filter may reject in one call of `FileLoop::next`, so a filter that matches
/// rarely cannot hold off Ctrl-C (or keep the GIL) for a whole file.
const SCAN_BUDGET: u32 = 1 << 16;

impl FileLoop {
    fn open(
        path: &Path,
        filter: Option<&str>,
        limit: Option<u64>,
        progress: bool,
        strict: bool,
    ) -> crate::error::Result<FileLoop> {
        let mut reader = FileReader::open(path)?;
        reader.set_strict(strict);
        let filter = match filter {
            Some(expr) => Some(FileFilter::for_reader(expr, &reader)?),
            None => None,
        };
        let progress = if progress {
            Progress::on_tty(reader.file_len())
        } else {
            None
        };
        Ok(FileLoop {
            stats: ReadStats::new(reader.path()),
            reader,
            filter,
            limit,
            progress,
            oversized_warned: false,
        })
    }

    /// The next packet passing the filter, the end, or `Pending` after a long run of
    /// rejected records. On a truncated last record the end is reported with
    /// `stats.truncated` set; other errors are returned (and recorded).
    #[inline]
    fn next(&mut self) -> crate::error::Result<Next> {
        if self.stats.finished.is_some() {
            return Ok(Next::End);
        }
        if self.limit.is_some_and(|l| self.stats.processed >= l) {
            self.end("max_packets");
            return Ok(Next::End);
        }
        let base = self.reader.shared_map().as_ptr() as usize;
        let mut rejected = 0u32;
        loop {
            if let Some(p) = self.progress.as_mut() {
                p.tick(self.reader.position());
            }
            let pkt = match self.reader.next_packet() {
                Ok(Some(p)) => p,
                Ok(None) => break,
                Err(e) => {
                    return if let Error::Truncated { .. } = e {
                        self.stats.truncated = true;
                        Err(e)
                    } else {
                        self.fail(&e);
                        Err(e)
                    };
                }
            };
            if let Some(f) = self.filter.as_mut() {
                match f.matches(&pkt) {
                    Ok(true) => {}
                    Ok(false) => {
                        rejected += 1;
                        if rejected >= SCAN_BUDGET {
                            return Ok(Next::Pending);
                        }
                        continue;
                    }
                    Err(e) => {
                        self.stats.state = "failed";
                        self.stats.error = Some(("ValueError".into(), e.to_string()));
                        self.stats.finished = Some(Instant::now());
                        self.stats.stop_reason = Some("error");
                        return Err(e);
                    }
                }
            }
            self.stats.captured += 1;
            self.stats.processed += 1;
            self.stats.bytes += u64::from(pkt.caplen);
            let r = PacketRef {
                ts_ns: pkt.ts_ns,
                caplen: pkt.caplen,
                wirelen: pkt.wirelen,
                linktype: pkt.linktype,
                offset: (pkt.data.as_ptr() as usize).wrapping_sub(base),
            };
            self.stats.oversized_records = self.reader.oversized().count;
            return Ok(Next::Packet(r));
        }
        self.end("eof");
        Ok(Next::End)
    }

    /// As [`next`](Self::next), but a long filtered scan checks for signals between
    /// chunks of rejected records, with the GIL released; never returns `Pending`.
    #[inline]
    fn next_interruptible(&mut self, py: Python<'_>) -> PyResult<crate::error::Result<Next>> {
        let mut step = self.next();
        while let Ok(Next::Pending) = step {
            py.check_signals()?;
            step = py.detach(|| self.next());
        }
        Ok(step)
    }

    /// Warn, once per file, that a record longer than its snaplen was read whole: called
    /// after each packet handed to Python (`stacklevel` as in [`on_error`](Self::on_error)).
    #[inline]
    fn warn_oversized(&mut self, py: Python<'_>, stacklevel: i32) -> PyResult<()> {
        if self.oversized_warned || self.stats.oversized_records == 0 {
            return Ok(());
        }
        self.oversized_warned = true;
        let message = self
            .reader
            .oversized()
            .message(self.reader.path())
            .unwrap_or_default();
        let message = CString::new(message).unwrap_or_default();
        PyErr::warn(
            py,
            &py.get_type::<OversizedRecordWarning>(),
            &message,
            stacklevel,
        )
    }

    fn end(&mut self, reason: &'static str) {
        if let Some(p) = self.progress.as_mut() {
            p.done(self.reader.position());
        }
        self.progress = None;
        self.stats.oversized_records = self.reader.oversized().count;
        self.stats.finish("closed", reason);
    }

    fn fail(&mut self, e: &Error) {
        self.stats.oversized_records = self.reader.oversized().count;
        self.stats.error = Some(("PcapFormatError".into(), e.to_string()));
        self.stats.finish("failed", "error");
    }

    /// Handle an error from `next`: a truncated last record warns and ends the read
    /// (`Ok`), or with `strict` fails; any other error is raised. `stacklevel` 1 names the
    /// Python line that called into the extension (the loop over a `Reader`), 2 the line
    /// above it (the caller of `paclo.reduce`).
    fn on_error(
        &mut self,
        py: Python<'_>,
        e: Error,
        strict: bool,
        stacklevel: i32,
    ) -> PyResult<()> {
        if !matches!(e, Error::Truncated { .. }) {
            return Err(e.into());
        }
        if strict {
            self.fail(&e);
            return Err(e.into());
        }
        let message = format!("{e}; {} packets were read before it", self.stats.processed);
        self.end("eof");
        let message = CString::new(message).unwrap_or_default();
        PyErr::warn(
            py,
            &py.get_type::<TruncatedCaptureWarning>(),
            &message,
            stacklevel,
        )
    }
}

/// An open capture file: an iterator of packets (or of dicts with `decode=`).
#[pyclass(module = "paclo")]
pub struct Reader {
    inner: Option<FileLoop>,
    /// The map of `inner`, as a Python object for the packets.
    handle: Option<Py<MappedFile>>,
    /// Statistics kept after `close()`.
    closed_stats: Option<ReadStats>,
    mode: DecodeMode,
    strict: bool,
}

impl Reader {
    fn stats_ref(&self) -> Option<&ReadStats> {
        self.inner
            .as_ref()
            .map(|l| &l.stats)
            .or(self.closed_stats.as_ref())
    }
}

#[pymethods]
impl Reader {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let (mode, strict) = (self.mode, self.strict);
        let (Some(l), Some(handle)) = (self.inner.as_mut(), self.handle.as_ref()) else {
            return Ok(None);
        };
        // A consumer in C (`list(reader)`) runs no Python code that would notice Ctrl-C.
        if l.stats.processed % SIGNAL_CHECK_EVERY == 0 && l.stats.processed != 0 {
            py.check_signals()?;
        }
        let err = match l.next_interruptible(py)? {
            Ok(Next::Packet(r)) => {
                let map = l.reader.shared_map();
                let (obj, decode_error) =
                    to_python_mapped(py, mode, &r.raw(map), handle, r.offset)?;
                if decode_error {
                    l.stats.decode_errors += 1;
                }
                l.warn_oversized(py, 1)?;
                return Ok(Some(obj));
            }
            Ok(Next::End | Next::Pending) => return Ok(None),
            Err(e) => e,
        };
        l.on_error(py, err, strict, 1)?;
        Ok(None)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> bool {
        self.close();
        false
    }

    /// Statistics of the read so far (reference §1.6 shape, snake_case).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        match self.stats_ref() {
            Some(s) => s.to_dict(py),
            None => Err(PyValueError::new_err("reader has no statistics")),
        }
    }

    /// Unmap the file (packets already yielded stay valid); idempotent.
    fn close(&mut self) {
        self.handle = None;
        if let Some(mut l) = self.inner.take() {
            l.end("closed");
            self.closed_stats = Some(l.stats);
        }
    }

    /// True once `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// The file format: `"pcap"` or `"pcapng"` (None once closed).
    #[getter]
    fn format(&self) -> Option<&'static str> {
        self.inner.as_ref().map(|l| match l.reader.format() {
            FileFormat::Pcap => "pcap",
            FileFormat::PcapNg => "pcapng",
        })
    }

    /// The file's link type (pcapng: the first interface's), None if unknown or closed.
    #[getter]
    fn linktype(&self) -> Option<u32> {
        self.inner.as_ref().and_then(|l| l.reader.linktype())
    }

    /// The snapshot length of the file header (pcapng: 262144), None once closed.
    #[getter]
    fn snaplen(&self) -> Option<u32> {
        self.inner.as_ref().map(|l| l.reader.snaplen())
    }

    fn __repr__(&self) -> String {
        match self.stats_ref() {
            Some(s) => format!(
                "<paclo.Reader {:?} {} packets={}>",
                s.path, s.state, s.processed
            ),
            None => "<paclo.Reader>".into(),
        }
    }
}

fn parse_limit(limit: Option<i64>) -> PyResult<Option<u64>> {
    match limit {
        None => Ok(None),
        Some(n) if n >= 0 => Ok(Some(n as u64)),
        Some(n) => Err(PyValueError::new_err(format!(
            "limit must be a non-negative integer or None, not {n}"
        ))),
    }
}

/// Open a capture file for reading. `filter` is a BPF string (already normalised).
#[pyfunction]
#[pyo3(signature = (path, *, filter = None, decode = None, limit = None, progress = false, strict = false))]
fn read(
    py: Python<'_>,
    path: PathBuf,
    filter: Option<&str>,
    decode: Option<&str>,
    limit: Option<i64>,
    progress: bool,
    strict: bool,
) -> PyResult<Reader> {
    let mode = DecodeMode::parse(decode)?;
    let limit = parse_limit(limit)?;
    let l = FileLoop::open(&path, filter, limit, progress, strict)?;
    let handle = Py::new(py, MappedFile(Arc::clone(l.reader.shared_map())))?;
    Ok(Reader {
        inner: Some(l),
        handle: Some(handle),
        closed_stats: None,
        mode,
        strict,
    })
}

/// Packets between two checks for pending signals (Ctrl-C) in native loops.
const SIGNAL_CHECK_EVERY: u64 = 1 << 16;

/// Fold `fn(acc, packet)` over a file natively; returns `(acc, stats)`. A result that is an
/// instance of `reduced_type` stops at once with its `.value`.
#[pyfunction]
#[pyo3(signature = (func, init, path, *, reduced_type, filter = None, decode = None, limit = None, strict = false))]
#[allow(clippy::too_many_arguments)]
fn reduce_path<'py>(
    py: Python<'py>,
    func: Bound<'py, PyAny>,
    init: Bound<'py, PyAny>,
    path: PathBuf,
    reduced_type: Bound<'py, PyType>,
    filter: Option<&str>,
    decode: Option<&str>,
    limit: Option<i64>,
    strict: bool,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyDict>)> {
    let mode = DecodeMode::parse(decode)?;
    let limit = parse_limit(limit)?;
    let mut l = FileLoop::open(&path, filter, limit, false, strict)?;
    let handle = Py::new(py, MappedFile(Arc::clone(l.reader.shared_map())))?;
    let mut acc = init;
    loop {
        let err = match l.next_interruptible(py)? {
            Ok(Next::Packet(r)) => {
                let map = l.reader.shared_map();
                let (obj, decode_error) =
                    to_python_mapped(py, mode, &r.raw(map), &handle, r.offset)?;
                if decode_error {
                    l.stats.decode_errors += 1;
                }
                l.warn_oversized(py, 2)?;
                acc = func.call1((acc, obj))?;
                if acc.is_instance(&reduced_type)? {
                    acc = acc.getattr("value")?;
                    l.stats.finish("closed", "reduced");
                    break;
                }
                // `fn` may be a builtin that never runs the interpreter's signal checks.
                if l.stats.processed % SIGNAL_CHECK_EVERY == 0 {
                    py.check_signals()?;
                }
                continue;
            }
            Ok(Next::End | Next::Pending) => break,
            Err(e) => e,
        };
        l.on_error(py, err, strict, 2)?;
        break;
    }
    let stats = l.stats.to_dict(py)?;
    Ok((acc, stats))
}

/// The native loop probe: count packets and captured bytes of a file (after `filter`),
/// with no Python object per packet and the GIL released. Checks for signals (Ctrl-C)
/// between chunks of packets. A truncated last record ends the count (no warning).
#[pyfunction]
#[pyo3(signature = (path, *, filter = None, limit = None))]
fn count_packets(
    py: Python<'_>,
    path: PathBuf,
    filter: Option<&str>,
    limit: Option<i64>,
) -> PyResult<(u64, u64)> {
    const CHUNK: u64 = SIGNAL_CHECK_EVERY;
    let limit = parse_limit(limit)?;
    let mut l = FileLoop::open(&path, filter, limit, false, false)?;
    loop {
        let outcome: crate::error::Result<bool> = py.detach(|| {
            for _ in 0..CHUNK {
                match l.next() {
                    Ok(Next::Packet(_)) => {}
                    // A long filtered scan: check for signals now.
                    Ok(Next::Pending) => return Ok(false),
                    Ok(Next::End) => return Ok(true),
                    Err(Error::Truncated { .. }) => return Ok(true),
                    Err(e) => return Err(e),
                }
            }
            Ok(false)
        });
        if outcome? {
            return Ok((l.stats.processed, l.stats.bytes));
        }
        py.check_signals()?;
    }
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// Call `f` with the bytes of a bytes-like object (bytes, bytearray, memoryview, ...).
fn with_buffer<R>(obj: &Bound<'_, PyAny>, what: &str, f: impl FnOnce(&[u8]) -> R) -> PyResult<R> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(f(b.as_bytes()));
    }
    match pyo3::buffer::PyBuffer::<u8>::get(obj) {
        Ok(buf) => Ok(f(&buf.to_vec(obj.py())?)),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{what} must be bytes-like (bytes, bytearray, memoryview), not {}",
            obj.get_type().name()?
        ))),
    }
}

fn dict_int(d: &Bound<'_, PyDict>, key: &str) -> PyResult<Option<i64>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.extract::<i64>().map_err(|_| {
            let ty = v
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            PyTypeError::new_err(format!(
                "packet dict key '{key}' must be an integer, not {ty}"
            ))
        })?)),
        _ => Ok(None),
    }
}

/// Write one item: a `Packet`, a bytes-like object, or a dict with `data` and `ts_ns`
/// (or `ts_sec`/`ts_usec`), optionally `wirelen`/`len`. `ts_ns` overrides the item's time;
/// items without a time get the current time.
fn write_item(
    py: Python<'_>,
    w: &mut crate::pcap::PcapWriter<std::fs::File>,
    linktype: u32,
    item: &Bound<'_, PyAny>,
    ts_ns: Option<i64>,
) -> PyResult<()> {
    if let Ok(p) = item.cast::<Packet>() {
        let p = p.get();
        if p.linktype != linktype {
            return Err(PyValueError::new_err(format!(
                "packet linktype {} differs from the file's linktype {linktype}",
                p.linktype
            )));
        }
        let ts = ts_ns.unwrap_or(p.ts_ns);
        return p
            .with_bytes(py, |b| w.write_packet(ts, b, p.wirelen))
            .map_err(PyErr::from);
    }
    if let Ok(d) = item.cast::<PyDict>() {
        let Some(data) = d.get_item("data")? else {
            return Err(PyValueError::new_err(
                "packet dict is missing the key 'data'",
            ));
        };
        let ts = match (ts_ns, dict_int(d, "ts_ns")?, dict_int(d, "ts_sec")?) {
            (Some(t), _, _) | (None, Some(t), _) => t,
            (None, None, Some(sec)) => {
                let usec = dict_int(d, "ts_usec")?.unwrap_or(0);
                sec.saturating_mul(1_000_000_000)
                    .saturating_add(usec.saturating_mul(1_000))
            }
            (None, None, None) => now_ns(),
        };
        let wirelen = match dict_int(d, "wirelen")? {
            Some(n) => Some(("wirelen", n)),
            None => dict_int(d, "len")?.map(|n| ("len", n)),
        };
        let wirelen = match wirelen {
            Some((key, n)) => Some(u32::try_from(n).map_err(|_| {
                PyValueError::new_err(format!(
                    "packet dict key '{key}' must be between 0 and {}, not {n}",
                    u32::MAX
                ))
            })?),
            None => None,
        };
        return with_buffer(&data, "packet dict 'data'", |b| {
            let wl = wirelen.unwrap_or(b.len() as u32);
            w.write_packet(ts, b, wl)
        })?
        .map_err(PyErr::from);
    }
    let ts = ts_ns.unwrap_or_else(now_ns);
    with_buffer(
        item,
        "a packet to write (Packet, bytes-like or dict)",
        |b| w.write_packet(ts, b, b.len() as u32),
    )?
    .map_err(PyErr::from)
}

/// A classic pcap file being written.
#[pyclass(module = "paclo", name = "PcapWriter", subclass)]
pub struct PyPcapWriter {
    inner: Option<crate::pcap::PcapWriter<std::fs::File>>,
    linktype: u32,
    count: u64,
}

#[pymethods]
impl PyPcapWriter {
    #[new]
    #[pyo3(signature = (path, *, linktype = 1, snaplen = 262_144, nanosecond = false))]
    fn new(path: PathBuf, linktype: u32, snaplen: u32, nanosecond: bool) -> PyResult<Self> {
        let w = crate::pcap::PcapWriter::create(&path, linktype, snaplen, nanosecond)?;
        Ok(PyPcapWriter {
            inner: Some(w),
            linktype,
            count: 0,
        })
    }

    /// Append a packet (see `paclo.write_pcap` for the accepted items).
    #[pyo3(signature = (packet, ts_ns = None))]
    fn write(
        &mut self,
        py: Python<'_>,
        packet: &Bound<'_, PyAny>,
        ts_ns: Option<i64>,
    ) -> PyResult<()> {
        let Some(w) = self.inner.as_mut() else {
            return Err(PyValueError::new_err("write to a closed PcapWriter"));
        };
        write_item(py, w, self.linktype, packet, ts_ns)?;
        self.count += 1;
        Ok(())
    }

    /// Write every item of an iterable; returns how many were written. Checks for signals
    /// (Ctrl-C) every 65,536 items: a native iterator (a `Reader`) runs no Python code that
    /// would. On an error, `count` still includes the items written before it.
    fn write_all(&mut self, py: Python<'_>, packets: &Bound<'_, PyAny>) -> PyResult<u64> {
        let Some(w) = self.inner.as_mut() else {
            return Err(PyValueError::new_err("write to a closed PcapWriter"));
        };
        let mut n = 0;
        for item in packets.try_iter()? {
            write_item(py, w, self.linktype, &item?, None)?;
            n += 1;
            self.count += 1;
            if n % SIGNAL_CHECK_EVERY == 0 {
                py.check_signals()?;
            }
        }
        Ok(n)
    }

    /// Packets written so far.
    #[getter]
    fn count(&self) -> u64 {
        self.count
    }

    /// True once closed.
    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_none()
    }

    /// Flush and close the file; idempotent.
    fn close(&mut self) -> PyResult<()> {
        if let Some(w) = self.inner.take() {
            w.finish()?;
        }
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &mut self,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close()?;
        Ok(false)
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyPcapWriter>()?;
    m.add_class::<Packet>()?;
    m.add_class::<Reader>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(reduce_path, m)?)?;
    m.add_function(wrap_pyfunction!(count_packets, m)?)?;
    Ok(())
}
