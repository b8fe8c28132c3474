//! IPv4: the header (sliced by etherparse), fragments and an authentication header.

use etherparse::{err, IpAuthHeaderSlice, Ipv4HeaderSlice};

use super::error::{DecodeError, Invalid, Layer};
use super::ipv6_ext::IPV6_AUTH;
use super::link::ETHERTYPE_IPV4;
use super::packet::{len_error, L3};
use super::transport::{decode_l4, L4};

const IPV4_TOS: usize = 1;
/// Offset of the flags and fragment offset field.
pub(crate) const IPV4_FLAGS_FRAG: usize = 6;
/// The more-fragments flag.
pub(crate) const IPV4_MF: u16 = 0x2000;
/// The fragment offset bits.
pub(crate) const IPV4_OFFSET_MASK: u16 = 0x1FFF;

/// An IPv4 packet.
#[derive(Clone, Debug)]
pub struct Ipv4<'a> {
    /// The header, options included (validated: version 4, IHL >= 5, all bytes present).
    pub header: Ipv4HeaderSlice<'a>,
    /// The total length used when the field is 0 (TCP segmentation offload, BIG TCP):
    /// the header and every byte after it in the capture. `None` when the field is used.
    pub presumed_total_length: Option<usize>,
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

pub(super) fn decode_ipv4(b: &[u8], off: usize) -> (L3<'_>, Option<DecodeError>) {
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
    // the capture (etherparse's lax rule); then the rest of the capture is used. A total
    // length of 0 is presumed to be offloaded segmentation (TSO, BIG TCP), as tshark does;
    // one between 1 and the header length is invalid: reported, and decoding goes on.
    let hlen = header.slice().len();
    let total = usize::from(header.total_len());
    let end = if total < hlen || total > b.len() {
        b.len()
    } else {
        total
    };
    let bad_total = (total != 0 && total < hlen).then(|| {
        DecodeError::invalid(
            Layer::Ipv4,
            Invalid::Ipv4TotalLength {
                total: header.total_len(),
                header: hlen as u8,
            },
            off,
        )
    });
    let (l3, e) = ipv4_payload(header, &b[hlen..end], off);
    // The outermost problem is the one reported.
    (l3, bad_total.or(e))
}

fn ipv4_payload<'a>(
    header: Ipv4HeaderSlice<'a>,
    payload: &'a [u8],
    off: usize,
) -> (L3<'a>, Option<DecodeError>) {
    let hlen = header.slice().len();
    let proto = header.protocol().0;
    let mut v4 = Ipv4 {
        presumed_total_length: (header.total_len() == 0).then_some(hlen + payload.len()),
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
                v4.l4 = L4::Unknown {
                    proto: Some(proto),
                    truncated: true,
                    payload,
                };
                return (L3::Ipv4(v4), Some(len_error(&e, Layer::IpAuth, l4_off)));
            }
            Err(err::ip_auth::HeaderSliceError::Content(_)) => {
                v4.l4 = L4::Unknown {
                    proto: Some(proto),
                    truncated: true,
                    payload,
                };
                return (
                    L3::Ipv4(v4),
                    Some(DecodeError::invalid(
                        Layer::IpAuth,
                        Invalid::AuthLengthZero,
                        l4_off,
                    )),
                );
            }
        }
    }
    let (l4, e) = decode_l4(v4.l4_proto, l4_payload, l4_off, false);
    v4.l4 = l4;
    (L3::Ipv4(v4), e)
}
