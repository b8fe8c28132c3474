//! The JA4 family of fingerprints, computed from packet bytes.
//!
//! Each method lives in its own file and is a pure function over bytes or parsed layers:
//! [`ja4`] (TLS ClientHello, also from QUIC Initial packets and DTLS), [`ja4s`] (ServerHello),
//! [`ja4h`] (HTTP/1 request), [`ja4t`] (TCP SYN and SYN-ACK options: JA4T and the JA4TS
//! base), [`ja4ts`] (SYN-ACK retransmissions), [`ja4l`] (latency from the TCP handshake),
//! [`ja4ssh`] (SSH packet-length modes), [`ja4x`] (X.509 certificates), [`ja4d`] (DHCP) and
//! [`ja4d6`] (DHCPv6). [`engine`] keeps the bounded per-connection state the stateful
//! methods need and turns a stream of [`crate::RawPacket`]s into fingerprint events.
//!
//! Untrusted bytes enter through each method's parser, which checks every length before it
//! reads: no input panics, and a truncated or malformed message gives no fingerprint.
//! Nothing here allocates per fingerprint: lists are collected into fixed arrays and sorted
//! in place, strings are written into fixed [`Text`] buffers, SHA-256 runs on the stack.
//! An input larger than a fixed buffer (for example more than [`MAX_LIST`] cipher suites)
//! gives no fingerprint rather than a wrong one.
//!
//! Licences: JA4 is BSD-3-Clause; JA4S, JA4H, JA4L, JA4SSH, JA4T, JA4TS, JA4X, JA4D and
//! JA4D6 ("JA4+") are under the FoxIO License 1.1 (see docs/fingerprints.md).

pub mod columns;
pub mod engine;
pub mod frames;
pub mod hello;
pub mod ja4;
pub mod ja4d;
pub mod ja4d6;
pub mod ja4h;
pub mod ja4l;
pub mod ja4s;
pub mod ja4ssh;
pub mod ja4t;
pub mod ja4ts;
pub mod ja4x;
pub mod quic;
mod table;
#[cfg(test)]
mod tests;

pub use engine::{Config, Counters, Endpoint, Event, Fingerprinter};

/// The most entries of one list (cipher suites, extensions, signature algorithms, header
/// names, cookies, options) a fingerprint reads; a longer list gives no fingerprint.
pub const MAX_LIST: usize = 256;

/// Capacity of a fingerprint value.
pub const VALUE_CAP: usize = 1024;
/// Capacity of a raw (unhashed) fingerprint.
pub const RAW_CAP: usize = 16384;

/// A fingerprinting method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Method {
    /// TLS client (BSD-3-Clause).
    Ja4,
    /// TLS client, original order (BSD-3-Clause).
    Ja4O,
    /// TLS server.
    Ja4S,
    /// HTTP client.
    Ja4H,
    /// TCP client (SYN).
    Ja4T,
    /// TCP server response (SYN-ACK, with retransmissions).
    Ja4TS,
    /// Client latency from the TCP handshake.
    Ja4LC,
    /// Server latency from the TCP handshake.
    Ja4LS,
    /// SSH traffic.
    Ja4Ssh,
    /// X.509 certificate.
    Ja4X,
    /// DHCP.
    Ja4D,
    /// DHCPv6.
    Ja4D6,
}

impl Method {
    /// Every method, in a fixed order.
    pub const ALL: [Method; 12] = [
        Method::Ja4,
        Method::Ja4O,
        Method::Ja4S,
        Method::Ja4H,
        Method::Ja4T,
        Method::Ja4TS,
        Method::Ja4LC,
        Method::Ja4LS,
        Method::Ja4Ssh,
        Method::Ja4X,
        Method::Ja4D,
        Method::Ja4D6,
    ];

    /// The method's name as it appears in tables and column names.
    pub fn name(self) -> &'static str {
        match self {
            Method::Ja4 => "ja4",
            Method::Ja4O => "ja4_o",
            Method::Ja4S => "ja4s",
            Method::Ja4H => "ja4h",
            Method::Ja4T => "ja4t",
            Method::Ja4TS => "ja4ts",
            Method::Ja4LC => "ja4l_c",
            Method::Ja4LS => "ja4l_s",
            Method::Ja4Ssh => "ja4ssh",
            Method::Ja4X => "ja4x",
            Method::Ja4D => "ja4d",
            Method::Ja4D6 => "ja4d6",
        }
    }

    /// The method for a name, `None` when unknown.
    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.name() == name)
    }

    /// Whether the method is under the FoxIO License 1.1 (every method but JA4).
    pub fn is_ja4_plus(self) -> bool {
        !matches!(self, Method::Ja4 | Method::Ja4O)
    }
}

/// A set of methods.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Methods(u16);

impl Methods {
    /// No method.
    pub const NONE: Methods = Methods(0);
    /// Every method.
    pub const ALL: Methods = Methods((1 << Method::ALL.len()) - 1);
    /// JA4 and its original-order form (the BSD-3-Clause methods).
    pub const JA4_ONLY: Methods = Methods(1 << Method::Ja4 as u8 | 1 << Method::Ja4O as u8);

    /// This set with `m` added.
    pub const fn with(self, m: Method) -> Methods {
        Methods(self.0 | 1 << m as u8)
    }
    /// Whether `m` is in the set.
    #[inline]
    pub const fn has(self, m: Method) -> bool {
        self.0 & (1 << m as u8) != 0
    }
    /// Whether the sets share a method.
    #[inline]
    pub const fn intersects(self, other: Methods) -> bool {
        self.0 & other.0 != 0
    }
    /// Whether the set is empty.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The methods of the set, in [`Method::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Method> {
        Method::ALL.into_iter().filter(move |m| self.has(*m))
    }
}

impl FromIterator<Method> for Methods {
    fn from_iter<I: IntoIterator<Item = Method>>(iter: I) -> Self {
        iter.into_iter().fold(Methods::NONE, Methods::with)
    }
}

/// A fixed-capacity ASCII string. Writes past the capacity set `overflow` and are dropped,
/// so a caller can refuse a value that did not fit.
#[derive(Clone)]
pub struct Text<const N: usize> {
    buf: [u8; N],
    len: usize,
    overflow: bool,
}

impl<const N: usize> Default for Text<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> std::fmt::Debug for Text<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl<const N: usize> PartialEq<&str> for Text<N> {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<const N: usize> Text<N> {
    /// An empty string.
    pub const fn new() -> Self {
        Text {
            buf: [0; N],
            len: 0,
            overflow: false,
        }
    }
    /// Empty the string.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.overflow = false;
    }
    /// The bytes written.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    /// The string written. Only ASCII is ever written, so this is valid UTF-8; anything
    /// else reads as empty.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether nothing was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Whether a write did not fit.
    #[inline]
    pub fn overflowed(&self) -> bool {
        self.overflow
    }
    /// Overwrite the bytes written at `at..at + b.len()` (nothing when that is not all
    /// written yet): fills in a placeholder.
    #[inline]
    pub(crate) fn overwrite(&mut self, at: usize, b: &[u8]) {
        if let Some(dst) = self.buf[..self.len].get_mut(at..at + b.len()) {
            dst.copy_from_slice(b);
        }
    }
    /// Cut back to `len` bytes (a length returned by [`Text::len`] earlier).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }
    /// Append bytes (the caller passes ASCII).
    #[inline]
    pub fn push_bytes(&mut self, b: &[u8]) {
        match self.buf.get_mut(self.len..self.len + b.len()) {
            Some(dst) => {
                dst.copy_from_slice(b);
                self.len += b.len();
            }
            None => self.overflow = true,
        }
    }
    /// Append a string.
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        self.push_bytes(s.as_bytes());
    }
    /// Append one byte.
    #[inline]
    pub fn push(&mut self, b: u8) {
        self.push_bytes(&[b]);
    }
    /// Append `v` as four lowercase hex digits.
    #[inline]
    pub fn push_hex4(&mut self, v: u16) {
        self.push_bytes(&hex4(v));
    }
    /// Append `v` as four lowercase hex digits and `sep`, with one fixed eight-byte copy.
    #[inline]
    pub(crate) fn push_hex4_sep(&mut self, v: u16, sep: u8) {
        let [a, b, c, d] = hex4(v);
        self.push_padded(&[a, b, c, d, sep, 0, 0, 0], 5);
    }
    /// Append bytes as lowercase hex.
    pub fn push_hex(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.push_bytes(&HEX2[usize::from(b)]);
        }
    }
    /// Append `v` in decimal.
    #[inline]
    pub fn push_dec(&mut self, v: u64) {
        if v < 100_000 {
            self.push_dec5(v as u32, None);
            return;
        }
        let n = dec_len(v);
        match self.buf.get_mut(self.len..self.len + n) {
            Some(dst) => {
                write_dec(dst, v);
                self.len += n;
            }
            None => self.overflow = true,
        }
    }
    /// Append `v` (below 100,000) in decimal, then `sep` when given. The five digits are
    /// made zero-padded, the leading zeros shifted out of one 64-bit word, and the word
    /// stored with one fixed eight-byte copy (no variable-length copy).
    #[inline]
    pub(crate) fn push_dec5(&mut self, v: u32, sep: Option<u8>) {
        debug_assert!(v < 100_000);
        let n = 1
            + usize::from(v >= 10)
            + usize::from(v >= 100)
            + usize::from(v >= 1000)
            + usize::from(v >= 10_000);
        let mut padded = [0u8; 8];
        padded[..5].copy_from_slice(&digits5(v));
        let mut word = (u64::from_le_bytes(padded) >> (8 * (5 - n))).to_le_bytes();
        let mut total = n;
        if let Some(c) = sep {
            word[n] = c;
            total += 1;
        }
        self.push_padded(&word, total);
    }
    /// Append a byte value in decimal, from a table of the 256 texts.
    #[inline]
    pub fn push_dec_u8(&mut self, v: u8) {
        let n = 1 + usize::from(v >= 10) + usize::from(v >= 100);
        self.push_padded(&DEC_U8[usize::from(v)], n);
    }
    /// Append the first `n` bytes of `text`: where all of `text` fits, one fixed-size
    /// copy (the bytes past `n` are overwritten by the next write or lie past the end).
    #[inline]
    pub(crate) fn push_padded<const K: usize>(&mut self, text: &[u8; K], n: usize) {
        match self.buf.get_mut(self.len..self.len + K) {
            Some(dst) => {
                dst.copy_from_slice(text);
                self.len += n;
            }
            None => self.push_bytes(&text[..n]),
        }
    }
    /// Append `v` in decimal, zero-padded to `width` digits.
    pub fn push_dec_width(&mut self, v: u64, width: usize) {
        for _ in dec_len(v)..width {
            self.push(b'0');
        }
        self.push_dec(v);
    }
    /// Append a two-digit count, capped at 99 (the JA4 family's rule for counts).
    #[inline]
    pub fn push_count2(&mut self, n: usize) {
        let n = n.min(99) as u8;
        self.push_bytes(&[b'0' + n / 10, b'0' + n % 10]);
    }
}

/// The two lowercase hex digits of every byte value.
const HEX2: [[u8; 2]; 256] = {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut t = [[0u8; 2]; 256];
    let mut v = 0;
    while v < 256 {
        t[v] = [HEX[v >> 4], HEX[v & 15]];
        v += 1;
    }
    t
};

/// `v` as four lowercase hex digits, from two table lookups.
#[inline]
fn hex4(v: u16) -> [u8; 4] {
    let [a, b] = v.to_be_bytes();
    let (x, y) = (HEX2[usize::from(a)], HEX2[usize::from(b)]);
    [x[0], x[1], y[0], y[1]]
}

/// "00" to "99", two bytes each.
const DIGITS2: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `v` (below 100,000) in five decimal digits, zero-padded.
#[inline]
pub(crate) fn digits5(v: u32) -> [u8; 5] {
    debug_assert!(v < 100_000);
    let (bc, de) = ((v / 100 % 100) as usize * 2, (v % 100) as usize * 2);
    [
        b'0' + (v / 10_000 % 10) as u8,
        DIGITS2[bc],
        DIGITS2[bc + 1],
        DIGITS2[de],
        DIGITS2[de + 1],
    ]
}

/// The number of decimal digits of `v`.
#[inline]
fn dec_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Write `v`'s decimal digits into `dst`, which is exactly [`dec_len`]`(v)` bytes long.
#[inline]
fn write_dec(dst: &mut [u8], mut v: u64) {
    let mut i = dst.len();
    while v >= 100 && i >= 2 {
        let d = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        dst[i..i + 2].copy_from_slice(&DIGITS2[d..d + 2]);
    }
    if v >= 10 && i >= 2 {
        let d = v as usize * 2;
        dst[i - 2..i].copy_from_slice(&DIGITS2[d..d + 2]);
    } else if i >= 1 {
        dst[i - 1] = b'0' + v as u8;
    }
}

/// The decimal text of every byte value and a `-`, padded with zero bytes to four.
const DEC_U8_DASH: [[u8; 4]; 256] = {
    let mut t = [[0u8; 4]; 256];
    let mut v = 0;
    while v < 256 {
        let n = if v >= 100 {
            3
        } else if v >= 10 {
            2
        } else {
            1
        };
        let mut i = 0;
        while i < n {
            t[v][i] = DEC_U8[v][i];
            i += 1;
        }
        t[v][n] = b'-';
        v += 1;
    }
    t
};

/// The decimal text of every byte value, padded with zero bytes to three.
const DEC_U8: [[u8; 3]; 256] = {
    let mut t = [[0u8; 3]; 256];
    let mut v = 0;
    while v < 256 {
        let digits = [(v / 100) as u8, (v / 10 % 10) as u8, (v % 10) as u8];
        let skip = if v >= 100 {
            0
        } else if v >= 10 {
            1
        } else {
            2
        };
        let mut i = skip;
        while i < 3 {
            t[v][i - skip] = b'0' + digits[i];
            i += 1;
        }
        v += 1;
    }
    t
};

/// Twelve zeros: the value of a hashed part whose list is empty.
pub const ZERO_HASH: &[u8; 12] = b"000000000000";

/// SHA-256's initial hash value (FIPS 180-4, 5.3.3).
const SHA256_H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The first 12 lowercase hex digits of SHA-256 of `data`. The blocks go straight to the
/// compression function with the padding of FIPS 180-4 5.1.1 written here: the texts
/// hashed are short (often one block), where the streaming hasher's buffering costs as
/// much as the compression.
#[inline]
pub fn sha12(data: &[u8]) -> [u8; 12] {
    use sha2::digest::generic_array::GenericArray;
    let mut state = SHA256_H0;
    let mut blocks = data.chunks_exact(64);
    for b in &mut blocks {
        sha2::compress256(
            &mut state,
            std::slice::from_ref(GenericArray::from_slice(b)),
        );
    }
    let rest = blocks.remainder();
    let mut tail = [0u8; 128];
    tail[..rest.len()].copy_from_slice(rest);
    tail[rest.len()] = 0x80;
    let end = if rest.len() < 56 { 64 } else { 128 };
    tail[end - 8..end].copy_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for b in tail[..end].chunks_exact(64) {
        sha2::compress256(
            &mut state,
            std::slice::from_ref(GenericArray::from_slice(b)),
        );
    }
    let [a, b, c, d] = hex4((state[0] >> 16) as u16);
    let [e, f, g, h] = hex4(state[0] as u16);
    let [i, j, k, l] = hex4((state[1] >> 16) as u16);
    [a, b, c, d, e, f, g, h, i, j, k, l]
}

/// [`ZERO_HASH`] when `empty`, else [`sha12`] of `data`.
#[inline]
pub fn sha12_or_zero(empty: bool, data: &[u8]) -> [u8; 12] {
    if empty {
        *ZERO_HASH
    } else {
        sha12(data)
    }
}

/// The position of the first `needle` in `hay`, read eight bytes at a time (a request
/// head is scanned for line ends, a line for its colon).
#[inline]
pub fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut chunks = hay.chunks_exact(8);
    let mut base = 0;
    for c in &mut chunks {
        let v = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) ^ pattern;
        // The lowest flagged byte is a zero byte of `v` (flags above it may be false).
        let zero = v.wrapping_sub(LO) & !v & HI;
        if zero != 0 {
            return Some(base + (zero.trailing_zeros() / 8) as usize);
        }
        base += 8;
    }
    let rest = chunks.remainder();
    rest.iter().position(|&b| b == needle).map(|i| base + i)
}

/// Whether `v` is a GREASE value (RFC 8701): 0x?a?a with both bytes equal.
#[inline]
pub fn is_grease(v: u16) -> bool {
    v & 0x0f0f == 0x0a0a && v >> 8 == v & 0xff
}

/// A fixed-capacity list of u16 values, sorted in place when asked.
#[derive(Clone, Copy)]
pub struct List16 {
    v: [u16; MAX_LIST],
    n: usize,
}

impl Default for List16 {
    fn default() -> Self {
        List16 {
            v: [0; MAX_LIST],
            n: 0,
        }
    }
}

impl List16 {
    /// Empty the list.
    #[inline]
    pub fn clear(&mut self) {
        self.n = 0;
    }
    /// Append; `false` when the list is full.
    #[inline]
    pub fn push(&mut self, x: u16) -> bool {
        match self.v.get_mut(self.n) {
            Some(slot) => {
                *slot = x;
                self.n += 1;
                true
            }
            None => false,
        }
    }
    /// The values.
    #[inline]
    pub fn as_slice(&self) -> &[u16] {
        &self.v[..self.n]
    }
    /// Number of values.
    #[inline]
    pub fn len(&self) -> usize {
        self.n
    }
    /// Whether the list is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Sort in place.
    #[inline]
    pub fn sort(&mut self) {
        self.v[..self.n].sort_unstable();
    }
}

/// Write `values` as comma-separated four-digit hex: each but the last with its comma in
/// one fixed copy (so a list that ends exactly at the buffer's end fits).
pub(crate) fn push_hex_list<const N: usize>(t: &mut Text<N>, values: &[u16]) {
    if let Some((last, rest)) = values.split_last() {
        for v in rest {
            t.push_hex4_sep(*v, b',');
        }
        t.push_hex4(*last);
    }
}

/// Append `v` in decimal and a `-` to a `-`-joined list ended by [`end_dash_list`].
#[inline]
pub(crate) fn push_dash_item<const N: usize>(t: &mut Text<N>, v: u64) {
    if v < 100_000 {
        t.push_dec5(v as u32, Some(b'-'));
    } else {
        t.push_dec(v);
        t.push(b'-');
    }
}

/// Append a byte value in decimal and a `-` to a `-`-joined list ended by
/// [`end_dash_list`]: one fixed four-byte copy from a table.
#[inline]
pub(crate) fn push_dash_item_u8<const N: usize>(t: &mut Text<N>, v: u8) {
    let n = 2 + usize::from(v >= 10) + usize::from(v >= 100);
    t.push_padded(&DEC_U8_DASH[usize::from(v)], n);
}

/// End a `-`-joined list that starts at `start`, whose items each end with `-`: `00` when
/// it is empty, else the last `-` is dropped.
#[inline]
pub(crate) fn end_dash_list<const N: usize>(t: &mut Text<N>, start: usize) {
    if t.len() == start {
        t.push_str("00");
    } else if t.as_bytes().last() == Some(&b'-') {
        t.len -= 1;
    }
}

/// A bounds-checked big-endian cursor over untrusted bytes: every read returns `None`
/// rather than reading past the end.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    pub b: &'a [u8],
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    pub fn new(b: &'a [u8]) -> Self {
        Cursor { b, pos: 0 }
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.b.len()
    }
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.b.get(self.pos..).unwrap_or(&[])
    }
    #[inline]
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    #[inline]
    pub fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }
    #[inline]
    pub fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    #[inline]
    pub fn u16(&mut self) -> Option<u16> {
        let s = self.take(2)?;
        Some(u16::from_be_bytes([s[0], s[1]]))
    }
    #[inline]
    pub fn u24(&mut self) -> Option<usize> {
        let s = self.take(3)?;
        Some(usize::from(s[0]) << 16 | usize::from(s[1]) << 8 | usize::from(s[2]))
    }
    #[inline]
    pub fn u32(&mut self) -> Option<u32> {
        let s = self.take(4)?;
        Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }
    #[inline]
    pub fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = usize::from(self.u8()?);
        self.take(n)
    }
    #[inline]
    pub fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }
    #[inline]
    pub fn vec24(&mut self) -> Option<&'a [u8]> {
        let n = self.u24()?;
        self.take(n)
    }
}

/// Fixed buffers one fingerprint is written into: the value and the raw form.
#[derive(Clone, Default)]
pub struct Output {
    /// The fingerprint.
    pub value: Text<VALUE_CAP>,
    /// The raw (unhashed) fingerprint, empty for methods without one.
    pub raw: Text<RAW_CAP>,
}

impl Output {
    /// An empty output.
    pub fn new() -> Box<Output> {
        Box::default()
    }
    /// Empty both strings.
    #[inline]
    pub fn clear(&mut self) {
        self.value.clear();
        self.raw.clear();
    }
    /// Whether both strings fit their buffers.
    #[inline]
    pub fn fits(&self) -> bool {
        !self.value.overflowed() && !self.raw.overflowed()
    }
}
