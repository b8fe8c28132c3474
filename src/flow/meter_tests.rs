//! The flow meter and its feature groups: statistics against a direct two-pass
//! computation, early-flow lists, MACs, eviction, eager expiry, streams against the
//! whole table, flow ids, and no allocation per packet with every feature on.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type, Int8Type, UInt32Type, UInt64Type};
use arrow_array::{Array, RecordBatch};

use super::testdata::{ethernet, ipv4, tcp, udp};
use super::*;
use crate::alloc::thread_counts;
use crate::decode::fastpath::linktype;
use crate::source::{Fetch, Limits, PacketSource, SourceInfo, SourceLoop};

/// Packets given as (time, wire length, frame); at their end a file ends, a live source
/// is idle forever.
struct Packets {
    list: Vec<(i64, u32, Vec<u8>)>,
    i: usize,
    live: bool,
}

impl Packets {
    fn file(list: &[(i64, u32, Vec<u8>)]) -> SourceLoop<Packets> {
        pass(Packets {
            list: list.to_vec(),
            i: 0,
            live: false,
        })
    }
}

/// A pass over `source`, as every consumer runs it.
fn pass<S: PacketSource>(source: S) -> SourceLoop<S> {
    SourceLoop::new(source, None, Limits::default()).unwrap()
}

/// The parts of a source the in-memory ones share.
macro_rules! in_memory_source {
    () => {
        fn linktype(&self) -> Option<u32> {
            Some(linktype::ETHERNET)
        }

        fn snaplen(&self) -> u32 {
            65535
        }

        fn install_filter(&mut self, _expr: &str) -> Result<()> {
            unimplemented!("the in-memory source is not filtered")
        }
    };
}

impl PacketSource for Packets {
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        let Some((ts, wirelen, d)) = self.list.get(self.i) else {
            return Ok(if self.live { Fetch::Idle } else { Fetch::End });
        };
        self.i += 1;
        Ok(Fetch::Packet(RawPacket {
            ts_ns: *ts,
            caplen: d.len() as u32,
            wirelen: *wirelen,
            linktype: linktype::ETHERNET,
            data: d,
        }))
    }

    fn info(&self) -> SourceInfo {
        if self.live {
            SourceInfo::Device("mem0".into())
        } else {
            SourceInfo::Path("mem.pcap".into())
        }
    }

    in_memory_source!();
}

pub(super) fn run(list: &[(i64, u32, Vec<u8>)], opts: FlowOptions) -> RecordBatch {
    let mut t = FlowTable::new(opts);
    flows_source(&mut Packets::file(list), &mut t, &never).unwrap();
    t.to_batch()
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

const A: [u8; 4] = [10, 1, 0, 1];
const B: [u8; 4] = [10, 1, 0, 2];

fn tcp_frame(fwd: bool, flags: u8) -> Vec<u8> {
    if fwd {
        ethernet(
            0x0800,
            &[],
            &ipv4(6, A, B, 0, 0, &tcp(40000, 443, flags, 0)),
        )
    } else {
        ethernet(
            0x0800,
            &[],
            &ipv4(6, B, A, 0, 0, &tcp(443, 40000, flags, 0)),
        )
    }
}

/// Packets of one TCP connection with random sizes, gaps, directions and flags, plus
/// what each was: (time, size, forward, flags).
/// Frames as the in-memory sources take them: (time, wire length, frame).
type Frames = Vec<(i64, u32, Vec<u8>)>;

fn conversation(n: usize, seed: u64) -> (Frames, Vec<(i64, u32, bool, u8)>) {
    let mut r = Rng(seed);
    let mut ts = 1_700_000_000_000_000_000i64;
    let mut list = Vec::new();
    let mut truth = Vec::new();
    for i in 0..n {
        ts += (r.next() % 5_000_000) as i64;
        let size = 60 + (r.next() % 1400) as u32;
        let fwd = i == 0 || r.next() % 3 != 0;
        let flags = (r.next() & 0xFF) as u8;
        list.push((ts, size, tcp_frame(fwd, flags)));
        truth.push((ts, size, fwd, flags));
    }
    (list, truth)
}

/// min, mean, sample stddev, max of `v`, by two passes in floating point.
fn describe(v: &[f64]) -> (Option<f64>, Option<f64>, Option<f64>, Option<f64>) {
    if v.is_empty() {
        return (None, None, None, None);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.len() > 1)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    let min = v.iter().cloned().fold(f64::INFINITY, f64::min);
    let max = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    (Some(min), Some(mean), sd, Some(max))
}

fn f64_at(b: &RecordBatch, name: &str) -> Option<f64> {
    let c = b
        .column_by_name(name)
        .unwrap_or_else(|| panic!("no column {name}"));
    if c.is_null(0) {
        return None;
    }
    Some(match c.data_type() {
        arrow_schema::DataType::Float64 => c.as_primitive::<Float64Type>().value(0),
        arrow_schema::DataType::Int64 => c.as_primitive::<Int64Type>().value(0) as f64,
        arrow_schema::DataType::UInt32 => c.as_primitive::<UInt32Type>().value(0) as f64,
        arrow_schema::DataType::UInt64 => c.as_primitive::<UInt64Type>().value(0) as f64,
        t => panic!("{name}: {t}"),
    })
}

fn close(a: Option<f64>, b: Option<f64>, what: &str) {
    match (a, b) {
        (Some(x), Some(y)) => assert!(
            (x - y).abs() <= 1e-9 * y.abs().max(1.0),
            "{what}: {x} != {y}"
        ),
        (x, y) => assert_eq!(x, y, "{what}"),
    }
}

#[test]
fn statistics_equal_a_two_pass_computation() {
    let stats = FeatureSpec {
        statistical: true,
        ..Default::default()
    };
    for (n, seed) in [(1, 3), (2, 5), (3, 7), (500, 11)] {
        let (list, truth) = conversation(n, seed);
        // The canonical source is 10.1.0.1:40000 (the smaller endpoint): forward packets
        // run src2dst.
        let b = run(
            &list,
            FlowOptions {
                flow_id: true,
                bidirectional: true,
                features: stats,
                ..Default::default()
            },
        );
        assert_eq!(b.num_rows(), 1);
        for (prefix, pick) in [
            ("bidirectional_", None),
            ("src2dst_", Some(true)),
            ("dst2src_", Some(false)),
        ] {
            let pkts: Vec<&(i64, u32, bool, u8)> = truth
                .iter()
                .filter(|t| pick.is_none_or(|f| t.2 == f))
                .collect();
            let ps: Vec<f64> = pkts.iter().map(|t| f64::from(t.1)).collect();
            let piat: Vec<f64> = pkts.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
            for (what, unit, v) in [("ps", "", &ps), ("piat", "_ns", &piat)] {
                let (min, mean, sd, max) = describe(v);
                close(f64_at(&b, &format!("{prefix}min_{what}{unit}")), min, what);
                close(
                    f64_at(&b, &format!("{prefix}mean_{what}{unit}")),
                    mean,
                    what,
                );
                close(
                    f64_at(&b, &format!("{prefix}stddev_{what}{unit}")),
                    sd,
                    what,
                );
                close(f64_at(&b, &format!("{prefix}max_{what}{unit}")), max, what);
            }
            for (flag, bit) in [
                ("syn", 0x02),
                ("cwr", 0x80),
                ("ece", 0x40),
                ("urg", 0x20),
                ("ack", 0x10),
                ("psh", 0x08),
                ("rst", 0x04),
                ("fin", 0x01),
            ] {
                let want = pkts.iter().filter(|t| t.3 & bit != 0).count() as f64;
                assert_eq!(f64_at(&b, &format!("{prefix}{flag}_packets")), Some(want));
            }
        }
        // Unidirectional: one flow per direction, columns without a prefix.
        let u = run(
            &list,
            FlowOptions {
                flow_id: true,
                features: stats,
                ..Default::default()
            },
        );
        let fwd = truth.iter().filter(|t| t.2).count();
        let rows: usize = u.num_rows();
        assert_eq!(rows, if fwd == n { 1 } else { 2 });
        assert!(
            u.column_by_name("mean_ps").is_some() && u.column_by_name("src2dst_mean_ps").is_none()
        );
    }
}

#[test]
fn moments_are_exact_for_large_values() {
    let mut m = features::Moments::default();
    // Values near 2^40 ns with a spread of a few ns: a naive float formula cancels.
    let base = 1i64 << 40;
    for d in [0, 1, 2, 3, 4] {
        m.add(base + d);
    }
    assert_eq!(m.mean(), Some(base as f64 + 2.0));
    assert_eq!(m.stddev(), Some(2.5f64.sqrt()));
    assert_eq!(
        (m.min(), m.max(), m.count()),
        (Some(base), Some(base + 4), 5)
    );
    let mut one = features::Moments::default();
    one.add(-7);
    assert_eq!((one.mean(), one.stddev()), (Some(-7.0), None));
}

#[test]
fn splt_lists_are_the_first_packets() {
    let (list, truth) = conversation(12, 17);
    for n in [1u16, 5, 12, 20] {
        let b = run(
            &list,
            FlowOptions {
                flow_id: true,
                bidirectional: true,
                features: FeatureSpec {
                    splt: n,
                    ..Default::default()
                },
                ..Default::default()
            },
        );
        let k = usize::from(n).min(truth.len());
        let list_of = |name: &str| b.column_by_name(name).unwrap().as_list::<i32>().value(0);
        let dir = list_of("splt_direction");
        let ps = list_of("splt_ps");
        let piat = list_of("splt_piat_ns");
        assert_eq!(dir.len(), k);
        let dir = dir.as_primitive::<Int8Type>();
        let ps = ps.as_primitive::<UInt32Type>();
        let piat = piat.as_primitive::<Int64Type>();
        for i in 0..k {
            assert_eq!(dir.value(i), i8::from(!truth[i].2));
            assert_eq!(ps.value(i), truth[i].1);
            let gap = if i == 0 {
                0
            } else {
                truth[i].0 - truth[i - 1].0
            };
            assert_eq!(piat.value(i), gap);
        }
    }
}

#[test]
fn macs_come_from_the_first_packet_in_key_order() {
    // The reverse packet comes first: the key's source (10.1.0.1) is its destination.
    let list = vec![
        (10, 60, tcp_frame(false, 0x12)),
        (20, 60, tcp_frame(true, 0x10)),
    ];
    let b = run(
        &list,
        FlowOptions {
            flow_id: true,
            bidirectional: true,
            features: FeatureSpec {
                mac: true,
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let src = b.column_by_name("src_mac").unwrap().as_fixed_size_binary();
    let dst = b.column_by_name("dst_mac").unwrap().as_fixed_size_binary();
    // testdata frames: destination 10:11:12:13:14:15, source 20:21:22:23:24:25.
    assert_eq!(src.value(0), &[0x10, 0x11, 0x12, 0x13, 0x14, 0x15]);
    assert_eq!(dst.value(0), &[0x20, 0x21, 0x22, 0x23, 0x24, 0x25]);
}

fn udp_flow(i: u16) -> Vec<u8> {
    ethernet(0x0800, &[], &ipv4(17, A, B, 0, 0, &udp(10000 + i, 53, 20)))
}

fn reasons(b: &RecordBatch) -> Vec<(u64, String)> {
    let ids = b
        .column_by_name("flow_id")
        .unwrap()
        .as_primitive::<UInt64Type>();
    let r = b
        .column_by_name("expiration_reason")
        .unwrap()
        .as_string::<i32>();
    (0..b.num_rows())
        .map(|i| (ids.value(i), r.value(i).to_string()))
        .collect()
}

#[test]
fn max_flows_evicts_the_least_recently_active_and_counts_exactly() {
    // 1,000 flows, one packet each, 1 us apart, then flow 0 again; at most 100 live.
    let mut list: Vec<(i64, u32, Vec<u8>)> = (0..1000u16)
        .map(|i| (i64::from(i) * 1000, 60, udp_flow(i)))
        .collect();
    let opts = FlowOptions {
        flow_id: true,
        max_flows: Some(100),
        ..Default::default()
    };
    let mut t = FlowTable::new(opts);
    flows_source(&mut Packets::file(&list), &mut t, &never).unwrap();
    assert_eq!((t.evicted(), t.live()), (900, 100));
    let b = t.to_batch();
    let r = reasons(&b);
    assert_eq!(r.iter().filter(|x| x.1 == "evicted").count(), 900);
    // The oldest went first: the 900 evicted are flows 0..900.
    assert!(r.iter().all(|(id, why)| (why == "evicted") == (*id < 900)));
    assert_eq!(b.schema().metadata()["paclo.flows_evicted"], "900");
    // A flow kept active is never the one evicted.
    list.clear();
    for i in 0..300u16 {
        list.push((i64::from(i) * 2000, 60, udp_flow(i + 1)));
        list.push((i64::from(i) * 2000 + 1000, 60, udp_flow(0)));
    }
    let b = run(&list, opts);
    let r = reasons(&b);
    assert_eq!(r.iter().filter(|x| x.1 == "evicted").count(), 201);
    let keep = r.iter().find(|x| x.0 == 1).unwrap(); // flow 0 is the second flow created
    assert_eq!(keep.1, "end");
}

#[test]
fn idle_flows_expire_when_the_clock_passes_them() {
    let opts = FlowOptions {
        flow_id: true,
        idle_timeout_ns: Some(1_000),
        reasons: true,
        ..Default::default()
    };
    let mut t = FlowTable::new(opts);
    fn p(ts: i64, d: &[u8]) -> RawPacket<'_> {
        RawPacket {
            ts_ns: ts,
            caplen: d.len() as u32,
            wirelen: 60,
            linktype: linktype::ETHERNET,
            data: d,
        }
    }
    let (f0, f1) = (udp_flow(0), udp_flow(1));
    t.push(&p(0, &f0));
    t.push(&p(500, &f1));
    assert_eq!(t.pending(), 0);
    // Another flow's packet moves the clock past flow 0's last packet + 1,000 ns.
    t.push(&p(1000, &f1));
    assert_eq!(t.pending(), 1);
    let b = t.take_expired(10).unwrap();
    assert_eq!(reasons(&b), vec![(0, "idle".to_string())]);
    // Without packets, the wall clock expires flow 1.
    t.advance(1999);
    assert_eq!(t.pending(), 0);
    t.advance(2000);
    assert_eq!(
        reasons(&t.take_expired(10).unwrap()),
        vec![(1, "idle".to_string())]
    );
    t.finish();
    assert!(t.take_expired(10).is_none());
}

/// Every column of `batches`, rows ordered by flow id.
fn by_id(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut rows: Vec<(u64, Vec<String>)> = Vec::new();
    for b in batches {
        let ids = b
            .column_by_name("flow_id")
            .unwrap()
            .as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            let cells = b
                .columns()
                .iter()
                .map(|c| format!("{:?}", c.slice(i, 1)))
                .collect();
            rows.push((ids.value(i), cells));
        }
    }
    rows.sort_by_key(|r| r.0);
    rows.into_iter().map(|r| r.1).collect()
}

/// Every feature group, the fingerprint columns too.
fn all_features() -> FeatureSpec {
    FeatureSpec {
        statistical: true,
        splt: 10,
        mac: true,
        app: true,
        fingerprints: fingerprints::ALL,
    }
}

/// Many short flows: TCP conversations and DNS-like UDP flows with random gaps, over
/// `n` packets, in time order.
fn many_flows(n: usize, seed: u64) -> Vec<(i64, u32, Vec<u8>)> {
    let mut r = Rng(seed);
    let mut ts = 1_700_000_000_000_000_000i64;
    (0..n)
        .map(|_| {
            ts += (r.next() % 200_000) as i64;
            let flow = (r.next() % 300) as u16;
            let fwd = r.next() % 2 == 0;
            let frame = if flow % 3 == 0 {
                udp_flow(flow)
            } else {
                let (a, b, sp, dp) = if fwd {
                    (A, B, 30000 + flow, 443)
                } else {
                    (B, A, 443, 30000 + flow)
                };
                ethernet(
                    0x0800,
                    &[(0x8100, flow % 4)],
                    &ipv4(6, a, b, 0, 0, &tcp(sp, dp, 0x10, 0)),
                )
            };
            (ts, 60 + (r.next() % 1000) as u32, frame)
        })
        .collect()
}

#[test]
fn a_stream_over_files_equals_the_table() {
    let dir = std::env::temp_dir().join(format!("paclo-flow-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let list = many_flows(20_000, 5);
    let mut paths = Vec::new();
    for (i, part) in list.chunks(7_000).enumerate() {
        let path = dir.join(format!("part{i}.pcap"));
        let mut w = crate::pcap::writer::PcapWriter::create(&path, 1, 65535, true).unwrap();
        for (ts, wirelen, d) in part {
            w.write_packet(*ts, d, *wirelen).unwrap();
        }
        w.finish().unwrap();
        paths.push(path);
    }
    for opts in [
        FlowOptions {
            flow_id: true,
            bidirectional: true,
            idle_timeout_ns: Some(20_000_000),
            active_timeout_ns: Some(200_000_000),
            features: all_features(),
            key_vlan: true,
            ..Default::default()
        },
        FlowOptions {
            flow_id: true,
            max_flows: Some(50),
            reasons: true,
            ..Default::default()
        },
    ] {
        let (table, _) = flows_files(&paths, None, opts, &never).unwrap().unwrap();
        let whole = table.to_batch();
        assert!(whole.num_rows() > 300, "{}", whole.num_rows());
        let s = stream::file_stream(paths.clone(), None, FlowTable::new(opts), 64).unwrap();
        let batches: Vec<RecordBatch> = s.map(|b| b.unwrap()).collect();
        assert!(batches.len() > 4 && batches.iter().all(|b| b.num_rows() <= 64));
        assert_eq!(by_id(&batches), by_id(&[whole]));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn projection_flow_ids_are_the_table_flow_ids() {
    let mut list = Vec::new();
    let mut r = Rng(99);
    for i in 0..2000i64 {
        let f = (r.next() % 40) as u16;
        // Gaps of up to 3 ms against an idle timeout of 2 ms: flows split.
        list.push((i * (r.next() % 3_000_000) as i64 / 10, 60, udp_flow(f)));
    }
    list.sort_by_key(|p| p.0);
    list.push((i64::MAX / 2, 60, ethernet(0x0806, &[], &[0; 28])));
    let opts = FlowOptions {
        flow_id: true,
        bidirectional: true,
        idle_timeout_ns: Some(2_000_000),
        ..Default::default()
    };
    let mut t = FlowTable::new(opts);
    let (b, _) = project_source_with_ids(&mut Packets::file(&list), 512, &mut t, &never)
        .unwrap()
        .unwrap();
    let flows = run(&list, opts);
    // Each flow row's packets, first and last times are those of the packets with its id.
    let fid = flows
        .column_by_name("flow_id")
        .unwrap()
        .as_primitive::<UInt64Type>();
    let packets = flows
        .column_by_name("packets")
        .unwrap()
        .as_primitive::<UInt64Type>();
    let first = flows
        .column_by_name("first_ts_ns")
        .unwrap()
        .as_primitive::<Int64Type>();
    let mut seen = std::collections::HashMap::<u64, (u64, i64)>::new();
    let mut nulls = 0;
    for batch in &b {
        let ids = batch
            .column_by_name("flow_id")
            .unwrap()
            .as_primitive::<UInt64Type>();
        let ts = batch.column(0).as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            if ids.is_null(i) {
                nulls += 1;
                continue;
            }
            let e = seen.entry(ids.value(i)).or_insert((0, i64::MAX));
            e.0 += 1;
            e.1 = e.1.min(ts.value(i));
        }
    }
    assert_eq!(nulls, 1);
    assert_eq!(seen.len(), flows.num_rows());
    assert!(flows.num_rows() > 40, "the timeout splits flows");
    for i in 0..flows.num_rows() {
        assert_eq!(seen[&fid.value(i)], (packets.value(i), first.value(i)));
    }
}

#[test]
fn the_meter_allocates_per_flow_only_with_every_feature() {
    // 100 flows: UDP DNS queries and TCP TLS hellos, so every group has work.
    let dns = {
        let mut m = vec![0, 7, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3];
        m.extend_from_slice(b"www");
        m.extend_from_slice(&[7]);
        m.extend_from_slice(b"example");
        m.extend_from_slice(&[3]);
        m.extend_from_slice(b"org");
        m.extend_from_slice(&[0, 0, 1, 0, 1]);
        m
    };
    let hello = crate::decode::tls::build_client_hello(Some("tls.example"), &["h2"]);
    let frames: Vec<Vec<u8>> = (0..100u16)
        .map(|i| {
            if i % 2 == 0 {
                let mut u = udp(20000 + i, 53, 0);
                u[4..6].copy_from_slice(&((8 + dns.len()) as u16).to_be_bytes());
                u.extend_from_slice(&dns);
                ethernet(0x0800, &[], &ipv4(17, A, B, 0, 0, &u))
            } else {
                let mut t = tcp(20000 + i, 443, 0x18, 0);
                t.truncate(t.len() - 4);
                t.extend_from_slice(&hello);
                ethernet(0x0800, &[], &ipv4(6, A, B, 0, 0, &t))
            }
        })
        .collect();
    let count_allocs = |count: usize, opts: FlowOptions| {
        let list: Vec<(i64, u32, Vec<u8>)> = (0..count.min(frames.len()))
            .map(|i| (i as i64 * 1000, 100, frames[i].clone()))
            .collect();
        let mut t = FlowTable::new(opts);
        // Warm: every flow exists, so the counted loop only updates flows.
        flows_source(&mut Packets::file(&list), &mut t, &never).unwrap();
        let mut src = pass(Cycle100 {
            frames: &frames,
            count,
            i: 0,
        });
        let before = thread_counts();
        flows_source(&mut src, &mut t, &never).unwrap();
        let spent = thread_counts().since(before);
        assert_eq!(t.len(), 100);
        (spent.allocs, t.to_batch())
    };
    for opts in [
        FlowOptions {
            flow_id: true,
            bidirectional: true,
            features: all_features(),
            ..Default::default()
        },
        FlowOptions {
            flow_id: true,
            features: all_features(),
            idle_timeout_ns: Some(60_000_000_000),
            active_timeout_ns: Some(60_000_000_000),
            max_flows: Some(1000),
            ..Default::default()
        },
        FlowOptions {
            flow_id: true,
            bidirectional: true,
            features: all_features(),
            idle_timeout_ns: Some(60_000_000_000),
            active_timeout_ns: Some(60_000_000_000),
            ..Default::default()
        },
    ] {
        let (small, _) = count_allocs(10_000, opts);
        let (large, b) = count_allocs(1_000_000, opts);
        assert_eq!((small, large), (0, 0), "allocations per packet ({opts:?})");
        let app = b
            .column_by_name("application_protocol")
            .unwrap()
            .as_string::<i32>();
        let name = b
            .column_by_name("requested_server_name")
            .unwrap()
            .as_string::<i32>();
        let got: std::collections::BTreeSet<(&str, &str)> = (0..b.num_rows())
            .map(|i| (app.value(i), name.value(i)))
            .collect();
        assert_eq!(
            got,
            [("dns", "www.example.org"), ("tls", "tls.example")]
                .into_iter()
                .collect()
        );
    }
}

/// `frames` cycled, one per microsecond after the warm-up's packets.
struct Cycle100<'a> {
    frames: &'a [Vec<u8>],
    count: usize,
    i: usize,
}

impl PacketSource for Cycle100<'_> {
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        if self.i == self.count {
            return Ok(Fetch::End);
        }
        let d = &self.frames[self.i % self.frames.len()];
        self.i += 1;
        Ok(Fetch::Packet(RawPacket {
            ts_ns: 1_000_000 + self.i as i64 * 1000,
            caplen: d.len() as u32,
            wirelen: 100,
            linktype: linktype::ETHERNET,
            data: d,
        }))
    }

    fn info(&self) -> SourceInfo {
        SourceInfo::Path("cycle.pcap".into())
    }

    in_memory_source!();
}

#[test]
fn feature_names_parse_and_bad_ones_are_named() {
    let spec = FeatureSpec::parse(&["statistical", "splt"], 20).unwrap();
    assert_eq!(
        spec,
        FeatureSpec {
            statistical: true,
            splt: 20,
            ..Default::default()
        }
    );
    assert!(FeatureSpec::parse(&["basic"], 10).unwrap().is_basic());
    assert_eq!(
        FeatureSpec::parse(&["all"], 3).unwrap(),
        FeatureSpec {
            splt: 3,
            fingerprints: crate::fingerprint::Methods::NONE,
            ..all_features()
        }
    );
    assert_eq!(
        FeatureSpec::parse(&["all", "fingerprints"], 3).unwrap(),
        FeatureSpec {
            splt: 3,
            ..all_features()
        }
    );
    let ja4 = FeatureSpec::parse(&["ja4", "ja4x", "basic"], 3).unwrap();
    assert_eq!(
        ja4.fingerprints,
        crate::fingerprint::Methods::NONE
            .with(crate::fingerprint::Method::Ja4)
            .with(crate::fingerprint::Method::Ja4X)
    );
    // Methods without a flow column are not feature names.
    let e = FeatureSpec::parse(&["ja4d"], 3).unwrap_err().to_string();
    assert!(e.contains("'ja4ssh'") && e.contains("not 'ja4d'"), "{e}");
    let e = FeatureSpec::parse(&["stats"], 10).unwrap_err().to_string();
    assert!(
        e.contains("'statistical'") && e.contains("not 'stats'"),
        "{e}"
    );
    for bad in [0, 65536] {
        let e = FeatureSpec::parse(&["splt"], bad).unwrap_err().to_string();
        assert!(e.contains("splt must be"), "{e}");
    }
}

/// Pull `s` until a batch comes (at most 5 s).
fn next_batch<S: PacketSource>(s: &mut stream::FlowStream<S>) -> Option<RecordBatch> {
    let start = std::time::Instant::now();
    loop {
        match s.pull().unwrap() {
            Pull::Batch(b) => return Some(b),
            Pull::End => return None,
            Pull::Pending => assert!(start.elapsed().as_secs() < 5, "no batch within 5 s"),
        }
    }
}

#[test]
fn a_live_stream_expires_idle_flows_on_wall_time() {
    let now = stream::wall_ns();
    let live = |list| Packets {
        list,
        i: 0,
        live: true,
    };
    let opts = FlowOptions {
        flow_id: true,
        idle_timeout_ns: Some(100_000_000),
        reasons: true,
        ..Default::default()
    };
    // Both at one time: the meter polls faster than a microsecond, so flows due apart
    // could come in two batches.
    let list = vec![(now, 60, udp_flow(1)), (now, 60, udp_flow(2))];
    let mut s = stream::FlowStream::new(
        pass(live(list.clone())),
        Box::new(|| Ok(None)),
        FlowTable::new(opts),
        64,
    );
    let b = next_batch(&mut s).unwrap();
    // No packet came after the two: only the wall clock can have expired them.
    let waited = stream::wall_ns() - now;
    assert!(waited >= 100_000_000, "expired after {waited} ns");
    assert_eq!(
        reasons(&b),
        [(0, "idle".to_string()), (1, "idle".to_string())]
    );
    s.stop();
    assert!(next_batch(&mut s).is_none());
    assert_eq!(
        s.stats().unwrap().stop_reason,
        Some(crate::stats::StopReason::Consumer)
    );

    // Stopped before the timeout: the live flows are the last batch, reason "end".
    let mut s = stream::FlowStream::new(
        pass(live(list)),
        Box::new(|| Ok(None)),
        FlowTable::new(FlowOptions {
            flow_id: true,
            idle_timeout_ns: Some(3_600_000_000_000),
            ..opts
        }),
        64,
    );
    assert!(matches!(s.pull().unwrap(), Pull::Pending));
    s.stop();
    let b = next_batch(&mut s).unwrap();
    assert_eq!(
        reasons(&b),
        [(0, "end".to_string()), (1, "end".to_string())]
    );
    assert!(next_batch(&mut s).is_none());
}
