//! One decoder for the full packet map and the numeric flow projection.
//!
//! Untrusted bytes enter through [`decode`] (one checked entry point); every header is
//! length-checked when it is sliced, so no accessor of the result panics. Truncation is
//! data: every layer that parsed is kept, and [`DecodeError`] names the layer that was cut,
//! the bytes it needs, the bytes present and its offset.
//!
//! The IPv4, IPv6 and extension headers and the TCP/UDP headers are sliced with etherparse's
//! slicers (the ones `LaxSlicedPacket` uses, with its lax length rules); link layers, VLAN tags, ARP, the IPv6 extension
//! chain walk (with Hop-by-Hop / Destination Options TLV checks), ICMP, DNS and TLS are read here.
//! The validity rules are listed in docs/packet-map.md.

pub mod addr;
pub mod arp;
pub mod dns;
pub mod error;
pub mod icmp;
pub mod ipv4;
pub mod ipv6;
pub mod ipv6_ext;
pub mod link;
pub mod packet;
pub mod tls;
pub mod transport;

pub use error::{DecodeError, ErrorKind, Invalid, Layer};
pub use ipv4::Ipv4;
pub use ipv6::Ipv6;
pub use link::{Link, LinkKind, VlanTag};
pub use packet::{decode, Decoded, FlowKey, FlowProto, L3};
pub use transport::{App, L4};

pub mod fastpath;
#[cfg(test)]
mod tests;
