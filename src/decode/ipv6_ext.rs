//! IPv6 extension headers: the chain walk and Hop-by-Hop / Destination Options TLV checks.

/// Hop-by-Hop Options.
pub const IPV6_HOP_BY_HOP: u8 = 0;
/// Routing.
pub const IPV6_ROUTING: u8 = 43;
/// Fragment.
pub const IPV6_FRAGMENT: u8 = 44;
/// Encapsulating Security Payload: terminal, its payload is opaque.
pub const IPV6_ESP: u8 = 50;
/// Authentication Header.
pub const IPV6_AUTH: u8 = 51;
/// Destination Options.
pub const IPV6_DEST_OPTIONS: u8 = 60;
/// Most extension headers walked; a longer chain is invalid.
pub const MAX_EXT_HEADERS: usize = 16;

const OPTIONS_START: usize = 2;
const PAD1: u8 = 0;
/// The Jumbo Payload option of a Hop-by-Hop header (RFC 2675).
const OPT_JUMBO: u8 = 0xC2;

/// Whether the option TLVs of a Hop-by-Hop or Destination Options header (the whole
/// header, `(hdrlen + 1) * 8` bytes) are well formed: Pad1 is one byte, every other option
/// is type, length, data, and no option overruns the header.
pub fn options_valid(header: &[u8]) -> bool {
    let mut pos = OPTIONS_START;
    while pos < header.len() {
        if header[pos] == PAD1 {
            pos += 1;
            continue;
        }
        let Some(&len) = header.get(pos + 1) else {
            return false;
        };
        pos += 2 + usize::from(len);
        if pos > header.len() {
            return false;
        }
    }
    true
}

/// Whether a Hop-by-Hop header (the whole header, options well formed) carries a Jumbo
/// Payload option.
pub fn has_jumbo(header: &[u8]) -> bool {
    let mut pos = OPTIONS_START;
    while let Some(&kind) = header.get(pos) {
        if kind == OPT_JUMBO {
            return true;
        }
        pos += match kind {
            PAD1 => 1,
            _ => 2 + usize::from(header.get(pos + 1).copied().unwrap_or(u8::MAX)),
        };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tlvs() {
        // next header, hdr len 0, PadN(4 data bytes)
        assert!(options_valid(&[17, 0, 1, 4, 0, 0, 0, 0]));
        // Pad1 x6
        assert!(options_valid(&[17, 0, 0, 0, 0, 0, 0, 0]));
        // option whose length overruns
        assert!(!options_valid(&[17, 0, 1, 5, 0, 0, 0, 0]));
        // a type byte without its length
        assert!(!options_valid(&[17, 0, 0, 0, 0, 0, 0, 5]));
    }

    #[test]
    fn jumbo_option() {
        assert!(has_jumbo(&[6, 0, 0xC2, 4, 0, 1, 0, 0]));
        assert!(has_jumbo(&[
            6, 0, 0, 0xC2, 4, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0
        ]));
        assert!(!has_jumbo(&[6, 0, 1, 4, 0xC2, 4, 0, 0]));
        assert!(!has_jumbo(&[6, 0, 1, 0xff, 0, 0, 0, 0]));
    }
}
