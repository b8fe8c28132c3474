//! The native read loop beside the floor of a raw read, per packet.
//!
//! `cargo bench --bench sync_loop [-- DIR [PACKETS [RUNS]]]` writes the perf runner's three
//! datasets (udp-64, tcp-512, mixed; 1,000,000 packets by default) into DIR (default: the
//! system temp dir) unless present, then times, alternating, `RUNS` passes (default 7) of:
//! - `walk`: a safe-Rust walk over the mmapped records (caplen, touch the last byte, next),
//!   the Rust twin of the runner's `peer-c-mmap-walk`;
//! - `reader`: [`FileReader::next_packet`], every record as a [`paclo::RawPacket`];
//! - `sync-loop`: what `count_packets` (the `sync-loop` scenario) runs, a [`SourceLoop`] over a
//!   [`FileReader`] through [`paclo::flow::for_each_packet`];
//! - `project`: what `paclo.project(path)` (the `flow-project` scenario) runs in the core,
//!   [`paclo::flow::project_files`] with its default batch size;
//! - `flows`: what `paclo.flows(path)` (`flow-table`) runs in the core,
//!   [`paclo::flow::flows_files`] and the table's batch.
//!
//! It prints the median ns/packet with min-max and each median as a multiple of the walk's.
//! `-- DIR PACKETS 1 ONLY [CASE]` with ONLY one of the names runs one pass of that step alone
//! (over CASE only, when named), for `valgrind --tool=callgrind`, whose instruction counts
//! do not depend on the machine's load.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::RecordBatch;
use paclo::flow::{for_each_packet, never, FlowOptions, Walk};
use paclo::pcap::FileReader;
use paclo::perf::datasets::{generate, Case};
use paclo::source::{Limits, SourceLoop};

const STEPS: [&str; 5] = ["walk", "reader", "sync-loop", "project", "flows"];

/// The batch size of `paclo.project` for a file.
const PROJECT_BATCH_ROWS: usize = 1 << 20;

fn walk(path: &Path) -> (u64, u64) {
    let file = std::fs::File::open(path).unwrap();
    // SAFETY: a benchmark's own dataset, mapped read-only and not changed while mapped.
    let map = unsafe { memmap2::Mmap::map(&file) }.unwrap();
    let _ = map.advise(memmap2::Advice::Sequential);
    let buf: &[u8] = &map;
    let (mut off, mut packets, mut bytes, mut sum) = (24usize, 0u64, 0u64, 0u32);
    while buf.len() - off >= 16 {
        let caplen = u32::from_le_bytes(buf[off + 8..off + 12].try_into().unwrap()) as usize;
        off += 16;
        if caplen > 0 {
            sum = sum.wrapping_add(u32::from(buf[off + caplen - 1]));
        }
        off += caplen;
        packets += 1;
        bytes += caplen as u64;
    }
    black_box(sum);
    (packets, bytes)
}

fn reader(path: &Path) -> (u64, u64) {
    let mut r = FileReader::open(path).unwrap();
    let (mut packets, mut bytes) = (0u64, 0u64);
    while let Some(p) = r.next_packet().unwrap() {
        packets += 1;
        bytes += u64::from(p.caplen);
        black_box(p.ts_ns);
    }
    (packets, bytes)
}

fn sync_loop(path: &Path) -> (u64, u64) {
    let mut lp = SourceLoop::new(FileReader::open(path).unwrap(), None, Limits::default()).unwrap();
    let walked = for_each_packet(&mut lp, &never, |_| {}).unwrap();
    assert_eq!(walked, Walk::Done);
    (lp.packets(), lp.bytes())
}

/// The sum of the `u64` column `name` (`u32` for `caplen`) over `batches`.
fn column_sum(batches: &[RecordBatch], name: &str) -> u64 {
    batches
        .iter()
        .map(|b| {
            let c = b.column_by_name(name).unwrap();
            if name == "caplen" {
                c.as_primitive::<UInt32Type>()
                    .values()
                    .iter()
                    .map(|&v| u64::from(v))
                    .sum()
            } else {
                c.as_primitive::<UInt64Type>().values().iter().sum::<u64>()
            }
        })
        .sum()
}

fn project(path: &Path) -> (u64, u64) {
    let paths = [path.to_path_buf()];
    let (batches, _) = paclo::flow::project_files(&paths, None, PROJECT_BATCH_ROWS, &never)
        .unwrap()
        .unwrap();
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    (rows, column_sum(&batches, "caplen"))
}

fn flows(path: &Path) -> (u64, u64) {
    let paths = [path.to_path_buf()];
    // `paclo.flows`' defaults: one direction, the VLAN id in the key.
    let opts = FlowOptions {
        key_vlan: true,
        ..FlowOptions::default()
    };
    let (table, _) = paclo::flow::flows_files(&paths, None, opts, &never)
        .unwrap()
        .unwrap();
    let batch = [table.to_batch()];
    (column_sum(&batch, "packets"), column_sum(&batch, "bytes"))
}

fn run(step: &str, path: &Path) -> (u64, u64) {
    match step {
        "walk" => walk(path),
        "reader" => reader(path),
        "sync-loop" => sync_loop(path),
        "project" => project(path),
        "flows" => flows(path),
        other => panic!("unknown step {other:?} (one of {STEPS:?})"),
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let dir = args.first().map_or_else(std::env::temp_dir, PathBuf::from);
    let count: u64 = args.get(1).map_or(1_000_000, |n| n.parse().unwrap());
    let runs: usize = args.get(2).map_or(7, |n| n.parse().unwrap());
    let only = args.get(3).map(String::as_str);
    let cases: Vec<&str> = match args.get(4) {
        Some(case) => vec![case.as_str()],
        None => vec!["udp-64", "tcp-512", "mixed"],
    };
    std::fs::create_dir_all(&dir).unwrap();
    for name in cases {
        let case = Case::parse(name).unwrap();
        let path = dir.join(format!("sync-loop-{name}-n{count}.pcap"));
        let size = case.expected_file_size(count).unwrap();
        if std::fs::metadata(&path).ok().map(|m| m.len()) != Some(size) {
            generate(case, count, &path).unwrap();
        }
        let expected = (count, case.expected_bytes(count).unwrap());
        if let Some(step) = only {
            assert_eq!(run(step, &path), expected);
            continue;
        }
        let mut ns: Vec<Vec<f64>> = vec![Vec::new(); STEPS.len()];
        run("walk", &path); // the page cache
        for _ in 0..runs {
            for (i, step) in STEPS.iter().enumerate() {
                let t = Instant::now();
                let got = run(step, &path);
                ns[i].push(t.elapsed().as_nanos() as f64 / count as f64);
                assert_eq!(got, expected, "{step} on {name}");
            }
        }
        let meds: Vec<f64> = ns.iter_mut().map(|v| median(v)).collect();
        for (i, step) in STEPS.iter().enumerate() {
            let (lo, hi) = (ns[i][0], ns[i][ns[i].len() - 1]);
            println!(
                "{name:8} {step:10} {:7.1} ns/packet (min {lo:.1}, max {hi:.1})  {:5.2} x walk",
                meds[i],
                meds[i] / meds[0]
            );
        }
    }
}
