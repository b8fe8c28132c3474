//! JA4X: the X.509 certificate fingerprint (FoxIO License 1.1).
//!
//! `a_b_c`: the first 12 hex digits of SHA-256 of the issuer's attribute OIDs, of the
//! subject's attribute OIDs, and of the extension OIDs, each in the order of the
//! certificate, each OID written as the hex of its DER content bytes and joined by `,`.
//! The raw form has the three lists. An empty list is hashed as the empty string (the
//! reading of FoxIO's Python and of the `ja4plus` package).

use super::{sha12, Output};

const TAG_INTEGER: u8 = 0x02;
const TAG_OID: u8 = 0x06;
const TAG_SEQUENCE: u8 = 0x30;
const TAG_SET: u8 = 0x31;
const TAG_VERSION: u8 = 0xa0;
const TAG_ISSUER_UID: u8 = 0x81;
const TAG_SUBJECT_UID: u8 = 0x82;
const TAG_EXTENSIONS: u8 = 0xa3;

/// One DER element: its tag, its content, and the bytes after it.
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let tag = *b.first()?;
    if tag & 0x1f == 0x1f {
        return None; // high-tag-number form is not used by certificates
    }
    let first = *b.get(1)?;
    let (len, hdr) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = len << 8 | usize::from(*b.get(2 + i)?);
        }
        (len, 2 + n)
    };
    let content = b.get(hdr..hdr.checked_add(len)?)?;
    Some((tag, content, &b[hdr + len..]))
}

/// Iterate the elements of a constructed content; `None` items end it on malformed input.
fn elements(mut b: &[u8]) -> impl Iterator<Item = Option<(u8, &[u8])>> {
    core::iter::from_fn(move || {
        if b.is_empty() {
            return None;
        }
        match tlv(b) {
            Some((t, c, rest)) => {
                b = rest;
                Some(Some((t, c)))
            }
            None => {
                b = &[];
                Some(None)
            }
        }
    })
}

/// The three parts of a certificate's TBSCertificate the fingerprint reads.
#[derive(Clone, Copy, Debug)]
pub struct Certificate<'a> {
    /// The issuer Name's content.
    pub issuer: &'a [u8],
    /// The subject Name's content.
    pub subject: &'a [u8],
    /// The extensions SEQUENCE's content, empty without extensions.
    pub extensions: &'a [u8],
}

impl<'a> Certificate<'a> {
    /// Parse a DER certificate; `None` when it is not a well-formed X.509 certificate.
    pub fn parse(der: &'a [u8]) -> Option<Self> {
        let (t, cert, _) = tlv(der)?;
        if t != TAG_SEQUENCE {
            return None;
        }
        let (t, tbs, _) = tlv(cert)?;
        if t != TAG_SEQUENCE {
            return None;
        }
        let mut it = elements(tbs);
        let mut next = || it.next().flatten();
        let mut e = next()?;
        if e.0 == TAG_VERSION {
            e = next()?;
        }
        if e.0 != TAG_INTEGER {
            return None; // serialNumber
        }
        if next()?.0 != TAG_SEQUENCE {
            return None; // signature
        }
        let (t, issuer) = next()?;
        if t != TAG_SEQUENCE {
            return None;
        }
        if next()?.0 != TAG_SEQUENCE {
            return None; // validity
        }
        let (t, subject) = next()?;
        if t != TAG_SEQUENCE {
            return None;
        }
        if next()?.0 != TAG_SEQUENCE {
            return None; // subjectPublicKeyInfo
        }
        let mut extensions: &[u8] = &[];
        while let Some((t, c)) = next() {
            match t {
                TAG_ISSUER_UID | TAG_SUBJECT_UID => {}
                TAG_EXTENSIONS => {
                    let (t, seq, _) = tlv(c)?;
                    if t != TAG_SEQUENCE {
                        return None;
                    }
                    extensions = seq;
                }
                _ => return None,
            }
        }
        Some(Certificate {
            issuer,
            subject,
            extensions,
        })
    }
}

/// Write the attribute OIDs of a Name's content; `None` when malformed.
fn name_oids<const N: usize>(name: &[u8], out: &mut super::Text<N>) -> Option<()> {
    let start = out.len();
    for rdn in elements(name) {
        let (t, set) = rdn?;
        if t != TAG_SET {
            return None;
        }
        for atv in elements(set) {
            let (t, seq) = atv?;
            if t != TAG_SEQUENCE {
                return None;
            }
            let (t, oid, _) = tlv(seq)?;
            if t != TAG_OID {
                return None;
            }
            if out.len() > start {
                out.push(b',');
            }
            out.push_hex(oid);
        }
    }
    Some(())
}

fn extension_oids<const N: usize>(exts: &[u8], out: &mut super::Text<N>) -> Option<()> {
    let start = out.len();
    for ext in elements(exts) {
        let (t, seq) = ext?;
        if t != TAG_SEQUENCE {
            return None;
        }
        let (t, oid, _) = tlv(seq)?;
        if t != TAG_OID {
            return None;
        }
        if out.len() > start {
            out.push(b',');
        }
        out.push_hex(oid);
    }
    Some(())
}

/// Compute JA4X of a DER certificate into `out`; `false` when it does not parse or a
/// buffer overflowed.
pub fn ja4x(der: &[u8], out: &mut Output) -> bool {
    out.clear();
    let Some(cert) = Certificate::parse(der) else {
        return false;
    };
    let r = &mut out.raw;
    let mut bounds = [0usize; 6];
    for i in 0..3 {
        if i > 0 {
            r.push(b'_');
        }
        bounds[2 * i] = r.len();
        let ok = match i {
            0 => name_oids(cert.issuer, r),
            1 => name_oids(cert.subject, r),
            _ => extension_oids(cert.extensions, r),
        };
        if ok.is_none() {
            return false;
        }
        bounds[2 * i + 1] = r.len();
    }
    for i in 0..3 {
        if i > 0 {
            out.value.push(b'_');
        }
        let h = sha12(&out.raw.as_bytes()[bounds[2 * i]..bounds[2 * i + 1]]);
        out.value.push_bytes(&h);
    }
    out.fits()
}
