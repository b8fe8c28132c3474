use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::*;
use crate::flow::testdata::{arrow_select_concat, ethernet, ipv4, tcp, udp};
use crate::flow::{flows_files, never, project_files};
use crate::pcap::split::MIN_PART;
use crate::pcap::PcapWriter;

/// A test's directory of files, removed with them when dropped (at the end of the test,
/// passed or failed).
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let name = format!("paclo-parallel-{}-{test}", std::process::id());
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Frames of `flows` UDP and TCP conversations, both directions, plus a non-IP frame.
fn frames(flows: u16) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for i in 0..flows {
        let a = [10, 0, (i >> 8) as u8, i as u8];
        let b = [192, 168, 1, 1];
        let (sp, dp) = (20_000 + i, 53);
        out.push(ethernet(
            0x0800,
            &[],
            &ipv4(17, a, b, 0, 0, &udp(sp, dp, 20 + usize::from(i % 7))),
        ));
        out.push(ethernet(
            0x0800,
            &[],
            &ipv4(17, b, a, 0, 0, &udp(dp, sp, 40)),
        ));
        let flags = if i % 3 == 0 { 0x02 } else { 0x18 };
        out.push(ethernet(
            0x0800,
            &[],
            &ipv4(6, a, b, 0, 0, &tcp(sp, 443, flags, 0)),
        ));
        out.push(ethernet(
            0x0800,
            &[],
            &ipv4(6, b, a, 0, 0, &tcp(443, sp, 0x10, 4)),
        ));
    }
    out.push(ethernet(0x0806, &[], &[0; 28]));
    out
}

/// A classic file of `bytes` or more: every flow has packets in every part; flows of a
/// second set start only in the second half of the file; times step 10 µs, with gaps of
/// 3 s now and then (idle timeouts split flows there).
fn write_file(dir: &Scratch, name: &str, bytes: usize, nanosecond: bool) -> PathBuf {
    write_padded(dir, name, bytes, nanosecond, 0)
}

/// [`write_file`], the frames of the late flows `late_pad` bytes longer (Ethernet
/// padding), and starting at two thirds of the file.
fn write_padded(
    dir: &Scratch,
    name: &str,
    bytes: usize,
    nanosecond: bool,
    late_pad: usize,
) -> PathBuf {
    let path = dir.file(name);
    let early = frames(150);
    let mut late: Vec<Vec<u8>> = frames(300).split_off(600);
    for f in &mut late {
        f.extend(vec![0; late_pad]);
    }
    let late_from = if late_pad > 0 {
        bytes * 2 / 3
    } else {
        bytes / 2
    };
    let mut w = PcapWriter::create(&path, 1, 65535, nanosecond).unwrap();
    let (mut i, mut written, mut ts) = (0usize, 24usize, 1_700_000_000_000_000_000i64);
    while written < bytes {
        let second_half = written > late_from;
        let f = if second_half && i % 3 == 0 {
            &late[i % late.len()]
        } else {
            &early[i % early.len()]
        };
        ts += if i % 10_007 == 0 {
            3_000_000_000
        } else {
            10_000
        };
        w.write_packet(ts, f, f.len() as u32 + 4).unwrap();
        written += 16 + f.len();
        i += 1;
    }
    w.finish().unwrap();
    path
}

fn options(bidirectional: bool) -> FlowOptions {
    FlowOptions {
        bidirectional,
        key_vlan: true,
        flow_id: true,
        ..Default::default()
    }
}

fn one_thread(path: &PathBuf, filter: Option<&str>, opts: FlowOptions) -> RecordBatch {
    let (t, _) = flows_files(std::slice::from_ref(path), filter, opts, &never)
        .unwrap()
        .unwrap();
    t.to_batch()
}

use arrow_array::RecordBatch;

#[test]
fn a_file_splits_into_parts_at_record_starts() {
    let dir = Scratch::new("a_file_splits_into_parts_at_record_starts");
    let path = write_file(&dir, "split.pcap", 4 * MIN_PART + 1000, false);
    for threads in 2..=4 {
        let parts = split_file(&path, threads).unwrap().unwrap();
        assert_eq!(parts.len(), threads);
        let joined = run_parts(&path, None, &parts, &never, |lp, stop| {
            let mut n = 0u64;
            Ok(match crate::flow::for_each_packet(lp, stop, |_| n += 1)? {
                Walk::Done => Some((n, Notices::of(lp))),
                Walk::Stopped => None,
            })
        })
        .unwrap();
        let Joined::Parts(counts, notices) = joined else {
            panic!("{threads} threads: the parts did not join");
        };
        let mut r = FileReader::open(&path).unwrap();
        let mut total = 0u64;
        while r.next_packet().unwrap().is_some() {
            total += 1;
        }
        assert_eq!(counts.iter().sum::<u64>(), total);
        assert!(counts.iter().all(|&n| n > 0));
        assert!(notices.truncated.is_none() && notices.oversized.is_empty());
    }
    // One thread, and a small file, are one part.
    assert_eq!(split_file(&path, 1).unwrap(), None);
    let small = write_file(&dir, "small.pcap", MIN_PART, false);
    assert_eq!(split_file(&small, 4).unwrap(), None);
}

/// The flow table of 2, 3 and 4 threads is the single-threaded one, row by row (ids,
/// counters, times, flags, totals), one-way and bidirectional, with and without a
/// filter, on files whose flows span every part boundary.
#[test]
fn flows_of_threads_equal_one_thread_row_by_row() {
    let dir = Scratch::new("flows_of_threads_equal_one_thread_row_by_row");
    for (name, ns) in [("us.pcap", false), ("ns.pcap", true)] {
        let path = write_file(&dir, name, 3 * MIN_PART + 5000, ns);
        for bidirectional in [false, true] {
            for filter in [None, Some("udp or arp")] {
                let opts = options(bidirectional);
                let want = one_thread(&path, filter, opts);
                // 300 conversations (150 begin in the second half): 300 flows or more.
                assert!(want.num_rows() >= 300, "{}", want.num_rows());
                for threads in 2..=4 {
                    let (t, notices) = flows_file(&path, filter, opts, threads, &never)
                        .unwrap()
                        .unwrap();
                    assert!(notices.truncated.is_none());
                    assert_eq!(
                        t.to_batch(),
                        want,
                        "{name} {bidirectional} {filter:?} {threads}"
                    );
                }
            }
        }
    }
}

/// With timeouts, `max_flows` or features the rows depend on the order of all packets:
/// such a table is built on one thread, and equals the single-threaded one.
#[test]
fn ordered_tables_are_built_on_one_thread() {
    let dir = Scratch::new("ordered_tables_are_built_on_one_thread");
    let path = write_file(&dir, "ordered.pcap", 2 * MIN_PART + 5000, false);
    for opts in [
        FlowOptions {
            idle_timeout_ns: Some(1_000_000_000),
            ..options(true)
        },
        FlowOptions {
            active_timeout_ns: Some(2_000_000_000),
            ..options(false)
        },
        FlowOptions {
            max_flows: Some(100),
            ..options(false)
        },
    ] {
        let want = one_thread(&path, None, opts);
        let (t, _) = flows_file(&path, None, opts, 2, &never).unwrap().unwrap();
        assert_eq!(t.to_batch(), want);
    }
}

#[test]
fn projection_of_threads_equals_one_thread() {
    let dir = Scratch::new("projection_of_threads_equals_one_thread");
    let path = write_file(&dir, "project.pcap", 4 * MIN_PART + 333, true);
    for filter in [None, Some("tcp")] {
        let (want, _) = project_files(std::slice::from_ref(&path), filter, 1 << 20, &never)
            .unwrap()
            .unwrap();
        let want = arrow_select_concat(&want);
        for threads in 2..=4 {
            let (got, _) = project_file(&path, filter, 1 << 20, threads, &never)
                .unwrap()
                .unwrap();
            assert!(got.len() >= threads);
            assert!(got.iter().all(|b| b.num_rows() <= 1 << 20));
            let got = arrow_select_concat(&got);
            assert_eq!(got.len(), want.len());
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.to_data(), w.to_data(), "{filter:?} {threads}");
            }
        }
    }
}

/// `project` with `flow_id` in parts: the ids are those of one thread (each part's
/// renumbered by the merge of the part tables in file order), one-way and bidirectional.
#[test]
fn projection_with_ids_of_threads_equals_one_thread() {
    let dir = Scratch::new("projection_with_ids_of_threads_equals_one_thread");
    let path = write_file(&dir, "project-ids.pcap", 3 * MIN_PART + 77, false);
    for bidirectional in [false, true] {
        let opts = options(bidirectional);
        let paths = std::slice::from_ref(&path);
        let (want, _) = crate::flow::project_files_with_ids(paths, None, 1 << 20, opts, &never)
            .unwrap()
            .unwrap();
        let want = arrow_select_concat(&want);
        for threads in 2..=3 {
            let (got, _) = project_file_with_ids(&path, None, 1 << 20, opts, threads, &never)
                .unwrap()
                .unwrap();
            assert_eq!(got.len(), threads);
            let got = arrow_select_concat(&got);
            for (g, w) in got.iter().zip(&want) {
                assert_eq!(g.to_data(), w.to_data(), "{bidirectional} {threads}");
            }
        }
    }
}

/// A truncated last record and a record above the snaplen are reported with the record
/// index and offset of the whole file, as one thread reports them.
#[test]
fn notices_name_the_records_of_the_whole_file() {
    let dir = Scratch::new("notices_name_the_records_of_the_whole_file");
    let path = write_padded(&dir, "notices.pcap", 2 * MIN_PART + 5000, false, 60);
    let mut bytes = std::fs::read(&path).unwrap();
    // Snaplen 100: the late flows' frames (in the second part only) are above it.
    bytes[16..20].copy_from_slice(&100u32.to_le_bytes());
    let len = bytes.len();
    bytes.truncate(len - 10);
    std::fs::write(&path, &bytes).unwrap();
    let opts = options(false);
    let (_, want) = flows_files(std::slice::from_ref(&path), None, opts, &never)
        .unwrap()
        .unwrap();
    let (_, got) = flows_file(&path, None, opts, 2, &never).unwrap().unwrap();
    let want_t = want
        .truncated
        .expect("one thread sees the cut record")
        .to_string();
    assert_eq!(got.truncated.map(|e| e.to_string()), Some(want_t));
    assert_eq!(got.oversized, want.oversized);
}

/// A record that is corrupt in the second part fails as it does on one thread (same
/// record index and offset).
#[test]
fn a_format_error_names_the_record_of_the_whole_file() {
    let dir = Scratch::new("a_format_error_names_the_record_of_the_whole_file");
    let path = write_file(&dir, "corrupt.pcap", 2 * MIN_PART + 5000, false);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut r = FileReader::open(&path).unwrap();
    let map = Arc::clone(r.shared_map());
    let mut at = 0;
    while let Some(p) = r.next_packet().unwrap() {
        let off = p.data.as_ptr() as usize - map.as_ptr() as usize - 16;
        if off > bytes.len() * 3 / 4 {
            at = off;
            break;
        }
    }
    drop(r);
    bytes[at + 8..at + 12].copy_from_slice(&0x0100_0000u32.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let opts = options(false);
    let want = flows_files(std::slice::from_ref(&path), None, opts, &never)
        .err()
        .expect("one thread fails");
    let got = flows_file(&path, None, opts, 2, &never)
        .err()
        .expect("two threads fail");
    assert_eq!(got.to_string(), want.to_string());
}

/// A file whose every payload ends in one whole fake record (a false candidate no
/// header check rules out), with the middle of the file inside a record before its fake.
fn write_trap(dir: &Scratch) -> PathBuf {
    let path = dir.file("trap.pcap");
    let fake = |len: u32| {
        let mut f = Vec::new();
        for v in [1_700_000_000u32, 5, len, len] {
            f.extend(v.to_le_bytes());
        }
        f.extend(vec![0xAB; len as usize]);
        f
    };
    let mut w = PcapWriter::create(&path, 1, 65535, false).unwrap();
    let frame = ethernet(
        0x0800,
        &[],
        &ipv4(17, [1, 1, 1, 1], [2, 2, 2, 2], 0, 0, &udp(1, 2, 30)),
    );
    // Every payload: the frame, filler, and the fake record at its end. An odd count of
    // equal records puts the middle of the file inside a record, before its fake one.
    let mut payload = frame.clone();
    payload.extend(vec![0x5A; 180]);
    payload.extend(fake(8));
    let record = 16 + payload.len();
    let count = (3 * MIN_PART / record) | 1;
    let mut ts = 1_700_000_000_000_000_000i64;
    for _ in 0..count {
        w.write_packet(ts, &payload, payload.len() as u32).unwrap();
        ts += 1000;
    }
    w.finish().unwrap();
    assert!((record / 2) < 16 + frame.len() + 180);
    path
}

/// A file whose payload imitates a record where a part would start: the part before it
/// does not end there, and the file is read again on one thread (same rows).
#[test]
fn a_false_boundary_is_caught_and_the_file_read_on_one_thread() {
    let dir = Scratch::new("false-boundary");
    let path = write_trap(&dir);
    let parts = split_file(&path, 2).unwrap().unwrap();
    let joined = run_parts(&path, None, &parts, &never, |lp, stop| {
        Ok(match crate::flow::for_each_packet(lp, stop, |_| {})? {
            Walk::Done => Some(((), Notices::of(lp))),
            Walk::Stopped => None,
        })
    })
    .unwrap();
    assert!(matches!(joined, Joined::Misaligned { reported } if reported > 0));
    let opts = options(false);
    let (t, _) = flows_file(&path, None, opts, 2, &never).unwrap().unwrap();
    assert_eq!(t.to_batch(), one_thread(&path, None, opts));
}

/// A check that adds up the bytes reported, and takes back what it is told to.
#[derive(Default)]
struct Tally {
    bytes: std::sync::atomic::AtomicU64,
    unread: std::sync::atomic::AtomicU64,
}

impl crate::flow::Check for Tally {
    fn stop(&self) -> bool {
        false
    }

    fn read(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    fn unread(&self, bytes: u64) {
        self.bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.unread.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// After a false boundary the parts' bytes are taken back before the file is read again
/// on one thread: the count ends at the file's size, as a split run's and one thread's do.
#[test]
fn a_false_boundary_takes_back_the_progress_of_the_parts() {
    let dir = Scratch::new("false-progress");
    let trap = write_trap(&dir);
    let plain = write_file(&dir, "plain.pcap", 3 * MIN_PART, false);
    for (path, rerun) in [(&trap, true), (&plain, false)] {
        let size = std::fs::metadata(path).unwrap().len();
        for call in 0..3 {
            let tally = Tally::default();
            match call {
                0 => _ = flows_file(path, None, options(false), 2, &tally).unwrap(),
                1 => _ = project_file(path, None, 1 << 16, 2, &tally).unwrap(),
                _ => {
                    _ = project_file_with_ids(path, None, 1 << 16, options(true), 2, &tally)
                        .unwrap()
                }
            }
            let taken = tally.unread.load(Ordering::Relaxed);
            assert_eq!(tally.bytes.load(Ordering::Relaxed), size, "{path:?} {call}");
            assert_eq!(taken > 0, rerun, "{path:?} {call}: {taken} taken back");
            assert!(taken <= size);
        }
    }
}

/// Where no position validates as a chain (every record's wire length is 0), the default
/// split looks for each boundary within one reach of its target (not to the end of the
/// file) and the file is read on one thread, with one thread's rows.
#[test]
fn a_file_with_no_valid_chain_is_split_in_bounded_work() {
    use crate::pcap::classic::REC_WIRELEN;
    use crate::pcap::split::{reach, tally};
    let dir = Scratch::new("no-chain");
    let path = write_file(&dir, "no-chain.pcap", 4 * MIN_PART, false);
    let mut bytes = std::fs::read(&path).unwrap();
    let mut at = crate::pcap::classic::FILE_HEADER_LEN;
    while at + 16 <= bytes.len() {
        let caplen = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap());
        bytes[at + REC_WIRELEN..at + REC_WIRELEN + 4].copy_from_slice(&0u32.to_le_bytes());
        at += 16 + caplen as usize;
    }
    std::fs::write(&path, &bytes).unwrap();
    let header = FileHeader::parse(&bytes).unwrap();
    let opts = options(true);
    let want = one_thread(&path, None, opts);
    assert!(want.num_rows() >= 300);
    for threads in [resolve_threads(None).max(2), 2, 4, 16] {
        tally::take();
        let (t, _) = flows_file(&path, None, opts, threads, &never)
            .unwrap()
            .unwrap();
        let examined = tally::take();
        assert_eq!(t.to_batch(), want, "{threads} threads");
        // One reach per boundary asked (a file of 4 MiB makes at most 4 parts).
        let bound = (threads.min(4) - 1) * (reach(&header) + 1);
        assert!(
            examined > 0 && examined <= bound,
            "{threads}: {examined} > {bound}"
        );
        assert!(examined < bytes.len() / 2, "{threads}: {examined}");
    }
}

/// A part's bursts hand over what its fetches do, in the same order, and stop where the
/// part ends: at a record boundary, or before a record that runs past an end inside it
/// (which `fetch` then reads, so the part does not end on its boundary).
#[test]
fn a_part_bursts_the_records_it_would_fetch() {
    let dir = Scratch::new("part-burst");
    let path = write_file(&dir, "burst.pcap", 3 * MIN_PART, false);
    let mut parts = split_file(&path, 3).unwrap().unwrap();
    let (s, e) = parts[1];
    parts.push((s, s + (e - s) / 2 + 7));
    parts.push((s, s + 1));
    type Rec = (i64, u32, u32, usize);
    let rec = |map: &GuardedMap, p: &RawPacket<'_>| -> Rec {
        let at = (p.data.as_ptr() as usize) - (map.as_ptr() as usize);
        (p.ts_ns, p.caplen, p.wirelen, at)
    };
    for &(start, end) in &parts {
        let mut fetched: Vec<Rec> = Vec::new();
        let mut part = Part::open(&path, start, end).unwrap();
        let map = Arc::clone(&part.map);
        while let Fetch::Packet(p) = part.fetch().unwrap() {
            fetched.push(rec(&map, &p));
        }
        let fetch_end = (part.ends_on_boundary(), part.records());
        let mut got: Vec<Rec> = Vec::new();
        let mut part = Part::open(&path, start, end).unwrap();
        let map = Arc::clone(&part.map);
        let mut bursts = 0u64;
        loop {
            let (n, _) = part.burst(97, &mut |p| got.push(rec(&map, p)));
            bursts += u64::from(n);
            if n > 0 {
                continue;
            }
            match part.fetch().unwrap() {
                Fetch::Packet(p) => got.push(rec(&map, &p)),
                _ => break,
            }
        }
        assert_eq!(got, fetched, "part {start}..{end}");
        assert_eq!((part.ends_on_boundary(), part.records()), fetch_end);
        let n = fetched.len() as u64;
        assert!(n < 2 || bursts * 2 > n, "{bursts} of {n} in bursts");
    }
}

/// A stop check that answers yes ends every part: the call reports the stop.
#[test]
fn a_stop_ends_every_part() {
    let dir = Scratch::new("a_stop_ends_every_part");
    // More than a chunk of records a part: the check is asked between chunks.
    let path = write_file(&dir, "stop.pcap", 16 * MIN_PART, false);
    let stop = || true;
    assert!(flows_file(&path, None, options(false), 3, &stop)
        .unwrap()
        .is_none());
    assert!(project_file(&path, None, 1 << 20, 3, &stop)
        .unwrap()
        .is_none());
}

/// A part's thread that panics is an error of the call, naming the file.
#[test]
fn a_panicking_part_is_an_error() {
    let dir = Scratch::new("a_panicking_part_is_an_error");
    let path = write_file(&dir, "panic.pcap", 2 * MIN_PART + 100, false);
    let parts = split_file(&path, 2).unwrap().unwrap();
    let r = run_parts::<()>(&path, None, &parts, &never, |lp, stop| {
        if lp.source().base > 0 {
            panic!("boom");
        }
        crate::flow::for_each_packet(lp, stop, |_| {})?;
        Ok(Some(((), Notices::of(lp))))
    });
    let e = r.err().expect("an error").to_string();
    assert!(e.contains("panic.pcap") && e.contains("boom"), "{e}");
}

/// Each part's loop allocates nothing per packet: the allocations of a part's thread do
/// not grow with its packets.
#[test]
fn a_part_allocates_nothing_per_packet() {
    let dir = Scratch::new("a_part_allocates_nothing_per_packet");
    use crate::alloc::thread_counts;
    let path = write_file(&dir, "alloc.pcap", 4 * MIN_PART, false);
    let parts = split_file(&path, 2).unwrap().unwrap();
    let joined = run_parts(&path, None, &parts, &never, |lp, stop| {
        let mut t = FlowTable::new(options(false));
        // Warm: the first packets create every flow of the file (the early set; the late
        // set starts in the second half, in the second part only).
        let mut n = 0u64;
        let before = std::cell::Cell::new(None);
        let walk = crate::flow::for_each_packet(lp, stop, |p| {
            t.push(p);
            n += 1;
            if n == 10_000 {
                before.set(Some(thread_counts()));
            }
        })?;
        let grown = before.get().map(|b| thread_counts().since(b));
        Ok((walk == Walk::Done).then(|| ((n, grown), Notices::of(lp))))
    })
    .unwrap();
    let Joined::Parts(runs, _) = joined else {
        panic!("the parts did not join")
    };
    let (n, grown) = runs[0];
    let grown = grown.expect("more than 10,000 packets a part");
    assert!(n > 20_000, "{n}");
    assert_eq!(grown.allocs, 0, "{n} packets: {grown:?}");
}
