//! The fast path and etherparse's lax slicing (the full decoder) agree on IP version,
//! protocol, addresses and ports: over a corpus of generated frames and every prefix of
//! each, and over random and mutated bytes.

use etherparse::{LaxNetSlice, LaxSlicedPacket, TransportSlice};
use proptest::prelude::*;

use super::testdata;
use crate::decode::fastpath::{self, linktype, FlowFields, StopReason};

/// What both decoders are compared on.
#[derive(Debug, PartialEq, Eq)]
struct View {
    ip_version: u8,
    protocol: u8,
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
        match data.get(off..off + 2).map(|b| u16::from_be_bytes([b[0], b[1]])) {
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
    let none = View { ip_version: 0, protocol: 0, src: [0; 16], dst: [0; 16], ports: None };
    let sliced = match lt {
        linktype::ETHERNET => LaxSlicedPacket::from_ethernet(data).ok(),
        _ => LaxSlicedPacket::from_ip(data).ok(),
    };
    let Some(p) = sliced else { return (none, false, None) };
    let (ip_version, src, dst) = match &p.net {
        Some(LaxNetSlice::Ipv4(s)) => (4, mapped(s.header().source()), mapped(s.header().destination())),
        Some(LaxNetSlice::Ipv6(s)) => (6, s.header().source(), s.header().destination()),
        _ => return (none, false, None),
    };
    let payload = p.net.as_ref().and_then(|n| n.ip_payload_ref()).expect("IP has a payload");
    let ports = match &p.transport {
        Some(TransportSlice::Udp(u)) => Some((u.source_port(), u.destination_port())),
        Some(TransportSlice::Tcp(t)) => Some((t.source_port(), t.destination_port())),
        _ => None,
    };
    let head = payload
        .payload
        .get(..4)
        .map(|b| (u16::from_be_bytes([b[0], b[1]]), u16::from_be_bytes([b[2], b[3]])));
    let view = View { ip_version, protocol: payload.ip_number.0, src, dst, ports };
    (view, payload.fragmented, head)
}

fn fast_view(f: &FlowFields) -> View {
    if f.ip_version == 0 {
        return View { ip_version: 0, protocol: 0, src: [0; 16], dst: [0; 16], ports: None };
    }
    View {
        ip_version: f.ip_version,
        protocol: f.protocol,
        src: f.src,
        dst: f.dst,
        ports: f.has_ports.then_some((f.src_port, f.dst_port)),
    }
}

/// Compare one frame; returns false when the frame was left out.
fn check(lt: u32, data: &[u8]) -> bool {
    if outside_common_rules(lt, data) {
        return false;
    }
    let mut f = FlowFields::default();
    fastpath::parse(lt, data, &mut f);
    if f.error == Some(StopReason::TooManyExtensions) {
        return false;
    }
    let fast = fast_view(&f);
    let (ep, fragmented, head) = etherparse_view(lt, data);
    if fragmented {
        // etherparse leaves every fragment's transport unparsed; the fast path reads ports
        // of first fragments, from the first bytes of the same payload.
        assert!(f.fragment, "fragment flag differs for {data:02x?}");
        assert_eq!(ep.ports, None);
        if fast.ports.is_some() {
            assert_eq!(fast.ports, head, "first-fragment ports for {data:02x?}");
        }
        let fast = View { ports: None, ..fast };
        assert_eq!(fast, ep, "linktype {lt} frame {data:02x?}");
    } else {
        assert!(!f.fragment || ep.ip_version == 0 || f.error.is_some(), "fragment flag for {data:02x?}");
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
    assert!(with_ports > 20 && fragments > 10 && v6_ext > 2, "{with_ports} {fragments} {v6_ext}");
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
    fn mutated_corpus_agrees(
        pick in any::<prop::sample::Index>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let corpus = testdata::corpus();
        let (lt, frame) = &corpus[pick.index(corpus.len())];
        let mut data = frame.clone();
        for (at, byte) in edits {
            let i = at.index(data.len());
            data[i] = byte;
        }
        let keep = data.len() - cut.index(data.len() / 4 + 1);
        data.truncate(keep);
        check(*lt, &data);
    }
}
