//! The whole-frame decoder: link, VLAN, L3, L4 and the application layer.

use etherparse::{
    err, IpAuthHeaderSlice, Ipv4HeaderSlice, Ipv6FragmentHeaderSlice, Ipv6HeaderSlice,
    Ipv6RawExtHeaderSlice, TcpSlice, UdpSlice,
};

use super::arp::{decode_arp, Arp};
use super::dns::{Dns, DNS_PORT};
use super::error::{DecodeError, Invalid, Layer};
use super::icmp::{decode_icmp, Icmp};
use super::ipv6_ext::{
    options_valid, IPV6_AUTH, IPV6_DEST_OPTIONS, IPV6_FRAGMENT, IPV6_HOP_BY_HOP, IPV6_ROUTING,
    MAX_EXT_HEADERS,
};
use super::link::{decode_link, Link, LinkKind, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use super::tls::ClientHello;

/// IP protocol number of ICMPv4.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;

/// IPv6 fixed header length.
pub const IPV6_HEADER_LEN: usize = 40;
const IPV4_TOS: usize = 1;
const IPV4_FLAGS_FRAG: usize = 6;
const IPV4_MF: u16 = 0x2000;
const IPV4_OFFSET_MASK: u16 = 0x1FFF;

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

/// An IPv4 packet.
#[derive(Clone, Debug)]
pub struct Ipv4<'a> {
    /// The header, options included (validated: version 4, IHL >= 5, all bytes present).
    pub header: Ipv4HeaderSlice<'a>,
    /// The protocol of `l4`: the protocol field, or the next header of an authentication
    /// header that follows the IPv4 header.
    pub l4_proto: u8,
    /// The transport layer.
    pub l4: L4<'a>,
}

impl Ipv4<'_> {
    /// Type of service byte.
    pub fn tos(&self) -> u8 {
        self.header.slice()[IPV4_TOS]
    }
    /// The raw flags + fragment offset field.
    pub fn flags_frag(&self) -> u16 {
        let s = self.header.slice();
        u16::from_be_bytes([s[IPV4_FLAGS_FRAG], s[IPV4_FLAGS_FRAG + 1]])
    }
    /// Fragment offset in 8-byte units.
    pub fn frag_offset_raw(&self) -> u16 {
        self.flags_frag() & IPV4_OFFSET_MASK
    }
    /// Whether this is a fragment (MF set or offset > 0).
    pub fn frag(&self) -> bool {
        self.flags_frag() & (IPV4_MF | IPV4_OFFSET_MASK) != 0
    }
}

/// An IPv6 packet.
#[derive(Clone, Debug)]
pub struct Ipv6<'a> {
    /// The 40-byte fixed header.
    pub header: Ipv6HeaderSlice<'a>,
    /// The protocol after the extension chain; `None` when the chain is invalid or cut.
    pub next_header: Option<u8>,
    /// Whether a Fragment header was seen.
    pub frag: bool,
    /// The offset of that Fragment header (8-byte units).
    pub frag_offset: Option<u16>,
    /// Extension headers walked.
    pub ext_count: u8,
    /// The transport layer.
    pub l4: L4<'a>,
}

/// The transport layer.
#[derive(Clone, Debug)]
pub enum L4<'a> {
    /// TCP (header validated; `app` is a TLS ClientHello when one was found).
    Tcp(TcpSlice<'a>, Option<App<'a>>),
    /// UDP (payload limited to the UDP length when it is plausible).
    Udp(UdpSlice<'a>, Option<App<'a>>),
    /// ICMPv4 or ICMPv6.
    Icmp(Icmp<'a>),
    /// A non-first fragment: its payload is not a transport header.
    Fragment {
        /// IPv6 when true.
        v6: bool,
        /// The protocol the fragment belongs to.
        proto: u8,
        /// Fragment offset in 8-byte units.
        offset: u16,
        /// The fragment's bytes.
        payload: &'a [u8],
    },
    /// Any other protocol, an invalid IPv6 chain (`proto` `None`), or a cut transport
    /// header (`truncated`, the error says so).
    Unknown {
        /// The protocol number, when known.
        proto: Option<u8>,
        /// The transport header was cut or invalid.
        truncated: bool,
        /// The bytes after the network layer.
        payload: &'a [u8],
    },
}

/// The application layer.
#[derive(Clone, Copy, Debug)]
pub enum App<'a> {
    /// UDP port 53 with a payload; `None` when it is shorter than the DNS header.
    Dns(Option<Dns<'a>>),
    /// A TLS ClientHello with SNI or ALPN.
    Tls(ClientHello<'a>),
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

impl<'a> L4<'a> {
    /// Source and destination ports of TCP/UDP.
    pub fn ports(&self) -> Option<(u16, u16)> {
        match self {
            L4::Tcp(t, _) => Some((t.source_port(), t.destination_port())),
            L4::Udp(u, _) => Some((u.source_port(), u.destination_port())),
            _ => None,
        }
    }
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

fn len_error(e: &err::LenError, layer: Layer, base: usize) -> DecodeError {
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
                let layer = if eth == ETHERTYPE_IPV4 { Layer::Ipv4 } else { Layer::Ipv6 };
                (L3::Unknown(Some(eth)), Some(DecodeError::invalid(layer, Invalid::IpVersion(v), off)))
            }
            None => {
                let (layer, need) = if eth == ETHERTYPE_IPV4 { (Layer::Ipv4, 20) } else { (Layer::Ipv6, IPV6_HEADER_LEN) };
                (L3::Unknown(Some(eth)), Some(DecodeError::truncated(layer, need, 0, off)))
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

fn decode_ipv4(b: &[u8], off: usize) -> (L3<'_>, Option<DecodeError>) {
    use err::ipv4::{HeaderError as H, HeaderSliceError as E};
    let header = match Ipv4HeaderSlice::from_slice(b) {
        Ok(h) => h,
        Err(E::Len(e)) => {
            return (
                L3::Unknown(Some(ETHERTYPE_IPV4)),
                Some(len_error(&e, Layer::Ipv4, off)),
            )
        }
        Err(E::Content(H::UnexpectedVersion { version_number })) => {
            return (
                L3::Unknown(Some(ETHERTYPE_IPV4)),
                Some(DecodeError::invalid(
                    Layer::Ipv4,
                    Invalid::IpVersion(version_number),
                    off,
                )),
            )
        }
        Err(E::Content(H::HeaderLengthSmallerThanHeader { ihl })) => {
            return (
                L3::Unknown(Some(ETHERTYPE_IPV4)),
                Some(DecodeError::invalid(
                    Layer::Ipv4,
                    Invalid::Ipv4HeaderLength(ihl),
                    off,
                )),
            )
        }
    };
    // The payload ends at total length unless that is below the header length or beyond
    // the capture (etherparse's lax rule); then the rest of the capture is used.
    let hlen = header.slice().len();
    let total = usize::from(header.total_len());
    let end = if total < hlen || total > b.len() {
        b.len()
    } else {
        total
    };
    let payload = &b[hlen..end];
    let proto = header.protocol().0;
    let mut v4 = Ipv4 {
        header,
        l4_proto: proto,
        l4: L4::Unknown {
            proto: Some(proto),
            truncated: false,
            payload,
        },
    };
    if v4.frag_offset_raw() > 0 {
        v4.l4 = L4::Fragment {
            v6: false,
            proto,
            offset: v4.frag_offset_raw(),
            payload,
        };
        return (L3::Ipv4(v4), None);
    }
    let (mut l4_payload, mut l4_off) = (payload, off + hlen);
    if proto == IPV6_AUTH {
        // An authentication header is skipped; its next header is the transport (etherparse's rule).
        match IpAuthHeaderSlice::from_slice(payload) {
            Ok(a) => {
                v4.l4_proto = a.next_header().0;
                l4_payload = &payload[a.slice().len()..];
                l4_off += a.slice().len();
            }
            Err(err::ip_auth::HeaderSliceError::Len(e)) => {
                v4.l4 = L4::Unknown { proto: Some(proto), truncated: true, payload };
                return (L3::Ipv4(v4), Some(len_error(&e, Layer::IpAuth, l4_off)));
            }
            Err(err::ip_auth::HeaderSliceError::Content(_)) => {
                v4.l4 = L4::Unknown { proto: Some(proto), truncated: true, payload };
                return (L3::Ipv4(v4), Some(DecodeError::invalid(Layer::IpAuth, Invalid::AuthLengthZero, l4_off)));
            }
        }
    }
    let (l4, e) = decode_l4(v4.l4_proto, l4_payload, l4_off);
    v4.l4 = l4;
    (L3::Ipv4(v4), e)
}

fn decode_ipv6(b: &[u8], off: usize) -> (L3<'_>, Option<DecodeError>) {
    use err::ipv6::{HeaderError as H, HeaderSliceError as E};
    let header = match Ipv6HeaderSlice::from_slice(b) {
        Ok(h) => h,
        Err(E::Len(e)) => {
            return (
                L3::Unknown(Some(ETHERTYPE_IPV6)),
                Some(len_error(&e, Layer::Ipv6, off)),
            )
        }
        Err(E::Content(H::UnexpectedVersion { version_number })) => {
            return (
                L3::Unknown(Some(ETHERTYPE_IPV6)),
                Some(DecodeError::invalid(
                    Layer::Ipv6,
                    Invalid::IpVersion(version_number),
                    off,
                )),
            )
        }
    };
    // The payload region: by payload length unless it is 0 (jumbogram) or beyond the capture.
    let avail = b.len() - IPV6_HEADER_LEN;
    let plen = usize::from(header.payload_length());
    let region_len = if plen == 0 || plen > avail {
        avail
    } else {
        plen
    };
    let region = &b[IPV6_HEADER_LEN..IPV6_HEADER_LEN + region_len];
    let region_off = off + IPV6_HEADER_LEN;

    let mut v6 = Ipv6 {
        header,
        next_header: None,
        frag: false,
        frag_offset: None,
        ext_count: 0,
        l4: L4::Unknown {
            proto: None,
            truncated: false,
            payload: region,
        },
    };
    let mut nh = header.next_header().0;
    let mut pos = 0usize;
    loop {
        let rest = &region[pos..];
        let at = region_off + pos;
        match nh {
            IPV6_HOP_BY_HOP | IPV6_DEST_OPTIONS | IPV6_ROUTING | IPV6_FRAGMENT | IPV6_AUTH => {
                if usize::from(v6.ext_count) == MAX_EXT_HEADERS
                    || (nh == IPV6_HOP_BY_HOP && v6.ext_count > 0)
                {
                    v6.l4 = L4::Unknown {
                        proto: None,
                        truncated: false,
                        payload: rest,
                    };
                    return (L3::Ipv6(v6), None);
                }
                v6.ext_count += 1;
            }
            _ => break,
        }
        let step = match nh {
            IPV6_FRAGMENT => match Ipv6FragmentHeaderSlice::from_slice(rest) {
                Ok(f) => {
                    let offset = f.fragment_offset().value();
                    v6.frag = true;
                    v6.frag_offset = Some(offset);
                    nh = f.next_header().0;
                    if offset > 0 {
                        v6.next_header = Some(nh);
                        v6.l4 = L4::Fragment {
                            v6: true,
                            proto: nh,
                            offset,
                            payload: &rest[f.slice().len()..],
                        };
                        return (L3::Ipv6(v6), None);
                    }
                    Ok(f.slice().len())
                }
                Err(e) => Err(len_error(&e, Layer::Ipv6Fragment, at)),
            },
            IPV6_AUTH => match IpAuthHeaderSlice::from_slice(rest) {
                Ok(a) => {
                    nh = a.next_header().0;
                    Ok(a.slice().len())
                }
                Err(err::ip_auth::HeaderSliceError::Len(e)) => {
                    Err(len_error(&e, Layer::IpAuth, at))
                }
                Err(err::ip_auth::HeaderSliceError::Content(_)) => {
                    v6.l4 = L4::Unknown {
                        proto: None,
                        truncated: false,
                        payload: rest,
                    };
                    return (L3::Ipv6(v6), None);
                }
            },
            _ => {
                let layer = match nh {
                    IPV6_HOP_BY_HOP => Layer::Ipv6HopByHop,
                    IPV6_DEST_OPTIONS => Layer::Ipv6DestOptions,
                    _ => Layer::Ipv6Routing,
                };
                match Ipv6RawExtHeaderSlice::from_slice(rest) {
                    Ok(x) => {
                        if nh != IPV6_ROUTING && !options_valid(x.slice()) {
                            v6.l4 = L4::Unknown {
                                proto: None,
                                truncated: false,
                                payload: rest,
                            };
                            return (L3::Ipv6(v6), None);
                        }
                        nh = x.next_header().0;
                        Ok(x.slice().len())
                    }
                    Err(e) => Err(len_error(&e, layer, at)),
                }
            }
        };
        match step {
            Ok(n) => pos += n,
            Err(e) => {
                v6.l4 = L4::Unknown {
                    proto: None,
                    truncated: true,
                    payload: rest,
                };
                return (L3::Ipv6(v6), Some(e));
            }
        }
    }
    v6.next_header = Some(nh);
    let (l4, e) = decode_l4(nh, &region[pos..], region_off + pos);
    v6.l4 = l4;
    (L3::Ipv6(v6), e)
}

fn decode_l4(proto: u8, b: &[u8], off: usize) -> (L4<'_>, Option<DecodeError>) {
    let cut = |e: DecodeError| {
        (
            L4::Unknown {
                proto: Some(proto),
                truncated: true,
                payload: b,
            },
            Some(e),
        )
    };
    match proto {
        PROTO_TCP => match TcpSlice::from_slice(b) {
            Ok(t) => {
                let app = ClientHello::parse(t.payload()).map(App::Tls);
                (L4::Tcp(t, app), None)
            }
            Err(err::tcp::HeaderSliceError::Len(e)) => cut(len_error(&e, Layer::Tcp, off)),
            Err(err::tcp::HeaderSliceError::Content(
                err::tcp::HeaderError::DataOffsetTooSmall { data_offset },
            )) => cut(DecodeError::invalid(
                Layer::Tcp,
                Invalid::TcpDataOffset(data_offset),
                off,
            )),
        },
        PROTO_UDP => match UdpSlice::from_slice_lax(b) {
            Ok(u) => {
                let p = u.payload();
                let app = ((u.source_port() == DNS_PORT || u.destination_port() == DNS_PORT)
                    && !p.is_empty())
                .then(|| App::Dns(Dns::new(p)));
                (L4::Udp(u, app), None)
            }
            Err(e) => cut(len_error(&e, Layer::Udp, off)),
        },
        PROTO_ICMP | PROTO_ICMPV6 => match decode_icmp(b, proto == PROTO_ICMPV6, off) {
            Ok(i) => (L4::Icmp(i), None),
            Err(e) => cut(e),
        },
        _ => (
            L4::Unknown {
                proto: Some(proto),
                truncated: false,
                payload: b,
            },
            None,
        ),
    }
}
