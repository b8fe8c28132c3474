//! The flow fast path: a hand-written, bounds-checked parser for the numeric projection.
//!
//! [`parse`] reads only what a flow needs (IP version, protocol, addresses, ports, the
//! outermost VLAN id, TCP flags) and never allocates. Every read goes through `get`, so no
//! input, however malformed, can panic; a short or invalid header ends the walk and is
//! recorded in [`FlowFields::error`], keeping the fields that parsed.
//!
//! Validity rules are the full decoder's ([`crate::decode::decode`], built on etherparse's
//! lax slicing), so both decoders agree on version, protocol, addresses and ports:
//!
//! - Ethernet II needs 14 bytes. Up to [`MAX_VLAN_TAGS`] VLAN tags (TPID 0x8100, 0x88A8,
//!   0x9100, 0x9200) are skipped; a fourth tag ends the walk without L3. MACsec (0x88E5)
//!   is not decoded: such frames have no L3.
//! - EtherType 0x0800 and 0x86DD dispatch on the IP version nibble.
//! - IPv4: IHL >= 5 and the whole header present. The payload ends at `total_length`
//!   unless that is smaller than the header or larger than the captured bytes (then the
//!   captured bytes are used). Unless the packet is a non-first fragment, an AH header (51)
//!   is skipped and its next header becomes the protocol.
//! - IPv6: 40 bytes. Payload length 0 or beyond the capture means "to the end". Extension
//!   headers 0 (only first), 43, 60, 44 (fragment) and 51 (AH) are walked, at most
//!   [`MAX_IPV6_EXT_HEADERS`]; anything else (ESP 50 included) is the protocol. A non-first
//!   fragment ends the walk with the fragment header's next header as the protocol. The
//!   protocol is unknown (`has_protocol == false`) when an extension header is cut, a
//!   hop-by-hop header is not first, there are too many, an AH has length 0, or the
//!   options of a hop-by-hop or destination-options header overrun it.
//! - Ports: UDP needs 8 bytes; TCP needs its whole header (data offset >= 5). Non-first
//!   fragments (IPv4 offset != 0, IPv6 fragment offset != 0) have no ports; first
//!   fragments have them when the L4 header is present.
//!
//! `src/flow/agreement_tests.rs` checks both agreements (with the full decoder, and with
//! etherparse's `LaxSlicedPacket` where the decoder follows it) over a corpus, every prefix
//! of it, random bytes and mutated frames.

use std::fmt;

/// Link types the fast path reads: the decoder's (the pcap LINKTYPE registry numbers).
pub mod linktype {
    pub use crate::decode::link::{
        LINKTYPE_ETHERNET as ETHERNET, LINKTYPE_LINUX_SLL as LINUX_SLL,
        LINKTYPE_LINUX_SLL2 as LINUX_SLL2, LINKTYPE_LOOP as LOOP, LINKTYPE_NULL as NULL,
        LINKTYPE_RAW as RAW, LINKTYPE_RAW_BSD as RAW_12, LINKTYPE_RAW_OPENBSD as RAW_14,
    };
}

/// The most IPv6 extension headers walked (the decoder's limit).
pub use crate::decode::ipv6_ext::MAX_EXT_HEADERS as MAX_IPV6_EXT_HEADERS;
/// The most VLAN tags skipped before giving up on L3 (the decoder's limit).
pub use crate::decode::link::MAX_VLAN_TAGS;

use crate::decode::link::{
    ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETH_HEADER_LEN, SLL_HEADER_LEN, VLAN_TPIDS,
};

const ETH_TYPE_OFFSET: usize = 12;
const VLAN_TAG_LEN: usize = 4;
const SLL_PROTOCOL_OFFSET: usize = 14;
const SLL2_HEADER_LEN: usize = 20;
const NULL_HEADER_LEN: usize = 4;

const IPV4_MIN_HEADER_LEN: usize = 20;
const IPV4_TOTAL_LEN_OFFSET: usize = 2;
const IPV4_FRAG_OFFSET: usize = 6;
const IPV4_PROTOCOL_OFFSET: usize = 9;
const IPV4_SRC_OFFSET: usize = 12;
const IPV4_DST_OFFSET: usize = 16;
const IPV4_MORE_FRAGMENTS: u16 = 0x2000;
const IPV4_FRAG_OFFSET_MASK: u16 = 0x1FFF;

const IPV6_HEADER_LEN: usize = 40;
const IPV6_PAYLOAD_LEN_OFFSET: usize = 4;
const IPV6_NEXT_HEADER_OFFSET: usize = 6;
const IPV6_SRC_OFFSET: usize = 8;
const IPV6_DST_OFFSET: usize = 24;
const IPV6_EXT_MIN_LEN: usize = 8;
const IPV6_FRAG_HEADER_LEN: usize = 8;
const IPV6_FRAG_OFFSET_MASK: u16 = 0xFFF8;
const IPV6_MORE_FRAGMENTS: u16 = 0x0001;
const AH_MIN_LEN: usize = 12;

const UDP_HEADER_LEN: usize = 8;
const TCP_MIN_HEADER_LEN: usize = 20;
const TCP_DATA_OFFSET: usize = 12;
const TCP_FLAGS_OFFSET: usize = 13;
const ICMP_MIN_LEN: usize = 8;

/// IP protocol numbers the fast path looks at.
pub mod ip_proto {
    /// IPv6 hop-by-hop options.
    pub const HOP_BY_HOP: u8 = 0;
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
    /// IPv6 routing header.
    pub const ROUTING: u8 = 43;
    /// IPv6 fragment header.
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating security payload (terminal).
    pub const ESP: u8 = 50;
    /// Authentication header.
    pub const AH: u8 = 51;
    /// ICMPv6.
    pub const ICMPV6: u8 = 58;
    /// IPv6 destination options.
    pub const DEST_OPTS: u8 = 60;
}

/// Why the walk stopped early. Fields parsed before the stop are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The link-layer header is shorter than its fixed size.
    TruncatedLink,
    /// A VLAN tag is cut.
    TruncatedVlan,
    /// No bytes after the link layer, or an IPv4/IPv6 header is cut.
    TruncatedIp,
    /// The version nibble is neither 4 nor 6.
    InvalidIpVersion,
    /// IPv4 IHL below 5.
    InvalidIpv4HeaderLength,
    /// An IPv6 extension header or an AH header is cut.
    TruncatedExtension,
    /// An IPv4 AH header with a zero payload length.
    InvalidAuthHeader,
    /// The UDP, TCP or ICMP header is cut.
    TruncatedTransport,
    /// TCP data offset below 5.
    InvalidTcpHeader,
}

impl StopReason {
    /// A short lowercase message for `decode_error`.
    pub fn message(self) -> &'static str {
        match self {
            StopReason::TruncatedLink => "truncated link-layer header",
            StopReason::TruncatedVlan => "truncated VLAN header",
            StopReason::TruncatedIp => "truncated IP header",
            StopReason::InvalidIpVersion => "invalid IP version",
            StopReason::InvalidIpv4HeaderLength => "invalid IPv4 header length",
            StopReason::TruncatedExtension => "truncated IP extension header",
            StopReason::InvalidAuthHeader => "invalid IP authentication header",
            StopReason::TruncatedTransport => "truncated transport header",
            StopReason::InvalidTcpHeader => "invalid TCP data offset",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// The projection of one packet. `ip_version == 0` means no L3 (the address, protocol and
/// port fields are then meaningless); `has_ports`, `has_vlan` and `has_tcp_flags` say
/// whether the matching fields hold a value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowFields {
    /// 4, 6, or 0 when there is no IP layer.
    pub ip_version: u8,
    /// Whether `protocol` is known (false only for IPv6 whose extension walk failed).
    pub has_protocol: bool,
    /// IPv4 protocol or the final IPv6 next header (after AH and extension headers).
    pub protocol: u8,
    /// Source address, 16 bytes, IPv4 as an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
    pub src: [u8; 16],
    /// Destination address, same representation as `src`.
    pub dst: [u8; 16],
    /// Whether `src_port`/`dst_port` hold TCP or UDP ports.
    pub has_ports: bool,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Whether `vlan_id` holds a value.
    pub has_vlan: bool,
    /// The 12-bit id of the outermost VLAN tag.
    pub vlan_id: u16,
    /// Whether `tcp_flags` holds a value.
    pub has_tcp_flags: bool,
    /// TCP header byte 13: CWR ECE URG ACK PSH RST SYN FIN.
    pub tcp_flags: u8,
    /// Whether the packet is an IP fragment (more-fragments set or offset != 0).
    pub fragment: bool,
    /// Whether it is a fragment other than the first (offset != 0).
    pub later_fragment: bool,
    /// Offset in the packet of the TCP or UDP payload (after the transport header);
    /// meaningful when `has_ports`.
    pub payload_offset: u32,
    /// Length of that payload, limited by the IP and UDP lengths (link-layer padding is
    /// not payload).
    pub payload_len: u32,
    /// Why the walk stopped early, if it did.
    pub error: Option<StopReason>,
}

impl FlowFields {
    /// The TCP or UDP payload of `data`, the packet these fields were parsed from (empty
    /// without ports).
    #[inline]
    pub fn payload<'a>(&self, data: &'a [u8]) -> &'a [u8] {
        let start = self.payload_offset as usize;
        data.get(start..start + self.payload_len as usize)
            .unwrap_or(&[])
    }
}

#[inline(always)]
fn be16(d: &[u8], i: usize) -> Option<u16> {
    d.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

#[inline(always)]
fn mapped_v4(d: &[u8], i: usize) -> Option<[u8; 16]> {
    let b = d.get(i..i + 4)?;
    Some([
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, b[0], b[1], b[2], b[3],
    ])
}

#[inline(always)]
fn v6_addr(d: &[u8], i: usize) -> Option<[u8; 16]> {
    let b: &[u8; 16] = d.get(i..i + 16)?.try_into().ok()?;
    Some(*b)
}

/// Parse `data` of link type `linktype` into `out` (every field is overwritten).
///
/// Unknown link types give a row without L3 and no error.
#[inline(always)]
pub fn parse(linktype: u32, data: &[u8], out: &mut FlowFields) {
    *out = FlowFields::default();
    // The walk passes sub-slices down; the transport layer turns its payload's address
    // into an offset from here.
    let base = data.as_ptr() as usize;
    match linktype {
        linktype::ETHERNET => {
            let Some(et) = be16(data, ETH_TYPE_OFFSET) else {
                out.error = Some(StopReason::TruncatedLink);
                return;
            };
            ether(data, base, ETH_HEADER_LEN, et, out);
        }
        linktype::RAW | linktype::RAW_12 | linktype::RAW_14 => ip(data, base, out),
        linktype::LINUX_SLL => {
            let Some(et) = be16(data, SLL_PROTOCOL_OFFSET) else {
                out.error = Some(StopReason::TruncatedLink);
                return;
            };
            ether(data, base, SLL_HEADER_LEN, et, out);
        }
        linktype::LINUX_SLL2 => {
            let (Some(et), true) = (be16(data, 0), data.len() >= SLL2_HEADER_LEN) else {
                out.error = Some(StopReason::TruncatedLink);
                return;
            };
            ether(data, base, SLL2_HEADER_LEN, et, out);
        }
        linktype::NULL | linktype::LOOP => {
            let Some(b) = data.get(..NULL_HEADER_LEN) else {
                out.error = Some(StopReason::TruncatedLink);
                return;
            };
            let b = [b[0], b[1], b[2], b[3]];
            // NULL is in the writer's byte order: the family is a small number either way.
            let family = if linktype == linktype::LOOP {
                u32::from_be_bytes(b)
            } else {
                let le = u32::from_le_bytes(b);
                if le <= 0xFFFF {
                    le
                } else {
                    u32::from_be_bytes(b)
                }
            };
            // AF_INET is 2 everywhere; AF_INET6 is 10 (Linux), 24, 28 or 30 (BSDs, macOS).
            if matches!(family, 2 | 10 | 24 | 28 | 30) {
                ip(&data[NULL_HEADER_LEN..], base, out);
            }
        }
        _ => {}
    }
}

#[inline(always)]
fn ether(data: &[u8], base: usize, mut off: usize, mut et: u16, out: &mut FlowFields) {
    if data.len() < off {
        out.error = Some(StopReason::TruncatedLink);
        return;
    }
    let mut tags = 0;
    loop {
        match et {
            ETHERTYPE_IPV4 | ETHERTYPE_IPV6 => return ip(&data[off..], base, out),
            t if VLAN_TPIDS.contains(&t) => {
                if tags == MAX_VLAN_TAGS {
                    return;
                }
                let (Some(tci), Some(next)) = (be16(data, off), be16(data, off + 2)) else {
                    out.error = Some(StopReason::TruncatedVlan);
                    return;
                };
                if tags == 0 {
                    out.has_vlan = true;
                    out.vlan_id = tci & 0x0FFF;
                }
                tags += 1;
                et = next;
                off += VLAN_TAG_LEN;
            }
            _ => return,
        }
    }
}

#[inline(always)]
fn ip(s: &[u8], base: usize, out: &mut FlowFields) {
    match s.first().map(|b| b >> 4) {
        None => out.error = Some(StopReason::TruncatedIp),
        Some(4) => ipv4(s, base, out),
        Some(6) => ipv6(s, base, out),
        Some(_) => out.error = Some(StopReason::InvalidIpVersion),
    }
}

#[inline(always)]
fn ipv4(s: &[u8], base: usize, out: &mut FlowFields) {
    let hl = usize::from(s[0] & 0x0F) * 4;
    if hl < IPV4_MIN_HEADER_LEN {
        out.error = Some(StopReason::InvalidIpv4HeaderLength);
        return;
    }
    let (Some(total), Some(frag), Some(&proto), Some(src), Some(dst), true) = (
        be16(s, IPV4_TOTAL_LEN_OFFSET),
        be16(s, IPV4_FRAG_OFFSET),
        s.get(IPV4_PROTOCOL_OFFSET),
        mapped_v4(s, IPV4_SRC_OFFSET),
        mapped_v4(s, IPV4_DST_OFFSET),
        s.len() >= hl,
    ) else {
        out.error = Some(StopReason::TruncatedIp);
        return;
    };
    let total = usize::from(total);
    let payload = if total < hl || total > s.len() {
        &s[hl..]
    } else {
        &s[hl..total]
    };
    out.ip_version = 4;
    out.has_protocol = true;
    out.protocol = proto;
    out.src = src;
    out.dst = dst;
    let non_first = frag & IPV4_FRAG_OFFSET_MASK != 0;
    out.later_fragment = non_first;
    out.fragment = non_first || frag & IPV4_MORE_FRAGMENTS != 0;
    if non_first {
        return;
    }
    let mut payload = payload;
    if proto == ip_proto::AH {
        match auth(payload) {
            Ok((next, rest)) => {
                out.protocol = next;
                payload = rest;
            }
            Err(e) => {
                out.error = Some(e);
                return;
            }
        }
    }
    transport(payload, base, out);
}

/// Skip an AH header: (next header, bytes after it).
#[inline(always)]
fn auth(p: &[u8]) -> Result<(u8, &[u8]), StopReason> {
    if p.len() < AH_MIN_LEN {
        return Err(StopReason::TruncatedExtension);
    }
    if p[1] == 0 {
        return Err(StopReason::InvalidAuthHeader);
    }
    let len = (usize::from(p[1]) + 2) * 4;
    match p.get(len..) {
        Some(rest) => Ok((p[0], rest)),
        None => Err(StopReason::TruncatedExtension),
    }
}

/// Skip a generic extension header (0, 43, 60): (next header, bytes after it).
#[inline(always)]
fn raw_ext(p: &[u8]) -> Result<(u8, &[u8]), StopReason> {
    if p.len() < IPV6_EXT_MIN_LEN {
        return Err(StopReason::TruncatedExtension);
    }
    let len = (usize::from(p[1]) + 1) * 8;
    match p.get(len..) {
        Some(rest) => Ok((p[0], rest)),
        None => Err(StopReason::TruncatedExtension),
    }
}

/// Whether the options of a hop-by-hop or destination-options header `h` fit in it:
/// Pad1 is one byte, every other option is type, length and that many bytes.
#[inline(always)]
fn options_fit(h: &[u8]) -> bool {
    let mut at = 2;
    while at < h.len() {
        if h[at] == 0 {
            at += 1;
            continue;
        }
        match h.get(at + 1) {
            Some(&len) => at += 2 + usize::from(len),
            None => return false,
        }
    }
    at == h.len()
}

#[inline(always)]
fn ipv6(s: &[u8], base: usize, out: &mut FlowFields) {
    let (Some(plen), Some(&next), Some(src), Some(dst)) = (
        be16(s, IPV6_PAYLOAD_LEN_OFFSET),
        s.get(IPV6_NEXT_HEADER_OFFSET),
        v6_addr(s, IPV6_SRC_OFFSET),
        v6_addr(s, IPV6_DST_OFFSET),
    ) else {
        out.error = Some(StopReason::TruncatedIp);
        return;
    };
    let plen = usize::from(plen);
    let rest = &s[IPV6_HEADER_LEN..];
    let mut payload = if plen == 0 || rest.len() < plen {
        rest
    } else {
        &rest[..plen]
    };
    out.ip_version = 6;
    out.src = src;
    out.dst = dst;
    let mut next = next;
    let mut count = 0;
    while matches!(
        next,
        ip_proto::HOP_BY_HOP
            | ip_proto::ROUTING
            | ip_proto::DEST_OPTS
            | ip_proto::FRAGMENT
            | ip_proto::AH
    ) {
        if count == MAX_IPV6_EXT_HEADERS || (next == ip_proto::HOP_BY_HOP && count > 0) {
            return;
        }
        count += 1;
        let step = match next {
            ip_proto::FRAGMENT => match (payload.get(..IPV6_FRAG_HEADER_LEN), be16(payload, 2)) {
                (Some(h), Some(bits)) => {
                    out.fragment |= bits & (IPV6_FRAG_OFFSET_MASK | IPV6_MORE_FRAGMENTS) != 0;
                    if bits & IPV6_FRAG_OFFSET_MASK != 0 {
                        out.later_fragment = true;
                        out.has_protocol = true;
                        out.protocol = h[0];
                        return;
                    }
                    Ok((h[0], &payload[IPV6_FRAG_HEADER_LEN..]))
                }
                _ => Err(StopReason::TruncatedExtension),
            },
            ip_proto::AH => match auth(payload) {
                Err(StopReason::InvalidAuthHeader) => return,
                other => other,
            },
            ip_proto::ROUTING => raw_ext(payload),
            _ => match raw_ext(payload) {
                Ok((n, after)) => {
                    if !options_fit(&payload[..payload.len() - after.len()]) {
                        return;
                    }
                    Ok((n, after))
                }
                Err(e) => Err(e),
            },
        };
        match step {
            Ok((n, p)) => {
                next = n;
                payload = p;
            }
            Err(e) => {
                out.error = Some(e);
                return;
            }
        }
    }
    out.has_protocol = true;
    out.protocol = next;
    transport(payload, base, out);
}

/// Record where `payload` sits in the packet that starts at address `base`.
#[inline(always)]
fn set_payload(payload: &[u8], base: usize, out: &mut FlowFields) {
    out.payload_offset = (payload.as_ptr() as usize - base) as u32;
    out.payload_len = payload.len() as u32;
}

#[inline(always)]
fn transport(p: &[u8], base: usize, out: &mut FlowFields) {
    match out.protocol {
        ip_proto::UDP => match (be16(p, 0), be16(p, 2), p.len() >= UDP_HEADER_LEN) {
            (Some(sp), Some(dp), true) => {
                out.has_ports = true;
                out.src_port = sp;
                out.dst_port = dp;
                // The UDP length bounds the payload when it is plausible.
                let end = match be16(p, 4).map(usize::from) {
                    Some(l) if (UDP_HEADER_LEN..p.len()).contains(&l) => l,
                    _ => p.len(),
                };
                set_payload(&p[UDP_HEADER_LEN..end], base, out);
            }
            _ => out.error = Some(StopReason::TruncatedTransport),
        },
        ip_proto::TCP => {
            let (Some(sp), Some(dp), Some(&doff), Some(&flags)) = (
                be16(p, 0),
                be16(p, 2),
                p.get(TCP_DATA_OFFSET),
                p.get(TCP_FLAGS_OFFSET),
            ) else {
                out.error = Some(StopReason::TruncatedTransport);
                return;
            };
            let hl = usize::from(doff >> 4) * 4;
            if hl < TCP_MIN_HEADER_LEN {
                out.error = Some(StopReason::InvalidTcpHeader);
                return;
            }
            if p.len() < hl {
                out.error = Some(StopReason::TruncatedTransport);
                return;
            }
            out.has_ports = true;
            out.src_port = sp;
            out.dst_port = dp;
            out.has_tcp_flags = true;
            out.tcp_flags = flags;
            set_payload(&p[hl..], base, out);
        }
        ip_proto::ICMP | ip_proto::ICMPV6 if p.len() < ICMP_MIN_LEN => {
            out.error = Some(StopReason::TruncatedTransport);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
        let mut f = vec![
            0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25,
        ];
        f.extend_from_slice(&ethertype.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    fn ipv4_udp(frag: u16) -> Vec<u8> {
        let mut p = vec![0x45, 0, 0, 28, 0, 1];
        p.extend_from_slice(&frag.to_be_bytes());
        p.extend_from_slice(&[64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        p.extend_from_slice(&[0x2E, 0xE0, 0x14, 0xB4, 0, 8, 0, 0]);
        p
    }

    fn run(linktype: u32, data: &[u8]) -> FlowFields {
        let mut f = FlowFields::default();
        parse(linktype, data, &mut f);
        f
    }

    #[test]
    fn ethernet_ipv4_udp() {
        let f = run(linktype::ETHERNET, &eth(0x0800, &ipv4_udp(0)));
        assert_eq!((f.ip_version, f.protocol), (4, 17));
        assert_eq!(&f.src[10..], &[0xff, 0xff, 10, 0, 0, 1]);
        assert_eq!(&f.dst[12..], &[10, 0, 0, 2]);
        assert!(f.has_ports && !f.has_tcp_flags && !f.has_vlan && !f.fragment);
        assert_eq!((f.src_port, f.dst_port), (12000, 5300));
        assert_eq!(f.error, None);
    }

    #[test]
    fn qinq_reports_outer_vlan() {
        let mut inner = vec![0x00, 0x07, 0x08, 0x00];
        inner.extend_from_slice(&ipv4_udp(0));
        let mut outer = vec![0x00, 0x64, 0x81, 0x00];
        outer.extend_from_slice(&inner);
        let f = run(linktype::ETHERNET, &eth(0x88A8, &outer));
        assert!(f.has_vlan);
        assert_eq!(f.vlan_id, 100);
        assert!(f.has_ports);
    }

    #[test]
    fn fourth_vlan_tag_ends_without_l3() {
        let mut p = Vec::new();
        for _ in 0..3 {
            p.extend_from_slice(&[0x00, 0x05, 0x81, 0x00]);
        }
        p.extend_from_slice(&[0x00, 0x05, 0x08, 0x00]);
        p.extend_from_slice(&ipv4_udp(0));
        let f = run(linktype::ETHERNET, &eth(0x8100, &p));
        assert_eq!(f.ip_version, 0);
        assert_eq!(f.error, None);
    }

    #[test]
    fn fragments() {
        // First fragment (MF set, offset 0): ports kept.
        let f = run(linktype::RAW, &ipv4_udp(0x2000));
        assert!(f.fragment && f.has_ports);
        // Non-first fragment: no ports.
        let f = run(linktype::RAW, &ipv4_udp(0x0010));
        assert!(f.fragment && !f.has_ports);
        assert_eq!(f.protocol, 17);
    }

    #[test]
    fn arp_is_a_row_without_l3() {
        let f = run(linktype::ETHERNET, &eth(0x0806, &[0; 28]));
        assert_eq!(f.ip_version, 0);
        assert_eq!(f.error, None);
    }

    #[test]
    fn ipv6_extension_chain_and_esp() {
        let mut p = vec![0x60, 0, 0, 0, 0, 0, 0, 64];
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p.extend_from_slice(&[0; 11]);
        p.push(1);
        p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        p.extend_from_slice(&[0; 11]);
        p.push(2);
        // hop-by-hop -> routing -> fragment(offset 0, MF) -> dest opts -> TCP
        p.extend_from_slice(&[43, 0, 1, 4, 0, 0, 0, 0]);
        p.extend_from_slice(&[44, 0, 0, 0, 0, 0, 0, 0]);
        p.extend_from_slice(&[60, 0, 0, 1, 0, 0, 0, 9]);
        p.extend_from_slice(&[6, 0, 1, 4, 0, 0, 0, 0]);
        p.extend_from_slice(&[
            0, 80, 0x01, 0xBB, 0, 0, 0, 0, 0, 0, 0, 0, 0x50, 0x12, 0, 0, 0, 0, 0, 0,
        ]);
        let len = (p.len() - 40) as u16;
        p[4..6].copy_from_slice(&len.to_be_bytes());
        let f = run(linktype::RAW, &p);
        assert_eq!((f.ip_version, f.protocol), (6, 6));
        assert!(f.fragment && f.has_ports && f.has_tcp_flags);
        assert_eq!((f.src_port, f.dst_port, f.tcp_flags), (80, 443, 0x12));
        assert_eq!(f.src[15], 1);

        // Cut inside the destination options header: the protocol is unknown.
        let f = run(linktype::RAW, &p[..40 + 8 + 8 + 8 + 4]);
        assert_eq!((f.ip_version, f.has_protocol), (6, false));
        assert_eq!(f.error, Some(StopReason::TruncatedExtension));
        assert!(!f.has_ports);

        // ESP is terminal.
        let mut q = p[..40].to_vec();
        q[6] = 50;
        q.extend_from_slice(&[0; 16]);
        let f = run(linktype::RAW, &q);
        assert_eq!(f.protocol, 50);
        assert!(!f.has_ports);
    }

    #[test]
    fn other_link_types() {
        let ip = ipv4_udp(0);
        let mut sll = vec![0; 14];
        sll.extend_from_slice(&[0x08, 0x00]);
        sll.extend_from_slice(&ip);
        assert!(run(linktype::LINUX_SLL, &sll).has_ports);
        let mut sll2 = vec![0x08, 0x00];
        sll2.extend_from_slice(&[0; 18]);
        sll2.extend_from_slice(&ip);
        assert!(run(linktype::LINUX_SLL2, &sll2).has_ports);
        let mut null_le = vec![2, 0, 0, 0];
        null_le.extend_from_slice(&ip);
        assert!(run(linktype::NULL, &null_le).has_ports);
        let mut null_be = vec![0, 0, 0, 2];
        null_be.extend_from_slice(&ip);
        assert!(run(linktype::NULL, &null_be).has_ports);
        assert!(run(linktype::LOOP, &null_be).has_ports);
        assert_eq!(run(linktype::LOOP, &null_le).ip_version, 0);
        assert_eq!(
            run(linktype::LINUX_SLL, &sll[..10]).error,
            Some(StopReason::TruncatedLink)
        );
        assert_eq!(run(147, &ip).ip_version, 0);
    }

    #[test]
    fn every_prefix_is_safe_and_tcp_needs_whole_header() {
        let frame = eth(0x0800, &ipv4_udp(0));
        for n in 0..frame.len() {
            let f = run(linktype::ETHERNET, &frame[..n]);
            assert!(!f.has_ports || n >= 14 + 20 + 8);
        }
        let mut p = vec![
            0x45, 0, 0, 44, 0, 1, 0, 0, 64, 6, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        p.extend_from_slice(&[
            0, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0x60, 0x02, 0, 0, 0, 0, 0, 0,
        ]);
        let f = run(linktype::RAW, &p);
        assert_eq!(f.error, Some(StopReason::TruncatedTransport));
        assert!(!f.has_ports);
        p.extend_from_slice(&[2, 4, 5, 0xb4]);
        assert!(run(linktype::RAW, &p).has_ports);
    }
}
