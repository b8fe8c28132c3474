//! ARP (RFC 826) for any hardware and protocol address length.

use super::error::{DecodeError, Layer};

/// Fixed part of an ARP packet: htype, ptype, hlen, plen, op.
pub const ARP_FIXED_LEN: usize = 8;
const ARP_HTYPE: usize = 0;
const ARP_PTYPE: usize = 2;
const ARP_HLEN: usize = 4;
const ARP_PLEN: usize = 5;
const ARP_OP: usize = 6;
/// Protocol type whose addresses are rendered as IPv4.
pub const ARP_PTYPE_IPV4: u16 = 0x0800;

/// ARP operation, an open enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArpOp {
    /// 1.
    Request,
    /// 2.
    Reply,
    /// Any other value.
    Unknown(u16),
}

impl ArpOp {
    fn from_u16(v: u16) -> Self {
        match v {
            1 => ArpOp::Request,
            2 => ArpOp::Reply,
            n => ArpOp::Unknown(n),
        }
    }
}

/// A complete ARP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arp<'a> {
    /// Hardware type.
    pub htype: u16,
    /// Protocol type.
    pub ptype: u16,
    /// Operation.
    pub op: ArpOp,
    /// Sender hardware address.
    pub sha: &'a [u8],
    /// Sender protocol address.
    pub spa: &'a [u8],
    /// Target hardware address.
    pub tha: &'a [u8],
    /// Target protocol address.
    pub tpa: &'a [u8],
}

impl Arp<'_> {
    /// Sender IPv4 address when the protocol is IPv4 with 4-byte addresses.
    pub fn spa_ipv4(&self) -> Option<[u8; 4]> {
        self.ipv4(self.spa)
    }

    /// Target IPv4 address when the protocol is IPv4 with 4-byte addresses.
    pub fn tpa_ipv4(&self) -> Option<[u8; 4]> {
        self.ipv4(self.tpa)
    }

    fn ipv4(&self, a: &[u8]) -> Option<[u8; 4]> {
        if self.ptype == ARP_PTYPE_IPV4 {
            a.try_into().ok()
        } else {
            None
        }
    }
}

/// Decode an ARP packet starting at `offset` of the frame.
///
/// # Errors
/// Truncation of the fixed part or of the address fields.
pub fn decode_arp(b: &[u8], offset: usize) -> Result<Arp<'_>, DecodeError> {
    if b.len() < ARP_FIXED_LEN {
        return Err(DecodeError::truncated(
            Layer::Arp,
            ARP_FIXED_LEN,
            b.len(),
            offset,
        ));
    }
    let hlen = usize::from(b[ARP_HLEN]);
    let plen = usize::from(b[ARP_PLEN]);
    let need = ARP_FIXED_LEN + 2 * (hlen + plen);
    if b.len() < need {
        return Err(DecodeError::truncated(Layer::Arp, need, b.len(), offset));
    }
    let sha_at = ARP_FIXED_LEN;
    let spa_at = sha_at + hlen;
    let tha_at = spa_at + plen;
    let tpa_at = tha_at + hlen;
    Ok(Arp {
        htype: u16::from_be_bytes([b[ARP_HTYPE], b[ARP_HTYPE + 1]]),
        ptype: u16::from_be_bytes([b[ARP_PTYPE], b[ARP_PTYPE + 1]]),
        op: ArpOp::from_u16(u16::from_be_bytes([b[ARP_OP], b[ARP_OP + 1]])),
        sha: &b[sha_at..spa_at],
        spa: &b[spa_at..tha_at],
        tha: &b[tha_at..tpa_at],
        tpa: &b[tpa_at..need],
    })
}
