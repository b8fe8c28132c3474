//! Fuzz the capture file reader: the input is a whole file (classic pcap of either byte
//! order and precision, the modified format, or pcapng with any sections and interfaces).
//! Every record is walked, lax and strict, and every field of every packet is read.
//!
//! Invariants checked: each packet's caplen is its data's length and at most 256 KiB; the
//! cursor never moves past the end; a strict walk yields a prefix of the lax walk's packets
//! and counts no oversized record.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use paclo::pcap::{RecordCursor, MAX_CAPLEN};

/// Packets of one walk: (ts_ns, caplen, wirelen, linktype, data offset), and the records
/// read whole although longer than their snaplen.
fn walk(file: &[u8], strict: bool) -> (Vec<(i64, u32, u32, u32, usize)>, u64) {
    let Ok(mut c) = RecordCursor::new(file) else {
        return (Vec::new(), 0);
    };
    c.set_strict(strict);
    if let RecordCursor::PcapNg(ng) = &c {
        std::hint::black_box(ng.peek_linktype(file));
    }
    let mut out = Vec::new();
    loop {
        match c.next(file) {
            Ok(Some(p)) => {
                assert_eq!(p.caplen as usize, p.data.len());
                assert!(p.caplen <= MAX_CAPLEN);
                let at = p.data.as_ptr() as usize - file.as_ptr() as usize;
                assert!(at + p.data.len() <= file.len());
                std::hint::black_box(p.data.iter().fold(0u8, |a, b| a ^ b));
                out.push((p.ts_ns, p.caplen, p.wirelen, p.linktype, at));
            }
            Ok(None) => break,
            Err(issue) => {
                assert!(issue.offset <= file.len() as u64);
                std::hint::black_box(issue.into_error(Path::new("fuzz.pcap")).to_string());
                break;
            }
        }
        assert!(c.offset() <= file.len());
    }
    let oversized = c.oversized();
    std::hint::black_box(oversized.message(Path::new("fuzz.pcap")));
    (out, oversized.count)
}

fuzz_target!(|file: &[u8]| {
    let (lax, lax_oversized) = walk(file, false);
    let (strict, strict_oversized) = walk(file, true);
    assert_eq!(strict_oversized, 0);
    assert!(strict.len() <= lax.len());
    assert_eq!(strict[..], lax[..strict.len()]);
    if lax_oversized == 0 {
        assert_eq!(strict.len(), lax.len());
    }
});
