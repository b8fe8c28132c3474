//! The decode error: a small `Copy` value naming the layer that was cut or invalid.

use core::fmt;

/// A protocol layer, as named in decode error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// Ethernet II header.
    Ethernet,
    /// Linux cooked capture v1 header.
    LinuxSll,
    /// Linux cooked capture v2 header.
    LinuxSll2,
    /// BSD loopback (NULL / LOOP) header.
    Loopback,
    /// 802.1Q / 802.1ad VLAN tag.
    Vlan,
    /// ARP packet.
    Arp,
    /// An IP header whose version is not yet known.
    Ip,
    /// IPv4 header.
    Ipv4,
    /// IPv6 header.
    Ipv6,
    /// IPv6 Hop-by-Hop options header.
    Ipv6HopByHop,
    /// IPv6 Destination Options header.
    Ipv6DestOptions,
    /// IPv6 Routing header.
    Ipv6Routing,
    /// IPv6 Fragment header.
    Ipv6Fragment,
    /// IP Authentication Header.
    IpAuth,
    /// TCP header.
    Tcp,
    /// UDP header.
    Udp,
    /// ICMPv4 header.
    Icmpv4,
    /// ICMPv6 header.
    Icmpv6,
}

impl Layer {
    /// The layer's name as written in messages.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Ethernet => "Ethernet",
            Layer::LinuxSll => "Linux SLL",
            Layer::LinuxSll2 => "Linux SLL2",
            Layer::Loopback => "loopback",
            Layer::Vlan => "VLAN",
            Layer::Arp => "ARP",
            Layer::Ip => "IP",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Ipv6HopByHop => "IPv6 hop-by-hop",
            Layer::Ipv6DestOptions => "IPv6 destination options",
            Layer::Ipv6Routing => "IPv6 routing",
            Layer::Ipv6Fragment => "IPv6 fragment",
            Layer::IpAuth => "IP authentication",
            Layer::Tcp => "TCP",
            Layer::Udp => "UDP",
            Layer::Icmpv4 => "ICMPv4",
            Layer::Icmpv6 => "ICMPv6",
        }
    }
}

/// Why a header was rejected although its bytes were present.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invalid {
    /// The IP version nibble is neither 4 nor 6.
    IpVersion(u8),
    /// The IPv4 IHL is below 5.
    Ipv4HeaderLength(u8),
    /// An authentication header whose payload length is 0.
    AuthLengthZero,
    /// An IPv4 total length above 0 but below the header length.
    Ipv4TotalLength {
        /// The total length field.
        total: u16,
        /// The header length in bytes (4 x IHL).
        header: u8,
    },
    /// A UDP length field below the 8-byte header (0 is allowed only in an IPv6 packet
    /// whose payload length is 0, a jumbogram).
    UdpLength(u16),
    /// A TCP data offset below 5.
    TcpDataOffset(u8),
    /// More VLAN tags than the decoder keeps.
    TooManyVlanTags,
}

/// What went wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The header needs more bytes than the capture holds.
    Truncated,
    /// The header is present but its content is not valid.
    Invalid(Invalid),
    /// The capture's link type is not one the decoder reads.
    UnsupportedLinkType(u32),
}

/// Where decoding stopped: a small `Copy` value, rendered by `Display`.
///
/// Rendering: `truncated TCP header: need 20 bytes, have 12 at offset 34`,
/// `invalid IPv4 header: IHL 3 (below 5) at offset 14`, `unsupported link type 147`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// The layer that was cut or invalid.
    pub layer: Layer,
    /// Bytes the layer needs (for truncation).
    pub need: u32,
    /// Bytes present from the layer's start.
    pub have: u32,
    /// Offset of the layer's first byte in the frame.
    pub offset: u32,
}

impl DecodeError {
    /// A truncated header.
    pub fn truncated(layer: Layer, need: usize, have: usize, offset: usize) -> Self {
        DecodeError {
            kind: ErrorKind::Truncated,
            layer,
            need: sat(need),
            have: sat(have),
            offset: sat(offset),
        }
    }

    /// An invalid header.
    pub fn invalid(layer: Layer, why: Invalid, offset: usize) -> Self {
        DecodeError {
            kind: ErrorKind::Invalid(why),
            layer,
            need: 0,
            have: 0,
            offset: sat(offset),
        }
    }

    /// An unsupported link type.
    pub fn unsupported_link_type(linktype: u32) -> Self {
        DecodeError {
            kind: ErrorKind::UnsupportedLinkType(linktype),
            layer: Layer::Ethernet,
            need: 0,
            have: 0,
            offset: 0,
        }
    }
}

fn sat(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let layer = self.layer.name();
        match self.kind {
            ErrorKind::Truncated => write!(
                f,
                "truncated {layer} header: need {} bytes, have {} at offset {}",
                self.need, self.have, self.offset
            ),
            ErrorKind::Invalid(why) => {
                write!(f, "invalid {layer} header: ")?;
                match why {
                    Invalid::IpVersion(v) => write!(f, "IP version {v}")?,
                    Invalid::Ipv4HeaderLength(ihl) => write!(f, "IHL {ihl} (below 5)")?,
                    Invalid::AuthLengthZero => f.write_str("payload length 0")?,
                    Invalid::Ipv4TotalLength { total, header } => {
                        write!(f, "total length {total} (below the header length {header})")?
                    }
                    Invalid::UdpLength(n) => write!(f, "length {n} (below 8)")?,
                    Invalid::TcpDataOffset(d) => write!(f, "data offset {d} (below 5)")?,
                    Invalid::TooManyVlanTags => {
                        write!(f, "more than {} tags", super::link::MAX_VLAN_TAGS)?
                    }
                }
                write!(f, " at offset {}", self.offset)
            }
            ErrorKind::UnsupportedLinkType(n) => write!(f, "unsupported link type {n}"),
        }
    }
}

impl std::error::Error for DecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_truncation_like_the_contract() {
        let e = DecodeError::truncated(Layer::Tcp, 20, 12, 34);
        assert_eq!(
            e.to_string(),
            "truncated TCP header: need 20 bytes, have 12 at offset 34"
        );
    }

    #[test]
    fn renders_invalid_and_link_type() {
        let e = DecodeError::invalid(Layer::Ipv4, Invalid::Ipv4HeaderLength(3), 14);
        assert_eq!(
            e.to_string(),
            "invalid IPv4 header: IHL 3 (below 5) at offset 14"
        );
        let e = DecodeError::invalid(
            Layer::Ipv4,
            Invalid::Ipv4TotalLength {
                total: 19,
                header: 20,
            },
            14,
        );
        assert_eq!(
            e.to_string(),
            "invalid IPv4 header: total length 19 (below the header length 20) at offset 14"
        );
        let e = DecodeError::invalid(Layer::Udp, Invalid::UdpLength(3), 34);
        assert_eq!(
            e.to_string(),
            "invalid UDP header: length 3 (below 8) at offset 34"
        );
        assert_eq!(
            DecodeError::unsupported_link_type(147).to_string(),
            "unsupported link type 147"
        );
    }
}
