//! Text for people: addresses (dotted IPv4, RFC 5952 IPv6), endpoints (`ip:port`,
//! `[v6]:port`) and protocol names as `flow_topn` prints them; and, for the analysis view,
//! whole address columns as Arrow string buffers, protocol names and TCP flag letters.
//!
//! The lossless tables keep addresses as 16 bytes and protocols and flags as numbers. Address
//! columns are formatted here in one pass into the two buffers of an Arrow `string` array
//! (offsets and values), with no allocation per row, so a caller can wrap them without
//! building one Python string per address.

use crate::decode::addr;
use crate::decode::fastpath::ip_proto;

pub use crate::decode::addr::MAPPED_PREFIX;

/// Append the text of a 16-byte address: dotted IPv4 for version 4, RFC 5952 IPv6
/// otherwise (an IPv4-mapped IPv6 address in the mixed form `::ffff:a.b.c.d`, RFC 5952 §5).
pub fn write_addr(out: &mut String, version: u8, a: &[u8; 16]) {
    let mut buf = [0u8; addr::IP_TEXT_BUF];
    let len = if version == 4 {
        addr::ipv4_into(&mut buf, [a[12], a[13], a[14], a[15]])
    } else {
        addr::ip16_into(&mut buf, a, true)
    };
    // The writers emit ASCII only.
    out.push_str(core::str::from_utf8(&buf[..len]).unwrap_or(""));
}

/// The version to print an address of a table column with: 4 when it is IPv4-mapped,
/// unless the row's `ip_version` says 6.
pub fn column_version(a: &[u8; 16], row_version: Option<u8>) -> u8 {
    if a[..12] == MAPPED_PREFIX && row_version != Some(6) {
        4
    } else {
        6
    }
}

/// An endpoint as text: `ip:port`, `[ipv6]:port`, or the address alone without a port.
pub fn endpoint(version: u8, a: &[u8; 16], port: Option<u16>) -> String {
    let mut ip = String::with_capacity(39);
    write_addr(&mut ip, version, a);
    match port {
        Some(p) if version == 6 => format!("[{ip}]:{p}"),
        Some(p) => format!("{ip}:{p}"),
        None => ip,
    }
}

/// The short name of an IP protocol `flow_topn` prints (`icmp`, `tcp`, `udp`, `icmp6`),
/// `None` for the others (printed as numbers).
pub fn proto_name(p: u8) -> Option<&'static str> {
    match p {
        ip_proto::ICMP | ip_proto::TCP | ip_proto::UDP | ip_proto::ICMPV6 => protocol_name(p),
        _ => None,
    }
}

/// Bytes of one stored address.
const ADDR: usize = 16;

/// Rows per call of [`address_text`]: 39 bytes of text at most per address keeps the
/// values buffer of a full call far below the 2 GiB that 32-bit Arrow offsets address.
pub const MAX_ROWS: usize = 1 << 24;

/// The buffers of an Arrow `string` array: `offsets` (n + 1 little-endian `i32`), the UTF-8
/// `values`, and a validity bitmap (LSB first, a set bit is a valid row) when a row is null.
#[derive(Debug, Default)]
pub struct TextColumn {
    /// n + 1 offsets into `values`, little-endian `i32` bytes.
    pub offsets: Vec<u8>,
    /// The text of every valid row, concatenated.
    pub values: Vec<u8>,
    /// `None` when every row is valid.
    pub validity: Option<Vec<u8>>,
    /// Rows that are null.
    pub null_count: usize,
}

/// Why [`address_text`] refused its input.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// The address buffer is not 16 bytes per row.
    #[error("address buffer holds {got} bytes, not 16 per row ({rows} rows)")]
    AddressLength { got: usize, rows: usize },
    /// The validity bitmap is too short for the rows and its offset.
    #[error("validity bitmap of {got} bytes is too short for {rows} rows at bit offset {offset}")]
    ValidityLength {
        got: usize,
        rows: usize,
        offset: usize,
    },
    /// The versions buffer is not one byte per row.
    #[error("versions buffer holds {got} bytes, not one per row ({rows} rows)")]
    VersionsLength { got: usize, rows: usize },
    /// More rows than one call formats.
    #[error("{rows} rows in one call, at most {MAX_ROWS}")]
    TooManyRows { rows: usize },
}

/// Format `rows` addresses (16 bytes each, IPv4 as IPv4-mapped IPv6) as text: a dotted
/// quad for a mapped address, RFC 5952 text otherwise, or the mixed form `::ffff:a.b.c.d`
/// for a mapped address in a row whose `versions` byte is 6 (an IPv6 packet that carried a
/// mapped address). `validity` is an Arrow bitmap starting at bit `bit_offset`; a null row
/// stays null and adds no text.
///
/// # Errors
/// A buffer whose length does not match `rows`, or more than [`MAX_ROWS`] rows.
pub fn address_text(
    rows: usize,
    addrs: &[u8],
    validity: Option<&[u8]>,
    bit_offset: usize,
    versions: Option<&[u8]>,
) -> Result<TextColumn, TextError> {
    if rows > MAX_ROWS {
        return Err(TextError::TooManyRows { rows });
    }
    if addrs.len() != rows * ADDR {
        return Err(TextError::AddressLength {
            got: addrs.len(),
            rows,
        });
    }
    if let Some(v) = validity {
        if v.len() * 8 < bit_offset + rows {
            return Err(TextError::ValidityLength {
                got: v.len(),
                rows,
                offset: bit_offset,
            });
        }
    }
    if let Some(v) = versions {
        if v.len() != rows {
            return Err(TextError::VersionsLength { got: v.len(), rows });
        }
    }
    let is_valid = |i: usize| {
        validity.is_none_or(|v| {
            let bit = bit_offset + i;
            v[bit / 8] & (1 << (bit % 8)) != 0
        })
    };
    let mut out = TextColumn {
        offsets: Vec::with_capacity((rows + 1) * 4),
        values: Vec::with_capacity(rows * 16),
        validity: None,
        null_count: 0,
    };
    let mut bitmap = vec![0u8; rows.div_ceil(8)];
    out.offsets.extend_from_slice(&0i32.to_le_bytes());
    for (i, a) in addrs.chunks_exact(ADDR).enumerate() {
        if is_valid(i) {
            bitmap[i / 8] |= 1 << (i % 8);
            let a: &[u8; ADDR] = a.try_into().unwrap_or(&[0; ADDR]);
            let version = column_version(a, versions.map(|v| v[i]));
            addr::write_ip16(&mut out.values, a, version == 6);
        } else {
            out.null_count += 1;
        }
        // At most MAX_ROWS * 39 bytes: far below i32::MAX.
        let end = i32::try_from(out.values.len()).unwrap_or(i32::MAX);
        out.offsets.extend_from_slice(&end.to_le_bytes());
    }
    if out.null_count > 0 {
        out.validity = Some(bitmap);
    }
    Ok(out)
}

/// The name of an IP protocol number (IANA's keyword, lowercase; `icmp6` for 58 as in
/// `flow_topn`), or `None` for a number without a common name.
pub fn protocol_name(protocol: u8) -> Option<&'static str> {
    Some(match protocol {
        0 => "hopopt",
        1 => "icmp",
        2 => "igmp",
        4 => "ipip",
        6 => "tcp",
        8 => "egp",
        17 => "udp",
        41 => "ipv6",
        43 => "ipv6-route",
        44 => "ipv6-frag",
        46 => "rsvp",
        47 => "gre",
        50 => "esp",
        51 => "ah",
        58 => "icmp6",
        59 => "ipv6-nonxt",
        60 => "ipv6-opts",
        88 => "eigrp",
        89 => "ospf",
        103 => "pim",
        112 => "vrrp",
        115 => "l2tp",
        132 => "sctp",
        136 => "udplite",
        137 => "mpls-in-ip",
        _ => return None,
    })
}

/// TCP flag letters from the most significant bit of header byte 13 down: CWR ECE URG ACK
/// PSH RST SYN FIN.
pub const TCP_FLAG_LETTERS: [u8; 8] = *b"CEUAPRSF";

/// The letters of the flags set in `flags` (TCP header byte 13), in [`TCP_FLAG_LETTERS`]
/// order: `0x12` is `"AS"`, `0` is `""`.
pub fn tcp_flags_text(flags: u8) -> addr::StackStr<8> {
    let mut s = addr::StackStr::<8>::default();
    for (bit, &letter) in TCP_FLAG_LETTERS.iter().enumerate() {
        if flags & (0x80 >> bit) != 0 {
            s.push_byte(letter);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn mapped(v4: [u8; 4]) -> [u8; 16] {
        let mut a = [0; 16];
        a[..12].copy_from_slice(&MAPPED_PREFIX);
        a[12..].copy_from_slice(&v4);
        a
    }

    #[test]
    fn endpoints_and_names() {
        let v4 = mapped([10, 0, 0, 1]);
        assert_eq!(endpoint(4, &v4, Some(53)), "10.0.0.1:53");
        assert_eq!(endpoint(6, &v4, Some(53)), "[::ffff:10.0.0.1]:53");
        let mut v6 = [0; 16];
        v6[..2].copy_from_slice(&[0x20, 0x01]);
        v6[2..4].copy_from_slice(&[0x0d, 0xb8]);
        v6[15] = 1;
        assert_eq!(endpoint(6, &v6, None), "2001:db8::1");
        assert_eq!(endpoint(6, &v6, Some(443)), "[2001:db8::1]:443");
        assert_eq!(
            (column_version(&v4, None), column_version(&v4, Some(6))),
            (4, 6)
        );
        assert_eq!(column_version(&v6, Some(4)), 6);
        assert_eq!(
            (proto_name(6), proto_name(17), proto_name(58), proto_name(1)),
            (Some("tcp"), Some("udp"), Some("icmp6"), Some("icmp"))
        );
        assert_eq!(proto_name(47), None);
    }

    fn stored(ip: IpAddr) -> [u8; 16] {
        match ip {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        }
    }

    fn strings(c: &TextColumn) -> Vec<Option<String>> {
        let offs: Vec<usize> = c
            .offsets
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes(b.try_into().unwrap()) as usize)
            .collect();
        (0..offs.len() - 1)
            .map(|i| {
                let valid = c
                    .validity
                    .as_ref()
                    .is_none_or(|v| v[i / 8] & (1 << (i % 8)) != 0);
                valid.then(|| String::from_utf8(c.values[offs[i]..offs[i + 1]].to_vec()).unwrap())
            })
            .collect()
    }

    #[test]
    fn formats_both_versions_and_keeps_nulls() {
        let ips: [IpAddr; 4] = [
            Ipv4Addr::new(10, 1, 1, 2).into(),
            "2001:db8::1".parse::<Ipv6Addr>().unwrap().into(),
            Ipv4Addr::new(0, 0, 0, 0).into(),
            "::ffff:192.0.2.1".parse::<Ipv6Addr>().unwrap().into(),
        ];
        let mut buf: Vec<u8> = ips.iter().flat_map(|ip| stored(*ip)).collect();
        buf.extend_from_slice(&[0xab; 16]); // a null row: its bytes are ignored
        let validity = [0b0000_1111u8];
        let versions = [4u8, 6, 4, 6, 0];
        let c = address_text(5, &buf, Some(&validity), 0, Some(&versions)).unwrap();
        assert_eq!(c.null_count, 1);
        assert_eq!(
            strings(&c),
            [
                Some("10.1.1.2".to_string()),
                Some("2001:db8::1".to_string()),
                Some("0.0.0.0".to_string()),
                Some("::ffff:192.0.2.1".to_string()),
                None
            ]
        );
        // Without versions, a mapped address is a dotted quad.
        let c = address_text(4, &buf[..64], None, 0, None).unwrap();
        assert!(c.validity.is_none());
        assert_eq!(strings(&c)[3].as_deref(), Some("192.0.2.1"));
    }

    #[test]
    fn reads_the_bitmap_from_its_bit_offset() {
        let buf: Vec<u8> = (0..3u8)
            .flat_map(|i| stored(Ipv4Addr::new(10, 0, 0, i).into()))
            .collect();
        // Rows 0..3 at bit offset 6 of 0b1000_0000 0b0000_0001: row 0 null, rows 1, 2 valid.
        let c = address_text(3, &buf, Some(&[0b1000_0000, 0b0000_0001]), 6, None).unwrap();
        assert_eq!(
            strings(&c),
            [None, Some("10.0.0.1".into()), Some("10.0.0.2".into())]
        );
    }

    #[test]
    fn rejects_mismatched_buffers() {
        assert_eq!(
            address_text(2, &[0; 31], None, 0, None).unwrap_err(),
            TextError::AddressLength { got: 31, rows: 2 }
        );
        assert!(matches!(
            address_text(9, &[0; 144], Some(&[0xff]), 0, None),
            Err(TextError::ValidityLength { .. })
        ));
        assert!(matches!(
            address_text(1, &[0; 16], None, 0, Some(&[4, 4])),
            Err(TextError::VersionsLength { .. })
        ));
        assert_eq!(
            address_text(0, &[], None, 0, None).unwrap().offsets,
            0i32.to_le_bytes()
        );
    }

    #[test]
    fn allocates_nothing_per_row() {
        let buf: Vec<u8> = (0..10_000u32)
            .flat_map(|i| stored(Ipv4Addr::from(i.wrapping_mul(2_654_435_761)).into()))
            .collect();
        let before = crate::alloc::thread_counts();
        let c = address_text(10_000, &buf, None, 0, None).unwrap();
        let after = crate::alloc::thread_counts();
        // The three output vectors, and their growth: a handful, whatever the row count.
        assert!(
            after.allocs - before.allocs <= 16,
            "{} allocations",
            after.allocs - before.allocs
        );
        assert_eq!(strings(&c).len(), 10_000);
    }

    #[test]
    fn names_and_flag_letters() {
        assert_eq!(protocol_name(6), Some("tcp"));
        assert_eq!(protocol_name(58), Some("icmp6"));
        assert_eq!(protocol_name(253), None);
        assert_eq!(tcp_flags_text(0x12).as_str(), "AS");
        assert_eq!(tcp_flags_text(0xff).as_str(), "CEUAPRSF");
        assert_eq!(tcp_flags_text(0).as_str(), "");
    }

    proptest::proptest! {
        #[test]
        fn text_parses_back_to_the_address(b in proptest::array::uniform16(proptest::prop_oneof![proptest::strategy::Just(0u8), proptest::strategy::Just(0xffu8), proptest::num::u8::ANY]), v6 in proptest::bool::ANY) {
            let c = address_text(1, &b, None, 0, Some(&[if v6 { 6 } else { 4 }])).unwrap();
            let text = strings(&c)[0].clone().unwrap();
            let back: IpAddr = text.parse().unwrap();
            proptest::prop_assert_eq!(stored(back), b);
        }
    }
}
