//! Record boundaries of a classic pcap file found from arbitrary offsets, so that several
//! threads can read one file in parts.
//!
//! A classic file has no index: from a chunk offset, [`record_start`] scans byte by byte
//! for the first position where a chain of [`CHAIN`] record headers validates (sub-second
//! field in range, caplen from 1 to the wire length and to [`MAX_CAPLEN`] (the reader's
//! limit: a file's snaplen would rule out the records that exceed it, which some files
//! have), timestamps close to each other, every record inside the file). A payload can
//! still imitate such a chain, so a boundary found here is a candidate: the reader of the
//! part before it proves it, by ending exactly on it (see `flow::parallel`).

use super::classic::{
    FileHeader, FILE_HEADER_LEN, REC_CAPLEN, REC_TS_FRAC, REC_TS_SEC, REC_WIRELEN,
};
use super::MAX_CAPLEN;

/// Record headers a candidate boundary must chain through.
pub const CHAIN: usize = 8;

/// The largest wire length a record of the chain may declare (16 MiB: segmentation
/// offload on a capture host makes frames far above the MTU).
const MAX_WIRELEN: u32 = 1 << 24;

/// How far back in time a record may be from the one before it (a file slightly out of
/// order), and how far ahead, in nanoseconds.
const BACK_NS: i64 = 60 * 1_000_000_000;
const AHEAD_NS: i64 = 86_400 * 1_000_000_000;

/// The header of the record at `at`, if it is plausible on its own: its time and its end.
/// (A record of no captured bytes is not: runs of zero bytes would chain.)
fn plausible(buf: &[u8], h: &FileHeader, at: usize) -> Option<(i64, usize)> {
    let e = h.endian;
    let sec = e.u32(buf, at + REC_TS_SEC)?;
    let frac = e.u32(buf, at + REC_TS_FRAC)?;
    let caplen = e.u32(buf, at + REC_CAPLEN)?;
    let wirelen = e.u32(buf, at + REC_WIRELEN)?;
    let (frac_limit, unit) = if h.nanosecond {
        (1_000_000_000, 1)
    } else {
        (1_000_000, 1_000)
    };
    if frac >= frac_limit
        || caplen == 0
        || caplen > MAX_CAPLEN
        || caplen > wirelen
        || wirelen > MAX_WIRELEN
    {
        return None;
    }
    let end = at
        .checked_add(h.record_header_len)?
        .checked_add(caplen as usize)?;
    (end <= buf.len()).then_some((super::ts_from_parts(sec, frac, unit), end))
}

/// Whether a chain of [`CHAIN`] plausible records starts at `at`. (A shorter chain that
/// ends with the file is not enough: one misread header whose length runs to the end of
/// the file would pass; the last records of a file are no place to split anyway.)
pub fn chain_at(buf: &[u8], h: &FileHeader, at: usize) -> bool {
    let mut pos = at;
    let mut prev: Option<i64> = None;
    for _ in 0..CHAIN {
        let Some((ts, end)) = plausible(buf, h, pos) else {
            return false;
        };
        if let Some(p) = prev {
            if ts < p.saturating_sub(BACK_NS) || ts > p.saturating_add(AHEAD_NS) {
                return false;
            }
        }
        prev = Some(ts);
        pos = end;
    }
    true
}

/// The first candidate record boundary at or after `from` (see [`chain_at`]), looked for
/// no further than [`reach`] bytes past `from`; `None` if there is none there.
///
/// The record that `from` falls in (a record the reader accepts holds at most
/// [`MAX_CAPLEN`] bytes) ends, and the next one starts, within that reach: past it no
/// true record start can be the first one, so a longer scan finds no better boundary,
/// and a file where nothing validates costs one reach per boundary, not a scan to its end.
pub fn record_start(buf: &[u8], h: &FileHeader, from: usize) -> Option<usize> {
    let first = from.max(FILE_HEADER_LEN);
    let last = buf
        .len()
        .checked_sub(h.record_header_len)?
        .min(first.saturating_add(reach(h)));
    let found = (first..=last).find(|&at| chain_at(buf, h, at));
    #[cfg(test)]
    tally::add(found.map_or((last + 1).saturating_sub(first), |at| at - first + 1));
    found
}

/// How far past its starting offset [`record_start`] looks: one record header and
/// [`MAX_CAPLEN`] bytes.
pub fn reach(h: &FileHeader) -> usize {
    h.record_header_len + MAX_CAPLEN as usize
}

/// The offsets [`record_start`] examined on this thread (tests only).
#[cfg(test)]
pub mod tally {
    use std::cell::Cell;

    thread_local! {
        static EXAMINED: Cell<usize> = const { Cell::new(0) };
    }

    pub(super) fn add(n: usize) {
        EXAMINED.with(|e| e.set(e.get() + n));
    }

    /// The offsets examined since the last call, on this thread.
    pub fn take() -> usize {
        EXAMINED.with(|e| e.replace(0))
    }
}

/// The smallest part worth a thread of its own (a smaller file is read in one part).
pub const MIN_PART: usize = 1 << 20;

/// Split the records of a classic file `buf` into up to `parts` byte ranges of about equal
/// size, in order: the first starts after the file header, the last ends at the end of
/// `buf`, each range starts at a candidate boundary. Parts under `min_part` bytes are
/// not made; nor is a part whose target offset has no candidate within [`reach`] (the
/// range before it runs on to the next boundary).
pub fn ranges(buf: &[u8], h: &FileHeader, parts: usize, min_part: usize) -> Vec<(usize, usize)> {
    let body = buf.len().saturating_sub(FILE_HEADER_LEN);
    let parts = parts.clamp(1, (body / min_part.max(1)).max(1));
    let mut starts = vec![FILE_HEADER_LEN];
    for i in 1..parts {
        let target = FILE_HEADER_LEN + body / parts * i;
        let Some(&prev) = starts.last() else { break };
        if target <= prev {
            continue;
        }
        // No boundary near this target: the part before it runs on to the next one.
        if let Some(at) = record_start(buf, h, target) {
            if at > prev && at < buf.len() {
                starts.push(at);
            }
        }
    }
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(starts.len());
    for (i, &s) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(buf.len());
        out.push((s, end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::Endian;
    use proptest::prelude::*;

    /// A record header in the file's byte order.
    fn rec_header(be: bool, sec: u32, frac: u32, caplen: u32, wirelen: u32) -> Vec<u8> {
        let w = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        [w(sec), w(frac), w(caplen), w(wirelen)].concat()
    }

    /// A classic file with the given payloads (snaplen 65535) and the true record starts.
    fn file(be: bool, ns: bool, payloads: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
        let magic: u32 = if ns { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let w32 = |v: u32| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let w16 = |v: u16| if be { v.to_be_bytes() } else { v.to_le_bytes() };
        let mut out = Vec::new();
        out.extend(w32(magic));
        out.extend(w16(2));
        out.extend(w16(4));
        out.extend([0; 8]);
        out.extend(w32(65535));
        out.extend(w32(1));
        let mut starts = Vec::new();
        for (i, p) in payloads.iter().enumerate() {
            starts.push(out.len());
            let frac = (i as u32 * 7) % if ns { 1_000_000_000 } else { 1_000_000 };
            out.extend(rec_header(
                be,
                1_700_000_000 + i as u32 / 50,
                frac,
                p.len() as u32,
                p.len() as u32 + 4,
            ));
            out.extend(p);
        }
        (out, starts)
    }

    /// A payload that imitates records: `fakes` headers (in the file's byte order, with
    /// plausible lengths and times) chained inside it, each with `fake_len` data bytes,
    /// then 16 bytes of filler.
    fn lookalike(be: bool, fakes: usize, fake_len: u32) -> Vec<u8> {
        let mut p = Vec::new();
        for j in 0..fakes {
            p.extend(rec_header(be, 1_700_000_000, j as u32, fake_len, fake_len));
            p.extend(vec![0xAB; fake_len as usize]);
        }
        p.extend([0xFF; 16]);
        p
    }

    /// Where a cursor reading from `start` ends when it reaches `end` or passes it.
    fn walk_from(buf: &[u8], start: usize, end: usize) -> usize {
        let mut c = crate::pcap::classic::ClassicCursor::new(buf).unwrap();
        c.seek(start);
        while c.offset() < end {
            if !matches!(c.next(buf), Ok(Some(_))) {
                break;
            }
        }
        c.offset()
    }

    fn header(buf: &[u8]) -> FileHeader {
        FileHeader::parse(buf).unwrap()
    }

    #[test]
    fn ranges_cover_the_records_in_order() {
        let payloads: Vec<Vec<u8>> = (0..20_000).map(|i| vec![i as u8; 60 + i % 40]).collect();
        let (buf, starts) = file(false, false, &payloads);
        let h = header(&buf);
        for parts in 1..6 {
            let r = ranges(&buf, &h, parts, 4096);
            assert_eq!(r.len(), parts, "{parts} parts of {} bytes", buf.len());
            assert_eq!(r[0].0, FILE_HEADER_LEN);
            assert_eq!(r.last().unwrap().1, buf.len());
            for w in r.windows(2) {
                assert_eq!(w[0].1, w[1].0);
                assert!(
                    starts.binary_search(&w[1].0).is_ok(),
                    "{} is a record start",
                    w[1].0
                );
            }
        }
        // A small file is one part.
        assert_eq!(ranges(&buf, &h, 4, buf.len()).len(), 1);
    }

    #[test]
    fn a_file_without_records_is_one_empty_part() {
        let (buf, _) = file(false, false, &[]);
        let h = header(&buf);
        assert_eq!(ranges(&buf, &h, 4, 1), vec![(24, 24)]);
        assert_eq!(record_start(&buf, &h, 0), None);
    }

    #[test]
    fn the_last_records_of_a_file_are_no_candidates() {
        let payloads: Vec<Vec<u8>> = (0..CHAIN + 2).map(|_| vec![1; 30]).collect();
        let (buf, starts) = file(true, true, &payloads);
        let h = header(&buf);
        assert!(matches!(h.endian, Endian::Big));
        assert!(chain_at(&buf, &h, starts[2]));
        assert!(!chain_at(&buf, &h, starts[3]));
        assert_eq!(record_start(&buf, &h, starts[2] + 1), None);
    }

    /// Where no position validates (every record's wire length is below its captured
    /// length), each boundary looked for costs at most one reach of offsets, not a scan to
    /// the end of the file, and the file is one part.
    #[test]
    fn a_file_with_no_valid_chain_costs_one_reach_per_boundary() {
        let payloads: Vec<Vec<u8>> = (0..40_000).map(|_| vec![0x5A; 100]).collect();
        let (mut buf, starts) = file(false, false, &payloads);
        for &s in &starts {
            buf[s + REC_WIRELEN..s + REC_WIRELEN + 4].copy_from_slice(&0u32.to_le_bytes());
        }
        let h = header(&buf);
        assert!(buf.len() > 4 * (reach(&h) + 1));
        tally::take();
        assert_eq!(
            ranges(&buf, &h, 4, 4096),
            vec![(FILE_HEADER_LEN, buf.len())]
        );
        let examined = tally::take();
        assert!(examined > 0);
        assert!(examined <= 3 * (reach(&h) + 1), "{examined} offsets");
    }

    /// Records as long as the reader accepts: a boundary is still found from any offset
    /// inside one, within the reach.
    #[test]
    fn the_reach_spans_the_longest_record() {
        let big = MAX_CAPLEN as usize;
        let payloads: Vec<Vec<u8>> = (0..3 * CHAIN)
            .map(|i| vec![0x5A; if i % 2 == 0 { big } else { 64 }])
            .collect();
        let (buf, starts) = file(true, false, &payloads);
        let h = header(&buf);
        for from in [
            starts[0] + 1,
            starts[2] + 1,
            starts[2] + 16 + big / 2,
            starts[3] - 1,
        ] {
            let at = record_start(&buf, &h, from).expect("a boundary within the reach");
            assert!(starts.binary_search(&at).is_ok() && at >= from && at - from <= reach(&h));
        }
    }

    /// A payload that is itself one whole fake record chains into the true records after
    /// it: a candidate inside a payload, which no header check can rule out. The reader of
    /// the part before it proves it false: it does not end on it.
    #[test]
    fn a_fake_record_ending_its_payload_is_a_false_candidate_the_walk_rejects() {
        let fake = [rec_header(false, 1_700_000_000, 5, 20, 20), vec![0xAB; 20]].concat();
        let mut payloads: Vec<Vec<u8>> = (0..30).map(|_| vec![0x5A; 50]).collect();
        payloads[10] = [vec![0xFF; 8], fake].concat();
        let (buf, starts) = file(false, false, &payloads);
        let h = header(&buf);
        let inside = starts[10] + 16 + 8;
        assert_eq!(record_start(&buf, &h, starts[10] + 1), Some(inside));
        assert_ne!(walk_from(&buf, FILE_HEADER_LEN, inside), inside);
        for &s in &starts {
            assert_eq!(walk_from(&buf, FILE_HEADER_LEN, s), s);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every boundary found, from every offset, is a true record start on files whose
        /// payloads imitate record headers (chains of up to CHAIN - 1 fake records, which
        /// do not end their payload), in both byte orders and precisions; and a walk from
        /// the first record ends on every range start.
        #[test]
        fn every_boundary_found_is_a_record_start(
            be in any::<bool>(),
            ns in any::<bool>(),
            spec in prop::collection::vec((0usize..CHAIN, 1u32..40, 0usize..64), 1..80),
            step in 1usize..97,
            parts in 1usize..6,
        ) {
            let payloads: Vec<Vec<u8>> = spec
                .iter()
                .map(|&(fakes, len, plain)| {
                    if fakes == 0 { vec![0x5A; plain] } else { lookalike(be, fakes, len) }
                })
                .collect();
            let (buf, starts) = file(be, ns, &payloads);
            let h = header(&buf);
            let mut from = 0;
            while from < buf.len() {
                if let Some(at) = record_start(&buf, &h, from) {
                    prop_assert!(starts.binary_search(&at).is_ok(), "candidate {} from {}", at, from);
                    prop_assert!(at >= from);
                }
                from += step;
            }
            let r = ranges(&buf, &h, parts, 64);
            for w in r.windows(2) {
                prop_assert_eq!(w[0].1, w[1].0);
                prop_assert_eq!(walk_from(&buf, w[0].0, w[0].1), w[0].1);
            }
        }
    }
}
