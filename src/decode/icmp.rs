//! ICMPv4 and ICMPv6: the 4-byte common header and the names of types and codes.

use super::error::{DecodeError, Layer};

/// Bytes read: type, code, checksum.
pub const ICMP_HEADER_LEN: usize = 4;
const ICMP_TYPE: usize = 0;
const ICMP_CODE: usize = 1;
const ICMP_CHECKSUM: usize = 2;

/// An ICMP message (v4 or v6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Icmp<'a> {
    /// ICMPv6 when true.
    pub v6: bool,
    /// Type.
    pub icmp_type: u8,
    /// Code.
    pub code: u8,
    /// Checksum.
    pub checksum: u16,
    /// Bytes after the 4-byte header.
    pub payload: &'a [u8],
}

/// Decode an ICMP header at `offset`.
///
/// # Errors
/// Fewer than 4 bytes.
pub fn decode_icmp(b: &[u8], v6: bool, offset: usize) -> Result<Icmp<'_>, DecodeError> {
    if b.len() < ICMP_HEADER_LEN {
        let layer = if v6 { Layer::Icmpv6 } else { Layer::Icmpv4 };
        return Err(DecodeError::truncated(
            layer,
            ICMP_HEADER_LEN,
            b.len(),
            offset,
        ));
    }
    Ok(Icmp {
        v6,
        icmp_type: b[ICMP_TYPE],
        code: b[ICMP_CODE],
        checksum: u16::from_be_bytes([b[ICMP_CHECKSUM], b[ICMP_CHECKSUM + 1]]),
        payload: &b[ICMP_HEADER_LEN..],
    })
}

/// A type or code name: a fixed name, or the number with a prefix (`type-42`, `code-7`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Name {
    /// A known name.
    Known(&'static str),
    /// `type-N`.
    Type(u8),
    /// `code-N`.
    Code(u8),
}

impl core::fmt::Display for Name {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Name::Known(s) => f.write_str(s),
            Name::Type(n) => write!(f, "type-{n}"),
            Name::Code(n) => write!(f, "code-{n}"),
        }
    }
}

fn pick(table: &'static [(u8, &'static str)], code: u8) -> Name {
    match table.iter().find(|(c, _)| *c == code) {
        Some((_, s)) => Name::Known(s),
        None => Name::Code(code),
    }
}

const V4_UNREACH: &[(u8, &str)] = &[
    (0, "net-unreachable"),
    (1, "host-unreachable"),
    (2, "proto-unreachable"),
    (3, "port-unreachable"),
    (4, "frag-needed"),
    (5, "src-route-failed"),
    (9, "net-admin-prohibited"),
    (10, "host-admin-prohibited"),
    (13, "comm-admin-prohibited"),
];
const V4_REDIRECT: &[(u8, &str)] = &[
    (0, "redirect-net"),
    (1, "redirect-host"),
    (2, "redirect-tos-net"),
    (3, "redirect-tos-host"),
];
const V4_TIME: &[(u8, &str)] = &[(0, "ttl-exceeded"), (1, "frag-reassembly-time-exceeded")];
const V4_PARAM: &[(u8, &str)] = &[
    (0, "pointer-indicates-error"),
    (1, "missing-required-option"),
    (2, "bad-length"),
];
const V6_UNREACH: &[(u8, &str)] = &[
    (0, "no-route"),
    (1, "admin-prohibited"),
    (3, "addr-unreachable"),
    (4, "port-unreachable"),
];
const V6_TIME: &[(u8, &str)] = &[
    (0, "hop-limit-exceeded"),
    (1, "frag-reassembly-time-exceeded"),
];
const V6_PARAM: &[(u8, &str)] = &[
    (0, "erroneous-header-field"),
    (1, "unknown-next-header"),
    (2, "unrecognized-ipv6-option"),
];

impl Icmp<'_> {
    /// The type name.
    pub fn type_name(&self) -> Name {
        let known = if self.v6 {
            match self.icmp_type {
                1 => "dest-unreachable",
                2 => "packet-too-big",
                3 => "time-exceeded",
                4 => "parameter-problem",
                128 => "echo-request",
                129 => "echo-reply",
                133 => "router-solicitation",
                134 => "router-advertisement",
                135 => "neighbor-solicitation",
                136 => "neighbor-advertisement",
                137 => "redirect",
                n => return Name::Type(n),
            }
        } else {
            match self.icmp_type {
                0 => "echo-reply",
                3 => "dest-unreachable",
                4 => "source-quench",
                5 => "redirect",
                8 => "echo-request",
                9 => "router-advertisement",
                10 => "router-solicitation",
                11 => "time-exceeded",
                12 => "parameter-problem",
                13 => "timestamp",
                14 => "timestamp-reply",
                17 => "address-mask-request",
                18 => "address-mask-reply",
                n => return Name::Type(n),
            }
        };
        Name::Known(known)
    }

    /// The code name; `None` for types without a code table when the code is 0.
    pub fn code_name(&self) -> Option<Name> {
        let table = match (self.v6, self.icmp_type) {
            (false, 3) => V4_UNREACH,
            (false, 5) => V4_REDIRECT,
            (false, 11) => V4_TIME,
            (false, 12) => V4_PARAM,
            (true, 1) => V6_UNREACH,
            (true, 3) => V6_TIME,
            (true, 4) => V6_PARAM,
            _ => {
                return if self.code == 0 {
                    None
                } else {
                    Some(Name::Code(self.code))
                };
            }
        };
        Some(pick(table, self.code))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn icmp(v6: bool, t: u8, c: u8) -> Icmp<'static> {
        Icmp {
            v6,
            icmp_type: t,
            code: c,
            checksum: 0,
            payload: &[],
        }
    }

    #[test]
    fn names() {
        assert_eq!(icmp(false, 8, 0).type_name(), Name::Known("echo-request"));
        assert_eq!(icmp(false, 8, 0).code_name(), None);
        assert_eq!(icmp(false, 8, 3).code_name(), Some(Name::Code(3)));
        assert_eq!(
            icmp(false, 3, 3).code_name(),
            Some(Name::Known("port-unreachable"))
        );
        assert_eq!(
            icmp(false, 3, 13).code_name(),
            Some(Name::Known("comm-admin-prohibited"))
        );
        assert_eq!(icmp(false, 3, 99).code_name(), Some(Name::Code(99)));
        assert_eq!(icmp(false, 3, 6).code_name(), Some(Name::Code(6)));
        assert_eq!(icmp(true, 1, 2).code_name(), Some(Name::Code(2)));
        assert_eq!(icmp(false, 42, 0).type_name().to_string(), "type-42");
        assert_eq!(
            icmp(true, 1, 3).code_name(),
            Some(Name::Known("addr-unreachable"))
        );
        assert_eq!(
            icmp(true, 4, 2).code_name(),
            Some(Name::Known("unrecognized-ipv6-option"))
        );
        assert_eq!(
            icmp(true, 136, 0).type_name(),
            Name::Known("neighbor-advertisement")
        );
    }

    #[test]
    fn header() {
        assert!(decode_icmp(&[8, 0, 1], false, 34).is_err());
        let i = decode_icmp(&[8, 0, 0x12, 0x34, 9], false, 34).unwrap();
        assert_eq!((i.checksum, i.payload), (0x1234, &[9u8][..]));
    }
}
