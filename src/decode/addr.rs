//! Address text without allocation: MAC, IPv4, IPv6 (full and RFC 5952) into stack buffers.
//!
//! `std`'s `Display` for addresses costs about 180 ns each; these write ASCII digits
//! directly and are an order of magnitude cheaper.

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A short ASCII string held on the stack.
#[derive(Clone, Copy)]
pub struct StackStr<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackStr<N> {
    fn new() -> Self {
        StackStr {
            buf: [0; N],
            len: 0,
        }
    }

    #[inline]
    fn push(&mut self, b: u8) {
        if self.len < N {
            self.buf[self.len] = b;
            self.len += 1;
        }
    }

    /// The ASCII bytes of `b`, cut at the capacity.
    fn from_ascii(b: &[u8]) -> Self {
        let mut s = Self::new();
        for &x in b {
            s.push(x);
        }
        s
    }

    /// Append one ASCII byte (a non-ASCII byte is ignored, so the text stays UTF-8); past
    /// the capacity the byte is dropped.
    #[inline]
    pub fn push_byte(&mut self, b: u8) {
        if b.is_ascii() {
            self.push(b);
        }
    }

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        // Only ASCII bytes are ever pushed.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Default for StackStr<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> core::fmt::Debug for StackStr<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Text of a MAC address: `aa:bb:cc:dd:ee:ff`.
pub type MacText = StackStr<17>;
/// Text of an IPv4 address.
pub type Ipv4Text = StackStr<15>;
/// Text of an IPv6 address.
pub type Ipv6Text = StackStr<39>;
/// Text of a hardware address up to [`MAX_HW_LEN`] bytes.
pub type HwText = StackStr<{ MAX_HW_LEN * 3 }>;

/// The longest hardware address [`hw`] renders in full.
pub const MAX_HW_LEN: usize = 32;

/// `aa:bb:cc:dd:ee:ff`, lowercase.
#[inline]
pub fn mac(b: &[u8; 6]) -> MacText {
    let mut s = MacText::new();
    for (i, &x) in b.iter().enumerate() {
        if i > 0 {
            s.push(b':');
        }
        s.push(HEX[usize::from(x >> 4)]);
        s.push(HEX[usize::from(x & 15)]);
    }
    s
}

/// Colon-separated lowercase hex of up to [`MAX_HW_LEN`] bytes (longer input is cut).
pub fn hw(b: &[u8]) -> HwText {
    let mut s = HwText::new();
    for (i, &x) in b.iter().take(MAX_HW_LEN).enumerate() {
        if i > 0 {
            s.push(b':');
        }
        s.push(HEX[usize::from(x >> 4)]);
        s.push(HEX[usize::from(x & 15)]);
    }
    s
}

#[inline]
fn push_dec<const N: usize>(s: &mut StackStr<N>, v: u8) {
    if v >= 100 {
        s.push(b'0' + v / 100);
        s.push(b'0' + (v / 10) % 10);
    } else if v >= 10 {
        s.push(b'0' + v / 10);
    }
    s.push(b'0' + v % 10);
}

/// Dotted quad.
#[inline]
pub fn ipv4(b: &[u8; 4]) -> Ipv4Text {
    let mut s = Ipv4Text::new();
    for (i, &x) in b.iter().enumerate() {
        if i > 0 {
            s.push(b'.');
        }
        push_dec(&mut s, x);
    }
    s
}

fn groups(b: &[u8; 16]) -> [u16; 8] {
    let mut g = [0u16; 8];
    for (i, x) in g.iter_mut().enumerate() {
        *x = u16::from_be_bytes([b[2 * i], b[2 * i + 1]]);
    }
    g
}

/// The first longest run of two or more zero groups, as (start, length); (8, 0) if none.
fn zero_run(g: &[u16; 8]) -> (usize, usize) {
    let (mut best_start, mut best_len) = (8usize, 0usize);
    let mut i = 0;
    while i < 8 {
        if g[i] == 0 {
            let start = i;
            while i < 8 && g[i] == 0 {
                i += 1;
            }
            if i - start > best_len {
                best_start = start;
                best_len = i - start;
            }
        } else {
            i += 1;
        }
    }
    if best_len < 2 {
        (8, 0)
    } else {
        (best_start, best_len)
    }
}

/// Write the IPv6 text of `b` into `buf` and return its length (39 bytes at most): groups
/// in lowercase hex without leading zeros, with the first longest zero run as `::` when
/// `compress`.
fn ipv6_into(buf: &mut [u8; IP_TEXT_BUF], b: &[u8; 16], compress: bool) -> usize {
    let g = groups(b);
    let (run_start, run_len) = if compress { zero_run(&g) } else { (8, 0) };
    let mut len = 0;
    let mut j = 0;
    while j < 8 {
        if j == run_start {
            buf[len] = b':';
            buf[len + 1] = b':';
            len += 2;
            j += run_len;
            continue;
        }
        if j > 0 && j != run_start + run_len {
            buf[len] = b':';
            len += 1;
        }
        // All four hex digits are written, the significant ones first; the next write
        // starts after them. At most 35 bytes precede a group, so four bytes fit in 40.
        let x = g[j];
        let digits = (19 - x.leading_zeros() as usize) / 4;
        let digits = digits.max(1);
        let h = u32::from_be_bytes([
            HEX[usize::from(x >> 12)],
            HEX[usize::from((x >> 8) & 15)],
            HEX[usize::from((x >> 4) & 15)],
            HEX[usize::from(x & 15)],
        ]) << (8 * (4 - digits));
        buf[len..len + 4].copy_from_slice(&h.to_be_bytes());
        len += digits;
        j += 1;
    }
    len
}

/// Eight groups, no leading zeros, no `::` (the reference's uncompressed form).
pub fn ipv6_full(b: &[u8; 16]) -> Ipv6Text {
    let mut buf = [0u8; IP_TEXT_BUF];
    let len = ipv6_into(&mut buf, b, false);
    Ipv6Text::from_ascii(&buf[..len])
}

/// RFC 5952 text: lowercase, no leading zeros, the first longest run of two or more zero
/// groups as `::`. IPv4-mapped addresses are written in hex groups too.
pub fn ipv6_compact(b: &[u8; 16]) -> Ipv6Text {
    let mut buf = [0u8; IP_TEXT_BUF];
    let len = ipv6_into(&mut buf, b, true);
    Ipv6Text::from_ascii(&buf[..len])
}

/// The first 12 bytes of an IPv4-mapped IPv6 address (`::ffff:0:0/96`, RFC 4291 §2.5.5.2).
pub const MAPPED_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// Decimal digits of every byte value: `[len, d0, d1, d2]`.
static DEC: [[u8; 4]; 256] = {
    let mut t = [[0u8; 4]; 256];
    let mut i = 0;
    while i < 256 {
        let v = i as u8;
        t[i] = if v >= 100 {
            [3, b'0' + v / 100, b'0' + (v / 10) % 10, b'0' + v % 10]
        } else if v >= 10 {
            [2, b'0' + v / 10, b'0' + v % 10, 0]
        } else {
            [1, b'0' + v, 0, 0]
        };
        i += 1;
    }
    t
};

/// Size of the buffer [`ip16_into`] and [`ipv4_into`] write into: the longest text (an IPv6
/// address of eight four-digit groups, 39 bytes) and the slack of a four-byte store.
pub const IP_TEXT_BUF: usize = 40;

/// Write the dotted quad of `b` at the start of `buf` (one table lookup per byte); returns
/// its length (15 at most).
#[inline]
pub fn ipv4_into(buf: &mut [u8; IP_TEXT_BUF], b: [u8; 4]) -> usize {
    // The last octet's three-byte copy may reach byte 15.
    let mut len = 0;
    for (i, &x) in b.iter().enumerate() {
        if i > 0 {
            buf[len] = b'.';
            len += 1;
        }
        let d = &DEC[usize::from(x)];
        buf[len..len + 3].copy_from_slice(&d[1..]);
        len += usize::from(d[0]);
    }
    len
}

/// Write the text of a 16-byte address as the tables store it (IPv4 as IPv4-mapped IPv6)
/// at the start of `buf`; returns its length. A mapped address is a dotted quad, unless
/// `ipv6` says the packet was IPv6, which gives the mixed form `::ffff:a.b.c.d` (RFC 5952
/// §5); any other address is RFC 5952 text.
#[inline]
pub fn ip16_into(buf: &mut [u8; IP_TEXT_BUF], a: &[u8; 16], ipv6: bool) -> usize {
    if a[..12] != MAPPED_PREFIX {
        return ipv6_into(buf, a, true);
    }
    let v4 = [a[12], a[13], a[14], a[15]];
    if !ipv6 {
        return ipv4_into(buf, v4);
    }
    let mut quad = [0u8; IP_TEXT_BUF];
    let n = ipv4_into(&mut quad, v4);
    buf[..7].copy_from_slice(b"::ffff:");
    buf[7..7 + n].copy_from_slice(&quad[..n]);
    7 + n
}

/// Append the text [`ip16_into`] writes to `out`.
#[inline]
pub fn write_ip16(out: &mut Vec<u8>, a: &[u8; 16], ipv6: bool) {
    let mut buf = [0u8; IP_TEXT_BUF];
    let len = ip16_into(&mut buf, a, ipv6);
    out.extend_from_slice(&buf[..len]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    #[test]
    fn mac_and_ipv4() {
        assert_eq!(
            mac(&[0x10, 0x11, 0xab, 0, 0xff, 1]).as_str(),
            "10:11:ab:00:ff:01"
        );
        assert_eq!(ipv4(&[10, 0, 200, 255]).as_str(), "10.0.200.255");
        assert_eq!(ipv4(&[0, 9, 99, 100]).as_str(), "0.9.99.100");
        assert_eq!(hw(&[1, 2]).as_str(), "01:02");
        assert_eq!(hw(&[]).as_str(), "");
    }

    #[test]
    fn ipv6_forms() {
        let a: Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(ipv6_full(&a.octets()).as_str(), "2001:db8:0:0:0:0:0:1");
        assert_eq!(ipv6_compact(&a.octets()).as_str(), "2001:db8::1");
        assert_eq!(ipv6_compact(&[0; 16]).as_str(), "::");
        let b: Ipv6Addr = "2001:db8:0:1:1:1:1:1".parse().unwrap();
        assert_eq!(ipv6_compact(&b.octets()).as_str(), "2001:db8:0:1:1:1:1:1");
        let c: Ipv6Addr = "2001:0:0:1:0:0:0:1".parse().unwrap();
        assert_eq!(ipv6_compact(&c.octets()).as_str(), "2001:0:0:1::1");
        let d: Ipv6Addr = "2001:db8:0:0:1:0:0:1".parse().unwrap();
        assert_eq!(ipv6_compact(&d.octets()).as_str(), "2001:db8::1:0:0:1");
        let e: Ipv6Addr = "fe80::".parse().unwrap();
        assert_eq!(ipv6_compact(&e.octets()).as_str(), "fe80::");
    }

    fn ip16(a: &[u8; 16], ipv6: bool) -> String {
        let mut v = Vec::new();
        write_ip16(&mut v, a, ipv6);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn ip16_forms() {
        let mut m = [0u8; 16];
        m[10] = 0xff;
        m[11] = 0xff;
        m[12..].copy_from_slice(&[10, 1, 1, 2]);
        assert_eq!(ip16(&m, false), "10.1.1.2");
        assert_eq!(ip16(&m, true), "::ffff:10.1.1.2");
        m[12..].copy_from_slice(&[255; 4]);
        assert_eq!(ip16(&m, true), "::ffff:255.255.255.255");
        let a: Ipv6Addr = "2001:db8::ff00:42:8329".parse().unwrap();
        assert_eq!(ip16(&a.octets(), false), "2001:db8::ff00:42:8329");
        assert_eq!(ip16(&a.octets(), true), "2001:db8::ff00:42:8329");
        // IPv4-compatible (deprecated, ::a.b.c.d) is not mapped: plain RFC 5952 hex.
        let c: Ipv6Addr = "::102:304".parse().unwrap();
        assert_eq!(ip16(&c.octets(), false), "::102:304");
    }

    proptest::proptest! {
        #[test]
        fn ipv6_compact_matches_std(b in proptest::array::uniform16(proptest::prop_oneof![proptest::strategy::Just(0u8), proptest::num::u8::ANY])) {
            let a = Ipv6Addr::from(b);
            // std writes IPv4-mapped/compatible forms in dotted quad; compare the rest.
            if a.to_ipv4().is_none() {
                proptest::prop_assert_eq!(ipv6_compact(&b).as_str().to_string(), a.to_string());
            }
            let back: Ipv6Addr = ipv6_full(&b).as_str().parse().unwrap();
            proptest::prop_assert_eq!(back, a);
        }

        #[test]
        fn ipv4_matches_std(b in proptest::array::uniform4(proptest::num::u8::ANY)) {
            proptest::prop_assert_eq!(ipv4(&b).as_str().to_string(), std::net::Ipv4Addr::from(b).to_string());
            let mut buf = [0u8; IP_TEXT_BUF];
            let n = ipv4_into(&mut buf, b);
            proptest::prop_assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), std::net::Ipv4Addr::from(b).to_string());
        }
    }
}
