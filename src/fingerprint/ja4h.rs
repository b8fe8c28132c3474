//! JA4H: the HTTP client fingerprint (FoxIO License 1.1), from an HTTP/1 request head.
//!
//! `a_b_c_d`: a = the method's first two letters lowercased, the version (`10`, `11`,
//! `20`, `30`), `c`/`n` for a Cookie header, `r`/`n` for a Referer header, the two-digit
//! count of the other headers, and the first four characters of the primary
//! Accept-Language (`-` removed, lowercased, `0`-padded; `0000` without one); b = the first
//! 12 hex digits of SHA-256 of the header names in wire order, without Cookie and Referer;
//! c = the same of the cookie names, sorted; d = of the sorted `name=value` pairs (c and d
//! are `000000000000` without cookies). The raw form has the lists in place of b, c, d,
//! and ends after the header names and one `_` when there are no cookies.
//!
//! The request head must be whole in the bytes given (request line, headers, blank line).
//! Header names and values are trimmed of spaces; cookies without `=` are ignored; with
//! several Cookie headers the last one is read.

use super::{find_byte, sha12, sha12_or_zero, Cursor, Output, Text, MAX_LIST, RAW_CAP};

/// Request methods recognised at the start of a payload.
const METHODS: [&[u8]; 9] = [
    b"GET", b"POST", b"PUT", b"HEAD", b"DELETE", b"OPTIONS", b"PATCH", b"CONNECT", b"TRACE",
];

/// Reusable buffers for one JA4H computation.
pub struct Scratch {
    cookies: [(usize, usize, usize, usize); MAX_LIST],
    text: Text<RAW_CAP>,
}

impl Default for Scratch {
    fn default() -> Self {
        Scratch {
            cookies: [(0, 0, 0, 0); MAX_LIST],
            text: Text::new(),
        }
    }
}

impl Scratch {
    /// Fresh buffers, boxed once.
    pub fn new() -> Box<Scratch> {
        Box::default()
    }
}

/// Whether a payload starts like an HTTP request (a known method and a space).
pub fn looks_like_request(payload: &[u8]) -> bool {
    // Every method starts with an upper-case letter: one compare rejects other payloads.
    payload.first().is_some_and(u8::is_ascii_uppercase)
        && METHODS
            .iter()
            .any(|m| payload.len() > m.len() && payload.starts_with(m) && payload[m.len()] == b' ')
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    b.get(start..end).unwrap_or(&[])
}

/// The next line (without CRLF or LF) and the rest; `None` when no line end is present.
fn line(c: &mut Cursor<'_>) -> Option<(usize, usize)> {
    let rest = c.rest();
    let nl = find_byte(rest, b'\n')?;
    let start = c.pos;
    let mut end = start + nl;
    if nl > 0 && rest[nl - 1] == b'\r' {
        end -= 1;
    }
    c.pos += nl + 1;
    Some((start, end))
}

fn version_code(v: &[u8]) -> Option<[u8; 2]> {
    let v = v.strip_prefix(b"HTTP/")?;
    Some(match v {
        b"1.1" => *b"11",
        b"1.0" => *b"10",
        b"2" | b"2.0" => *b"20",
        b"3" | b"3.0" => *b"30",
        b"0.9" => *b"09",
        _ => return None,
    })
}

/// Compute JA4H of the request head at the start of `payload` into `out`; `false` when
/// there is no whole request head, a list is longer than [`MAX_LIST`], or a buffer
/// overflowed.
pub fn ja4h(payload: &[u8], s: &mut Scratch, out: &mut Output) -> bool {
    out.clear();
    if !looks_like_request(payload) {
        return false;
    }
    let mut c = Cursor::new(payload);
    let Some((ls, le)) = line(&mut c) else {
        return false;
    };
    let req = &payload[ls..le];
    let mut parts = req.split(|&b| b == b' ').filter(|p| !p.is_empty());
    let (Some(method), Some(_target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Some(version) = version_code(version) else {
        return false;
    };

    // One pass over the headers: names into the text (part b), flags, language, cookies.
    let t = &mut s.text;
    t.clear();
    let mut count = 0usize;
    let mut has_cookie = false;
    let mut has_referer = false;
    let mut lang: &[u8] = &[];
    let mut cookie: &[u8] = &[];
    let mut complete = false;
    while let Some((hs, he)) = line(&mut c) {
        let l = &payload[hs..he];
        if trim(l).is_empty() {
            complete = true;
            break;
        }
        let Some(colon) = find_byte(l, b':') else {
            continue;
        };
        let name = trim(&l[..colon]);
        let value = trim(&l[colon + 1..]);
        if name.is_empty() {
            continue;
        }
        if name.eq_ignore_ascii_case(b"cookie") {
            has_cookie = true;
            cookie = value;
            continue;
        }
        if name.eq_ignore_ascii_case(b"referer") {
            has_referer = true;
            continue;
        }
        if name.eq_ignore_ascii_case(b"accept-language") {
            lang = value;
        }
        if count > 0 {
            t.push(b',');
        }
        t.push_bytes(name);
        count += 1;
    }
    if !complete {
        return false;
    }

    let v = &mut out.value;
    for &b in method.iter().take(2) {
        v.push(b.to_ascii_lowercase());
    }
    v.push_bytes(&version);
    v.push(if has_cookie { b'c' } else { b'n' });
    v.push(if has_referer { b'r' } else { b'n' });
    v.push_count2(count);
    let mut lang_len = 0;
    for &b in lang
        .iter()
        .take_while(|&&b| b != b',' && b != b';')
        .filter(|&&b| b != b'-')
        .take(4)
    {
        v.push(b.to_ascii_lowercase());
        lang_len += 1;
    }
    for _ in lang_len..4 {
        v.push(b'0');
    }
    out.raw.push_bytes(v.as_bytes());
    v.push(b'_');
    v.push_bytes(&sha12(t.as_bytes()));
    out.raw.push(b'_');
    out.raw.push_bytes(t.as_bytes());
    if t.overflowed() {
        return false;
    }

    // Cookies: (name start, name end, value start, value end) within `cookie`, sorted by
    // name, ties in wire order (the key includes the position).
    let mut n = 0;
    let mut pos = 0;
    for piece in cookie.split(|&b| b == b';') {
        let start = pos;
        pos += piece.len() + 1;
        let Some(eq) = piece.iter().position(|&b| b == b'=') else {
            continue;
        };
        let name = trim(&piece[..eq]);
        let value = trim(&piece[eq + 1..]);
        let ns = start + (name.as_ptr() as usize - piece.as_ptr() as usize);
        let vs = start + (value.as_ptr() as usize - piece.as_ptr() as usize);
        let Some(slot) = s.cookies.get_mut(n) else {
            return false;
        };
        *slot = (ns, ns + name.len(), vs, vs + value.len());
        n += 1;
    }
    let list = &mut s.cookies[..n];
    list.sort_unstable_by(|a, b| cookie[a.0..a.1].cmp(&cookie[b.0..b.1]).then(a.0.cmp(&b.0)));

    if n == 0 {
        // Without cookies the raw form ends after the header names and one `_` (the
        // reference's Python and `ja4plus`).
        out.raw.push(b'_');
    }
    for with_values in [false, true] {
        t.clear();
        for (i, &(ns, ne, vs, ve)) in list.iter().enumerate() {
            if i > 0 {
                t.push(b',');
            }
            t.push_bytes(&cookie[ns..ne]);
            if with_values {
                t.push(b'=');
                t.push_bytes(&cookie[vs..ve]);
            }
        }
        v.push(b'_');
        v.push_bytes(&sha12_or_zero(n == 0, t.as_bytes()));
        if n > 0 {
            out.raw.push(b'_');
            out.raw.push_bytes(t.as_bytes());
        }
    }
    !t.overflowed() && out.fits()
}
