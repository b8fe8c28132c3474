//! Flow keys as text for people: addresses (dotted IPv4, RFC 5952 IPv6), endpoints
//! (`ip:port`, `[v6]:port`) and protocol names, as `flow_topn` and `ip_to_str` print them.

use crate::decode::addr;
use crate::decode::fastpath::ip_proto;

/// The first 12 bytes of an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
pub const MAPPED_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/// Append the text of a 16-byte address: dotted IPv4 for version 4, RFC 5952 IPv6
/// otherwise (an IPv4-mapped IPv6 address in the mixed form `::ffff:a.b.c.d`, RFC 5952 §5).
pub fn write_addr(out: &mut String, version: u8, a: &[u8; 16]) {
    let v4 = [a[12], a[13], a[14], a[15]];
    if version == 4 {
        out.push_str(addr::ipv4(&v4).as_str());
    } else if a[..12] == MAPPED_PREFIX {
        out.push_str("::ffff:");
        out.push_str(addr::ipv4(&v4).as_str());
    } else {
        out.push_str(addr::ipv6_compact(a).as_str());
    }
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

/// The short name of an IP protocol `flow_topn` prints, `None` for the others (printed as
/// numbers).
pub fn proto_name(p: u8) -> Option<&'static str> {
    match p {
        ip_proto::ICMP => Some("icmp"),
        ip_proto::TCP => Some("tcp"),
        ip_proto::UDP => Some("udp"),
        ip_proto::ICMPV6 => Some("icmp6"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
