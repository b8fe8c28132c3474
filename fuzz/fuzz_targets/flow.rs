//! Fuzz the flow path: bytes -> fast path -> flow table and projection builders.
//!
//! Input: one option byte (link type, direction, timeouts, VLAN keying), then frames, each
//! `[length][time step][bytes]`. Every frame is pushed into a flow table, the projection
//! builder and the raw-batch builder (batches of 8 and 5 rows, so that batches fill); the
//! table is then turned into a batch (with timeouts) or rows; without timeouts the table of
//! two halves merged must equal the whole table.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paclo::flow::{FlowOptions, FlowTable, ProjectionBuilder, RawBatchBuilder};
use paclo::RawPacket;

/// The link types of the fuzz targets (the decode target's table).
const LINKTYPES: [u32; 11] = [0, 1, 12, 14, 101, 108, 113, 276, 147, 228, 229];

/// A timestamp after `ts`: steps of about a millisecond, and the two extremes a pcapng
/// timestamp can saturate to.
fn next_ts(ts: i64, step: u8) -> i64 {
    match step {
        0xff => i64::MAX,
        0xfe => i64::MIN,
        s => ts.saturating_add(i64::from(s) * 1_000_003),
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&opts, mut rest)) = input.split_first() else {
        return;
    };
    let linktype = LINKTYPES[usize::from(opts & 0x0f) % LINKTYPES.len()];
    let timeouts = opts & 0x20 != 0;
    let flow_opts = FlowOptions {
        bidirectional: opts & 0x10 != 0,
        idle_timeout_ns: timeouts.then_some(2_000_000),
        active_timeout_ns: (opts & 0x40 != 0).then_some(5_000_000),
        key_vlan: opts & 0x80 != 0,
        ..Default::default()
    };
    let mut whole = FlowTable::new(flow_opts);
    let mut halves = [FlowTable::new(flow_opts), FlowTable::new(flow_opts)];
    let mut projection = ProjectionBuilder::new(8);
    let mut raw = RawBatchBuilder::new(5);
    let (mut ts, mut n, mut rows) = (1_700_000_000_000_000_000i64, 0usize, 0usize);
    while let [len, step, tail @ ..] = rest {
        let (data, after) = tail.split_at(usize::from(*len).min(tail.len()));
        rest = after;
        ts = next_ts(ts, *step);
        let pkt = RawPacket {
            ts_ns: ts,
            caplen: data.len() as u32,
            wirelen: data.len() as u32 + u32::from(*step & 3),
            linktype,
            data,
        };
        whole.push(&pkt);
        halves[n % 2].push(&pkt);
        projection.push(&pkt);
        raw.push(&pkt);
        n += 1;
        if projection.is_full() {
            rows += projection.finish().map_or(0, |b| b.num_rows());
        }
        if raw.is_full() {
            std::hint::black_box(raw.finish());
        }
    }
    rows += projection.finish().map_or(0, |b| b.num_rows());
    assert_eq!(rows, n);
    std::hint::black_box(raw.finish());
    assert_eq!(whole.counts().0, n as u64);
    if timeouts || flow_opts.active_timeout_ns.is_some() {
        std::hint::black_box(whole.to_batch());
        return;
    }
    let [mut merged, second] = halves;
    merged.merge(second);
    assert_eq!(merged.counts(), whole.counts());
    let (a, b) = (merged.rows(), whole.rows());
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!((x.0, x.1.packets, x.1.bytes), (y.0, y.1.packets, y.1.bytes));
    }
});
