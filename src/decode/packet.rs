//! The whole-frame decoder: link, VLAN, then L3, L4 and the application layer.

use etherparse::err;

use super::arp::{decode_arp, Arp};
use super::error::{DecodeError, Invalid, Layer};
use super::ipv4::{decode_ipv4, Ipv4};
use super::ipv6::{decode_ipv6, Ipv6, IPV6_HEADER_LEN};
use super::link::{decode_link, Link, LinkKind, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use super::transport::{PROTO_ICMP, PROTO_ICMPV6, PROTO_TCP, PROTO_UDP};

/// A decoded frame. Every layer that parsed is kept; `error` says where decoding stopped.
#[derive(Clone, Debug)]
pub struct Decoded<'a> {
    /// The link layer; `None` when the link type is unsupported or its header was cut.
    pub link: Option<Link<'a>>,
    /// The network layer; `None` only when `link` is `None` or stopped before L3.
    pub l3: Option<L3<'a>>,
    /// Where decoding stopped, if it stopped early.
    pub error: Option<DecodeError>,
}

/// The network layer, chosen by EtherType.
#[derive(Clone, Debug)]
pub enum L3<'a> {
    /// IPv4.
    Ipv4(Ipv4<'a>),
    /// IPv6.
    Ipv6(Ipv6<'a>),
    /// ARP; `None` when its body was cut (the error says so).
    Arp(Option<Arp<'a>>),
    /// Anything else, with the EtherType when the link gave one. Also used when an IP header
    /// was cut or invalid (the error says so).
    Unknown(Option<u16>),
}

/// The protocol of a flow key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowProto {
    /// 6.
    Tcp,
    /// 17.
    Udp,
    /// 1.
    Icmp,
    /// 58.
    Icmp6,
    /// Any other protocol number.
    Other(u8),
}

impl FlowProto {
    /// From an IP protocol number.
    pub fn from_number(p: u8) -> Self {
        match p {
            PROTO_TCP => FlowProto::Tcp,
            PROTO_UDP => FlowProto::Udp,
            PROTO_ICMP => FlowProto::Icmp,
            PROTO_ICMPV6 => FlowProto::Icmp6,
            n => FlowProto::Other(n),
        }
    }
    /// Whether the key carries ports.
    pub fn has_ports(self) -> bool {
        matches!(self, FlowProto::Tcp | FlowProto::Udp)
    }
}

/// The unidirectional flow key of reference §3.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowKey {
    /// Protocol.
    pub proto: FlowProto,
    /// Ports of TCP/UDP; `None` for fragments and cut headers.
    pub ports: Option<(u16, u16)>,
}

impl<'a> L3<'a> {
    /// The flow key: for IPv4 by the L4 protocol, for IPv6 by the final next header
    /// (`None` when that is unknown); `None` for ARP and unknown L3.
    pub fn flow_key(&self) -> Option<FlowKey> {
        let (proto, l4) = match self {
            L3::Ipv4(v4) => (v4.l4_proto, &v4.l4),
            L3::Ipv6(v6) => (v6.next_header?, &v6.l4),
            _ => return None,
        };
        Some(FlowKey {
            proto: FlowProto::from_number(proto),
            ports: l4.ports(),
        })
    }
}

pub(super) fn len_error(e: &err::LenError, layer: Layer, base: usize) -> DecodeError {
    DecodeError::truncated(layer, e.required_len, e.len, base + e.layer_start_offset)
}

/// Decode one frame of link type `linktype`. Never panics; bad bytes become `error`.
pub fn decode(linktype: u32, data: &[u8]) -> Decoded<'_> {
    let Some(kind) = LinkKind::from_linktype(linktype) else {
        return Decoded {
            link: None,
            l3: None,
            error: Some(DecodeError::unsupported_link_type(linktype)),
        };
    };
    let lr = decode_link(kind, data);
    let Some(link) = lr.link else {
        return Decoded {
            link: None,
            l3: None,
            error: lr.error,
        };
    };
    if lr.error.is_some() {
        return Decoded {
            link: Some(link),
            l3: Some(L3::Unknown(link.eth)),
            error: lr.error,
        };
    }
    let off = lr.l3_offset;
    let rest = &data[off..];
    let (l3, error) = match link.eth {
        // The version nibble picks the IP header, as etherparse's lax slicing does.
        Some(eth @ (ETHERTYPE_IPV4 | ETHERTYPE_IPV6)) => match rest.first().map(|b| b >> 4) {
            Some(4) => decode_ipv4(rest, off),
            Some(6) => decode_ipv6(rest, off),
            Some(v) => {
                let layer = if eth == ETHERTYPE_IPV4 {
                    Layer::Ipv4
                } else {
                    Layer::Ipv6
                };
                (
                    L3::Unknown(Some(eth)),
                    Some(DecodeError::invalid(layer, Invalid::IpVersion(v), off)),
                )
            }
            None => {
                let (layer, need) = if eth == ETHERTYPE_IPV4 {
                    (Layer::Ipv4, 20)
                } else {
                    (Layer::Ipv6, IPV6_HEADER_LEN)
                };
                (
                    L3::Unknown(Some(eth)),
                    Some(DecodeError::truncated(layer, need, 0, off)),
                )
            }
        },
        Some(ETHERTYPE_ARP) => match decode_arp(rest, off) {
            Ok(a) => (L3::Arp(Some(a)), None),
            Err(e) => (L3::Arp(None), Some(e)),
        },
        other => (L3::Unknown(other), None),
    };
    Decoded {
        link: Some(link),
        l3: Some(l3),
        error,
    }
}
