//! The full decoder and the flow fast path agree on IP version, protocol, addresses and
//! ports (docs/packet-map.md, "Validity rules"), over the flow tests' corpus and every prefix
//! of each frame, and over random bytes. The documented differences are left out: an
//! invalid or cut IPv6 extension chain (the map has no next header, the fast path names the
//! header), Hop-by-Hop/Destination Options TLVs (checked only here), and a non-first IPv6
//! fragment whose next header is an extension header (the map stops at the fragment, the
//! fast path walks on into the fragment's bytes).

use proptest::prelude::*;

use super::fastpath::{self, FlowFields};
use super::ipv6_ext::{IPV6_AUTH, IPV6_DEST_OPTIONS, IPV6_FRAGMENT, IPV6_HOP_BY_HOP, IPV6_ROUTING};
use super::{decode, L3, L4};

#[derive(Debug, PartialEq, Eq)]
struct View {
    ip_version: u8,
    protocol: Option<u8>,
    src: [u8; 16],
    dst: [u8; 16],
    ports: Option<(u16, u16)>,
}

fn mapped(a: [u8; 4]) -> [u8; 16] {
    let mut m = [0u8; 16];
    m[10] = 0xff;
    m[11] = 0xff;
    m[12..].copy_from_slice(&a);
    m
}

/// The full decoder's view; `None` when the frame falls under a documented difference.
fn full_view(lt: u32, data: &[u8]) -> Option<View> {
    let d = decode(lt, data);
    let ports = d.l3.as_ref().and_then(|l| l.flow_key()).and_then(|k| k.ports);
    Some(match &d.l3 {
        Some(L3::Ipv4(v4)) => View {
            ip_version: 4,
            protocol: Some(v4.l4_proto),
            src: mapped(v4.header.source()),
            dst: mapped(v4.header.destination()),
            ports,
        },
        Some(L3::Ipv6(v6)) => {
            v6.next_header?;
            if let L4::Fragment { proto, .. } = v6.l4 {
                let ext = [IPV6_HOP_BY_HOP, IPV6_ROUTING, IPV6_FRAGMENT, IPV6_AUTH, IPV6_DEST_OPTIONS];
                if ext.contains(&proto) {
                    return None;
                }
            }
            View {
                ip_version: 6,
                protocol: v6.next_header,
                src: v6.header.source(),
                dst: v6.header.destination(),
                ports,
            }
        }
        _ => View { ip_version: 0, protocol: None, src: [0; 16], dst: [0; 16], ports: None },
    })
}

fn fast_view(lt: u32, data: &[u8]) -> View {
    let mut f = FlowFields::default();
    fastpath::parse(lt, data, &mut f);
    if f.ip_version == 0 {
        return View { ip_version: 0, protocol: None, src: [0; 16], dst: [0; 16], ports: None };
    }
    View {
        ip_version: f.ip_version,
        protocol: Some(f.protocol),
        src: f.src,
        dst: f.dst,
        ports: f.has_ports.then_some((f.src_port, f.dst_port)),
    }
}

/// Compare one frame; false when it was left out.
fn check(lt: u32, data: &[u8]) -> bool {
    let Some(full) = full_view(lt, data) else { return false };
    let fast = fast_view(lt, data);
    if full.ip_version == 0 && fast.ip_version != 0 {
        // The map has no IP layer only when the IP header is cut or invalid: the fast path
        // then has no ports either.
        assert_eq!(fast.ports, None, "linktype {lt} frame {data:02x?}");
        return true;
    }
    assert_eq!(full, fast, "linktype {lt} frame {data:02x?}");
    true
}

#[test]
fn flow_corpus_and_every_prefix_agree() {
    let mut compared = 0;
    let mut with_ports = 0;
    for (lt, frame) in crate::flow::testdata::corpus() {
        with_ports += usize::from(full_view(lt, &frame).is_some_and(|v| v.ports.is_some()));
        for n in 0..=frame.len() {
            compared += usize::from(check(lt, &frame[..n]));
        }
    }
    assert!(compared > 5_000 && with_ports > 20, "{compared} {with_ports}");
}

#[test]
fn decoder_golden_frames_agree() {
    use super::tests::{dns_query, eth, ipv4, ipv6, tcp, udp};
    let frames = [
        eth(0x0800, &ipv4(17, &[1, 1, 1, 0], 0, &udp(1, 53, &dns_query()))),
        eth(0x0800, &ipv4(6, &[], 0x2000, &tcp(5, 6, 0x02, &[], &[]))),
        eth(0x0800, &ipv4(6, &[], 0x0004, &[1, 2, 3, 4])),
        eth(0x86DD, &ipv6(44, &[17, 0, 0, 1, 0, 0, 0, 9, 0, 7, 0, 8, 0, 8, 0, 0])),
        eth(0x86DD, &ipv6(43, &{
            let mut v = vec![6, 0, 0, 0, 0, 0, 0, 0];
            v.extend_from_slice(&tcp(80, 81, 0x12, &[], &[]));
            v
        })),
    ];
    for f in &frames {
        for n in 0..=f.len() {
            check(1, &f[..n]);
        }
    }
}

proptest! {
    #[test]
    fn random_bytes_agree(data in proptest::collection::vec(any::<u8>(), 0..120),
                          lt in proptest::sample::select(vec![0u32, 1, 12, 14, 101, 108, 113, 276])) {
        check(lt, &data);
    }

    #[test]
    fn random_ip_payloads_agree(body in proptest::collection::vec(any::<u8>(), 0..80),
                                proto in proptest::sample::select(vec![6u8, 17, 1, 58, 43, 44, 51, 60, 0])) {
        use super::tests::{eth, ipv4, ipv6};
        check(1, &eth(0x0800, &ipv4(proto, &[], 0, &body)));
        check(1, &eth(0x86DD, &ipv6(proto, &body)));
    }
}
