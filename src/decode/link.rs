//! Link layers: Ethernet II, raw IP (either version, or IPv4 / IPv6 only), Linux cooked
//! (SLL, SLL2), BSD loopback (NULL, LOOP), and the VLAN tags that may follow an EtherType.

use super::error::{DecodeError, Invalid, Layer};

/// LINKTYPE_NULL: BSD loopback, address family in the capturing host's byte order.
pub const LINKTYPE_NULL: u32 = 0;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// DLT_RAW as written on most BSDs: raw IPv4/IPv6.
pub const LINKTYPE_RAW_BSD: u32 = 12;
/// DLT_RAW as written on OpenBSD: raw IPv4/IPv6.
pub const LINKTYPE_RAW_OPENBSD: u32 = 14;
/// LINKTYPE_RAW: raw IPv4/IPv6.
pub const LINKTYPE_RAW: u32 = 101;
/// LINKTYPE_LOOP: OpenBSD loopback, address family big-endian.
pub const LINKTYPE_LOOP: u32 = 108;
/// LINKTYPE_LINUX_SLL: Linux cooked capture v1.
pub const LINKTYPE_LINUX_SLL: u32 = 113;
/// LINKTYPE_LINUX_SLL2: Linux cooked capture v2.
pub const LINKTYPE_LINUX_SLL2: u32 = 276;
/// LINKTYPE_IPV4 (DLT_IPV4): raw IPv4.
pub const LINKTYPE_IPV4: u32 = 228;
/// LINKTYPE_IPV6 (DLT_IPV6): raw IPv6.
pub const LINKTYPE_IPV6: u32 = 229;

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// VLAN TPIDs that are stripped: 802.1Q, 802.1ad, and the two legacy QinQ values.
pub const VLAN_TPIDS: [u16; 4] = [0x8100, 0x88A8, 0x9100, 0x9200];
/// Most VLAN tags kept (etherparse's limit); a deeper stack is reported as invalid.
pub const MAX_VLAN_TAGS: usize = 3;

/// Ethernet II header length.
pub const ETH_HEADER_LEN: usize = 14;
const ETH_DST: usize = 0;
const ETH_SRC: usize = 6;
/// Offset of the EtherType in an Ethernet II header.
pub(crate) const ETH_TYPE: usize = 12;

/// Linux SLL header length.
pub const SLL_HEADER_LEN: usize = 16;
const SLL_PKTTYPE: usize = 0;
const SLL_HATYPE: usize = 2;
const SLL_HALEN: usize = 4;
const SLL_ADDR: usize = 6;
/// Offset of the protocol (EtherType) in a Linux SLL header.
pub(crate) const SLL_PROTOCOL: usize = 14;

/// Linux SLL2 header length.
pub const SLL2_HEADER_LEN: usize = 20;
const SLL2_PROTOCOL: usize = 0;
const SLL2_IFINDEX: usize = 4;
const SLL2_HATYPE: usize = 8;
const SLL2_PKTTYPE: usize = 10;
const SLL2_HALEN: usize = 11;
const SLL2_ADDR: usize = 12;
const SLL_ADDR_MAX: usize = 8;

/// BSD loopback header length.
pub const LOOPBACK_HEADER_LEN: usize = 4;
/// AF_INET, the same everywhere.
pub(crate) const AF_INET: u32 = 2;
/// AF_INET6 on Linux, NetBSD/OpenBSD, FreeBSD and macOS.
pub(crate) const AF_INET6: [u32; 4] = [10, 24, 28, 30];

/// VLAN tag length.
pub const VLAN_TAG_LEN: usize = 4;

/// The link layer of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkKind {
    /// Ethernet II (1).
    Ethernet,
    /// Raw IPv4/IPv6 (101, 12, 14).
    Raw,
    /// Linux cooked v1 (113).
    LinuxSll,
    /// Linux cooked v2 (276).
    LinuxSll2,
    /// Raw IPv4 (228).
    RawIpv4,
    /// Raw IPv6 (229).
    RawIpv6,
    /// BSD loopback, host byte order (0).
    Null,
    /// OpenBSD loopback, big-endian (108).
    Loop,
}

impl LinkKind {
    /// The link kind for a LINKTYPE number, `None` when unsupported.
    pub fn from_linktype(linktype: u32) -> Option<Self> {
        Some(match linktype {
            LINKTYPE_ETHERNET => LinkKind::Ethernet,
            LINKTYPE_RAW | LINKTYPE_RAW_BSD | LINKTYPE_RAW_OPENBSD => LinkKind::Raw,
            LINKTYPE_LINUX_SLL => LinkKind::LinuxSll,
            LINKTYPE_LINUX_SLL2 => LinkKind::LinuxSll2,
            LINKTYPE_IPV4 => LinkKind::RawIpv4,
            LINKTYPE_IPV6 => LinkKind::RawIpv6,
            LINKTYPE_NULL => LinkKind::Null,
            LINKTYPE_LOOP => LinkKind::Loop,
            _ => return None,
        })
    }

    /// The map's `type` value for this link.
    pub fn name(self) -> &'static str {
        match self {
            LinkKind::Ethernet => "ethernet",
            LinkKind::Raw => "raw",
            LinkKind::LinuxSll => "linux_sll",
            LinkKind::LinuxSll2 => "linux_sll2",
            LinkKind::RawIpv4 => "raw_ipv4",
            LinkKind::RawIpv6 => "raw_ipv6",
            LinkKind::Null => "null",
            LinkKind::Loop => "loop",
        }
    }
}

/// One VLAN tag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VlanTag {
    /// The TPID that introduced the tag.
    pub tpid: u16,
    /// Priority code point (0..7).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id (0..4095).
    pub vid: u16,
}

/// The VLAN tags of a frame, outermost first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VlanTags {
    tags: [VlanTag; MAX_VLAN_TAGS],
    len: usize,
}

impl VlanTags {
    /// The tags, outermost first.
    pub fn as_slice(&self) -> &[VlanTag] {
        &self.tags[..self.len]
    }
}

/// The decoded link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link<'a> {
    /// Which link layer.
    pub kind: LinkKind,
    /// Source hardware address (Ethernet, SLL address field).
    pub src: Option<&'a [u8]>,
    /// Destination hardware address (Ethernet only).
    pub dst: Option<&'a [u8]>,
    /// SLL/SLL2 packet type (0 host, 1 broadcast, 2 multicast, 3 other host, 4 outgoing).
    pub pkttype: Option<u16>,
    /// SLL/SLL2 ARPHRD hardware type.
    pub hatype: Option<u16>,
    /// SLL2 interface index.
    pub ifindex: Option<u32>,
    /// NULL/LOOP address family.
    pub family: Option<u32>,
    /// The final EtherType after VLAN stripping (`None` when the link gives none).
    pub eth: Option<u16>,
    /// VLAN tags.
    pub vlan: VlanTags,
}

/// Result of decoding the link layer: the link, the offset of the L3 header, and the error
/// that stopped it. When the error is set, L3 is not decoded.
#[derive(Clone, Copy, Debug)]
pub struct LinkResult<'a> {
    /// The link (present unless its own header was cut).
    pub link: Option<Link<'a>>,
    /// Offset of the network header in the frame.
    pub l3_offset: usize,
    /// Why decoding stopped before L3.
    pub error: Option<DecodeError>,
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

#[inline]
fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn stop<'a>(link: Option<Link<'a>>, l3_offset: usize, e: DecodeError) -> LinkResult<'a> {
    LinkResult {
        link,
        l3_offset,
        error: Some(e),
    }
}

/// EtherType for a loopback address family.
fn family_ethertype(family: u32) -> Option<u16> {
    if family == AF_INET {
        Some(ETHERTYPE_IPV4)
    } else if AF_INET6.contains(&family) {
        Some(ETHERTYPE_IPV6)
    } else {
        None
    }
}

/// Decode the link layer and VLAN tags of `data`.
pub fn decode_link(kind: LinkKind, data: &[u8]) -> LinkResult<'_> {
    let mut link = Link {
        kind,
        src: None,
        dst: None,
        pkttype: None,
        hatype: None,
        ifindex: None,
        family: None,
        eth: None,
        vlan: VlanTags::default(),
    };
    let offset = match kind {
        LinkKind::Ethernet => {
            if data.len() < ETH_HEADER_LEN {
                return stop(
                    None,
                    0,
                    DecodeError::truncated(Layer::Ethernet, ETH_HEADER_LEN, data.len(), 0),
                );
            }
            link.dst = Some(&data[ETH_DST..ETH_DST + 6]);
            link.src = Some(&data[ETH_SRC..ETH_SRC + 6]);
            link.eth = Some(be16(data, ETH_TYPE));
            ETH_HEADER_LEN
        }
        LinkKind::LinuxSll => {
            if data.len() < SLL_HEADER_LEN {
                return stop(
                    None,
                    0,
                    DecodeError::truncated(Layer::LinuxSll, SLL_HEADER_LEN, data.len(), 0),
                );
            }
            let halen = usize::from(be16(data, SLL_HALEN)).min(SLL_ADDR_MAX);
            link.src = Some(&data[SLL_ADDR..SLL_ADDR + halen]);
            link.pkttype = Some(be16(data, SLL_PKTTYPE));
            link.hatype = Some(be16(data, SLL_HATYPE));
            link.eth = Some(be16(data, SLL_PROTOCOL));
            SLL_HEADER_LEN
        }
        LinkKind::LinuxSll2 => {
            if data.len() < SLL2_HEADER_LEN {
                return stop(
                    None,
                    0,
                    DecodeError::truncated(Layer::LinuxSll2, SLL2_HEADER_LEN, data.len(), 0),
                );
            }
            let halen = usize::from(data[SLL2_HALEN]).min(SLL_ADDR_MAX);
            link.src = Some(&data[SLL2_ADDR..SLL2_ADDR + halen]);
            link.pkttype = Some(u16::from(data[SLL2_PKTTYPE]));
            link.hatype = Some(be16(data, SLL2_HATYPE));
            link.ifindex = Some(be32(data, SLL2_IFINDEX));
            link.eth = Some(be16(data, SLL2_PROTOCOL));
            SLL2_HEADER_LEN
        }
        LinkKind::Null | LinkKind::Loop => {
            if data.len() < LOOPBACK_HEADER_LEN {
                return stop(
                    None,
                    0,
                    DecodeError::truncated(Layer::Loopback, LOOPBACK_HEADER_LEN, data.len(), 0),
                );
            }
            let be = be32(data, 0);
            let family = if kind == LinkKind::Loop || be <= 0xFFFF {
                be
            } else {
                be.swap_bytes()
            };
            link.family = Some(family);
            link.eth = family_ethertype(family);
            return LinkResult {
                link: Some(link),
                l3_offset: LOOPBACK_HEADER_LEN,
                error: None,
            };
        }
        // The link type names the IP version; the version nibble still picks the header,
        // as for an EtherType (an empty frame is a cut IPv4 / IPv6 header).
        LinkKind::RawIpv4 | LinkKind::RawIpv6 => {
            link.eth = Some(if kind == LinkKind::RawIpv4 {
                ETHERTYPE_IPV4
            } else {
                ETHERTYPE_IPV6
            });
            return LinkResult {
                link: Some(link),
                l3_offset: 0,
                error: None,
            };
        }
        LinkKind::Raw => {
            let Some(&first) = data.first() else {
                return stop(Some(link), 0, DecodeError::truncated(Layer::Ip, 1, 0, 0));
            };
            link.eth = match first >> 4 {
                4 => Some(ETHERTYPE_IPV4),
                6 => Some(ETHERTYPE_IPV6),
                v => {
                    return stop(
                        Some(link),
                        0,
                        DecodeError::invalid(Layer::Ip, Invalid::IpVersion(v), 0),
                    )
                }
            };
            return LinkResult {
                link: Some(link),
                l3_offset: 0,
                error: None,
            };
        }
    };
    strip_vlans(link, data, offset)
}

fn strip_vlans<'a>(mut link: Link<'a>, data: &'a [u8], mut offset: usize) -> LinkResult<'a> {
    while let Some(tpid) = link.eth.filter(|t| VLAN_TPIDS.contains(t)) {
        let have = data.len() - offset;
        if have < VLAN_TAG_LEN {
            return stop(
                Some(link),
                offset,
                DecodeError::truncated(Layer::Vlan, VLAN_TAG_LEN, have, offset),
            );
        }
        if link.vlan.len == MAX_VLAN_TAGS {
            return stop(
                Some(link),
                offset,
                DecodeError::invalid(Layer::Vlan, Invalid::TooManyVlanTags, offset),
            );
        }
        let tci = be16(data, offset);
        link.vlan.tags[link.vlan.len] = VlanTag {
            tpid,
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0FFF,
        };
        link.vlan.len += 1;
        link.eth = Some(be16(data, offset + 2));
        offset += VLAN_TAG_LEN;
    }
    LinkResult {
        link: Some(link),
        l3_offset: offset,
        error: None,
    }
}
