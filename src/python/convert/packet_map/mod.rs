//! The full packet map as Python dicts, built directly from the core decoder's result.
//!
//! Every key and every constant string value is interned once ([`Strings`]); addresses are
//! formatted into stack buffers. Hooks registered through `paclo.decode_ext` run here, so
//! every source (file reader, reduce, live capture, `paclo.decode`) applies them.

mod cache;
mod in_place;
mod keys;
mod layers;

use core::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;

use crate::decode::addr;
use crate::decode::icmp::Name;
use crate::decode::{decode, Decoded, Link};
use crate::source::RawPacket;
use keys::{templates, Strings, Templates, STRINGS};
use layers::l3_map;

pub(crate) use cache::int as shared_int;

/// Registered hooks as a tuple of callables; `HOOK_COUNT` lets the no-hook case skip the lock.
static HOOKS: Mutex<Option<Py<PyTuple>>> = Mutex::new(None);
static HOOK_COUNT: AtomicUsize = AtomicUsize::new(0);

/// A small stack buffer for names like `type-42` and summaries.
pub(super) struct StackText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    pub(super) fn new() -> Self {
        StackText {
            buf: [0; N],
            len: 0,
        }
    }
    pub(super) fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> core::fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end > N {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A dict under construction with interned keys.
pub(super) struct Map<'py> {
    pub(super) py: Python<'py>,
    pub(super) d: Bound<'py, PyDict>,
    /// Set for a copy of a template whose values are written in place (see [`in_place`]).
    slots: Option<in_place::Slots>,
}

impl<'py> Map<'py> {
    #[inline]
    pub(super) fn new(py: Python<'py>) -> Self {
        Map {
            py,
            d: PyDict::new(py),
            slots: None,
        }
    }
    /// A copy of `template`; every key of it must then be set.
    #[inline]
    pub(super) fn like(py: Python<'py>, template: &Py<PyDict>) -> PyResult<Self> {
        // SAFETY: `template` is a live dict; `PyDict_Copy` returns a new reference or NULL
        // with an exception set.
        let d = unsafe {
            Bound::from_owned_ptr_or_err(py, ffi::PyDict_Copy(template.as_ptr()))?
                .cast_into_unchecked::<PyDict>()
        };
        let slots = in_place::Slots::of(py, &d);
        Ok(Map { py, d, slots })
    }
    /// Store `v` under `k`: in place in a template's copy when `k` is one of its keys, else
    /// through `PyDict_SetItem`.
    #[inline(always)]
    fn put(&self, k: &Py<PyString>, v: Bound<'py, PyAny>) -> PyResult<()> {
        let v = v.into_ptr();
        match &self.slots {
            Some(s) => match s.put(&self.d, k.as_ptr(), v) {
                Ok(()) => Ok(()),
                Err(v) => self.insert(k, v),
            },
            None => self.insert(k, v),
        }
    }
    /// Store `v` (a new reference, taken over) under `k` through `PyDict_SetItem`.
    #[inline(never)]
    fn insert(&self, k: &Py<PyString>, v: *mut ffi::PyObject) -> PyResult<()> {
        // SAFETY: `d` is a dict, `k` a str and `v` a live object; `PyDict_SetItem` takes
        // its own references, so ours to `v` is dropped after it.
        let r = unsafe {
            let r = ffi::PyDict_SetItem(self.d.as_ptr(), k.as_ptr(), v);
            ffi::Py_DECREF(v);
            r
        };
        if r < 0 {
            return Err(PyErr::fetch(self.py));
        }
        Ok(())
    }
    #[inline]
    pub(super) fn set<V: IntoPyObject<'py>>(&self, k: &Py<PyString>, v: V) -> PyResult<()>
    where
        PyErr: From<V::Error>,
    {
        self.put(k, v.into_bound_py_any(self.py)?)
    }
    /// An int value (shared below 65,536, see [`cache::int`]).
    #[inline]
    pub(super) fn int(&self, k: &Py<PyString>, v: u64) -> PyResult<()> {
        self.put(k, cache::int(self.py, v))
    }
    /// An int value, or None.
    #[inline]
    pub(super) fn opt_int(&self, k: &Py<PyString>, v: Option<u64>) -> PyResult<()> {
        match v {
            Some(v) => self.int(k, v),
            None => self.none(k),
        }
    }
    #[inline]
    pub(super) fn s(&self, k: &Py<PyString>, v: &Py<PyString>) -> PyResult<()> {
        self.put(k, v.bind(self.py).clone().into_any())
    }
    #[inline]
    pub(super) fn none(&self, k: &Py<PyString>) -> PyResult<()> {
        self.put(k, self.py.None().into_bound(self.py))
    }
    #[inline]
    pub(super) fn bytes(&self, k: &Py<PyString>, v: &[u8]) -> PyResult<()> {
        self.put(k, PyBytes::new(self.py, v).into_any())
    }
    #[inline]
    pub(super) fn text(&self, k: &Py<PyString>, v: &str) -> PyResult<()> {
        self.put(k, PyString::new(self.py, v).into_any())
    }
}

pub(super) fn hw_text<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyString> {
    match <&[u8; 6]>::try_from(b) {
        Ok(mac) => cache::mac(py, mac),
        Err(_) => PyString::new(py, addr::hw(b).as_str()),
    }
}

pub(super) fn name_text<'py>(py: Python<'py>, n: Name) -> Bound<'py, PyString> {
    match n {
        Name::Known(s) => PyString::new(py, s),
        other => {
            let mut t = StackText::<16>::new();
            let _ = write!(t, "{other}");
            PyString::new(py, t.as_str())
        }
    }
}

/// The full packet map for `pkt`, and whether it carries a `decode_error`.
///
/// Registered hooks run on maps without a `decode_error`.
///
/// # Errors
/// Only Python errors (memory); malformed bytes never raise.
pub fn full_map<'py>(py: Python<'py>, pkt: &RawPacket<'_>) -> PyResult<(Bound<'py, PyDict>, bool)> {
    full_map_with(py, pkt, None)
}

/// [`full_map`], reusing `data` (a `bytes` object holding `pkt.data`) for the `data` key.
///
/// # Errors
/// Only Python errors (memory); malformed bytes never raise.
pub fn full_map_with<'py>(
    py: Python<'py>,
    pkt: &RawPacket<'_>,
    data: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyDict>, bool)> {
    let k = STRINGS.get_or_init(py, || Strings::new(py));
    let t = templates(py, k)?;
    let d = decode(pkt.linktype, pkt.data);
    let top = if d.link.is_some() {
        Map::like(py, &t.top)?
    } else {
        Map::new(py)
    };
    top.set(&k.ts_sec, pkt.ts_sec())?;
    top.set(&k.ts_usec, pkt.ts_usec())?;
    top.set(&k.ts_ns, pkt.ts_ns)?;
    top.int(&k.caplen, pkt.caplen.into())?;
    top.int(&k.len, pkt.wirelen.into())?;
    match data {
        Some(obj) => top.set(&k.data, obj)?,
        None => top.bytes(&k.data, pkt.data)?,
    }
    if d.link.is_some() {
        top.set(&k.decoded, decoded_map(py, k, t, &d)?)?;
    }
    let has_error = match d.error {
        Some(e) => {
            let mut t = StackText::<160>::new();
            let _ = write!(t, "{e}");
            top.text(&k.decode_error, t.as_str())?;
            true
        }
        None => false,
    };
    let mut map = top.d;
    if !has_error && HOOK_COUNT.load(Ordering::Relaxed) != 0 {
        map = run_hooks(py, map)?;
    }
    Ok((map, has_error))
}

fn run_hooks<'py>(py: Python<'py>, mut map: Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let hooks = {
        let guard = HOOKS.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(t) => t.clone_ref(py),
            None => return Ok(map),
        }
    };
    for hook in hooks.bind(py).iter() {
        // A hook that raises is skipped; a non-dict result is ignored.
        if let Ok(out) = hook.call1((&map,)) {
            if let Ok(d) = out.cast_into::<PyDict>() {
                map = d;
            }
        }
    }
    Ok(map)
}

fn decoded_map<'py>(
    py: Python<'py>,
    k: &Strings,
    t: &Templates,
    d: &Decoded<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let Some(link) = d.link.as_ref() else {
        return Ok(PyDict::new(py));
    };
    let plain_ethernet =
        link.kind == crate::decode::LinkKind::Ethernet && link.vlan.as_slice().is_empty();
    let templated = plain_ethernet && d.l3.is_some();
    let m = if templated {
        Map::like(py, &t.ethernet)?
    } else {
        Map::new(py)
    };
    link_fields(&m, k, link, templated)?;
    if let Some(l3) = &d.l3 {
        m.set(&k.l3, l3_map(py, k, t, l3)?)?;
    }
    Ok(m.d)
}

/// The link layer's fields; `templated`: `m` is a copy of the Ethernet template, which holds
/// the `type` already.
fn link_fields(m: &Map<'_>, k: &Strings, link: &Link<'_>, templated: bool) -> PyResult<()> {
    use crate::decode::LinkKind as K;
    let ty = match link.kind {
        K::Ethernet => &k.v_ethernet,
        K::Raw => &k.v_raw,
        K::LinuxSll => &k.v_linux_sll,
        K::LinuxSll2 => &k.v_linux_sll2,
        K::RawIpv4 => &k.v_raw_ipv4,
        K::RawIpv6 => &k.v_raw_ipv6,
        K::Null => &k.v_null,
        K::Loop => &k.v_loop,
    };
    if !templated {
        m.s(&k.type_, ty)?;
    }
    match link.src {
        Some(b) => m.set(&k.src, hw_text(m.py, b))?,
        None => m.none(&k.src)?,
    }
    match link.dst {
        Some(b) => m.set(&k.dst, hw_text(m.py, b))?,
        None => m.none(&k.dst)?,
    }
    m.opt_int(&k.eth, link.eth.map(u64::from))?;
    if let Some(v) = link.pkttype {
        m.set(&k.pkttype, v)?;
    }
    if let Some(v) = link.hatype {
        m.set(&k.hatype, v)?;
    }
    if let Some(v) = link.ifindex {
        m.set(&k.ifindex, v)?;
    }
    if let Some(v) = link.family {
        m.set(&k.family, v)?;
    }
    let tags = link.vlan.as_slice();
    if !tags.is_empty() {
        let list = PyList::empty(m.py);
        for t in tags {
            let tm = Map::new(m.py);
            tm.set(&k.tpid, t.tpid)?;
            tm.set(&k.pcp, t.pcp)?;
            tm.set(&k.dei, t.dei)?;
            tm.set(&k.vid, t.vid)?;
            list.append(tm.d)?;
        }
        m.set(&k.vlan_tags, list)?;
    }
    Ok(())
}

/// Replace the hooks applied to full maps (a tuple of callables, in order).
pub fn set_hooks(hooks: Bound<'_, PyTuple>) {
    let n = hooks.len();
    let mut guard = HOOKS.lock().unwrap_or_else(|p| p.into_inner());
    *guard = (n > 0).then(|| hooks.unbind());
    HOOK_COUNT.store(n, Ordering::Relaxed);
}
