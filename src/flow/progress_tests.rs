//! The bytes a walk over files reports to its check: every byte of every file, once.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use super::*;
use crate::perf::datasets::{generate, Case};

/// A check that never stops and adds up what it is told.
#[derive(Default)]
struct Tally {
    bytes: AtomicU64,
    reports: AtomicU64,
    asked: AtomicU64,
}

impl Check for Tally {
    fn stop(&self) -> bool {
        self.asked.fetch_add(1, Ordering::Relaxed);
        false
    }

    fn read(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.reports.fetch_add(1, Ordering::Relaxed);
    }
}

fn udp_file(dir: &std::path::Path, name: &str, n: u64) -> PathBuf {
    let path = dir.join(name);
    generate(Case::parse("udp-64").unwrap(), n, &path).unwrap();
    path
}

fn temp_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("paclo-flow-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One report per chunk, before the check is asked, and one at the end: together the
/// file's size, its header included.
#[test]
fn a_walk_reports_every_byte_of_its_file_once_per_chunk() {
    let dir = temp_dir("progress-one");
    let n = 3 * u64::from(CHUNK_RECORDS) + 7;
    let path = udp_file(&dir, "udp.pcap", n);
    let size = std::fs::metadata(&path).unwrap().len();
    let mut lp = open_file(&path, None).unwrap();
    let tally = Tally::default();
    let mut seen = 0u64;
    let walk = for_each_packet(&mut lp, &tally, |_| seen += 1).unwrap();
    assert_eq!((walk, seen), (Walk::Done, n));
    assert_eq!(tally.bytes.load(Ordering::Relaxed), size);
    assert_eq!(tally.reports.load(Ordering::Relaxed), 4);
    assert_eq!(tally.asked.load(Ordering::Relaxed), 3);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The files of one call, read in parallel or in order, add up to their total size; a
/// filter that drops every packet still reads every byte.
#[test]
fn files_report_their_total_size_in_parallel_and_in_order() {
    let dir = temp_dir("progress-files");
    let paths = vec![
        udp_file(&dir, "a.pcap", 2 * u64::from(CHUNK_RECORDS) + 1),
        udp_file(&dir, "b.pcap", 10),
        udp_file(&dir, "c.pcap", u64::from(CHUNK_RECORDS)),
    ];
    let total: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    let ordered = FlowOptions {
        idle_timeout_ns: Some(1_000_000_000),
        ..Default::default()
    };
    for opts in [FlowOptions::default(), ordered] {
        let tally = Tally::default();
        flows_files(&paths, None, opts, &tally).unwrap().unwrap();
        assert_eq!(tally.bytes.load(Ordering::Relaxed), total);
    }
    let tally = Tally::default();
    project_files(&paths, Some("tcp"), 1 << 20, &tally)
        .unwrap()
        .unwrap();
    assert_eq!(tally.bytes.load(Ordering::Relaxed), total);
    let tally = Tally::default();
    project_files_with_ids(&paths, None, 1 << 20, FlowOptions::default(), &tally)
        .unwrap()
        .unwrap();
    assert_eq!(tally.bytes.load(Ordering::Relaxed), total);
    std::fs::remove_dir_all(&dir).unwrap();
}
