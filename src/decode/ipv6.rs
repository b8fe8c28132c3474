//! IPv6: the fixed header (sliced by etherparse) and the extension chain walk.

use etherparse::{
    err, IpAuthHeaderSlice, Ipv6FragmentHeaderSlice, Ipv6HeaderSlice, Ipv6RawExtHeaderSlice,
};

use super::error::{DecodeError, Invalid, Layer};
use super::ipv6_ext::{
    has_jumbo, options_valid, IPV6_AUTH, IPV6_DEST_OPTIONS, IPV6_FRAGMENT, IPV6_HOP_BY_HOP,
    IPV6_ROUTING, MAX_EXT_HEADERS,
};
use super::link::ETHERTYPE_IPV6;
use super::packet::{len_error, L3};
use super::transport::{decode_l4, L4};

/// IPv6 fixed header length.
pub const IPV6_HEADER_LEN: usize = 40;

/// An IPv6 packet.
#[derive(Clone, Debug)]
pub struct Ipv6<'a> {
    /// The 40-byte fixed header.
    pub header: Ipv6HeaderSlice<'a>,
    /// The payload length used when the field is 0 without a Jumbo Payload option (TCP
    /// segmentation offload, BIG TCP): every byte after the header in the capture. `None`
    /// when the field, or a Jumbo option, applies, or nothing follows the header.
    pub presumed_payload_length: Option<usize>,
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

pub(super) fn decode_ipv6(b: &[u8], off: usize) -> (L3<'_>, Option<DecodeError>) {
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
        presumed_payload_length: (plen == 0 && region_len > 0).then_some(region_len),
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
                        if nh == IPV6_HOP_BY_HOP && has_jumbo(x.slice()) {
                            v6.presumed_payload_length = None;
                        }
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
    let (l4, e) = decode_l4(nh, &region[pos..], region_off + pos, plen == 0);
    v6.l4 = l4;
    (L3::Ipv6(v6), e)
}
