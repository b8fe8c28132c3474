//! Fuzz the L7 readers: bytes -> the fingerprint engine (TLS and HTTP reassembly across TCP
//! segments, QUIC Initial decryption, X.509 certificates, SSH, DHCP) and the flow table with
//! every feature group on (statistical, SPLT, MACs, app hints, fingerprint columns).
//!
//! Input: one option byte (link type, direction, timeouts, reversed order), then frames, each
//! `[length: u16 big-endian][time step][bytes]`, so frames can reach QUIC's 1,200 bytes. With
//! the reversed-order bit the frames are fed last to first (timestamps too), so segments
//! arrive out of order and before their handshakes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paclo::fingerprint::columns::FingerprintColumns;
use paclo::fingerprint::{Config, Fingerprinter, Methods};
use paclo::flow::{FeatureSpec, FlowOptions, FlowTable};
use paclo::RawPacket;

/// The link types of the fuzz targets (the decode target's table).
const LINKTYPES: [u32; 11] = [0, 1, 12, 14, 101, 108, 113, 276, 147, 228, 229];

fuzz_target!(|input: &[u8]| {
    let Some((&opts, mut rest)) = input.split_first() else {
        return;
    };
    let linktype = LINKTYPES[usize::from(opts & 0x0f) % LINKTYPES.len()];
    let mut frames: Vec<(i64, &[u8])> = Vec::new();
    let mut ts = 1_700_000_000_000_000_000i64;
    while let [hi, lo, step, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo]));
        let (data, after) = tail.split_at(len.min(tail.len()));
        rest = after;
        ts = ts.saturating_add(i64::from(*step) * 1_000_003);
        frames.push((ts, data));
    }
    if opts & 0x20 != 0 {
        frames.reverse();
    }
    let features = FeatureSpec::parse(&["all", "fingerprints"], 8).expect("valid features");
    let flow_opts = FlowOptions {
        bidirectional: opts & 0x10 != 0,
        idle_timeout_ns: (opts & 0x40 != 0).then_some(2_000_000),
        features,
        ..Default::default()
    };
    let mut table = FlowTable::new(flow_opts);
    let mut engine = Fingerprinter::new(Config {
        methods: Methods::ALL,
        tls_streams: 4,
        http_streams: 4,
        quic_connections: 4,
        ..Config::default()
    });
    let mut columns = FingerprintColumns::default();
    let mut events = 0usize;
    for &(ts_ns, data) in &frames {
        let pkt = RawPacket {
            ts_ns,
            caplen: data.len() as u32,
            wirelen: data.len() as u32,
            linktype,
            data,
        };
        table.push(&pkt);
        engine.process(&pkt, &mut |e| {
            std::hint::black_box((e.value_str(), e.raw_str()));
            columns.push(e);
            events += 1;
        });
    }
    engine.finish(&mut |e| {
        columns.push(e);
        events += 1;
    });
    assert_eq!(columns.len(), events);
    assert_eq!(columns.finish().num_rows(), events);
    assert_eq!(table.counts().0, frames.len() as u64);
    std::hint::black_box(table.to_batch());
});
