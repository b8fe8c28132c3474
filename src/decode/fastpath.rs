//! The flow fast path: a hand-written, bounds-checked parser for the numeric projection.
//!
//! [`parse`] reads only what a flow needs (IP version, protocol, addresses, ports, the
//! outermost VLAN id, TCP flags) and never allocates. Every read goes through `get` (the
//! common frame's through one `get` of a fixed-size array, read at constant offsets), so
//! no input, however malformed, can panic; a short or invalid header ends the walk and is
//! recorded in [`FlowFields::error`] as the decoder's own [`DecodeError`] (layer, bytes
//! needed, bytes present, offset), keeping the fields that parsed.
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
//!   captured bytes are used); a `total_length` from 1 to below the header is reported
//!   (`Invalid::Ipv4TotalLength`, the outermost problem) and the walk goes on (0 is
//!   presumed offloaded segmentation). Unless the packet is a non-first fragment, an AH
//!   header (51) is skipped and its next header becomes the protocol.
//! - IPv6: 40 bytes. Payload length 0 or beyond the capture means "to the end". Extension
//!   headers 0 (only first), 43, 60, 44 (fragment) and 51 (AH) are walked, at most
//!   [`MAX_IPV6_EXT_HEADERS`]; anything else (ESP 50 included) is the protocol. A non-first
//!   fragment ends the walk with the fragment header's next header as the protocol. The
//!   protocol is unknown (`has_protocol == false`) when an extension header is cut, a
//!   hop-by-hop header is not first, there are too many, an AH has length 0, or the
//!   options of a hop-by-hop or destination-options header overrun it.
//! - Ports: UDP needs 8 bytes (a length field below 8 is reported, `Invalid::UdpLength`,
//!   with the ports kept; 0 is allowed under an IPv6 payload length of 0); TCP needs its
//!   whole header (data offset >= 5). Non-first fragments (IPv4 offset != 0, IPv6 fragment offset != 0) have no ports; first
//!   fragments have them when the L4 header is present.
//!
//! Link types, EtherTypes, VLAN TPIDs, protocol numbers, limits and the header lengths the
//! decoder defines are the decoder's (the field offsets of the IP and transport headers,
//! which the decoder leaves to etherparse, are named here).
//!
//! `src/flow/agreement_tests.rs` checks both agreements (with the full decoder, errors
//! included, and with etherparse's `LaxSlicedPacket` where the decoder follows it) over a
//! corpus, every prefix of it, random bytes and mutated frames.

use crate::decode::error::{DecodeError, ErrorKind, Invalid, Layer};

/// Link types the fast path reads: the decoder's (the pcap LINKTYPE registry numbers).
pub mod linktype {
    pub use crate::decode::link::{
        LINKTYPE_ETHERNET as ETHERNET, LINKTYPE_IPV4 as IPV4, LINKTYPE_IPV6 as IPV6,
        LINKTYPE_LINUX_SLL as LINUX_SLL, LINKTYPE_LINUX_SLL2 as LINUX_SLL2, LINKTYPE_LOOP as LOOP,
        LINKTYPE_NULL as NULL, LINKTYPE_RAW as RAW, LINKTYPE_RAW_BSD as RAW_12,
        LINKTYPE_RAW_OPENBSD as RAW_14,
    };
}

/// The most IPv6 extension headers walked (the decoder's limit).
pub use crate::decode::ipv6_ext::MAX_EXT_HEADERS as MAX_IPV6_EXT_HEADERS;
/// The most VLAN tags skipped before giving up on L3 (the decoder's limit).
pub use crate::decode::link::MAX_VLAN_TAGS;

use crate::decode::icmp::ICMP_HEADER_LEN;
use crate::decode::ipv4::{IPV4_FLAGS_FRAG as IPV4_FRAG_OFFSET, IPV4_MF, IPV4_OFFSET_MASK};
use crate::decode::ipv6::IPV6_HEADER_LEN;
use crate::decode::link::{
    AF_INET, AF_INET6, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETH_HEADER_LEN, ETH_TYPE as ETH_TYPE_OFFSET,
    LOOPBACK_HEADER_LEN as NULL_HEADER_LEN, SLL2_HEADER_LEN, SLL_HEADER_LEN,
    SLL_PROTOCOL as SLL_PROTOCOL_OFFSET, VLAN_TAG_LEN, VLAN_TPIDS,
};

// Header lengths as the decoder's etherparse slicers define them. Field offsets are the
// fast path's own: for IP, TCP and UDP the decoder reads fields through etherparse.
const IPV4_MIN_HEADER_LEN: usize = etherparse::Ipv4Header::MIN_LEN;
const IPV4_TOTAL_LEN_OFFSET: usize = 2;
const IPV4_TTL_OFFSET: usize = 8;
const IPV4_PROTOCOL_OFFSET: usize = 9;
const IPV4_SRC_OFFSET: usize = 12;
const IPV4_DST_OFFSET: usize = 16;

const IPV6_PAYLOAD_LEN_OFFSET: usize = 4;
const IPV6_NEXT_HEADER_OFFSET: usize = 6;
const IPV6_HOP_LIMIT_OFFSET: usize = 7;
const IPV6_SRC_OFFSET: usize = 8;
const IPV6_DST_OFFSET: usize = 24;
const IPV6_EXT_MIN_LEN: usize = 8;
const IPV6_FRAG_HEADER_LEN: usize = etherparse::Ipv6FragmentHeader::LEN;
const IPV6_FRAG_OFFSET_MASK: u16 = 0xFFF8;
const IPV6_MORE_FRAGMENTS: u16 = 0x0001;
const AH_MIN_LEN: usize = 12;

const UDP_HEADER_LEN: usize = etherparse::UdpHeader::LEN;
const TCP_MIN_HEADER_LEN: usize = etherparse::TcpHeader::MIN_LEN;
const UDP_LENGTH_OFFSET: usize = 4;
const TCP_DATA_OFFSET: usize = 12;
const TCP_FLAGS_OFFSET: usize = 13;

/// IP protocol numbers the fast path looks at: the decoder's.
pub mod ip_proto {
    pub use crate::decode::ipv6_ext::{
        IPV6_AUTH as AH, IPV6_DEST_OPTIONS as DEST_OPTS, IPV6_ESP as ESP,
        IPV6_FRAGMENT as FRAGMENT, IPV6_HOP_BY_HOP as HOP_BY_HOP, IPV6_ROUTING as ROUTING,
    };
    pub use crate::decode::transport::{
        PROTO_ICMP as ICMP, PROTO_ICMPV6 as ICMPV6, PROTO_TCP as TCP, PROTO_UDP as UDP,
    };
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
    /// IPv4 TTL or IPv6 hop limit (0 without an IP layer).
    pub ttl: u8,
    /// Where the TCP or UDP header starts in the frame, and where the IP payload ends:
    /// `data[l4_start..l4_end]` is the segment or datagram (valid when `has_ports`).
    pub l4_start: u32,
    /// See `l4_start`.
    pub l4_end: u32,
    /// Offset in the packet of the TCP or UDP payload (after the transport header);
    /// meaningful when `has_ports`.
    pub payload_offset: u32,
    /// Length of that payload, limited by the IP and UDP lengths (link-layer padding is
    /// not payload).
    pub payload_len: u32,
    /// Why the walk stopped early, if it did: the layer that was cut or invalid, where.
    pub error: Option<DecodeError>,
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

    /// Record the payload: `len` bytes at offset `at` of the packet.
    #[inline(always)]
    fn set_payload(&mut self, at: usize, len: usize) {
        self.payload_offset = at as u32;
        self.payload_len = len as u32;
    }
}

#[inline(always)]
fn be16(d: &[u8], i: usize) -> Option<u16> {
    d.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

/// The IPv4 address at `i` as an IPv4-mapped IPv6 address. Built as one 128-bit number
/// (not byte by byte), so the address stays a value in registers.
#[inline(always)]
fn mapped_v4(d: &[u8], i: usize) -> Option<[u8; 16]> {
    let b: [u8; 4] = d.get(i..i + 4)?.try_into().ok()?;
    Some((0xFFFF_u128 << 32 | u128::from(u32::from_be_bytes(b))).to_be_bytes())
}

#[inline(always)]
fn v6_addr(d: &[u8], i: usize) -> Option<[u8; 16]> {
    let b: [u8; 16] = d.get(i..i + 16)?.try_into().ok()?;
    Some(u128::from_ne_bytes(b).to_ne_bytes())
}

/// Parse `data` of link type `linktype` into `out` (every field is overwritten).
///
/// Unknown link types give a row without L3 and no error.
#[inline(always)]
pub fn parse(linktype: u32, data: &[u8], out: &mut FlowFields) {
    if linktype == linktype::ETHERNET {
        if let Some(common) = ethernet_ipv4_common(data) {
            *out = common;
            return;
        }
    }
    walk(linktype, data, out);
}

/// [`parse`] by the general walk, for every frame.
#[inline(always)]
fn walk(linktype: u32, data: &[u8], out: &mut FlowFields) {
    *out = FlowFields::default();
    let cut = |layer, need| DecodeError::truncated(layer, need, data.len(), 0);
    match linktype {
        linktype::ETHERNET => {
            let Some(et) = be16(data, ETH_TYPE_OFFSET) else {
                out.error = Some(cut(Layer::Ethernet, ETH_HEADER_LEN));
                return;
            };
            ether(data, Layer::Ethernet, ETH_HEADER_LEN, et, out);
        }
        linktype::RAW | linktype::RAW_12 | linktype::RAW_14 => ip(data, 0, Layer::Ip, out),
        // DLT_IPV4 and DLT_IPV6 name the version, but the header's nibble decides.
        linktype::IPV4 => ip(data, 0, Layer::Ipv4, out),
        linktype::IPV6 => ip(data, 0, Layer::Ipv6, out),
        linktype::LINUX_SLL => {
            let Some(et) = be16(data, SLL_PROTOCOL_OFFSET) else {
                out.error = Some(cut(Layer::LinuxSll, SLL_HEADER_LEN));
                return;
            };
            ether(data, Layer::LinuxSll, SLL_HEADER_LEN, et, out);
        }
        linktype::LINUX_SLL2 => {
            let (Some(et), true) = (be16(data, 0), data.len() >= SLL2_HEADER_LEN) else {
                out.error = Some(cut(Layer::LinuxSll2, SLL2_HEADER_LEN));
                return;
            };
            ether(data, Layer::LinuxSll2, SLL2_HEADER_LEN, et, out);
        }
        linktype::NULL | linktype::LOOP => {
            let Some(b) = data.get(..NULL_HEADER_LEN) else {
                out.error = Some(cut(Layer::Loopback, NULL_HEADER_LEN));
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
            let rest = &data[NULL_HEADER_LEN..];
            if family == AF_INET {
                ip(rest, NULL_HEADER_LEN, Layer::Ipv4, out);
            } else if AF_INET6.contains(&family) {
                ip(rest, NULL_HEADER_LEN, Layer::Ipv6, out);
            }
        }
        _ => {}
    }
}

/// Bytes [`ethernet_ipv4_common`] reads at once: Ethernet II, a 20-byte IPv4 header and
/// the first 20 bytes of the transport header.
const COMMON_LEN: usize = ETH_HEADER_LEN + IPV4_MIN_HEADER_LEN + TCP_MIN_HEADER_LEN;

/// The most common frame, read with one bounds check: Ethernet II without VLAN tags, IPv4
/// with a 20-byte header, a total length within the header and the capture, not a
/// fragment, and UDP with a length of at least 8 or TCP with its whole header, in at
/// least [`COMMON_LEN`] captured bytes. Its fields are exactly those of the general walk
/// below (no error is possible there); `None` for every other frame, which that walk reads.
#[inline(always)]
fn ethernet_ipv4_common(data: &[u8]) -> Option<FlowFields> {
    const IP: usize = ETH_HEADER_LEN;
    const L4: usize = IP + IPV4_MIN_HEADER_LEN;
    let h: &[u8; COMMON_LEN] = data.get(..COMMON_LEN)?.try_into().ok()?;
    let at = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
    let total = usize::from(at(IP + IPV4_TOTAL_LEN_OFFSET));
    let ip_len = data.len() - IP;
    if at(ETH_TYPE_OFFSET) != ETHERTYPE_IPV4
        || h[IP] != 0x45
        || at(IP + IPV4_FRAG_OFFSET) & (IPV4_MF | IPV4_OFFSET_MASK) != 0
        || !(IPV4_MIN_HEADER_LEN..=ip_len).contains(&total)
    {
        return None;
    }
    // The IP payload: the transport header and its data, up to the total length.
    let seg = total - IPV4_MIN_HEADER_LEN;
    let addr = |i: usize| {
        let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
        (0xFFFF_u128 << 32 | u128::from(u32::from_be_bytes(b))).to_be_bytes()
    };
    let mut f = FlowFields {
        ip_version: 4,
        has_protocol: true,
        protocol: h[IP + IPV4_PROTOCOL_OFFSET],
        src: addr(IP + IPV4_SRC_OFFSET),
        dst: addr(IP + IPV4_DST_OFFSET),
        has_ports: true,
        src_port: at(L4),
        dst_port: at(L4 + 2),
        ttl: h[IP + IPV4_TTL_OFFSET],
        l4_start: L4 as u32,
        l4_end: (L4 + seg) as u32,
        ..FlowFields::default()
    };
    match f.protocol {
        ip_proto::UDP => {
            let len = usize::from(at(L4 + UDP_LENGTH_OFFSET));
            if seg < UDP_HEADER_LEN || len < UDP_HEADER_LEN {
                return None;
            }
            f.set_payload(L4 + UDP_HEADER_LEN, len.min(seg) - UDP_HEADER_LEN);
        }
        ip_proto::TCP => {
            let hl = usize::from(h[L4 + TCP_DATA_OFFSET] >> 4) * 4;
            if hl < TCP_MIN_HEADER_LEN || seg < hl {
                return None;
            }
            f.has_tcp_flags = true;
            f.tcp_flags = h[L4 + TCP_FLAGS_OFFSET];
            f.set_payload(L4 + hl, seg - hl);
        }
        _ => return None,
    }
    Some(f)
}

/// The link header `link` of `off` bytes, then its EtherType `et` (and VLAN tags).
#[inline(always)]
fn ether(data: &[u8], link: Layer, mut off: usize, mut et: u16, out: &mut FlowFields) {
    if data.len() < off {
        out.error = Some(DecodeError::truncated(link, off, data.len(), 0));
        return;
    }
    let mut tags = 0;
    loop {
        match et {
            ETHERTYPE_IPV4 => return ip(&data[off..], off, Layer::Ipv4, out),
            ETHERTYPE_IPV6 => return ip(&data[off..], off, Layer::Ipv6, out),
            t if VLAN_TPIDS.contains(&t) => {
                if tags == MAX_VLAN_TAGS {
                    return;
                }
                let (Some(tci), Some(next)) = (be16(data, off), be16(data, off + 2)) else {
                    let have = data.len() - off;
                    out.error = Some(DecodeError::truncated(Layer::Vlan, VLAN_TAG_LEN, have, off));
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

/// An IP header at offset `base` of the frame. `layer` is what the link layer announced
/// (`Ip` when it names no version): the layer a cut or invalid header is reported on.
#[inline(always)]
fn ip(s: &[u8], base: usize, layer: Layer, out: &mut FlowFields) {
    match s.first().map(|b| b >> 4) {
        None => {
            let need = match layer {
                Layer::Ipv4 => IPV4_MIN_HEADER_LEN,
                Layer::Ipv6 => IPV6_HEADER_LEN,
                _ => 1,
            };
            out.error = Some(DecodeError::truncated(layer, need, 0, base));
        }
        Some(4) => ipv4(s, base, out),
        Some(6) => ipv6(s, base, out),
        Some(v) => out.error = Some(DecodeError::invalid(layer, Invalid::IpVersion(v), base)),
    }
}

#[inline(always)]
fn ipv4(s: &[u8], base: usize, out: &mut FlowFields) {
    // The order of etherparse's checks (the decoder's): the minimum length, the IHL, the
    // header length.
    if s.len() < IPV4_MIN_HEADER_LEN {
        let have = s.len();
        out.error = Some(DecodeError::truncated(
            Layer::Ipv4,
            IPV4_MIN_HEADER_LEN,
            have,
            base,
        ));
        return;
    }
    let ihl = s[0] & 0x0F;
    let hl = usize::from(ihl) * 4;
    if hl < IPV4_MIN_HEADER_LEN {
        let why = Invalid::Ipv4HeaderLength(ihl);
        out.error = Some(DecodeError::invalid(Layer::Ipv4, why, base));
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
        out.error = Some(DecodeError::truncated(Layer::Ipv4, hl, s.len(), base));
        return;
    };
    let total_field = total;
    let total = usize::from(total);
    let payload = if total < hl || total > s.len() {
        &s[hl..]
    } else {
        &s[hl..total]
    };
    out.ip_version = 4;
    out.ttl = s[IPV4_TTL_OFFSET];
    out.has_protocol = true;
    out.protocol = proto;
    out.src = src;
    out.dst = dst;
    ipv4_payload(payload, frag, base + hl, out);
    // 0 is presumed offloaded segmentation; a length below the header is reported, as the
    // outermost problem, once the walk has gone on.
    if total != 0 && total < hl {
        let why = Invalid::Ipv4TotalLength {
            total: total_field,
            header: ihl * 4,
        };
        out.error = Some(DecodeError::invalid(Layer::Ipv4, why, base));
    }
}

/// The IPv4 payload at offset `at` of the frame (`frag`: the flags and fragment offset).
#[inline(always)]
fn ipv4_payload(payload: &[u8], frag: u16, at: usize, out: &mut FlowFields) {
    let proto = out.protocol;
    let non_first = frag & IPV4_OFFSET_MASK != 0;
    out.later_fragment = non_first;
    out.fragment = non_first || frag & IPV4_MF != 0;
    if non_first {
        return;
    }
    let mut payload = payload;
    let mut at = at;
    if proto == ip_proto::AH {
        match auth(payload, at) {
            Ok((next, rest)) => {
                out.protocol = next;
                at += payload.len() - rest.len();
                payload = rest;
            }
            Err(e) => {
                out.error = Some(e);
                return;
            }
        }
    }
    transport(payload, at, false, out);
}

/// Skip an AH header at offset `at`: (next header, bytes after it).
#[inline(always)]
fn auth(p: &[u8], at: usize) -> Result<(u8, &[u8]), DecodeError> {
    if p.len() < AH_MIN_LEN {
        return Err(DecodeError::truncated(
            Layer::IpAuth,
            AH_MIN_LEN,
            p.len(),
            at,
        ));
    }
    if p[1] == 0 {
        return Err(DecodeError::invalid(
            Layer::IpAuth,
            Invalid::AuthLengthZero,
            at,
        ));
    }
    let len = (usize::from(p[1]) + 2) * 4;
    match p.get(len..) {
        Some(rest) => Ok((p[0], rest)),
        None => Err(DecodeError::truncated(Layer::IpAuth, len, p.len(), at)),
    }
}

/// Skip a generic extension header (0, 43, 60) at offset `at`, reported as `layer`:
/// (next header, bytes after it).
#[inline(always)]
fn raw_ext(p: &[u8], layer: Layer, at: usize) -> Result<(u8, &[u8]), DecodeError> {
    if p.len() < IPV6_EXT_MIN_LEN {
        return Err(DecodeError::truncated(layer, IPV6_EXT_MIN_LEN, p.len(), at));
    }
    let len = (usize::from(p[1]) + 1) * 8;
    match p.get(len..) {
        Some(rest) => Ok((p[0], rest)),
        None => Err(DecodeError::truncated(layer, len, p.len(), at)),
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
        out.error = Some(DecodeError::truncated(
            Layer::Ipv6,
            IPV6_HEADER_LEN,
            s.len(),
            base,
        ));
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
    out.ttl = s[IPV6_HOP_LIMIT_OFFSET];
    out.src = src;
    out.dst = dst;
    let mut next = next;
    let mut at = base + IPV6_HEADER_LEN;
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
                _ => Err(DecodeError::truncated(
                    Layer::Ipv6Fragment,
                    IPV6_FRAG_HEADER_LEN,
                    payload.len(),
                    at,
                )),
            },
            ip_proto::AH => match auth(payload, at) {
                Err(DecodeError {
                    kind: ErrorKind::Invalid(Invalid::AuthLengthZero),
                    ..
                }) => return,
                other => other,
            },
            ip_proto::ROUTING => raw_ext(payload, Layer::Ipv6Routing, at),
            n => {
                let layer = if n == ip_proto::HOP_BY_HOP {
                    Layer::Ipv6HopByHop
                } else {
                    Layer::Ipv6DestOptions
                };
                match raw_ext(payload, layer, at) {
                    Ok((n, after)) => {
                        if !options_fit(&payload[..payload.len() - after.len()]) {
                            return;
                        }
                        Ok((n, after))
                    }
                    Err(e) => Err(e),
                }
            }
        };
        match step {
            Ok((n, p)) => {
                next = n;
                at += payload.len() - p.len();
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
    transport(payload, at, plen == 0, out);
}

/// The UDP datagram (header and payload) of the segment `seg` a UDP packet's
/// `l4_start..l4_end` names: the UDP length bounds it unless that is below the header or
/// beyond the bytes (the decoder's lax reading).
#[inline(always)]
pub fn udp_datagram(seg: &[u8]) -> &[u8] {
    match be16(seg, 4).map(usize::from) {
        Some(len) if (UDP_HEADER_LEN..=seg.len()).contains(&len) => &seg[..len],
        _ => seg,
    }
}

/// Record where the transport segment lies in the frame (frames are far below 4 GiB).
#[inline(always)]
fn segment(at: usize, len: usize, out: &mut FlowFields) {
    out.l4_start = at as u32;
    out.l4_end = (at + len) as u32;
}

/// The transport header at offset `at` of the frame; `jumbo`: the IP layer is an IPv6
/// packet whose payload length is 0, where a UDP length of 0 is allowed.
#[inline(always)]
fn transport(p: &[u8], at: usize, jumbo: bool, out: &mut FlowFields) {
    let cut = |layer, need| Some(DecodeError::truncated(layer, need, p.len(), at));
    match out.protocol {
        ip_proto::UDP => match (be16(p, 0), be16(p, 2), be16(p, UDP_LENGTH_OFFSET)) {
            (Some(sp), Some(dp), Some(len)) if p.len() >= UDP_HEADER_LEN => {
                out.has_ports = true;
                out.src_port = sp;
                out.dst_port = dp;
                segment(at, p.len(), out);
                if usize::from(len) < UDP_HEADER_LEN && !(len == 0 && jumbo) {
                    let why = Invalid::UdpLength(len);
                    out.error = Some(DecodeError::invalid(Layer::Udp, why, at));
                }
                // The UDP length bounds the payload when it is plausible.
                let end = match usize::from(len) {
                    l if (UDP_HEADER_LEN..p.len()).contains(&l) => l,
                    _ => p.len(),
                };
                out.set_payload(at + UDP_HEADER_LEN, end - UDP_HEADER_LEN);
            }
            _ => out.error = cut(Layer::Udp, UDP_HEADER_LEN),
        },
        ip_proto::TCP => {
            let (Some(sp), Some(dp), Some(&doff), Some(&flags), true) = (
                be16(p, 0),
                be16(p, 2),
                p.get(TCP_DATA_OFFSET),
                p.get(TCP_FLAGS_OFFSET),
                p.len() >= TCP_MIN_HEADER_LEN,
            ) else {
                out.error = cut(Layer::Tcp, TCP_MIN_HEADER_LEN);
                return;
            };
            let hl = usize::from(doff >> 4) * 4;
            if hl < TCP_MIN_HEADER_LEN {
                let why = Invalid::TcpDataOffset(doff >> 4);
                out.error = Some(DecodeError::invalid(Layer::Tcp, why, at));
                return;
            }
            if p.len() < hl {
                out.error = cut(Layer::Tcp, hl);
                return;
            }
            out.has_ports = true;
            out.src_port = sp;
            out.dst_port = dp;
            out.has_tcp_flags = true;
            out.tcp_flags = flags;
            segment(at, p.len(), out);
            out.set_payload(at + hl, p.len() - hl);
        }
        ip_proto::ICMP if p.len() < ICMP_HEADER_LEN => {
            out.error = cut(Layer::Icmpv4, ICMP_HEADER_LEN)
        }
        ip_proto::ICMPV6 if p.len() < ICMP_HEADER_LEN => {
            out.error = cut(Layer::Icmpv6, ICMP_HEADER_LEN)
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

    fn walked(data: &[u8]) -> FlowFields {
        let mut f = FlowFields::default();
        walk(linktype::ETHERNET, data, &mut f);
        f
    }

    /// The common frame's reading gives the general walk's fields, and leaves every other
    /// frame to it: UDP and TCP frames with every byte of their headers changed in turn
    /// (lengths, flags, version, protocol, offsets), cut at every length.
    #[test]
    fn the_common_frame_reads_as_the_general_walk() {
        let mut tcp = vec![
            0x45, 0, 0, 60, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
        ];
        tcp.extend_from_slice(&[
            0x2E, 0xE0, 0x01, 0xBB, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x12, 0, 0, 0, 0, 0, 0,
        ]);
        tcp.extend_from_slice(&[0xAB; 20]);
        let mut udp = ipv4_udp(0);
        udp[3] = 48;
        udp[25] = 28;
        udp.extend_from_slice(&[0xCD; 20]);
        let (mut common, mut other) = (0, 0);
        for base in [eth(0x0800, &tcp), eth(0x0800, &udp)] {
            let mut frames = vec![base.clone()];
            for at in 12..base.len().min(60) {
                for v in [
                    0u8, 1, 2, 4, 5, 6, 7, 8, 0x10, 0x11, 0x1F, 0x20, 0x33, 0x3F, 0x40, 0x45, 0x46,
                    0x50, 0x60, 0x86, 0xF0, 0xFF,
                ] {
                    let mut f = base.clone();
                    f[at] = v;
                    frames.push(f);
                }
            }
            for f in &frames {
                for n in 0..=f.len() {
                    let d = &f[..n];
                    match ethernet_ipv4_common(d) {
                        Some(c) => {
                            assert_eq!(c, walked(d), "{d:02x?}");
                            common += 1;
                        }
                        None => other += 1,
                    }
                    assert_eq!(run(linktype::ETHERNET, d), walked(d), "{d:02x?}");
                }
            }
        }
        assert!(
            common > 1000 && other > 1000,
            "{common} common, {other} other"
        );
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
        let e = DecodeError::truncated(Layer::Ipv6DestOptions, 8, 4, 64);
        assert_eq!(f.error, Some(e));
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
            Some(DecodeError::truncated(Layer::LinuxSll, 16, 10, 0))
        );
        assert_eq!(run(147, &ip).ip_version, 0);
        assert!(run(linktype::IPV4, &ip).has_ports);
        assert_eq!(run(linktype::IPV6, &ip).ip_version, 4);
        assert_eq!(
            run(linktype::IPV6, &[]).error,
            Some(DecodeError::truncated(Layer::Ipv6, 40, 0, 0))
        );
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
        assert_eq!(
            f.error,
            Some(DecodeError::truncated(Layer::Tcp, 24, 20, 20))
        );
        assert!(!f.has_ports);
        p.extend_from_slice(&[2, 4, 5, 0xb4]);
        assert!(run(linktype::RAW, &p).has_ports);
    }

    /// Truncation and invalid headers are reported in the decoder's vocabulary: the layer,
    /// the bytes it needs, the bytes present, the offset in the frame.
    #[test]
    fn errors_name_the_layer_need_have_and_offset() {
        let frame = eth(0x0800, &ipv4_udp(0));
        let at = |n: usize| run(linktype::ETHERNET, &frame[..n]).error;
        assert_eq!(
            at(10),
            Some(DecodeError::truncated(Layer::Ethernet, 14, 10, 0))
        );
        assert_eq!(at(14), Some(DecodeError::truncated(Layer::Ipv4, 20, 0, 14)));
        assert_eq!(
            at(26),
            Some(DecodeError::truncated(Layer::Ipv4, 20, 12, 14))
        );
        assert_eq!(at(40), Some(DecodeError::truncated(Layer::Udp, 8, 6, 34)));
        assert_eq!(at(42), None);
        assert_eq!(
            at(40).unwrap().to_string(),
            "truncated UDP header: need 8 bytes, have 6 at offset 34"
        );
        let mut bad = frame.clone();
        bad[14] = 0x43;
        let e = run(linktype::ETHERNET, &bad).error;
        assert_eq!(
            e,
            Some(DecodeError::invalid(
                Layer::Ipv4,
                Invalid::Ipv4HeaderLength(3),
                14
            ))
        );
        bad[14] = 0x75;
        let e = run(linktype::ETHERNET, &bad).error;
        assert_eq!(
            e,
            Some(DecodeError::invalid(Layer::Ipv4, Invalid::IpVersion(7), 14))
        );
        assert_eq!(
            run(linktype::RAW, &[]).error,
            Some(DecodeError::truncated(Layer::Ip, 1, 0, 0))
        );
        let mut vlan = vec![0x00, 0x05];
        vlan.truncate(1);
        assert_eq!(
            run(linktype::ETHERNET, &eth(0x8100, &vlan)).error,
            Some(DecodeError::truncated(Layer::Vlan, 4, 1, 14))
        );
    }
}
