//! Writing the values of a fresh copy of a template dict in place.
//!
//! A copy of a template (`PyDict_Copy`) holds every key of the template, in order, in its
//! own key table; storing a value through `PyDict_SetItem` then costs a hash probe, a key
//! comparison and a replace (about 200 instructions). On CPython 3.11, whose dict layout
//! this module knows, the builder instead writes the value into the entry of its key: the
//! dict is new and held only by the builder, its keys stay as they are (same table, same
//! order, same count), so the result is the dict `PyDict_SetItem` would have made. The
//! GC tracking `PyDict_SetItem` applies (a dict holding a container is tracked) is applied
//! here too; the version tag the copy got when it was made is one nothing has seen yet.
//!
//! The layout is used only where [`supported`] said so: the interpreter is 3.11 and a copy
//! of a probe dict reads back as expected. Elsewhere every store goes through
//! `PyDict_SetItem`.

use core::cell::Cell;
use core::ptr::NonNull;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// The head of CPython 3.11's `PyDictKeysObject` (`Include/internal/pycore_dict.h`); the
/// hash index (`1 << log2_index_bytes` bytes) follows it, then the entries.
#[repr(C)]
struct KeysHead {
    _refcnt: ffi::Py_ssize_t,
    _log2_size: u8,
    log2_index_bytes: u8,
    kind: u8,
    _version: u32,
    _usable: ffi::Py_ssize_t,
    nentries: ffi::Py_ssize_t,
}

/// `DICT_KEYS_UNICODE`: every key a `str`, entries without the hash.
const KIND_UNICODE: u8 = 1;

/// An entry of a unicode-keyed table (`PyDictUnicodeEntry`).
#[repr(C)]
struct Entry {
    key: *mut ffi::PyObject,
    value: *mut ffi::PyObject,
}

/// The key table and entries of a combined, unicode-keyed dict, or None for any other
/// dict.
///
/// # Safety
/// `d` is a live dict and the interpreter is one [`supported`] accepted.
#[inline]
unsafe fn entries(d: *mut ffi::PyObject) -> Option<(*mut KeysHead, NonNull<Entry>, usize)> {
    // SAFETY: `d` is a dict (caller), so it is a `PyDictObject`.
    let dict = unsafe { &*d.cast::<ffi::PyDictObject>() };
    if !dict.ma_values.is_null() {
        return None; // a split table: values live apart from the keys
    }
    // SAFETY: a combined dict's `ma_keys` is its own live key table, laid out as `KeysHead`
    // then the index then the entries on the interpreters `supported` accepts.
    unsafe {
        let keys = dict.ma_keys.cast::<KeysHead>();
        if (*keys).kind != KIND_UNICODE {
            return None;
        }
        let n = usize::try_from((*keys).nentries).ok()?;
        let index = keys.add(1).cast::<u8>();
        let first = index
            .add(1usize << (*keys).log2_index_bytes)
            .cast::<Entry>();
        Some((keys, NonNull::new(first)?, n))
    }
}

/// The key table of dict `d`.
///
/// # Safety
/// `d` is a live dict.
#[inline]
unsafe fn keys_of(d: *mut ffi::PyObject) -> *mut KeysHead {
    // SAFETY: `d` is a dict (caller), so it is a `PyDictObject`.
    unsafe { (*d.cast::<ffi::PyDictObject>()).ma_keys.cast() }
}

/// Where the values of a map under construction go, for a dict (a new copy of a template,
/// reachable only from its builder) whose entries can be written in place.
pub(super) struct Slots {
    /// The key table the entries are of: a store that finds another one in the dict
    /// (a table rebuilt in between) writes nothing in place.
    keys: *mut KeysHead,
    first: NonNull<Entry>,
    len: usize,
    /// The entry after the last one written: values mostly come in the template's order.
    next: Cell<usize>,
    /// The dict is GC-tracked (a value that may be tracked was stored): it stays so.
    tracked: Cell<bool>,
}

impl Slots {
    /// Slots for `d`, when the interpreter's layout is known.
    pub(super) fn of(py: Python<'_>, d: &Bound<'_, PyDict>) -> Option<Slots> {
        if !supported(py) {
            return None;
        }
        // SAFETY: `d` is a live dict and `supported` accepted the interpreter.
        let (keys, first, len) = unsafe { entries(d.as_ptr())? };
        Some(Slots {
            keys,
            first,
            len,
            next: Cell::new(0),
            tracked: Cell::new(false),
        })
    }

    /// Put `v` (a new reference, taken over) as the value of `key` in `d`, the dict these
    /// slots are of; gives `v` back when `key` is not one of its keys.
    #[inline(always)]
    pub(super) fn put(
        &self,
        d: &Bound<'_, PyDict>,
        key: *mut ffi::PyObject,
        v: *mut ffi::PyObject,
    ) -> Result<(), *mut ffi::PyObject> {
        // SAFETY: `d` is a live dict.
        if unsafe { keys_of(d.as_ptr()) } != self.keys {
            return Err(v);
        }
        let (first, len, k) = (self.first, self.len, key);
        // SAFETY (both closures): `i < len`, an entry of the table, which is still the
        // dict's. A deleted entry (no value) is never written: `PyDict_SetItem` would
        // insert instead.
        let holds = |i: usize| unsafe {
            let e = &*first.as_ptr().add(i);
            e.key == k && !e.value.is_null()
        };
        let mut i = self.next.get();
        while i < len && !holds(i) {
            i += 1;
        }
        if i == len {
            match find(self.next.get().min(len), holds) {
                Some(at) => i = at,
                None => return Err(v),
            }
        }
        self.next.set(i + 1);
        if !self.tracked.get() && may_be_tracked(v) {
            // SAFETY: `d` is a live GC object; tracking it is what `PyDict_SetItem` does
            // when it stores a value that may be tracked. The collector never untracks a
            // dict holding such a value, so it stays tracked.
            unsafe {
                if ffi::PyObject_GC_IsTracked(d.as_ptr()) == 0 {
                    ffi::PyObject_GC_Track(d.as_ptr().cast());
                }
            }
            self.tracked.set(true);
        }
        // SAFETY: entry `i` is live and the dict is reachable only from the caller (a new
        // copy), so nothing reads the entry while it changes. The old value's reference
        // (the copy's) is dropped after the entry holds `v`, so whatever that runs sees a
        // whole dict.
        unsafe {
            let e = first.as_ptr().add(i);
            let old = (*e).value;
            (*e).value = v;
            ffi::Py_DECREF(old);
        }
        Ok(())
    }
}

/// The entry before `end` for which `holds` is true.
#[cold]
fn find(end: usize, holds: impl Fn(usize) -> bool) -> Option<usize> {
    (0..end).find(|&i| holds(i))
}

/// CPython's `_PyObject_GC_MAY_BE_TRACKED`: a dict holding `v` must be tracked.
#[inline]
fn may_be_tracked(v: *mut ffi::PyObject) -> bool {
    // SAFETY: `v` is a live object (the caller holds a reference).
    unsafe {
        let ty = ffi::Py_TYPE(v);
        if (*ty).tp_flags & ffi::Py_TPFLAGS_HAVE_GC == 0 {
            return false;
        }
        ffi::PyObject_IS_GC(v) != 0
            && (ffi::PyTuple_CheckExact(v) == 0 || ffi::PyObject_GC_IsTracked(v) != 0)
    }
}

/// The environment variable that, set to `0` before the first map, makes every store go
/// through `PyDict_SetItem`.
const OFF: &str = "PACLO_DICT_IN_PLACE";

/// 0 unknown, 1 the layout is known, 2 it is not.
static SUPPORTED: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Whether this interpreter's dicts have the layout of this module (and `PACLO_DICT_IN_PLACE`
/// is not `0`): CPython 3.11, checked once on a probe dict (its copy's entries hold the probe's keys and values, in order).
pub(super) fn supported(py: Python<'_>) -> bool {
    use std::sync::atomic::Ordering;
    match SUPPORTED.load(Ordering::Relaxed) {
        1 => true,
        2 => false,
        _ => {
            let ok = probe(py).unwrap_or(false);
            SUPPORTED.store(if ok { 1 } else { 2 }, Ordering::Relaxed);
            ok
        }
    }
}

fn probe(py: Python<'_>) -> PyResult<bool> {
    let v = py.version_info();
    if (v.major, v.minor) != (3, 11) || std::env::var_os(OFF).is_some_and(|s| s == "0") {
        return Ok(false);
    }
    let keys: Vec<Bound<'_, PyString>> = (0..12)
        .map(|i| PyString::intern(py, &format!("paclo-probe-{i}")))
        .collect();
    let src = PyDict::new(py);
    for (i, k) in keys.iter().enumerate() {
        src.set_item(k, i)?;
    }
    let d = src.copy()?;
    // SAFETY: `d` is a live dict; on 3.11 its key table has the layout read here (the
    // version was checked above), and the reads stay within the `len` entries it reports.
    let Some((_, first, len)) = (unsafe { entries(d.as_ptr()) }) else {
        return Ok(false);
    };
    if len != keys.len() {
        return Ok(false);
    }
    for (i, k) in keys.iter().enumerate() {
        // SAFETY: `i < len`, an entry of the table.
        let e = unsafe { &*first.as_ptr().add(i) };
        let value = d.get_item(k)?;
        if e.key != k.as_ptr() || value.map(|v| v.as_ptr()) != Some(e.value) {
            return Ok(false);
        }
    }
    Ok(true)
}
