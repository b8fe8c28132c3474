//! The transport layer: TCP and UDP (sliced by etherparse), ICMP, and the application
//! layer found in them (DNS on UDP port 53, a TLS ClientHello on TCP).

use etherparse::{err, TcpSlice, UdpSlice};

use super::dns::{Dns, DNS_PORT};
use super::error::{DecodeError, Invalid, Layer};
use super::icmp::{decode_icmp, Icmp};
use super::packet::len_error;
use super::tls::ClientHello;

/// IP protocol number of ICMPv4.
pub const PROTO_ICMP: u8 = 1;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// IP protocol number of ICMPv6.
pub const PROTO_ICMPV6: u8 = 58;
/// UDP header length.
pub const UDP_HEADER_LEN: usize = 8;

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

/// Decode the transport layer `proto` in `b` (at `off` in the frame). `jumbo`: the IP
/// layer is an IPv6 packet whose payload length is 0, where a UDP length of 0 is allowed
/// (RFC 2675).
pub(super) fn decode_l4(
    proto: u8,
    b: &[u8],
    off: usize,
    jumbo: bool,
) -> (L4<'_>, Option<DecodeError>) {
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
                // A length below the header is reported; the datagram runs to the end of
                // the IP payload, as the lax rule reads it.
                let n = u.length();
                let bad = usize::from(n) < UDP_HEADER_LEN && !(n == 0 && jumbo);
                let e = bad.then(|| DecodeError::invalid(Layer::Udp, Invalid::UdpLength(n), off));
                (L4::Udp(u, app), e)
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
