//! Python objects the packet map shares between packets instead of creating them anew:
//! ints below 65,536, the text of recently seen addresses and of each TCP flags byte. Ints
//! and strings are immutable in Python, so a shared object is indistinguishable from a
//! fresh one except by `id()`.
//!
//! Creating an int or a short `str` and freeing it again costs more than a table lookup and
//! a reference count; most of a packet's ints (ports, lengths, checksums, identifiers) and
//! all its addresses fit these tables.

use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

use crate::decode::addr;

/// Ints 0..=65535, each created on its first use (the table of cells is 1 MiB; the ints
/// themselves are created only for values seen).
static INTS: PyOnceLock<Box<[PyOnceLock<Py<PyAny>>]>> = PyOnceLock::new();
const INT_TABLE: usize = 1 << 16;

/// The Python int `v`: a shared one below 65,536, else a new one.
#[inline]
pub(crate) fn int<'py>(py: Python<'py>, v: u64) -> Bound<'py, PyAny> {
    let Ok(i) = usize::try_from(v) else {
        return new_int(py, v);
    };
    if i >= INT_TABLE {
        return new_int(py, v);
    }
    let table = INTS.get_or_init(py, || (0..INT_TABLE).map(|_| PyOnceLock::new()).collect());
    table[i]
        .get_or_init(py, || new_int(py, v).unbind())
        .bind(py)
        .clone()
}

#[cold]
fn new_int(py: Python<'_>, v: u64) -> Bound<'_, PyAny> {
    // Converting a u64 cannot fail (pyo3's conversion is infallible).
    match v.into_pyobject(py) {
        Ok(o) => o.into_any(),
        Err(never) => match never {},
    }
}

/// Slots of each address table (direct-mapped by a hash of the address).
const SLOTS: usize = 256;

/// One address table: the text of the address last seen in each slot.
type Slots<K> = Box<[Option<(K, Py<PyString>)>]>;

/// The text of recently seen addresses; a different address in the same slot replaces it.
struct Texts {
    v4: Slots<u32>,
    mac: Slots<u64>,
    v6_full: Slots<u128>,
    v6_compact: Slots<u128>,
}

/// Held only while no Python code can run (a lookup, or creating and storing a `str`), so
/// it is never waited for across the GIL.
static TEXTS: PyOnceLock<Mutex<Texts>> = PyOnceLock::new();

fn empty<K>() -> Slots<K> {
    (0..SLOTS).map(|_| None).collect()
}

/// The text of `key` from `table`, made by `make` and kept when it is not there.
#[inline]
fn text<'py, K: Copy + Eq>(
    py: Python<'py>,
    table: impl FnOnce(&mut Texts) -> &mut Slots<K>,
    key: K,
    hash: u64,
    make: impl FnOnce() -> Bound<'py, PyString>,
) -> Bound<'py, PyString> {
    let cell = TEXTS.get_or_init(py, || {
        Mutex::new(Texts {
            v4: empty(),
            mac: empty(),
            v6_full: empty(),
            v6_compact: empty(),
        })
    });
    let mut texts = cell.lock().unwrap_or_else(|p| p.into_inner());
    // The top 8 bits of a multiplicative hash: 0..SLOTS.
    let e = &mut table(&mut texts)[(hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize];
    if let Some((k, s)) = e {
        if *k == key {
            return s.bind(py).clone();
        }
    }
    let s = make();
    *e = Some((key, s.clone().unbind()));
    s
}

/// The dotted-quad text of `a`.
pub(super) fn ipv4(py: Python<'_>, a: [u8; 4]) -> Bound<'_, PyString> {
    let key = u32::from_ne_bytes(a);
    text(
        py,
        |t| &mut t.v4,
        key,
        key.into(),
        || PyString::new(py, addr::ipv4(&a).as_str()),
    )
}

/// The text of the MAC address `a` (`aa:bb:cc:dd:ee:ff`).
pub(super) fn mac<'py>(py: Python<'py>, a: &[u8; 6]) -> Bound<'py, PyString> {
    let key = u64::from_ne_bytes([a[0], a[1], a[2], a[3], a[4], a[5], 0, 0]);
    text(
        py,
        |t| &mut t.mac,
        key,
        key,
        || PyString::new(py, addr::mac(a).as_str()),
    )
}

/// The full and the compact (RFC 5952) text of the IPv6 address `a`.
pub(super) fn ipv6<'py>(
    py: Python<'py>,
    a: &[u8; 16],
) -> (Bound<'py, PyString>, Bound<'py, PyString>) {
    let key = u128::from_ne_bytes(*a);
    let hash = (key as u64) ^ ((key >> 64) as u64);
    let full = text(
        py,
        |t| &mut t.v6_full,
        key,
        hash,
        || PyString::new(py, addr::ipv6_full(a).as_str()),
    );
    let compact = text(
        py,
        |t| &mut t.v6_compact,
        key,
        hash,
        || PyString::new(py, addr::ipv6_compact(a).as_str()),
    );
    (full, compact)
}

/// The text of each TCP flags byte (`text::tcp_flags_text`), created on first use.
static TCP_FLAGS: PyOnceLock<Box<[PyOnceLock<Py<PyString>>]>> = PyOnceLock::new();

/// The text of the TCP flags byte `b` (CWR in bit 7 down to FIN in bit 0).
#[inline]
pub(super) fn tcp_flags(py: Python<'_>, b: u8) -> Bound<'_, PyString> {
    let table = TCP_FLAGS.get_or_init(py, || (0..256).map(|_| PyOnceLock::new()).collect());
    table[usize::from(b)]
        .get_or_init(py, || {
            PyString::new(py, crate::flow::text::tcp_flags_text(b).as_str()).unbind()
        })
        .bind(py)
        .clone()
}
