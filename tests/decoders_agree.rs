//! The full decoder (`decode::decode`) and the flow fast path (`decode::fastpath::parse`)
//! agree on what a packet's flow is: IP version, protocol, addresses and ports, or both say
//! there is no IP layer. The corpus is the decoder's golden frames (the fuzz seeds), every
//! prefix of each, and random and mutated bytes under every link type.

use std::path::Path;

use paclo::decode::fastpath::{self, FlowFields};
use paclo::decode::{decode, L3};
use proptest::prelude::*;

/// The fuzz target's link-type table: a seed's first byte indexes it.
const SEED_LINKTYPES: [u32; 9] = [0, 1, 12, 14, 101, 108, 113, 276, 147];

#[derive(Debug, PartialEq, Eq)]
struct Flow {
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

/// The flow the full decoder sees; `None` when it has no IP layer with a protocol.
fn from_decoder(linktype: u32, data: &[u8]) -> Option<Flow> {
    let d = decode(linktype, data);
    let l3 = d.l3.as_ref()?;
    let key = l3.flow_key()?;
    let (ip_version, src, dst) = match l3 {
        L3::Ipv4(v4) => (4, mapped(v4.header.source()), mapped(v4.header.destination())),
        L3::Ipv6(v6) => (6, v6.header.source(), v6.header.destination()),
        _ => return None,
    };
    let protocol = match l3 {
        L3::Ipv4(v4) => v4.l4_proto,
        L3::Ipv6(v6) => v6.next_header?,
        _ => unreachable!(),
    };
    Some(Flow { ip_version, protocol, src, dst, ports: key.ports })
}

/// The flow the fast path sees; `None` when it has no IP layer.
fn from_fastpath(linktype: u32, data: &[u8]) -> Option<Flow> {
    let mut f = FlowFields::default();
    fastpath::parse(linktype, data, &mut f);
    if f.ip_version == 0 {
        return None;
    }
    Some(Flow {
        ip_version: f.ip_version,
        protocol: f.protocol,
        src: f.src,
        dst: f.dst,
        ports: f.has_ports.then_some((f.src_port, f.dst_port)),
    })
}

fn assert_agree(linktype: u32, data: &[u8]) {
    let full = from_decoder(linktype, data);
    let fast = from_fastpath(linktype, data);
    assert_eq!(
        full, fast,
        "decoders disagree on link type {linktype}, {} bytes: {:02x?}",
        data.len(),
        data
    );
}

fn seeds() -> Vec<(u32, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds/decode");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("fuzz/seeds/decode holds the golden frames") {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        if let Some((&first, frame)) = bytes.split_first() {
            out.push((SEED_LINKTYPES[usize::from(first) % SEED_LINKTYPES.len()], frame.to_vec()));
        }
    }
    assert!(out.len() >= 50, "expected the golden corpus, found {} seeds", out.len());
    out
}

#[test]
fn golden_frames_and_every_prefix_agree() {
    let seeds = seeds();
    let with_l3 = seeds.iter().filter(|(lt, f)| from_decoder(*lt, f).is_some()).count();
    assert!(with_l3 * 2 >= seeds.len(), "most golden frames carry an IP flow ({with_l3} of {})", seeds.len());
    for (linktype, frame) in &seeds {
        for cut in 0..=frame.len() {
            assert_agree(*linktype, &frame[..cut]);
        }
    }
}

fn any_linktype() -> impl Strategy<Value = u32> {
    prop::sample::select(vec![0u32, 1, 12, 14, 101, 108, 113, 228, 229, 276, 147])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn random_bytes_agree(linktype in any_linktype(), data in prop::collection::vec(any::<u8>(), 0..200)) {
        assert_agree(linktype, &data);
    }

    #[test]
    fn mutated_golden_frames_agree(index in any::<prop::sample::Index>(), flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let seeds = seeds();
        let (linktype, frame) = &seeds[index.index(seeds.len())];
        let mut data = frame.clone();
        if data.is_empty() {
            return Ok(());
        }
        for (at, value) in flips {
            let i = at.index(data.len());
            data[i] = value;
        }
        assert_agree(*linktype, &data);
    }
}

#[test]
#[ignore]
fn census() {
    let mut n = 0;
    for (linktype, frame) in seeds() {
        for cut in 0..=frame.len() {
            let (a, b) = (from_decoder(linktype, &frame[..cut]), from_fastpath(linktype, &frame[..cut]));
            if a != b {
                n += 1;
                if n < 12 {
                    let d = decode(linktype, &frame[..cut]);
                    println!("lt {linktype} cut {cut}/{}: full={:?} fast={:?} err={:?}", frame.len(),
                        a.as_ref().map(|f| (f.ip_version, f.protocol, f.ports)), b.as_ref().map(|f| (f.ip_version, f.protocol, f.ports)), d.error.map(|e| e.to_string()));
                }
            }
        }
    }
    println!("total disagreements: {n}");
}
