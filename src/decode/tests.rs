//! Golden tests from hand-built frames, truncation at every cut, and a no-panic property.

use super::*;
use crate::decode::link::*;
use crate::decode::tls::build_client_hello;

pub(crate) fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25,
    ];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

pub(crate) fn ipv4(proto: u8, options: &[u8], flags_frag: u16, payload: &[u8]) -> Vec<u8> {
    let hlen = 20 + options.len();
    let total = (hlen + payload.len()) as u16;
    let mut p = vec![0x40 | (hlen / 4) as u8, 0x10];
    p.extend_from_slice(&total.to_be_bytes());
    p.extend_from_slice(&[0xab, 0xcd]);
    p.extend_from_slice(&flags_frag.to_be_bytes());
    p.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    p.extend_from_slice(options);
    p.extend_from_slice(payload);
    p
}

pub(crate) fn ipv6(nh: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    p.extend_from_slice(&[nh, 64]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    p.extend_from_slice(&[0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    p.extend_from_slice(payload);
    p
}

pub(crate) fn udp(sp: u16, dp: u16, payload: &[u8]) -> Vec<u8> {
    let mut p = sp.to_be_bytes().to_vec();
    p.extend_from_slice(&dp.to_be_bytes());
    p.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0x12, 0x34]);
    p.extend_from_slice(payload);
    p
}

pub(crate) fn tcp(sp: u16, dp: u16, flags: u8, options: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut p = sp.to_be_bytes().to_vec();
    p.extend_from_slice(&dp.to_be_bytes());
    p.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 2]);
    p.push((((20 + options.len()) / 4) as u8) << 4);
    p.extend_from_slice(&[flags, 0xff, 0xff, 0, 0, 0, 0]);
    p.extend_from_slice(options);
    p.extend_from_slice(payload);
    p
}

pub(crate) fn dns_query() -> Vec<u8> {
    let mut m = vec![0xbe, 0xef, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
    m.extend_from_slice(b"\x07example\x03com\x00\x00\x01\x00\x01");
    m
}

fn ip4_udp(payload: &[u8]) -> Vec<u8> {
    eth(
        ETHERTYPE_IPV4,
        &ipv4(17, &[], 0, &udp(12000, 5300, payload)),
    )
}

#[test]
fn ethernet_ipv4_udp() {
    let f = ip4_udp(&[1, 2, 3]);
    let d = decode(LINKTYPE_ETHERNET, &f);
    assert!(d.error.is_none());
    let link = d.link.unwrap();
    assert_eq!(link.kind, LinkKind::Ethernet);
    assert_eq!(link.dst.unwrap(), &[0x10, 0x11, 0x12, 0x13, 0x14, 0x15]);
    assert_eq!(link.eth, Some(0x0800));
    let Some(L3::Ipv4(v4)) = &d.l3 else {
        panic!("{:?}", d.l3)
    };
    assert_eq!(v4.header.source(), [10, 0, 0, 1]);
    assert!(!v4.frag());
    let L4::Udp(u, app) = &v4.l4 else { panic!() };
    assert_eq!(
        (u.source_port(), u.destination_port(), u.payload()),
        (12000, 5300, &[1u8, 2, 3][..])
    );
    assert!(app.is_none());
    let key = d.l3.as_ref().unwrap().flow_key().unwrap();
    assert_eq!(
        key,
        FlowKey {
            proto: FlowProto::Udp,
            ports: Some((12000, 5300))
        }
    );
}

#[test]
fn ipv4_padding_trimmed_and_options_skipped() {
    let mut f = eth(
        ETHERTYPE_IPV4,
        &ipv4(17, &[1, 1, 1, 0], 0, &udp(1, 2, &[9])),
    );
    f.extend_from_slice(&[0; 6]);
    let d = decode(LINKTYPE_ETHERNET, &f);
    let Some(L3::Ipv4(v4)) = &d.l3 else { panic!() };
    assert_eq!(v4.header.ihl(), 6);
    let L4::Udp(u, _) = &v4.l4 else { panic!() };
    assert_eq!(u.payload(), &[9]);
}

#[test]
fn ipv4_fragments() {
    let first = eth(
        ETHERTYPE_IPV4,
        &ipv4(6, &[], 0x2000, &tcp(1, 2, 0x02, &[], &[])),
    );
    let d = decode(LINKTYPE_ETHERNET, &first);
    let Some(L3::Ipv4(v4)) = &d.l3 else { panic!() };
    assert!(v4.frag() && v4.frag_offset_raw() == 0);
    assert!(matches!(v4.l4, L4::Tcp(..)));
    let later = eth(ETHERTYPE_IPV4, &ipv4(6, &[], 0x0003, &[1, 2, 3]));
    let d = decode(LINKTYPE_ETHERNET, &later);
    let Some(L3::Ipv4(v4)) = &d.l3 else { panic!() };
    assert!(matches!(
        v4.l4,
        L4::Fragment {
            v6: false,
            proto: 6,
            offset: 3,
            payload: [1, 2, 3]
        }
    ));
    assert_eq!(
        d.l3.unwrap().flow_key().unwrap(),
        FlowKey {
            proto: FlowProto::Tcp,
            ports: None
        }
    );
}

#[test]
fn vlan_qinq_all_tpids() {
    for tpid in VLAN_TPIDS {
        let mut inner = vec![0xA0, 0x64]; // pcp 5, dei 0, vid 100
        inner.extend_from_slice(&0x8100u16.to_be_bytes());
        inner.extend_from_slice(&[0x30, 0x07]); // pcp 1, dei 1, vid 7
        inner.extend_from_slice(&0x0800u16.to_be_bytes());
        inner.extend_from_slice(&ipv4(17, &[], 0, &udp(1, 2, &[])));
        let f = eth(tpid, &inner);
        let d = decode(LINKTYPE_ETHERNET, &f);
        assert!(d.error.is_none());
        let tags = d.link.unwrap().vlan;
        assert_eq!(
            tags.as_slice(),
            &[
                VlanTag {
                    tpid,
                    pcp: 5,
                    dei: false,
                    vid: 100
                },
                VlanTag {
                    tpid: 0x8100,
                    pcp: 1,
                    dei: true,
                    vid: 7
                }
            ]
        );
        assert!(matches!(d.l3, Some(L3::Ipv4(_))));
    }
}

#[test]
fn truncated_vlan_is_unknown_l3_with_tpid() {
    let f = eth(0x8100, &[0, 1]);
    let d = decode(LINKTYPE_ETHERNET, &f);
    assert_eq!(
        d.error.unwrap().to_string(),
        "truncated VLAN header: need 4 bytes, have 2 at offset 14"
    );
    assert!(matches!(d.l3, Some(L3::Unknown(Some(0x8100)))));
}

#[test]
fn ipv6_extension_chain() {
    // HBH (PadN) -> routing -> dest opts -> fragment(offset 0) -> AH -> UDP
    let mut chain = vec![43, 0, 1, 4, 0, 0, 0, 0];
    chain.extend_from_slice(&[60, 0, 0, 0, 0, 0, 0, 0]);
    chain.extend_from_slice(&[44, 0, 0, 0, 0, 0, 0, 0]);
    chain.extend_from_slice(&[51, 0, 0, 1, 0, 0, 0, 9]);
    chain.extend_from_slice(&[17, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
    chain.extend_from_slice(&udp(53, 4000, &dns_query()));
    let f = eth(ETHERTYPE_IPV6, &ipv6(0, &chain));
    let d = decode(LINKTYPE_ETHERNET, &f);
    assert!(d.error.is_none(), "{:?}", d.error);
    let Some(L3::Ipv6(v6)) = &d.l3 else { panic!() };
    assert_eq!(
        (v6.next_header, v6.frag, v6.frag_offset, v6.ext_count),
        (Some(17), true, Some(0), 5)
    );
    let L4::Udp(_, Some(App::Dns(Some(dns)))) = &v6.l4 else {
        panic!("{:?}", v6.l4)
    };
    assert_eq!(dns.question().unwrap().qname(), "example.com");
}

#[test]
fn ipv6_invalid_tlv_gives_no_next_header() {
    let f = eth(ETHERTYPE_IPV6, &ipv6(0, &[17, 0, 1, 9, 0, 0, 0, 0, 1, 2]));
    let d = decode(LINKTYPE_ETHERNET, &f);
    assert!(d.error.is_none());
    let Some(L3::Ipv6(v6)) = &d.l3 else { panic!() };
    assert_eq!(v6.next_header, None);
    assert!(matches!(
        v6.l4,
        L4::Unknown {
            proto: None,
            truncated: false,
            ..
        }
    ));
    assert!(d.l3.unwrap().flow_key().is_none());
}

#[test]
fn ipv6_non_first_fragment_esp_and_chain_limit() {
    let f = eth(
        ETHERTYPE_IPV6,
        &ipv6(44, &[6, 0, 0, 0x19, 0, 0, 0, 1, 7, 7]),
    );
    let d = decode(LINKTYPE_ETHERNET, &f);
    let Some(L3::Ipv6(v6)) = &d.l3 else { panic!() };
    assert!(matches!(
        v6.l4,
        L4::Fragment {
            v6: true,
            proto: 6,
            offset: 3,
            payload: [7, 7]
        }
    ));
    let f = eth(ETHERTYPE_IPV6, &ipv6(50, &[0; 12]));
    let d = decode(LINKTYPE_ETHERNET, &f);
    let Some(L3::Ipv6(v6)) = &d.l3 else { panic!() };
    assert!(matches!(
        v6.l4,
        L4::Unknown {
            proto: Some(50),
            ..
        }
    ));
    let mut chain = Vec::new();
    for _ in 0..17 {
        chain.extend_from_slice(&[60, 0, 0, 0, 0, 0, 0, 0]);
    }
    let frame = eth(ETHERTYPE_IPV6, &ipv6(60, &chain));

    let d = decode(LINKTYPE_ETHERNET, &frame);
    let Some(L3::Ipv6(v6)) = &d.l3 else { panic!() };
    assert_eq!((v6.next_header, v6.ext_count), (None, 16));
    let frame = eth(
        ETHERTYPE_IPV6,
        &ipv6(60, &[0, 0, 1, 4, 0, 0, 0, 0, 0, 0, 0, 0]),
    );

    let d = decode(LINKTYPE_ETHERNET, &frame);
    let Some(L3::Ipv6(v6)) = &d.l3 else { panic!() };
    assert_eq!(v6.next_header, None, "hop-by-hop after another header");
}

#[test]
fn tcp_with_options_and_tls() {
    let hello = build_client_hello(Some("example.org"), &["h2"]);
    let seg = tcp(50000, 443, 0x18, &[2, 4, 5, 0xb4, 1, 1, 1, 0], &hello);
    let frame = eth(ETHERTYPE_IPV4, &ipv4(6, &[], 0, &seg));

    let d = decode(LINKTYPE_ETHERNET, &frame);
    let Some(L3::Ipv4(v4)) = &d.l3 else { panic!() };
    let L4::Tcp(t, Some(App::Tls(ch))) = &v4.l4 else {
        panic!("{:?}", v4.l4)
    };
    assert_eq!(
        (t.data_offset(), t.psh(), t.ack(), ch.sni),
        (7, true, true, Some("example.org"))
    );
}

#[test]
fn icmp_and_arp() {
    let frame = eth(ETHERTYPE_IPV4, &ipv4(1, &[], 0, &[3, 3, 0, 0, 0, 0, 0, 0]));

    let d = decode(LINKTYPE_ETHERNET, &frame);
    let Some(L3::Ipv4(v4)) = &d.l3 else { panic!() };
    let L4::Icmp(i) = &v4.l4 else { panic!() };
    assert_eq!((i.icmp_type, i.code, i.v6), (3, 3, false));
    let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 1];
    arp.extend_from_slice(&[
        1, 2, 3, 4, 5, 6, 192, 168, 0, 1, 0, 0, 0, 0, 0, 0, 192, 168, 0, 2,
    ]);
    let frame = eth(ETHERTYPE_ARP, &arp);

    let d = decode(LINKTYPE_ETHERNET, &frame);
    let Some(L3::Arp(Some(a))) = &d.l3 else {
        panic!()
    };
    assert_eq!(
        (a.op, a.spa_ipv4(), a.tpa_ipv4()),
        (
            arp::ArpOp::Request,
            Some([192, 168, 0, 1]),
            Some([192, 168, 0, 2])
        )
    );
    assert!(d.l3.unwrap().flow_key().is_none());
}

#[test]
fn every_link_type() {
    let ip = ipv4(17, &[], 0, &udp(1, 2, &[]));
    let ip6 = ipv6(17, &udp(1, 2, &[]));
    let mut sll = vec![0, 4, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&ip);
    let mut sll2 = vec![
        0x86, 0xdd, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
    ];
    sll2.extend_from_slice(&ip6);
    let mut null_le = vec![2, 0, 0, 0];
    null_le.extend_from_slice(&ip);
    let mut null_be6 = vec![0, 0, 0, 30];
    null_be6.extend_from_slice(&ip6);
    let mut lp = vec![0, 0, 0, 2];
    lp.extend_from_slice(&ip);
    let cases: [(u32, &[u8], LinkKind, u16); 11] = [
        (LINKTYPE_IPV4, &ip, LinkKind::RawIpv4, 0x0800),
        (LINKTYPE_IPV6, &ip6, LinkKind::RawIpv6, 0x86DD),
        // The version nibble picks the header, as under an EtherType.
        (LINKTYPE_IPV4, &ip6, LinkKind::RawIpv4, 0x0800),
        (LINKTYPE_RAW, &ip, LinkKind::Raw, 0x0800),
        (LINKTYPE_RAW, &ip6, LinkKind::Raw, 0x86DD),
        (LINKTYPE_RAW_BSD, &ip, LinkKind::Raw, 0x0800),
        (LINKTYPE_RAW_OPENBSD, &ip6, LinkKind::Raw, 0x86DD),
        (LINKTYPE_LINUX_SLL, &sll, LinkKind::LinuxSll, 0x0800),
        (LINKTYPE_LINUX_SLL2, &sll2, LinkKind::LinuxSll2, 0x86DD),
        (LINKTYPE_NULL, &null_le, LinkKind::Null, 0x0800),
        (LINKTYPE_LOOP, &lp, LinkKind::Loop, 0x0800),
    ];
    for (lt, f, kind, eth) in cases {
        let d = decode(lt, f);
        assert!(d.error.is_none(), "{lt}: {:?}", d.error);
        let link = d.link.unwrap();
        assert_eq!((link.kind, link.eth), (kind, Some(eth)), "{lt}");
        assert_eq!(
            d.l3.unwrap().flow_key().unwrap().ports,
            Some((1, 2)),
            "{lt}"
        );
    }
    let d = decode(LINKTYPE_NULL, &null_be6);
    assert_eq!(d.link.unwrap().family, Some(30));
    assert_eq!(
        decode(LINKTYPE_LINUX_SLL2, &sll2).link.unwrap().ifindex,
        Some(3)
    );
    assert_eq!(
        decode(147, &ip).error.unwrap().to_string(),
        "unsupported link type 147"
    );
    assert_eq!(
        decode(LINKTYPE_RAW, &[0x50]).error.unwrap().to_string(),
        "invalid IP header: IP version 5 at offset 0"
    );
    assert_eq!(
        decode(LINKTYPE_IPV6, &[0x50]).error.unwrap().to_string(),
        "invalid IPv6 header: IP version 5 at offset 0"
    );
    let d = decode(LINKTYPE_IPV4, &[]);
    assert_eq!(
        d.error.unwrap().to_string(),
        "truncated IPv4 header: need 20 bytes, have 0 at offset 0"
    );
    assert_eq!(d.link.unwrap().kind.name(), "raw_ipv4");
}

/// Cut `frame` at every length and check the error names `layer` at `offset` when the cut
/// falls inside that layer's header (`start..end`).
fn check_cuts(linktype: u32, frame: &[u8], headers: &[(Layer, usize, usize)]) {
    for cut in 0..frame.len() {
        let d = decode(linktype, &frame[..cut]);
        let hit = headers.iter().find(|(_, s, e)| cut >= *s && cut < *e);
        match hit {
            Some(&(layer, start, end)) => {
                let e = d
                    .error
                    .unwrap_or_else(|| panic!("cut {cut}: no error, {:?}", d.l3));
                assert_eq!(
                    (e.kind, e.layer, e.offset),
                    (ErrorKind::Truncated, layer, start as u32),
                    "cut {cut}"
                );
                assert_eq!(e.have as usize, cut - start, "cut {cut}");
                assert!(
                    e.need as usize <= end - start && (e.need as usize) > cut - start,
                    "cut {cut}: {e}"
                );
                if start > 0 {
                    assert!(d.link.is_some(), "cut {cut}: link kept");
                }
            }
            None => assert!(d.error.is_none(), "cut {cut}: {:?}", d.error),
        }
    }
}

#[test]
fn truncation_at_every_cut() {
    let f = eth(
        ETHERTYPE_IPV4,
        &ipv4(6, &[1, 1, 1, 0], 0, &tcp(1, 2, 0x10, &[1, 1, 1, 0], &[])),
    );
    check_cuts(
        LINKTYPE_ETHERNET,
        &f,
        &[
            (Layer::Ethernet, 0, 14),
            (Layer::Ipv4, 14, 38),
            (Layer::Tcp, 38, 62),
        ],
    );
    let f = eth(ETHERTYPE_IPV4, &ipv4(17, &[], 0, &udp(1, 2, &[])));
    check_cuts(
        LINKTYPE_ETHERNET,
        &f,
        &[
            (Layer::Ethernet, 0, 14),
            (Layer::Ipv4, 14, 34),
            (Layer::Udp, 34, 42),
        ],
    );
    let f = eth(ETHERTYPE_IPV4, &ipv4(1, &[], 0, &[8, 0, 0, 0]));
    check_cuts(
        LINKTYPE_ETHERNET,
        &f,
        &[
            (Layer::Ethernet, 0, 14),
            (Layer::Ipv4, 14, 34),
            (Layer::Icmpv4, 34, 38),
        ],
    );
    let f = eth(0x88A8, &{
        let mut v = vec![0, 5, 0x81, 0x00, 0, 6, 0x86, 0xdd];
        let mut chain = vec![43, 0, 1, 4, 0, 0, 0, 0];
        chain.extend_from_slice(&[44, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        chain.extend_from_slice(&[58, 0, 0, 0, 0, 0, 0, 1]);
        chain.extend_from_slice(&[128, 0, 0, 0]);
        v.extend_from_slice(&ipv6(60, &chain));
        v
    });
    check_cuts(
        LINKTYPE_ETHERNET,
        &f,
        &[
            (Layer::Ethernet, 0, 14),
            (Layer::Vlan, 14, 18),
            (Layer::Vlan, 18, 22),
            (Layer::Ipv6, 22, 62),
            (Layer::Ipv6DestOptions, 62, 70),
            (Layer::Ipv6Routing, 70, 86),
            (Layer::Ipv6Fragment, 86, 94),
            (Layer::Icmpv6, 94, 98),
        ],
    );
    let mut arp = vec![0, 1, 8, 0, 6, 4, 0, 2];
    arp.extend_from_slice(&[0; 20]);
    check_cuts(
        LINKTYPE_ETHERNET,
        &eth(ETHERTYPE_ARP, &arp),
        &[(Layer::Ethernet, 0, 14), (Layer::Arp, 14, 42)],
    );
    let mut sll = vec![0, 4, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x08, 0x00];
    sll.extend_from_slice(&ipv4(17, &[], 0, &udp(1, 2, &[])));
    check_cuts(
        LINKTYPE_LINUX_SLL,
        &sll,
        &[
            (Layer::LinuxSll, 0, 16),
            (Layer::Ipv4, 16, 36),
            (Layer::Udp, 36, 44),
        ],
    );
    let mut sll2 = vec![
        0x08, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0,
    ];
    sll2.extend_from_slice(&ipv4(17, &[], 0, &udp(1, 2, &[])));
    check_cuts(
        LINKTYPE_LINUX_SLL2,
        &sll2,
        &[
            (Layer::LinuxSll2, 0, 20),
            (Layer::Ipv4, 20, 40),
            (Layer::Udp, 40, 48),
        ],
    );
    let mut null = vec![2, 0, 0, 0];
    null.extend_from_slice(&ipv4(17, &[], 0, &udp(1, 2, &[])));
    check_cuts(
        LINKTYPE_NULL,
        &null,
        &[
            (Layer::Loopback, 0, 4),
            (Layer::Ipv4, 4, 24),
            (Layer::Udp, 24, 32),
        ],
    );
    check_cuts(LINKTYPE_LOOP, &null, &[(Layer::Loopback, 0, 4)]);
    let raw = ipv6(17, &udp(1, 2, &[]));
    check_cuts(
        LINKTYPE_RAW,
        &raw,
        &[
            (Layer::Ip, 0, 1),
            (Layer::Ipv6, 0, 40),
            (Layer::Udp, 40, 48),
        ],
    );
}

#[test]
fn decode_allocates_nothing() {
    let hello = build_client_hello(Some("example.org"), &["h2"]);
    let frames = [
        ip4_udp(&[0; 22]),
        eth(
            ETHERTYPE_IPV4,
            &ipv4(6, &[], 0, &tcp(1, 443, 0x18, &[], &hello)),
        ),
        eth(ETHERTYPE_IPV6, &ipv6(17, &udp(53, 53, &dns_query()))),
    ];
    let mut sink = 0usize;
    let mut run = |n: usize| {
        let before = crate::alloc::thread_counts();
        for i in 0..n {
            let d = decode(LINKTYPE_ETHERNET, &frames[i % frames.len()]);
            if let Some(L3::Ipv6(v6)) = &d.l3 {
                if let L4::Udp(_, Some(App::Dns(Some(dns)))) = &v6.l4 {
                    sink += dns.question().map_or(0, |q| q.qname().len());
                }
            }
            sink +=
                d.l3.and_then(|l| l.flow_key())
                    .map_or(0, |k| k.ports.map_or(0, |p| usize::from(p.0)));
        }
        crate::alloc::thread_counts().allocs - before.allocs
    };
    run(100);
    assert_eq!(run(3_000), 0);
    assert!(sink > 0);
}

proptest::proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
                                   lt in proptest::sample::select(vec![0u32, 1, 12, 14, 101, 108, 113, 276, 9999])) {
        let d = decode(lt, &data);
        if let Some(e) = d.error { let _ = e.to_string(); }
        if let Some(l3) = &d.l3 {
            let _ = l3.flow_key();
        }
    }

    #[test]
    fn arbitrary_ip_payloads_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..120),
                                         nh in proptest::sample::select(vec![0u8, 1, 6, 17, 43, 44, 50, 51, 58, 60])) {
        let _ = decode(LINKTYPE_ETHERNET, &eth(ETHERTYPE_IPV6, &ipv6(nh, &body)));
        let _ = decode(LINKTYPE_ETHERNET, &eth(ETHERTYPE_IPV4, &ipv4(nh, &[], 0, &body)));
        let _ = decode(LINKTYPE_ETHERNET, &eth(ETHERTYPE_IPV4, &ipv4(17, &[], 0, &udp(53, 53, &body))));
        let _ = decode(LINKTYPE_ETHERNET, &eth(ETHERTYPE_IPV4, &ipv4(6, &[], 0, &tcp(1, 443, 0x18, &[], &body))));
        if let Some(d) = dns::Dns::new(&body) { let _ = d.question(); }
        let _ = tls::ClientHello::parse(&body);
    }
}

#[test]
fn ipv4_authentication_header_is_skipped() {
    let mut ah = vec![17, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
    ah.extend_from_slice(&[0; 12]);
    ah.extend_from_slice(&udp(7, 8, &[]));
    let frame = eth(ETHERTYPE_IPV4, &ipv4(51, &[], 0, &ah));
    let d = decode(LINKTYPE_ETHERNET, &frame);
    assert!(d.error.is_none(), "{:?}", d.error);
    let Some(L3::Ipv4(v4)) = &d.l3 else { panic!() };
    assert_eq!((v4.header.protocol().0, v4.l4_proto), (51, 17));
    assert_eq!(d.l3.unwrap().flow_key().unwrap().ports, Some((7, 8)));
    let frame = eth(ETHERTYPE_IPV4, &ipv4(51, &[], 0, &ah[..10]));
    let e = decode(LINKTYPE_ETHERNET, &frame).error.unwrap();
    assert_eq!(
        e.to_string(),
        "truncated IP authentication header: need 12 bytes, have 10 at offset 34"
    );
}

#[test]
fn version_nibble_picks_the_ip_header() {
    let frame = eth(ETHERTYPE_IPV4, &ipv6(17, &udp(1, 2, &[])));
    let d = decode(LINKTYPE_ETHERNET, &frame);
    assert!(d.error.is_none());
    assert_eq!(d.link.unwrap().eth, Some(ETHERTYPE_IPV4));
    assert!(matches!(d.l3, Some(L3::Ipv6(_))));
    let frame = eth(ETHERTYPE_IPV6, &[0x75; 40]);
    let e = decode(LINKTYPE_ETHERNET, &frame).error.unwrap();
    assert_eq!(
        e.to_string(),
        "invalid IPv6 header: IP version 7 at offset 14"
    );
}

#[test]
fn fourth_vlan_tag_is_invalid() {
    let mut body = Vec::new();
    for vid in 1..=3u16 {
        body.extend_from_slice(&vid.to_be_bytes());
        body.extend_from_slice(&0x8100u16.to_be_bytes());
    }
    body.extend_from_slice(&[0, 4, 0x08, 0x00]);
    let frame = eth(0x8100, &body);
    let d = decode(LINKTYPE_ETHERNET, &frame);
    assert_eq!(d.link.unwrap().vlan.as_slice().len(), 3);
    assert_eq!(
        d.error.unwrap().to_string(),
        "invalid VLAN header: more than 3 tags at offset 26"
    );
    assert!(matches!(d.l3, Some(L3::Unknown(Some(0x8100)))));
}

/// Length fields smaller than the header they cover: the layers are kept, the IPv4 total
/// length (1 to the header length) and the UDP length (below 8) are reported; IPv4 total
/// length 0 and IPv6 payload length 0 are presumed offloaded segmentation.
#[test]
fn length_fields_below_their_header() {
    let dns = udp(40000, 53, &dns_query());
    let mut v4 = ipv4(17, &[], 0, &dns);
    v4[2..4].copy_from_slice(&19u16.to_be_bytes());
    let frame = eth(ETHERTYPE_IPV4, &v4);
    let d = decode(LINKTYPE_ETHERNET, &frame);
    assert_eq!(
        d.error.unwrap().to_string(),
        "invalid IPv4 header: total length 19 (below the header length 20) at offset 14"
    );
    let Some(L3::Ipv4(ip)) = &d.l3 else {
        panic!("{:?}", d.l3)
    };
    assert_eq!(ip.presumed_total_length, None);
    let L4::Udp(u, Some(App::Dns(Some(q)))) = &ip.l4 else {
        panic!("{:?}", ip.l4)
    };
    assert_eq!(u.destination_port(), 53);
    assert_eq!(q.question().unwrap().qname(), "example.com");

    // The IPv4 problem is reported even when a later header is also cut.
    let cut = &eth(ETHERTYPE_IPV4, &v4)[..14 + 20 + 4];
    let e = decode(LINKTYPE_ETHERNET, cut).error.unwrap();
    assert_eq!(e.layer, Layer::Ipv4);

    // Total length 0: presumed, no error.
    v4[2..4].copy_from_slice(&[0, 0]);
    let frame = eth(ETHERTYPE_IPV4, &v4);
    let d = decode(LINKTYPE_ETHERNET, &frame);
    assert!(d.error.is_none(), "{:?}", d.error);
    let Some(L3::Ipv4(ip)) = &d.l3 else { panic!() };
    assert_eq!(ip.presumed_total_length, Some(20 + dns.len()));

    // UDP length below 8: reported, ports and payload kept (to the end of the IP payload).
    for (n, v6) in [(3u16, false), (0, false), (7, true)] {
        let mut u = udp(1000, 2000, b"abcdefgh");
        u[4..6].copy_from_slice(&n.to_be_bytes());
        let frame = if v6 {
            eth(ETHERTYPE_IPV6, &ipv6(17, &u))
        } else {
            eth(ETHERTYPE_IPV4, &ipv4(17, &[], 0, &u))
        };
        let d = decode(LINKTYPE_ETHERNET, &frame);
        let at = if v6 { 54 } else { 34 };
        assert_eq!(
            d.error.unwrap().to_string(),
            format!("invalid UDP header: length {n} (below 8) at offset {at}")
        );
        let key = d.l3.unwrap().flow_key().unwrap();
        assert_eq!(key.ports, Some((1000, 2000)));
    }

    // IPv6 payload length 0: presumed to run to the end of the capture; UDP length 0 is
    // then a jumbogram's, not an error. With a Jumbo Payload option nothing is presumed.
    let mut u = udp(1000, 2000, b"abcdefgh");
    u[4..6].copy_from_slice(&[0, 0]);
    let mut v6 = ipv6(17, &u);
    v6[4..6].copy_from_slice(&[0, 0]);
    let d = decode(LINKTYPE_RAW, &v6);
    assert!(d.error.is_none(), "{:?}", d.error);
    let Some(L3::Ipv6(ip)) = &d.l3 else { panic!() };
    assert_eq!(ip.presumed_payload_length, Some(16));
    let mut hbh = vec![17, 0, 0xC2, 4, 0, 1, 0, 0];
    hbh.extend_from_slice(&u);
    let mut jumbo = ipv6(0, &hbh);
    jumbo[4..6].copy_from_slice(&[0, 0]);
    let d = decode(LINKTYPE_RAW, &jumbo);
    let Some(L3::Ipv6(ip)) = &d.l3 else { panic!() };
    assert_eq!(
        (ip.presumed_payload_length, ip.next_header),
        (None, Some(17))
    );
    assert!(d.error.is_none());
    // A header with nothing after it is not presumed to carry anything.
    let bare = ipv6(59, &[]);
    let d = decode(LINKTYPE_RAW, &bare);
    let Some(L3::Ipv6(ip)) = &d.l3 else { panic!() };
    assert_eq!(ip.presumed_payload_length, None);

    // TCP data offset below 5 stays invalid: no ports (the header cannot be sliced).
    let mut t = tcp(1, 2, 0x02, &[], &[0; 8]);
    t[12] = 4 << 4;
    let bad_tcp = ipv4(6, &[], 0, &t);
    let d = decode(LINKTYPE_RAW, &bad_tcp);
    assert_eq!(
        d.error.unwrap().to_string(),
        "invalid TCP header: data offset 4 (below 5) at offset 20"
    );
    assert_eq!(d.l3.unwrap().flow_key().unwrap().ports, None);
}
