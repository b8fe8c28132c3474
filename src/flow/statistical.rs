//! Post-mortem statistics per flow (`features="statistical"`), kept compact.
//!
//! A flow's hot state is three cache lines: one per direction (count, size sums, gap
//! sum of squares, extremes, previous time) and one for the whole flow (its gaps and the
//! directions' first times), so a packet touches two lines (one unidirectional). The
//! sums are 64-bit words; what does not fit (a carry, a gap of 2^32 ns or more, a
//! negative or saturated gap, a direction out of time order) takes a cold path that
//! keeps the high words and corrections in a separate per-flow record, set up only when
//! a flow first needs it. The sum of a direction's gaps is not kept: it telescopes to
//! its last time minus its first, plus the correction of any saturated gap. At the end
//! every sum is rebuilt exactly at 128 bits ([`Moments`]), so the columns are those of
//! an exact one-pass computation. TCP flag counters live apart, used by TCP flows only.
//! Slots live in fixed chunks: a growing table adds chunks and never moves a flow.

use arrow_array::types::{Int64Type, UInt64Type};
use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field};

use super::features::{dense, nullable, FeatureGroup, MomentColumns, Moments, PacketView};

/// Slots per chunk (a power of two).
const CHUNK: usize = 1 << 10;

/// Per-slot values in fixed chunks, allocated as the slots grow (never moved).
pub(crate) struct Chunks<T> {
    chunks: Vec<Box<[T; CHUNK]>>,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks { chunks: Vec::new() }
    }
}

impl<T: Clone + Default> Chunks<T> {
    /// The value of `slot`, its chunk (and those before it) allocated on first need.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, slot: usize) -> &mut T {
        let c = slot / CHUNK;
        if c >= self.chunks.len() {
            self.grow(c);
        }
        &mut self.chunks[c][slot % CHUNK]
    }

    /// The value of `slot` if its chunk exists.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> Option<&T> {
        self.chunks
            .get(slot / CHUNK)
            .map(|chunk| &chunk[slot % CHUNK])
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, c: usize) {
        while self.chunks.len() <= c {
            let chunk: Box<[T]> = vec![T::default(); CHUNK].into_boxed_slice();
            match chunk.try_into() {
                Ok(chunk) => self.chunks.push(chunk),
                Err(_) => unreachable!("a chunk has CHUNK values"),
            }
        }
    }
}

/// TCP flag bits in the order of the per-flag columns (nfstream's).
const FLAG_COLUMNS: [(&str, u8); 8] = [
    ("syn", 0x02),
    ("cwr", 0x80),
    ("ece", 0x40),
    ("urg", 0x20),
    ("ack", 0x10),
    ("psh", 0x08),
    ("rst", 0x04),
    ("fin", 0x01),
];

/// A part (direction or whole flow) has seen a packet.
const SEEN: u32 = 1;
/// A direction had a packet earlier than the one before it: its first and last times
/// are kept in the cold record from then on.
const DISORDERED: u32 = 2;
/// The part's cold record is in use (reset for this flow).
const COLD: u32 = 4;
/// The direction's flag counters are in use (reset for this flow).
const FLAGS: u32 = 8;

/// Gaps below this take the fast path: non-negative, their square fits 64 bits.
const FAST_GAP: u64 = 1 << 32;

/// One direction's hot state: one cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct DirHot {
    /// Packets, low 32 bits (the carries are in the cold record).
    n: u32,
    bits: u32,
    ps_min: u32,
    ps_max: u32,
    /// Low words of the sum and sum of squares of sizes, and of the squared gaps.
    ps_sum: u64,
    ps_sumsq: u64,
    piat_sumsq: u64,
    piat_min: i64,
    piat_max: i64,
    /// The previous packet's time.
    prev_ts: i64,
}

/// The whole flow's gaps and the directions' first times: one cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(64))]
struct WholeHot {
    piat_sumsq: u64,
    piat_min: i64,
    piat_max: i64,
    /// The flow's previous and first packet times (arrival order).
    prev_ts: i64,
    first_ts: i64,
    /// Each direction's first packet time (arrival order).
    dir_first: [i64; 2],
    bits: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Hot {
    dirs: [DirHot; 2],
    whole: WholeHot,
}

/// What does not fit a direction's hot words.
#[derive(Clone, Copy, Debug, Default)]
struct ColdDir {
    n_hi: u64,
    ps_sum_hi: u64,
    ps_sumsq_hi: u64,
    piat_sumsq_hi: u64,
    /// Saturated gaps minus true gaps (the gap sum is last time - first time + this).
    piat_fix: i128,
    /// Earliest and latest time, once the direction is out of order.
    min_ts: i64,
    max_ts: i64,
}

#[derive(Clone, Copy, Debug, Default)]
struct ColdWhole {
    piat_sumsq_hi: u64,
    piat_fix: i128,
}

#[derive(Clone, Copy, Debug, Default)]
struct Cold {
    dirs: [ColdDir; 2],
    whole: ColdWhole,
}

/// Add `v` to the 128-bit number `hi:lo`, wrapping.
#[inline(always)]
fn add_wide(lo: &mut u64, hi: &mut u64, v: u128) {
    let (l, carry) = lo.overflowing_add(v as u64);
    *lo = l;
    *hi = hi
        .wrapping_add((v >> 64) as u64)
        .wrapping_add(u64::from(carry));
}

#[inline(always)]
fn wide(lo: u64, hi: u64) -> u128 {
    u128::from(hi) << 64 | u128::from(lo)
}

/// The cold record of direction `d` of `slot`, reset on its first use by this flow.
#[inline]
fn cold_dir<'a>(
    cold: &'a mut Chunks<Cold>,
    slot: usize,
    x: &mut DirHot,
    d: usize,
) -> &'a mut ColdDir {
    let c = &mut cold.get_mut(slot).dirs[d];
    if x.bits & COLD == 0 {
        x.bits |= COLD;
        *c = ColdDir::default();
    }
    c
}

#[inline]
fn cold_whole<'a>(cold: &'a mut Chunks<Cold>, slot: usize, w: &mut WholeHot) -> &'a mut ColdWhole {
    let c = &mut cold.get_mut(slot).whole;
    if w.bits & COLD == 0 {
        w.bits |= COLD;
        *c = ColdWhole::default();
    }
    c
}

/// A direction's packet in full generality: carries, any gap, time disorder.
#[cold]
#[inline(never)]
fn dir_slow(
    x: &mut DirHot,
    first: i64,
    cold: &mut Chunks<Cold>,
    slot: usize,
    d: usize,
    ts: i64,
    size: u32,
) {
    let c = cold_dir(cold, slot, x, d);
    let (n, wrapped) = x.n.overflowing_add(1);
    x.n = n;
    c.n_hi += u64::from(wrapped);
    let s = u64::from(size);
    add_wide(&mut x.ps_sum, &mut c.ps_sum_hi, u128::from(s));
    add_wide(&mut x.ps_sumsq, &mut c.ps_sumsq_hi, u128::from(s * s));
    x.ps_min = x.ps_min.min(size);
    x.ps_max = x.ps_max.max(size);
    let g = ts.saturating_sub(x.prev_ts);
    c.piat_fix = c
        .piat_fix
        .wrapping_add(i128::from(g) - (i128::from(ts) - i128::from(x.prev_ts)));
    let w = u128::from(g.unsigned_abs());
    add_wide(&mut x.piat_sumsq, &mut c.piat_sumsq_hi, w * w);
    x.piat_min = x.piat_min.min(g);
    x.piat_max = x.piat_max.max(g);
    if x.bits & DISORDERED == 0 && ts < x.prev_ts {
        // In order until now: the first packet is the earliest, the previous the latest.
        x.bits |= DISORDERED;
        c.min_ts = first;
        c.max_ts = x.prev_ts;
    }
    if x.bits & DISORDERED != 0 {
        c.min_ts = c.min_ts.min(ts);
        c.max_ts = c.max_ts.max(ts);
    }
    x.prev_ts = ts;
}

/// Carries out of a direction's fast-path sums.
#[cold]
#[inline(never)]
fn dir_carry(x: &mut DirHot, cold: &mut Chunks<Cold>, slot: usize, d: usize, carries: [bool; 4]) {
    let c = cold_dir(cold, slot, x, d);
    c.n_hi += u64::from(carries[3]);
    c.ps_sum_hi = c.ps_sum_hi.wrapping_add(u64::from(carries[0]));
    c.ps_sumsq_hi = c.ps_sumsq_hi.wrapping_add(u64::from(carries[1]));
    c.piat_sumsq_hi = c.piat_sumsq_hi.wrapping_add(u64::from(carries[2]));
}

/// A whole-flow gap off the fast path (negative, saturated, or 2^32 ns or more), or a
/// carry (`gap` None).
#[cold]
#[inline(never)]
fn whole_slow(w: &mut WholeHot, cold: &mut Chunks<Cold>, slot: usize, ts: i64, gap: Option<i64>) {
    let c = cold_whole(cold, slot, w);
    let Some(g) = gap else {
        c.piat_sumsq_hi = c.piat_sumsq_hi.wrapping_add(1);
        return;
    };
    c.piat_fix = c
        .piat_fix
        .wrapping_add(i128::from(g) - (i128::from(ts) - i128::from(w.prev_ts)));
    let u = u128::from(g.unsigned_abs());
    add_wide(&mut w.piat_sumsq, &mut c.piat_sumsq_hi, u * u);
    w.piat_min = w.piat_min.min(g);
    w.piat_max = w.piat_max.max(g);
}

/// Post-mortem statistics (nfstream's `statistical_analysis`): per direction and for the
/// whole flow, min/mean/stddev/max of the packet size (wire length) and of the
/// inter-arrival time, and the number of packets carrying each TCP flag; with directions,
/// also each direction's first and last packet time and duration.
pub struct Statistical {
    bidirectional: bool,
    hot: Chunks<Hot>,
    cold: Chunks<Cold>,
    /// Packets with each TCP flag per direction, indexed by bit (FIN = bit 0 ... CWR = 7).
    flags: Chunks<[[u64; 8]; 2]>,
}

/// What a statistical column reads: the whole flow, or direction 0 or 1.
#[derive(Clone, Copy)]
enum Part {
    Whole,
    Dir(usize),
}

/// Column-name prefixes and the part each reads.
fn prefixes(bidirectional: bool) -> &'static [(&'static str, Part)] {
    if bidirectional {
        &[
            ("bidirectional_", Part::Whole),
            ("src2dst_", Part::Dir(0)),
            ("dst2src_", Part::Dir(1)),
        ]
    } else {
        &[("", Part::Dir(0))]
    }
}

/// A direction's exact moments, first and last times and flag counts.
struct DirTotals {
    ps: Moments,
    piat: Moments,
    times: Option<(i64, i64)>,
    flags: [u64; 8],
}

impl Statistical {
    /// Direction columns (`src2dst_`, `dst2src_`) when `bidirectional`.
    pub fn new(bidirectional: bool) -> Self {
        Statistical {
            bidirectional,
            hot: Chunks::default(),
            cold: Chunks::default(),
            flags: Chunks::default(),
        }
    }

    fn dir_totals(&self, slot: usize, h: &Hot, d: usize) -> DirTotals {
        let x = &h.dirs[d];
        let mut t = DirTotals {
            ps: Moments::default(),
            piat: Moments::default(),
            times: None,
            flags: [0; 8],
        };
        if x.bits & SEEN == 0 {
            return t;
        }
        let cold = (x.bits & COLD != 0)
            .then(|| self.cold.get(slot).map(|c| c.dirs[d]))
            .flatten()
            .unwrap_or_default();
        let first = h.whole.dir_first[d];
        let n = cold.n_hi << 32 | u64::from(x.n);
        t.ps = Moments::from_parts(
            wide(x.ps_sum, cold.ps_sum_hi) as i128,
            wide(x.ps_sumsq, cold.ps_sumsq_hi),
            n,
            i64::from(x.ps_min),
            i64::from(x.ps_max),
        );
        if n > 1 {
            let sum = (i128::from(x.prev_ts) - i128::from(first)).wrapping_add(cold.piat_fix);
            t.piat = Moments::from_parts(
                sum,
                wide(x.piat_sumsq, cold.piat_sumsq_hi),
                n - 1,
                x.piat_min,
                x.piat_max,
            );
        }
        t.times = Some(if x.bits & DISORDERED != 0 {
            (cold.min_ts, cold.max_ts)
        } else {
            (first, x.prev_ts)
        });
        if x.bits & FLAGS != 0 {
            if let Some(f) = self.flags.get(slot) {
                t.flags = f[d];
            }
        }
        t
    }

    fn whole_piat(&self, slot: usize, h: &Hot, n: u64) -> Moments {
        let w = &h.whole;
        if w.bits & SEEN == 0 || n < 2 {
            return Moments::default();
        }
        let cold = (w.bits & COLD != 0)
            .then(|| self.cold.get(slot).map(|c| c.whole))
            .flatten()
            .unwrap_or_default();
        Moments::from_parts(
            (i128::from(w.prev_ts) - i128::from(w.first_ts)).wrapping_add(cold.piat_fix),
            wide(w.piat_sumsq, cold.piat_sumsq_hi),
            n - 1,
            w.piat_min,
            w.piat_max,
        )
    }
}

impl FeatureGroup for Statistical {
    fn fields(&self) -> Vec<Field> {
        let mut out = Vec::new();
        for (what, unit, ty) in [
            ("ps", "", DataType::UInt32),
            ("piat", "_ns", DataType::Int64),
        ] {
            for (p, _) in prefixes(self.bidirectional) {
                out.push(Field::new(format!("{p}min_{what}{unit}"), ty.clone(), true));
                out.push(Field::new(
                    format!("{p}mean_{what}{unit}"),
                    DataType::Float64,
                    true,
                ));
                out.push(Field::new(
                    format!("{p}stddev_{what}{unit}"),
                    DataType::Float64,
                    true,
                ));
                out.push(Field::new(format!("{p}max_{what}{unit}"), ty.clone(), true));
            }
        }
        for (p, _) in prefixes(self.bidirectional) {
            for (flag, _) in FLAG_COLUMNS {
                out.push(Field::new(
                    format!("{p}{flag}_packets"),
                    DataType::UInt64,
                    false,
                ));
            }
        }
        for (p, part) in prefixes(self.bidirectional) {
            if matches!(part, Part::Dir(_)) && self.bidirectional {
                for what in ["first_ts_ns", "last_ts_ns", "duration_ns"] {
                    out.push(Field::new(format!("{p}{what}"), DataType::Int64, true));
                }
            }
        }
        out
    }

    fn open(&mut self, slot: usize) {
        *self.hot.get_mut(slot) = Hot::default();
    }

    #[inline]
    fn packet(&mut self, slot: usize, p: &PacketView<'_>) {
        let Statistical {
            bidirectional,
            hot,
            cold,
            flags,
        } = self;
        let ts = p.pkt.ts_ns;
        let size = p.pkt.wirelen;
        let d = usize::from(!p.forward);
        let Hot { dirs, whole: w } = hot.get_mut(slot);
        if *bidirectional {
            if w.bits & SEEN == 0 {
                w.bits |= SEEN;
                w.first_ts = ts;
                w.piat_min = i64::MAX;
                w.piat_max = i64::MIN;
            } else {
                let (gap, over) = ts.overflowing_sub(w.prev_ts);
                if !over && (gap as u64) < FAST_GAP {
                    let g = gap as u64;
                    let (q, carry) = w.piat_sumsq.overflowing_add(g * g);
                    w.piat_sumsq = q;
                    w.piat_min = w.piat_min.min(gap);
                    w.piat_max = w.piat_max.max(gap);
                    if carry {
                        whole_slow(w, cold, slot, ts, None);
                    }
                } else {
                    whole_slow(w, cold, slot, ts, Some(ts.saturating_sub(w.prev_ts)));
                }
            }
            w.prev_ts = ts;
        }
        let x = &mut dirs[d];
        let (gap, over) = ts.overflowing_sub(x.prev_ts);
        if x.bits & (SEEN | DISORDERED) == SEEN && !over && (gap as u64) < FAST_GAP {
            let (s, g) = (u64::from(size), gap as u64);
            let (a, c0) = x.ps_sum.overflowing_add(s);
            let (b, c1) = x.ps_sumsq.overflowing_add(s * s);
            let (q, c2) = x.piat_sumsq.overflowing_add(g * g);
            let (n, c3) = x.n.overflowing_add(1);
            x.n = n;
            x.ps_sum = a;
            x.ps_sumsq = b;
            x.piat_sumsq = q;
            x.ps_min = x.ps_min.min(size);
            x.ps_max = x.ps_max.max(size);
            x.piat_min = x.piat_min.min(gap);
            x.piat_max = x.piat_max.max(gap);
            x.prev_ts = ts;
            if c0 | c1 | c2 | c3 {
                dir_carry(x, cold, slot, d, [c0, c1, c2, c3]);
            }
        } else if x.bits & SEEN == 0 {
            let s = u64::from(size);
            x.bits |= SEEN;
            x.n = 1;
            x.ps_sum = s;
            x.ps_sumsq = s * s;
            x.ps_min = size;
            x.ps_max = size;
            x.piat_min = i64::MAX;
            x.piat_max = i64::MIN;
            x.prev_ts = ts;
            w.dir_first[d] = ts;
        } else {
            dir_slow(x, w.dir_first[d], cold, slot, d, ts, size);
        }
        if p.fields.has_tcp_flags && p.fields.tcp_flags != 0 {
            let counts = &mut flags.get_mut(slot)[d];
            if x.bits & FLAGS == 0 {
                x.bits |= FLAGS;
                *counts = [0; 8];
            }
            let mut f = p.fields.tcp_flags;
            while f != 0 {
                counts[f.trailing_zeros() as usize] += 1;
                f &= f - 1;
            }
        }
    }

    fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        let empty = Hot::default();
        let rows = slots.iter().map(|&slot| {
            let slot = slot as usize;
            let h = self.hot.get(slot).unwrap_or(&empty);
            let dirs = [self.dir_totals(slot, h, 0), self.dir_totals(slot, h, 1)];
            let n = dirs[0].ps.count() + dirs[1].ps.count();
            FlowTotals {
                piat: self.whole_piat(slot, h, n),
                dirs,
            }
        });
        write_columns(self.bidirectional, slots.len(), rows, out);
    }
}

/// A flow's exact totals: each direction's, and the gaps of the whole flow.
struct FlowTotals {
    dirs: [DirTotals; 2],
    piat: Moments,
}

/// The statistical columns of `n` flows, in one pass over their totals.
fn write_columns(
    bidirectional: bool,
    n: usize,
    rows: impl Iterator<Item = FlowTotals>,
    out: &mut Vec<ArrayRef>,
) {
    let parts = prefixes(bidirectional);
    let moments =
        || -> Vec<MomentColumns> { parts.iter().map(|_| MomentColumns::new(n)).collect() };
    let (mut ps, mut piat) = (moments(), moments());
    let mut flags: Vec<Vec<u64>> = (0..parts.len() * FLAG_COLUMNS.len())
        .map(|_| Vec::with_capacity(n))
        .collect();
    let times = if bidirectional { 6 } else { 0 };
    let mut ts: Vec<Vec<Option<i64>>> = (0..times).map(|_| Vec::with_capacity(n)).collect();
    for t in rows {
        for (k, &(_, part)) in parts.iter().enumerate() {
            match part {
                Part::Whole => {
                    ps[k].push(&t.dirs[0].ps.merged(&t.dirs[1].ps));
                    piat[k].push(&t.piat);
                }
                Part::Dir(d) => {
                    ps[k].push(&t.dirs[d].ps);
                    piat[k].push(&t.dirs[d].piat);
                }
            }
            for (j, (_, bit)) in FLAG_COLUMNS.iter().enumerate() {
                let i = bit.trailing_zeros() as usize;
                flags[k * FLAG_COLUMNS.len() + j].push(match part {
                    Part::Whole => t.dirs[0].flags[i] + t.dirs[1].flags[i],
                    Part::Dir(d) => t.dirs[d].flags[i],
                });
            }
        }
        if bidirectional {
            for (d, dir) in t.dirs.iter().enumerate() {
                ts[3 * d].push(dir.times.map(|t| t.0));
                ts[3 * d + 1].push(dir.times.map(|t| t.1));
                ts[3 * d + 2].push(dir.times.map(|t| t.1.saturating_sub(t.0)));
            }
        }
    }
    for m in ps {
        m.write(true, out);
    }
    for m in piat {
        m.write(false, out);
    }
    for f in flags {
        out.push(dense::<UInt64Type>(f.into_iter()));
    }
    for t in ts {
        out.push(nullable::<Int64Type>(t.into_iter()));
    }
}

#[cfg(test)]
#[path = "statistical_tests.rs"]
mod tests;
