//! `Packet`: one captured packet as a Python object. Its bytes stay where they are (the
//! file's map, or a pooled buffer of a managed capture) until first read.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};

use super::packet_map::shared_int;
use crate::capture::OwnedPacket;
use crate::pcap::GuardedMap;
use crate::source::RawPacket;

/// A mapped capture file shared by the packets read from it (a Python reference count is
/// cheaper per packet than an atomic one).
#[pyclass(module = "paclo", frozen)]
pub struct MappedFile(pub Arc<GuardedMap>);

/// The buffers of a managed capture's packets: a `Packet` that owns one gives it back when
/// it is freed, and the consumer hands it to the capture thread to fill again, so a capture
/// whose packets are dropped as they go allocates no buffer per packet.
#[pyclass(module = "paclo", frozen)]
pub struct PacketPool {
    free: Mutex<Vec<OwnedPacket>>,
    cap: usize,
}

impl PacketPool {
    /// A pool keeping at most `cap` free buffers.
    pub fn new(cap: usize) -> PacketPool {
        PacketPool {
            free: Mutex::new(Vec::with_capacity(cap)),
            cap,
        }
    }

    /// Move up to `max` free buffers to `out`.
    #[inline]
    pub fn take_into(&self, out: &mut Vec<OwnedPacket>, max: usize) {
        if let Ok(mut free) = self.free.lock() {
            let n = free.len().min(max);
            let at = free.len() - n;
            out.extend(free.drain(at..));
        }
    }

    /// Keep `buf` for reuse (dropped when the pool is full).
    #[inline]
    pub fn give(&self, buf: OwnedPacket) {
        if let Ok(mut free) = self.free.lock() {
            if free.len() < self.cap {
                free.push(buf);
            }
        }
    }
}

/// A pooled buffer is handed to a `Packet` only while its allocation is at most this many
/// times its content (plus [`POOLED_SLACK`] bytes); a packet kept by the user then holds
/// about its own size, not the largest packet its buffer ever carried.
const POOLED_MAX_WASTE: usize = 2;
/// Bytes of spare capacity a pooled packet may hold regardless of its size.
const POOLED_SLACK: usize = 512;

/// Where a packet's bytes are until `data` is first read.
enum Backing {
    /// Copied into `data` at creation.
    Copied,
    /// At this offset in the mapped file.
    Mapped(Py<MappedFile>, usize),
    /// In a buffer of a managed capture's pool, given back when the packet is freed.
    Pooled(Py<PacketPool>, Vec<u8>),
}

/// One captured packet. From a file the bytes stay in the shared map until `data` is first
/// read; from a managed capture they stay in the capture's buffer; elsewhere they are
/// copied at creation.
///
/// `caplen` is a struct member (the int object itself, shared for lengths below 65,536):
/// CPython reads it without a call, where every other attribute is a getter.
///
/// No `freelist`: pyo3's freelist (a mutex per allocation and per free) saved under 1% of a
/// read loop's instructions per packet; a reader reuses its own packets instead
/// ([`MappedPackets`]), which needs a packet to be unreachable once its last reference is
/// the reader's: no `weakref` or `dict` option here.
#[pyclass(module = "paclo", frozen)]
pub struct Packet {
    #[pyo3(get)]
    pub(crate) ts_ns: i64,
    pub(crate) caplen: u32,
    #[pyo3(get)]
    pub(crate) wirelen: u32,
    #[pyo3(get)]
    pub(crate) linktype: u32,
    /// Bytes captured (`len(data)`).
    #[pyo3(get, name = "caplen")]
    caplen_int: Py<PyAny>,
    backing: Backing,
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
            caplen_int: shared_int(py, pkt.caplen.into()).unbind(),
            backing: Backing::Copied,
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
            caplen_int: shared_int(py, pkt.caplen.into()).unbind(),
            backing: Backing::Mapped(map.clone_ref(py), offset),
            data: OnceLock::new(),
        }
    }

    /// Make this packet the one of `pkt` at `offset` in `map`, as [`from_mapped`] would,
    /// dropping its cached bytes.
    ///
    /// [`from_mapped`]: Packet::from_mapped
    #[inline]
    fn refill(&mut self, py: Python<'_>, map: &Py<MappedFile>, offset: usize, pkt: &RawPacket<'_>) {
        if self.caplen != pkt.caplen {
            self.caplen_int = shared_int(py, pkt.caplen.into()).unbind();
        }
        self.ts_ns = pkt.ts_ns;
        self.caplen = pkt.caplen;
        self.wirelen = pkt.wirelen;
        self.linktype = pkt.linktype;
        match &mut self.backing {
            Backing::Mapped(m, at) if m.as_ptr() == map.as_ptr() => *at = offset,
            backing => *backing = Backing::Mapped(map.clone_ref(py), offset),
        }
        self.data = OnceLock::new();
    }

    /// A packet that keeps `buf` (a managed capture's buffer) and gives it back to `pool`
    /// when freed. A buffer much larger than its content is copied from and given back at
    /// once instead.
    pub fn from_pooled(py: Python<'_>, pool: &Py<PacketPool>, buf: OwnedPacket) -> Packet {
        if buf.data.capacity() > POOLED_MAX_WASTE * buf.data.len() + POOLED_SLACK {
            let p = Packet::from_raw(py, &buf.as_raw());
            pool.get().give(buf);
            return p;
        }
        Packet {
            ts_ns: buf.ts_ns,
            caplen: buf.caplen,
            wirelen: buf.wirelen,
            linktype: buf.linktype,
            caplen_int: shared_int(py, buf.caplen.into()).unbind(),
            backing: Backing::Pooled(pool.clone_ref(py), buf.data),
            data: OnceLock::new(),
        }
    }

    /// The captured bytes, without creating a Python object when they are not copied yet.
    pub(crate) fn with_bytes<R>(&self, py: Python<'_>, f: impl FnOnce(&[u8]) -> R) -> R {
        if let Some(b) = self.data.get() {
            return f(b.bind(py).as_bytes());
        }
        match &self.backing {
            Backing::Mapped(map, off) => f(map
                .get()
                .0
                .get(*off..*off + self.caplen as usize)
                .unwrap_or_default()),
            Backing::Pooled(_, buf) => f(buf),
            Backing::Copied => f(&[]),
        }
    }

    fn bytes_obj(&self, py: Python<'_>) -> Py<PyBytes> {
        self.data
            .get_or_init(|| self.with_bytes(py, |b| PyBytes::new(py, b).unbind()))
            .clone_ref(py)
    }
}

/// The packets read from one mapped file, which keep the map alive.
///
/// A packet handed out is kept here too; once nothing else holds it, it becomes the packet
/// after the next (its fields overwritten, its cached bytes dropped) instead of a new
/// object. A loop that drops each packet before it takes the one after next (`for pkt in
/// reader` holds the previous one while `next` runs) makes no Python object per packet;
/// one that keeps packets gets new ones. The kept object is unreachable by anything else
/// (it has no other reference), so reusing it cannot be observed, except through `id()`,
/// which a freed and reallocated packet may share as well.
pub struct MappedPackets {
    map: Py<MappedFile>,
    /// The map's address: a packet's offset is its data's address minus this.
    base: usize,
    /// The last two packets handed out, in turn.
    kept: [Option<Py<Packet>>; 2],
    turn: usize,
    /// Offset of the `Packet` within its Python object (the same for every object of the
    /// type; measured on each new one).
    at: usize,
}

impl MappedPackets {
    /// Packets of the file mapped as `shared`.
    pub fn new(py: Python<'_>, shared: &Arc<GuardedMap>) -> PyResult<MappedPackets> {
        Ok(MappedPackets {
            map: Py::new(py, MappedFile(Arc::clone(shared)))?,
            base: shared.as_ptr() as usize,
            kept: [None, None],
            turn: 0,
            at: 0,
        })
    }

    /// The `Packet` of `pkt`, a packet of this map: the one handed out two calls ago when
    /// nothing else holds it, else a new one.
    #[inline]
    pub fn packet<'py>(
        &mut self,
        py: Python<'py>,
        pkt: &RawPacket<'_>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let offset = (pkt.data.as_ptr() as usize).wrapping_sub(self.base);
        let slot = &mut self.kept[self.turn];
        self.turn ^= 1;
        if let Some(kept) = slot {
            // SAFETY: a valid object (held by `kept`); reading its count has no effect.
            if unsafe { pyo3::ffi::Py_REFCNT(kept.as_ptr()) } == 1 {
                // SAFETY: `kept` is the object's only reference, so no Python code and no
                // Rust borrow (`get()`, a method running on it) can reach the `Packet` while
                // it is overwritten, and nothing `refill` does runs Python code (it frees
                // only ints and bytes). The pointer is the object's own (CPython's
                // allocation) plus the offset of the `Packet` in every object of the type.
                let fields =
                    unsafe { &mut *kept.as_ptr().cast::<u8>().add(self.at).cast::<Packet>() };
                fields.refill(py, &self.map, offset, pkt);
                return Ok(kept.clone_ref(py).into_bound(py).into_any());
            }
        }
        let fresh = Bound::new(py, Packet::from_mapped(py, &self.map, offset, pkt))?;
        self.at = (fresh.get() as *const Packet as usize).wrapping_sub(fresh.as_ptr() as usize);
        *slot = Some(fresh.clone().unbind());
        Ok(fresh.into_any())
    }

    /// Let go of the packets kept for reuse (those still held elsewhere stay valid).
    pub fn release(&mut self) {
        self.kept = [None, None];
    }
}

impl Drop for Packet {
    fn drop(&mut self) {
        if let Backing::Pooled(pool, data) = &mut self.backing {
            pool.get().give(OwnedPacket {
                data: std::mem::take(data),
                ..OwnedPacket::default()
            });
        }
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
            super::packet_map::full_map(py, &raw).map(|(d, _)| d)
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

/// Call `f` with the bytes of a bytes-like object (bytes, bytearray, memoryview, ...).
pub fn with_buffer<R>(
    obj: &Bound<'_, PyAny>,
    what: &str,
    f: impl FnOnce(&[u8]) -> R,
) -> PyResult<R> {
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
