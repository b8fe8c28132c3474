//! The fast path agrees with the full decoder (`crate::decode::decode`) on IP version,
//! protocol, addresses and ports, exactly; and with etherparse's `LaxSlicedPacket` (which
//! the decoder is built on) wherever the decoder follows etherparse. Over a corpus of
//! generated frames and every prefix of each, and over random and mutated bytes.

use etherparse::{LaxNetSlice, LaxSlicedPacket, TransportSlice};
use proptest::prelude::*;

use super::testdata;
use crate::decode::fastpath::{self, linktype, FlowFields};
use crate::decode::{DecodeError, ErrorKind, Invalid};

/// What both decoders are compared on.
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

/// Whether an Ethernet frame's tag chain holds something only one side knows
/// (TPID 0x9200, MACsec); such frames are left out of the comparison.
fn outside_common_rules(lt: u32, data: &[u8]) -> bool {
    if lt != linktype::ETHERNET {
        return false;
    }
    let mut off = 12;
    for _ in 0..4 {
        match data
            .get(off..off + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
        {
            Some(0x9200) | Some(0x88E5) => return true,
            Some(0x8100) | Some(0x88A8) | Some(0x9100) => off += 4,
            _ => return false,
        }
    }
    false
}

/// The etherparse view, plus whether etherparse marks the IP payload as fragmented and
/// the first four bytes of that payload (where ports sit on a first fragment).
fn etherparse_view(lt: u32, data: &[u8]) -> (View, bool, Option<(u16, u16)>) {
    let none = View {
        ip_version: 0,
        protocol: None,
        src: [0; 16],
        dst: [0; 16],
        ports: None,
    };
    let sliced = match lt {
        linktype::ETHERNET => LaxSlicedPacket::from_ethernet(data).ok(),
        _ => LaxSlicedPacket::from_ip(data).ok(),
    };
    let Some(p) = sliced else {
        return (none, false, None);
    };
    let (ip_version, src, dst) = match &p.net {
        Some(LaxNetSlice::Ipv4(s)) => (
            4,
            mapped(s.header().source()),
            mapped(s.header().destination()),
        ),
        Some(LaxNetSlice::Ipv6(s)) => (6, s.header().source(), s.header().destination()),
        _ => return (none, false, None),
    };
    let payload = p
        .net
        .as_ref()
        .and_then(|n| n.ip_payload_ref())
        .expect("IP has a payload");
    let ports = match &p.transport {
        Some(TransportSlice::Udp(u)) => Some((u.source_port(), u.destination_port())),
        Some(TransportSlice::Tcp(t)) => Some((t.source_port(), t.destination_port())),
        _ => None,
    };
    let head = payload.payload.get(..4).map(|b| {
        (
            u16::from_be_bytes([b[0], b[1]]),
            u16::from_be_bytes([b[2], b[3]]),
        )
    });
    let view = View {
        ip_version,
        protocol: Some(payload.ip_number.0),
        src,
        dst,
        ports,
    };
    (view, payload.fragmented, head)
}

fn fast_view(f: &FlowFields) -> View {
    if f.ip_version == 0 {
        return View {
            ip_version: 0,
            protocol: None,
            src: [0; 16],
            dst: [0; 16],
            ports: None,
        };
    }
    View {
        ip_version: f.ip_version,
        protocol: f.has_protocol.then_some(f.protocol),
        src: f.src,
        dst: f.dst,
        ports: f.has_ports.then_some((f.src_port, f.dst_port)),
    }
}

/// Compare one frame with etherparse; returns false when the frame was left out because
/// the decoder (and so the fast path) departs from etherparse there: a non-first fragment
/// (the bytes after its header are not headers), an IPv6 extension chain the decoder
/// rejects, a 0x9200 tag, MACsec.
fn check(lt: u32, data: &[u8]) -> bool {
    if outside_common_rules(lt, data) {
        return false;
    }
    let mut f = FlowFields::default();
    fastpath::parse(lt, data, &mut f);
    if f.later_fragment || (f.ip_version == 6 && !f.has_protocol) {
        return false;
    }
    let fast = fast_view(&f);
    let (ep, fragmented, head) = etherparse_view(lt, data);
    if fragmented {
        // etherparse leaves every fragment's transport unparsed; the fast path (and the
        // decoder) read the ports of first fragments, from the first bytes of the payload.
        assert!(f.fragment, "fragment flag differs for {data:02x?}");
        assert_eq!(ep.ports, None);
        if fast.ports.is_some() {
            assert_eq!(fast.ports, head, "first-fragment ports for {data:02x?}");
        }
        let fast = View {
            ports: None,
            ..fast
        };
        assert_eq!(fast, ep, "linktype {lt} frame {data:02x?}");
    } else {
        assert_eq!(fast, ep, "linktype {lt} frame {data:02x?}");
    }
    true
}

#[test]
fn corpus_and_every_prefix_agree() {
    let mut compared = 0;
    let corpus = testdata::corpus();
    assert!(corpus.len() > 100);
    for (lt, frame) in &corpus {
        for n in 0..=frame.len() {
            if check(*lt, &frame[..n]) {
                compared += 1;
            }
        }
    }
    // The corpus must actually exercise ports, fragments and extension headers.
    let mut with_ports = 0;
    let mut fragments = 0;
    let mut v6_ext = 0;
    for (lt, frame) in &corpus {
        let mut f = FlowFields::default();
        fastpath::parse(*lt, frame, &mut f);
        with_ports += usize::from(f.has_ports);
        fragments += usize::from(f.fragment);
        v6_ext += usize::from(f.ip_version == 6 && f.fragment);
    }
    assert!(compared > 5_000, "{compared}");
    assert!(
        with_ports > 20 && fragments > 10 && v6_ext > 2,
        "{with_ports} {fragments} {v6_ext}"
    );
}

/// A corpus frame with up to five bytes overwritten and up to a quarter cut off its end.
fn mutated_frame() -> impl Strategy<Value = (u32, Vec<u8>)> {
    let edits = proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6);
    (
        any::<prop::sample::Index>(),
        edits,
        any::<prop::sample::Index>(),
    )
        .prop_map(|(pick, edits, cut)| {
            let corpus = testdata::corpus();
            let (lt, frame) = &corpus[pick.index(corpus.len())];
            let mut data = frame.clone();
            for (at, byte) in edits {
                let i = at.index(data.len());
                data[i] = byte;
            }
            let keep = data.len() - cut.index(data.len() / 4 + 1);
            data.truncate(keep);
            (*lt, data)
        })
}

fn any_linktype() -> impl Strategy<Value = u32> {
    prop_oneof![Just(linktype::ETHERNET), Just(linktype::RAW)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_agree(lt in any_linktype(), data in proptest::collection::vec(any::<u8>(), 0..160)) {
        check(lt, &data);
    }

    #[test]
    fn mutated_corpus_agrees((lt, data) in mutated_frame()) {
        check(lt, &data);
    }
}

// ---- against the full decoder (`crate::decode::decode`) ---------------------------------

/// The full decoder's view.
fn decoder_view(lt: u32, data: &[u8]) -> View {
    use crate::decode::{decode, L3};
    let none = View {
        ip_version: 0,
        protocol: None,
        src: [0; 16],
        dst: [0; 16],
        ports: None,
    };
    let d = decode(lt, data);
    let (ip_version, protocol, src, dst, l4) = match &d.l3 {
        Some(L3::Ipv4(v4)) => (
            4,
            Some(v4.l4_proto),
            mapped(v4.header.source()),
            mapped(v4.header.destination()),
            &v4.l4,
        ),
        Some(L3::Ipv6(v6)) => (
            6,
            v6.next_header,
            v6.header.source(),
            v6.header.destination(),
            &v6.l4,
        ),
        _ => return none,
    };
    View {
        ip_version,
        protocol,
        src,
        dst,
        ports: l4.ports(),
    }
}

/// Compare one frame with the full decoder: every field equal, and a stop the fast path
/// reports is the decoder's error, field for field (layer, kind, need, have, offset).
fn check_decoder(lt: u32, data: &[u8]) {
    let mut f = FlowFields::default();
    fastpath::parse(lt, data, &mut f);
    assert_eq!(
        fast_view(&f),
        decoder_view(lt, data),
        "linktype {lt} frame {data:02x?}"
    );
    if let Some(e) = f.error {
        let d = crate::decode::decode(lt, data).error;
        assert_eq!(Some(e), d, "linktype {lt} frame {data:02x?}: {e}");
    }
    // A length field below the header it covers is reported by both, the walk gone on.
    if let Some(
        d @ DecodeError {
            kind: ErrorKind::Invalid(Invalid::Ipv4TotalLength { .. } | Invalid::UdpLength(_)),
            ..
        },
    ) = crate::decode::decode(lt, data).error
    {
        assert_eq!(
            f.error,
            Some(d),
            "length rule, linktype {lt} frame {data:02x?}"
        );
    }
}

#[test]
fn corpus_and_every_prefix_agree_with_the_decoder() {
    let corpus = testdata::corpus();
    for (lt, frame) in &corpus {
        for n in 0..=frame.len() {
            check_decoder(*lt, &frame[..n]);
        }
    }
    // 0x9200 tags and other link types, which etherparse alone does not cover.
    let ip = testdata::ipv4(
        17,
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        0,
        0,
        &testdata::udp(1, 2, 3),
    );
    let mut frames = vec![
        (
            linktype::ETHERNET,
            testdata::ethernet(0x0800, &[(0x9200, 9)], &ip),
        ),
        (
            linktype::ETHERNET,
            testdata::ethernet(0x0800, &[(0x9200, 9), (0x8100, 1), (0x9100, 2)], &ip),
        ),
    ];
    let mut sll = vec![0; 14];
    sll.extend_from_slice(&[0x08, 0x00]);
    sll.extend_from_slice(&ip);
    frames.push((linktype::LINUX_SLL, sll));
    let mut sll2 = vec![0x08, 0x00];
    sll2.extend_from_slice(&[0; 18]);
    sll2.extend_from_slice(&ip);
    frames.push((linktype::LINUX_SLL2, sll2));
    frames.push((linktype::IPV4, ip.clone()));
    frames.push((
        linktype::IPV6,
        testdata::ipv6(
            testdata::V6A,
            testdata::V6B,
            &[],
            17,
            &testdata::udp(1, 2, 3),
        ),
    ));
    for (lt, head) in [
        (linktype::NULL, [2u8, 0, 0, 0]),
        (linktype::NULL, [0, 0, 0, 2]),
        (linktype::LOOP, [0, 0, 0, 2]),
    ] {
        let mut f = head.to_vec();
        f.extend_from_slice(&ip);
        frames.push((lt, f));
    }
    for (lt, frame) in &frames {
        let mut f = FlowFields::default();
        fastpath::parse(*lt, frame, &mut f);
        assert!(f.has_ports, "linktype {lt}");
        for n in 0..=frame.len() {
            check_decoder(*lt, &frame[..n]);
        }
    }
}

/// The decoder's golden frames: the fuzz seeds, each a link-type index (into the fuzz
/// target's table) followed by the frame.
fn golden_frames() -> Vec<(u32, Vec<u8>)> {
    const SEED_LINKTYPES: [u32; 11] = [0, 1, 12, 14, 101, 108, 113, 276, 147, 228, 229];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/decode");
    let mut out = Vec::new();
    for entry in
        std::fs::read_dir(&dir).expect("fuzz/seeds/decode holds the decoder's golden frames")
    {
        let bytes = std::fs::read(entry.expect("a seed file").path()).expect("a readable seed");
        if let Some((&index, frame)) = bytes.split_first() {
            out.push((
                SEED_LINKTYPES[usize::from(index) % SEED_LINKTYPES.len()],
                frame.to_vec(),
            ));
        }
    }
    out
}

#[test]
fn golden_frames_and_every_prefix_agree_with_the_decoder() {
    let golden = golden_frames();
    let with_l3 = golden
        .iter()
        .filter(|(lt, f)| decoder_view(*lt, f).ip_version != 0)
        .count();
    assert!(
        golden.len() >= 50 && with_l3 * 2 >= golden.len(),
        "{with_l3} of {} golden frames carry IP",
        golden.len()
    );
    for (lt, frame) in &golden {
        for n in 0..=frame.len() {
            check_decoder(*lt, &frame[..n]);
        }
    }
}

fn decoder_linktype() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(linktype::ETHERNET),
        Just(linktype::RAW),
        Just(linktype::LINUX_SLL),
        Just(linktype::LINUX_SLL2),
        Just(linktype::NULL),
        Just(linktype::LOOP),
        Just(linktype::RAW_12),
        Just(linktype::RAW_14),
        Just(linktype::IPV4),
        Just(linktype::IPV6),
        Just(9999u32),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_agree_with_the_decoder(lt in decoder_linktype(), data in proptest::collection::vec(any::<u8>(), 0..160)) {
        check_decoder(lt, &data);
    }

    #[test]
    fn mutated_corpus_agrees_with_the_decoder((lt, data) in mutated_frame()) {
        check_decoder(lt, &data);
    }

    #[test]
    fn random_ip_payloads_agree_with_the_decoder(
        body in proptest::collection::vec(any::<u8>(), 0..80),
        proto in proptest::sample::select(vec![6u8, 17, 1, 58, 43, 44, 51, 60, 0]),
    ) {
        let v4 = testdata::ipv4(proto, [10, 0, 0, 1], [10, 0, 0, 2], 0, 0, &body);
        check_decoder(linktype::ETHERNET, &testdata::ethernet(0x0800, &[], &v4));
        let v6 = testdata::ipv6(testdata::V6A, testdata::V6B, &[], proto, &body);
        check_decoder(linktype::ETHERNET, &testdata::ethernet(0x86DD, &[], &v6));
    }
}

/// Each length field below its header is reported alike by both decoders.
#[test]
fn length_rules_agree_with_the_decoder() {
    let udp = |n: Option<u16>| {
        let mut u = testdata::udp(1000, 2000, 8);
        if let Some(n) = n {
            u[4..6].copy_from_slice(&n.to_be_bytes());
        }
        u
    };
    let v4 = |total: u16, body: &[u8]| {
        let mut p = testdata::ipv4(17, [10, 0, 0, 1], [10, 0, 0, 2], 0, 0, body);
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p
    };
    let v6 = |plen: Option<u16>, body: &[u8]| {
        let mut p = testdata::ipv6(testdata::V6A, testdata::V6B, &[], 17, body);
        if let Some(n) = plen {
            p[4..6].copy_from_slice(&n.to_be_bytes());
        }
        p
    };
    let cases: Vec<(Vec<u8>, Option<&str>)> = vec![
        (v4(19, &udp(None)), Some("IPv4 total length")),
        (v4(1, &udp(Some(3))), Some("IPv4 total length")),
        (v4(0, &udp(None)), None),
        (v4(36, &udp(Some(3))), Some("UDP length")),
        (v4(36, &udp(Some(0))), Some("UDP length")),
        (v6(None, &udp(Some(7))), Some("UDP length")),
        (v6(None, &udp(Some(0))), Some("UDP length")),
        (v6(Some(0), &udp(Some(0))), None),
        (v6(Some(0), &udp(Some(5))), Some("UDP length")),
    ];
    for (ip, want) in &cases {
        for lt in [linktype::RAW, linktype::ETHERNET] {
            let frame = if lt == linktype::RAW {
                ip.clone()
            } else {
                testdata::ethernet(if ip[0] >> 4 == 4 { 0x0800 } else { 0x86DD }, &[], ip)
            };
            let rule = match crate::decode::decode(lt, &frame).error.map(|e| e.kind) {
                Some(ErrorKind::Invalid(Invalid::Ipv4TotalLength { .. })) => {
                    Some("IPv4 total length")
                }
                Some(ErrorKind::Invalid(Invalid::UdpLength(_))) => Some("UDP length"),
                _ => None,
            };
            assert_eq!(rule, *want, "{frame:02x?}");
            check_decoder(lt, &frame);
            let mut f = FlowFields::default();
            fastpath::parse(lt, &frame, &mut f);
            assert!(f.has_ports, "ports kept: {frame:02x?}");
        }
    }
}
