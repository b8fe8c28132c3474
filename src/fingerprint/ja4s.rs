//! JA4S: the TLS server response fingerprint (FoxIO License 1.1), from a ServerHello.
//!
//! `a_b_c`: a = transport, version (supported_versions or legacy_version), two-digit
//! extension count, ALPN code of the chosen protocol; b = the chosen cipher suite in hex;
//! c = the first 12 hex digits of SHA-256 of the extensions in wire order (`000000000000`
//! without extensions). The raw form has the extension list in place of c.

use super::hello::{alpn_code, extensions, version_code, ServerHello};
use super::ja4::Transport;
use super::{is_grease, sha12_or_zero, Output};

/// Compute JA4S into `out`; `false` when a buffer overflowed.
pub fn ja4s(s: &ServerHello, transport: Transport, out: &mut Output) -> bool {
    out.clear();
    let v = &mut out.value;
    let r = &mut out.raw;
    let count = extensions(s.extensions)
        .filter(|(t, _)| !is_grease(*t))
        .count();
    v.push(transport.code());
    v.push_bytes(version_code(s.version()));
    v.push_count2(count);
    v.push_bytes(&alpn_code(s.alpn));
    v.push(b'_');
    v.push_hex4(s.cipher);
    r.push_bytes(v.as_bytes());
    r.push(b'_');
    let start = r.len();
    for (ty, _) in extensions(s.extensions).filter(|(t, _)| !is_grease(*t)) {
        if r.len() > start {
            r.push(b',');
        }
        r.push_hex4(ty);
    }
    v.push(b'_');
    v.push_bytes(&sha12_or_zero(count == 0, &r.as_bytes()[start..]));
    out.fits()
}
