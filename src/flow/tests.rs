use super::testdata::{arrow_select_concat, ethernet, ipv4, tcp, udp};
use super::*;
use crate::alloc::thread_counts;
use crate::decode::fastpath::linktype;
use crate::source::{Fetch, Limits, PacketSource, SourceInfo, SourceLoop, SCAN_BUDGET};
use arrow_array::cast::AsArray;
use arrow_array::types::{UInt16Type, UInt64Type, UInt8Type};
use arrow_array::Array;

/// An in-memory source: `frames` repeated until `count` packets, one per millisecond.
struct Cycle {
    frames: Vec<Vec<u8>>,
    count: usize,
    i: usize,
}

impl Cycle {
    fn next_packet(&mut self) -> Option<RawPacket<'_>> {
        if self.i == self.count {
            return None;
        }
        let d = &self.frames[self.i % self.frames.len()];
        let pkt = RawPacket {
            ts_ns: self.i as i64 * 1_000_000,
            caplen: d.len() as u32,
            wirelen: d.len() as u32 + 4,
            linktype: linktype::ETHERNET,
            data: d,
        };
        self.i += 1;
        Some(pkt)
    }

    /// A pass over this source, as every consumer runs it.
    fn pass(self) -> SourceLoop<Cycle> {
        SourceLoop::new(self, None, Limits::default()).unwrap()
    }
}

impl PacketSource for Cycle {
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        Ok(match self.next_packet() {
            Some(p) => Fetch::Packet(p),
            None => Fetch::End,
        })
    }

    fn info(&self) -> SourceInfo {
        SourceInfo::Path("cycle.pcap".into())
    }

    fn linktype(&self) -> Option<u32> {
        Some(linktype::ETHERNET)
    }

    fn snaplen(&self) -> u32 {
        65535
    }

    fn install_filter(&mut self, _expr: &str) -> Result<()> {
        unimplemented!("the in-memory source is not filtered")
    }
}

fn udp_frames(flows: u16) -> Vec<Vec<u8>> {
    (0..flows)
        .map(|i| {
            ethernet(
                0x0800,
                &[],
                &ipv4(
                    17,
                    [10, 0, 0, 1],
                    [10, 0, 0, 2],
                    0,
                    0,
                    &udp(12000 + i, 5300, 22),
                ),
            )
        })
        .collect()
}

#[test]
fn projection_allocates_per_batch_only() {
    let frames = udp_frames(1);
    let batch = 65_536;
    let run = |count: usize| {
        let mut src = Cycle {
            frames: frames.clone(),
            count,
            i: 0,
        }
        .pass();
        let before = thread_counts();
        let (batches, warn) = project_source(&mut src, batch, &never).unwrap().unwrap();
        let spent = thread_counts().since(before);
        assert!(warn.truncated.is_none() && warn.oversized.is_empty());
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), count);
        (spent.allocs, batches.len() as u64)
    };
    run(1_000);
    let (one, one_batches) = run(batch);
    let (million, batches) = run(1_000_000);
    assert_eq!(one_batches, 1);
    assert_eq!(batches, 16);
    // Each batch costs the same few allocations; nothing scales with the packet count.
    assert!(
        million <= batches * one,
        "{million} allocations for {batches} batches, {one} for one"
    );
    assert!(million < 10_000, "{million}");
}

#[test]
fn flow_table_allocates_per_flow_only() {
    let frames = udp_frames(100);
    let run = |count: usize, opts: FlowOptions| {
        let mut src = Cycle {
            frames: frames.clone(),
            count,
            i: 0,
        }
        .pass();
        let mut table = FlowTable::new(opts);
        let before = thread_counts();
        let walk = flows_source(&mut src, &mut table, &never).unwrap();
        let spent = thread_counts().since(before);
        assert_eq!(walk, Walk::Done);
        assert!(src.take_truncation().is_none());
        assert_eq!(table.len(), 100);
        spent.allocs
    };
    for opts in [
        FlowOptions::default(),
        FlowOptions {
            bidirectional: true,
            ..Default::default()
        },
    ] {
        let small = run(10_000, opts);
        let large = run(1_000_000, opts);
        assert_eq!(small, large, "allocations grew with packets ({opts:?})");
    }
}

/// Batches whose columns lie on huge pages (and whose memory is kept and reused from
/// batch to batch and call to call) allocate per batch only too, and equal the batches of
/// small columns.
#[test]
fn projection_on_huge_pages_allocates_per_batch_only() {
    let frames = udp_frames(3);
    // 2^17 rows: the address columns take 2 MiB, a huge page.
    let batch = 1 << 17;
    let count = 4 * batch + 5;
    let pass = || {
        Cycle {
            frames: frames.clone(),
            count,
            i: 0,
        }
        .pass()
    };
    let (want, _) = project_source(&mut pass(), 1000, &never).unwrap().unwrap();
    let want = arrow_select_concat(&want);
    for round in 0..3 {
        let before = thread_counts();
        let (batches, _) = project_source(&mut pass(), batch, &never).unwrap().unwrap();
        let spent = thread_counts().since(before);
        assert_eq!(batches.len(), 5);
        assert!(spent.allocs < 100 * 5, "round {round}: {spent:?}");
        assert_eq!(arrow_select_concat(&batches), want, "round {round}");
    }
}

#[test]
fn projection_columns_hold_the_fields() {
    let frames = vec![
        ethernet(
            0x0800,
            &[(0x8100, 42)],
            &ipv4(6, [1, 2, 3, 4], [5, 6, 7, 8], 0, 0, &tcp(80, 1234, 0x12, 0)),
        ),
        ethernet(0x0806, &[], &[0; 28]),
        ethernet(
            0x0800,
            &[],
            &ipv4(17, [1, 2, 3, 4], [5, 6, 7, 8], 0x0010, 0, &[0; 12]),
        ),
    ];
    let mut src = Cycle {
        frames,
        count: 3,
        i: 0,
    }
    .pass();
    let (b, _) = project_source(&mut src, 2, &never).unwrap().unwrap();
    assert_eq!(b.len(), 2);
    let t = arrow_select_concat(&b);
    let ipv = t[3].as_primitive::<UInt8Type>();
    assert_eq!((ipv.value(0), ipv.is_null(1), ipv.value(2)), (4, true, 4));
    let sport = t[7].as_primitive::<UInt16Type>();
    assert_eq!(
        (sport.value(0), sport.is_null(1), sport.is_null(2)),
        (80, true, true)
    );
    let vlan = t[9].as_primitive::<UInt16Type>();
    assert_eq!((vlan.value(0), vlan.is_null(2)), (42, true));
    let flags = t[10].as_primitive::<UInt8Type>();
    assert_eq!((flags.value(0), flags.is_null(2)), (0x12, true));
    let src = t[5].as_fixed_size_binary();
    assert_eq!(
        src.value(0),
        &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4]
    );
    assert!(src.is_null(1));
}

#[test]
fn bidirectional_and_timeouts() {
    let a = [10, 0, 0, 9];
    let b = [10, 0, 0, 3];
    let fwd = ethernet(0x0800, &[], &ipv4(6, a, b, 0, 0, &tcp(5000, 80, 0x02, 0)));
    let rev = ethernet(0x0800, &[], &ipv4(6, b, a, 0, 0, &tcp(80, 5000, 0x12, 0)));
    // Packets at 0, 1, 2 ms (fwd, rev, fwd) then at 1,000 ms (rev).
    let pkts: Vec<(i64, &Vec<u8>)> = vec![
        (0, &fwd),
        (1_000_000, &rev),
        (2_000_000, &fwd),
        (1_000_000_000, &rev),
    ];
    let run = |opts: FlowOptions| {
        let mut t = FlowTable::new(opts);
        for (ts, d) in &pkts {
            t.push(&RawPacket {
                ts_ns: *ts,
                caplen: d.len() as u32,
                wirelen: 100,
                linktype: 1,
                data: d,
            });
        }
        t.rows()
    };
    let uni = run(FlowOptions::default());
    assert_eq!(uni.len(), 2);
    let bi = run(FlowOptions {
        bidirectional: true,
        ..Default::default()
    });
    assert_eq!(bi.len(), 1);
    let (k, s, _) = &bi[0];
    // 10.0.0.3:80 is the smaller endpoint, so it is the canonical source.
    assert_eq!(
        (k.src[15], k.src_port, k.dst_port),
        (3, Some(80), Some(5000))
    );
    assert_eq!((s.packets, s.src2dst_packets, s.dst2src_packets), (4, 2, 2));
    assert_eq!((s.tcp_flags, s.bytes), (0x12, 400));
    let idle = run(FlowOptions {
        bidirectional: true,
        idle_timeout_ns: Some(500_000_000),
        ..Default::default()
    });
    assert_eq!(idle.len(), 2);
    assert_eq!((idle[0].1.packets, idle[0].2), (3, table::Expiration::Idle));
    assert_eq!((idle[1].1.packets, idle[1].2), (1, table::Expiration::End));
    let active = run(FlowOptions {
        bidirectional: true,
        active_timeout_ns: Some(1_500_000),
        ..Default::default()
    });
    assert_eq!(
        active
            .iter()
            .map(|r| (r.1.packets, r.2))
            .collect::<Vec<_>>(),
        vec![
            (2, table::Expiration::Active),
            (1, table::Expiration::Active),
            (1, table::Expiration::End)
        ]
    );
}

#[test]
fn merged_tables_equal_one_pass() {
    let frames = udp_frames(7);
    let mut whole = FlowTable::new(FlowOptions::default());
    let mut part1 = FlowTable::new(FlowOptions::default());
    let mut part2 = FlowTable::new(FlowOptions::default());
    let mut src = Cycle {
        frames,
        count: 1000,
        i: 0,
    };
    let mut i = 0;
    while let Some(p) = src.next_packet() {
        whole.push(&p);
        if i < 400 {
            part1.push(&p);
        } else {
            part2.push(&p);
        }
        i += 1;
    }
    part1.merge(part2);
    let batch = part1.to_batch();
    assert_eq!(batch, whole.to_batch());
    assert_eq!(
        batch
            .column_by_name("packets")
            .unwrap()
            .as_primitive::<UInt64Type>()
            .values()
            .iter()
            .sum::<u64>(),
        1000
    );
}

#[test]
fn stop_is_asked_once_per_chunk_and_ends_the_walk() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let frames = udp_frames(3);
    let chunk = CHUNK_RECORDS as usize;
    // Never stopping: asked once per full chunk read, results as without a check.
    let asked = AtomicU32::new(0);
    let ask = || {
        asked.fetch_add(1, Ordering::Relaxed);
        false
    };
    let mut src = Cycle {
        frames: frames.clone(),
        count: 3 * chunk + 5,
        i: 0,
    }
    .pass();
    let (b, _) = project_source(&mut src, 1 << 20, &ask).unwrap().unwrap();
    assert_eq!(b.iter().map(|b| b.num_rows()).sum::<usize>(), 3 * chunk + 5);
    assert_eq!(asked.load(Ordering::Relaxed), 3);
    // Stopping at the second check: the walk has read two chunks, no more.
    let asked = AtomicU32::new(0);
    let second = || asked.fetch_add(1, Ordering::Relaxed) == 1;
    let mut src = Cycle {
        frames: frames.clone(),
        count: 10 * chunk,
        i: 0,
    }
    .pass();
    assert!(project_source(&mut src, 1024, &second).unwrap().is_none());
    assert_eq!(src.source().i, 2 * chunk);
    let mut table = FlowTable::new(FlowOptions::default());
    let mut src = Cycle {
        frames,
        count: 10 * chunk,
        i: 0,
    }
    .pass();
    assert!(matches!(
        flows_source(&mut src, &mut table, &|| true).unwrap(),
        Walk::Stopped
    ));
    assert_eq!(src.source().i, chunk);
}

/// A file whose filter rejects every record is still interruptible: after
/// [`SCAN_BUDGET`] rejected records the pass is pending and the walk asks its check.
#[test]
fn rejected_records_count_towards_the_chunk() {
    use crate::perf::datasets::{generate, Case};
    let dir = std::env::temp_dir().join(format!("paclo-flow-reject-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("udp.pcap");
    let n = 3 * SCAN_BUDGET as u64 + 7;
    generate(Case::parse("udp-64").unwrap(), n, &path).unwrap();
    let mut lp = open_file(&path, Some("tcp")).unwrap();
    let mut seen = 0;
    let walk = for_each_packet(&mut lp, &|| true, |_| seen += 1).unwrap();
    assert_eq!((walk, seen), (Walk::Stopped, 0));
    let record = (lp.source().file_len() - 24) / n;
    assert_eq!(lp.source().position(), 24 + SCAN_BUDGET as u64 * record);
    // Never stopped, the walk reads the whole file and finds nothing.
    let asked = std::sync::atomic::AtomicU32::new(0);
    let ask = || {
        asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        false
    };
    let walk = for_each_packet(&mut lp, &ask, |_| seen += 1).unwrap();
    assert_eq!((walk, seen), (Walk::Done, 0));
    assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The parallel paths stop too: every rayon task asks the shared check, and a stopped
/// call gives `None`, while a call that is not stopped still reads every file.
#[test]
fn files_stop_in_parallel_and_in_order() {
    use crate::perf::datasets::{generate, Case};
    use std::sync::atomic::{AtomicU32, Ordering};
    let dir = std::env::temp_dir().join(format!("paclo-flow-stop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("udp.pcap");
    let n = 3 * CHUNK_RECORDS as u64;
    generate(Case::parse("udp-64").unwrap(), n, &path).unwrap();
    let paths = vec![path.clone(), path.clone(), path];
    let asked = AtomicU32::new(0);
    let count = || {
        asked.fetch_add(1, Ordering::Relaxed);
        false
    };
    let (b, _) = project_files(&paths, None, 1 << 20, &count)
        .unwrap()
        .unwrap();
    assert_eq!(b.iter().map(|b| b.num_rows() as u64).sum::<u64>(), 3 * n);
    // Each file asks after each of its three full chunks.
    assert_eq!(asked.load(Ordering::Relaxed), 9);
    assert!(project_files(&paths, None, 1 << 20, &|| true)
        .unwrap()
        .is_none());
    for opts in [
        FlowOptions::default(),
        FlowOptions {
            idle_timeout_ns: Some(1_000_000_000),
            ..Default::default()
        },
    ] {
        let (t, _) = flows_files(&paths, None, opts, &never).unwrap().unwrap();
        assert_eq!(t.counts().0, 3 * n);
        assert!(flows_files(&paths, None, opts, &|| true).unwrap().is_none());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Timestamps at the ends of the i64 range (a pcapng timestamp saturates there) split
/// flows by the timeouts without overflowing (found by the `flow` fuzz target).
#[test]
fn timeouts_at_the_ends_of_the_time_range() {
    let frame = udp_frames(1).remove(0);
    let opts = FlowOptions {
        idle_timeout_ns: Some(1_000),
        active_timeout_ns: Some(5_000),
        ..Default::default()
    };
    let mut t = FlowTable::new(opts);
    for ts in [i64::MAX, i64::MIN, 0, i64::MAX, i64::MIN] {
        t.push(&RawPacket {
            ts_ns: ts,
            caplen: frame.len() as u32,
            wirelen: frame.len() as u32,
            linktype: linktype::ETHERNET,
            data: &frame,
        });
    }
    let rows = t.rows();
    assert_eq!(rows.iter().map(|r| r.1.packets).sum::<u64>(), 5);
    assert!(rows.len() >= 2, "{rows:?}");
}

/// `frames` repeated until `count` packets as a classic pcap file (LE, µs), with the
/// times and lengths of [`Cycle`].
fn cycle_file(name: &str, frames: &[Vec<u8>], count: usize) -> PathBuf {
    let mut out = Vec::new();
    out.extend(0xa1b2_c3d4u32.to_le_bytes());
    out.extend([2, 0, 4, 0]);
    out.extend([0; 8]);
    out.extend(65535u32.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    for i in 0..count {
        let d = &frames[i % frames.len()];
        out.extend(((i / 1000) as u32).to_le_bytes());
        out.extend(((i % 1000) as u32 * 1000).to_le_bytes());
        out.extend((d.len() as u32).to_le_bytes());
        out.extend((d.len() as u32 + 4).to_le_bytes());
        out.extend(d);
    }
    let dir = std::env::temp_dir().join(format!("paclo-flow-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path
}

/// Over a classic file (read in bursts) the table and the projection equal those of the
/// same packets from an in-memory source, and allocate per flow or batch only.
#[test]
fn file_passes_equal_the_packets_and_allocate_per_flow_or_batch() {
    let frames = udp_frames(100);
    let batch = 65_536;
    for count in [20_000, 200_000] {
        let path = cycle_file(&format!("cycle-{count}.pcap"), &frames, count);
        let paths = [path.clone()];
        let cycle = || {
            Cycle {
                frames: frames.clone(),
                count,
                i: 0,
            }
            .pass()
        };
        let opts = FlowOptions::default();
        let mut want = FlowTable::new(opts);
        flows_source(&mut cycle(), &mut want, &never).unwrap();
        let before = thread_counts();
        let (table, notices) = flows_files(&paths, None, opts, &never).unwrap().unwrap();
        let spent = thread_counts().since(before);
        assert!(notices.truncated.is_none() && notices.oversized.is_empty());
        assert_eq!(table.counts(), (count as u64, 0));
        assert_eq!(table.to_batch(), want.to_batch(), "{count}");
        // Opening the file and the table's 100 flows: nothing per packet.
        assert!(spent.allocs < 100, "{count}: {spent:?}");

        let (want, _) = project_source(&mut cycle(), batch, &never)
            .unwrap()
            .unwrap();
        let before = thread_counts();
        let (got, _) = project_files(&paths, None, batch, &never).unwrap().unwrap();
        let spent = thread_counts().since(before);
        assert_eq!(got, want, "{count}");
        assert!(
            spent.allocs < 100 * got.len() as u64,
            "{count}: {spent:?} for {} batches",
            got.len()
        );
        std::fs::remove_file(path).unwrap();
    }
}
