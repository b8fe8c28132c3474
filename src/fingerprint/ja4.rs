//! JA4: the TLS client fingerprint (BSD-3-Clause), from a ClientHello over TCP, QUIC or DTLS.
//!
//! `a_b_c`: a = transport (`t` TCP, `q` QUIC, `d` DTLS), version, `d`/`i` for SNI present or
//! not, two-digit cipher and extension counts, the ALPN code; b = the first 12 hex digits of
//! SHA-256 of the sorted cipher suites; c = the same of the sorted extensions (without SNI
//! and ALPN), `_`, and the signature algorithms in their order. GREASE values are ignored
//! everywhere. The original-order form (`ja4_o`) keeps the wire order and SNI and ALPN.

use super::hello::{alpn_code, u16s, version_code, ClientHello, EXT_ALPN, EXT_SERVER_NAME};
use super::{is_grease, push_hex_list, sha12_or_zero, List16, Output, Text, RAW_CAP};

/// The transport a ClientHello came over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// TLS over TCP (`t`).
    Tcp,
    /// QUIC (`q`).
    Quic,
    /// DTLS (`d`).
    Dtls,
}

impl Transport {
    /// The fingerprint's first character.
    pub fn code(self) -> u8 {
        match self {
            Transport::Tcp => b't',
            Transport::Quic => b'q',
            Transport::Dtls => b'd',
        }
    }
}

/// Reusable lists for one JA4 computation.
#[derive(Clone, Default)]
pub struct Scratch {
    ciphers: List16,
    exts: List16,
    sigs: List16,
    text: Text<RAW_CAP>,
}

impl Scratch {
    /// Fresh lists (boxed once: they are a few KiB).
    pub fn new() -> Box<Scratch> {
        Box::default()
    }
}

/// Compute JA4 (`original == false`) or JA4_o (`true`) into `out` (value and raw form).
/// `false` when a list is longer than [`super::MAX_LIST`] or a buffer overflowed.
pub fn ja4(
    h: &ClientHello,
    transport: Transport,
    original: bool,
    s: &mut Scratch,
    out: &mut Output,
) -> bool {
    out.clear();
    s.ciphers.clear();
    s.exts.clear();
    s.sigs.clear();
    for c in u16s(h.ciphers).filter(|c| !is_grease(*c)) {
        if !s.ciphers.push(c) {
            return false;
        }
    }
    let mut ext_count = 0usize;
    for (ty, _) in super::hello::extensions(h.extensions) {
        if is_grease(ty) {
            continue;
        }
        ext_count += 1;
        if !original && (ty == EXT_SERVER_NAME || ty == EXT_ALPN) {
            continue;
        }
        if !s.exts.push(ty) {
            return false;
        }
    }
    for a in u16s(h.signature_algorithms).filter(|a| !is_grease(*a)) {
        if !s.sigs.push(a) {
            return false;
        }
    }
    if !original {
        s.ciphers.sort();
        s.exts.sort();
    }

    // a
    let v = &mut out.value;
    v.push(transport.code());
    v.push_bytes(version_code(h.version()));
    v.push(if h.has_sni { b'd' } else { b'i' });
    v.push_count2(s.ciphers.len());
    v.push_count2(ext_count);
    v.push_bytes(&alpn_code(h.alpn_first));
    out.raw.push_bytes(v.as_bytes());

    // b
    let t = &mut s.text;
    t.clear();
    push_hex_list(t, s.ciphers.as_slice());
    v.push(b'_');
    v.push_bytes(&sha12_or_zero(s.ciphers.is_empty(), t.as_bytes()));
    out.raw.push(b'_');
    out.raw.push_bytes(t.as_bytes());

    // c
    t.clear();
    push_hex_list(t, s.exts.as_slice());
    if !s.sigs.is_empty() {
        t.push(b'_');
        push_hex_list(t, s.sigs.as_slice());
    }
    v.push(b'_');
    v.push_bytes(&sha12_or_zero(s.exts.is_empty(), t.as_bytes()));
    out.raw.push(b'_');
    out.raw.push_bytes(t.as_bytes());
    !t.overflowed() && out.fits()
}

thread_local! {
    static BUFFERS: std::cell::RefCell<Option<(Box<Scratch>, Box<Output>)>> =
        const { std::cell::RefCell::new(None) };
}

/// Call `f` with the JA4 of `h` (`None` when a list is too long), computed in this
/// thread's reusable buffers: after the thread's first call, nothing is allocated.
pub fn with_ja4<R>(h: &ClientHello, transport: Transport, f: impl FnOnce(Option<&str>) -> R) -> R {
    BUFFERS.with(|cell| {
        let mut slot = cell.borrow_mut();
        let (s, out) = slot.get_or_insert_with(|| (Scratch::new(), Output::new()));
        let ok = ja4(h, transport, false, s, out);
        f(ok.then(|| out.value.as_str()))
    })
}
