//! JA4S: the TLS server response fingerprint (FoxIO License 1.1), from a ServerHello.
//!
//! `a_b_c`: a = transport, version (supported_versions or legacy_version), two-digit
//! extension count, ALPN code of the chosen protocol; b = the chosen cipher suite in hex;
//! c = the first 12 hex digits of SHA-256 of the extensions in wire order (`000000000000`
//! without extensions). The raw form has the extension list in place of c.

use super::hello::{alpn_code, extensions, version_code, ServerHello};
use super::ja4::Transport;
use super::{is_grease, sha12_or_zero, Output};

/// The width of parts a and b with the `_` after each: transport, version, count, ALPN
/// code (7), cipher (4).
const PREFIX_LEN: usize = 13;

/// Compute JA4S into `out`; `false` when a buffer overflowed. Parts a and b have a fixed
/// width: the raw form's extension list is written after a placeholder for them while
/// the extensions are counted, and the placeholder is filled in after.
pub fn ja4s(s: &ServerHello, transport: Transport, out: &mut Output) -> bool {
    out.clear();
    let v = &mut out.value;
    let r = &mut out.raw;
    r.push_bytes(&[b'_'; PREFIX_LEN]);
    let mut count = 0;
    // Each extension is written with its comma when the next one is read; the last without.
    let mut pending = None;
    for (ty, _) in extensions(s.extensions).filter(|(t, _)| !is_grease(*t)) {
        if let Some(p) = pending {
            r.push_hex4_sep(p, b',');
        }
        pending = Some(ty);
        count += 1;
    }
    if let Some(p) = pending {
        r.push_hex4(p);
    }
    v.push(transport.code());
    v.push_bytes(version_code(s.version()));
    v.push_count2(count);
    v.push_bytes(&alpn_code(s.alpn));
    v.push(b'_');
    v.push_hex4(s.cipher);
    debug_assert_eq!(v.len(), PREFIX_LEN - 1);
    r.overwrite(0, v.as_bytes());
    v.push(b'_');
    v.push_bytes(&sha12_or_zero(
        count == 0,
        &r.as_bytes()[PREFIX_LEN.min(r.len())..],
    ));
    out.fits()
}
