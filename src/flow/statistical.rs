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

use arrow_array::types::{Float64Type, Int64Type, UInt32Type, UInt64Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer};
use arrow_schema::{DataType, Field};

use super::columns::prim;
use super::features::{FeatureGroup, Moments, PacketView};

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

/// Column-name prefixes, in column order: the whole flow then each direction when
/// bidirectional, else the one direction.
fn prefixes(bidirectional: bool) -> &'static [&'static str] {
    if bidirectional {
        &["bidirectional_", "src2dst_", "dst2src_"]
    } else {
        &[""]
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
            for p in prefixes(self.bidirectional) {
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
        for p in prefixes(self.bidirectional) {
            for (flag, _) in FLAG_COLUMNS {
                out.push(Field::new(
                    format!("{p}{flag}_packets"),
                    DataType::UInt64,
                    false,
                ));
            }
        }
        if self.bidirectional {
            for p in &prefixes(true)[1..] {
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

    #[inline(always)]
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
        self.write_columns(slots, out);
    }
}

impl Statistical {
    /// The columns of the flows in `slots`, in one pass over their state: each row's
    /// values go straight into typed columns (zeroed once, validity bits set per row);
    /// a direction without a cold record is read from its 64-bit words alone.
    fn write_columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        let n = slots.len();
        let parts = if self.bidirectional { 3 } else { 1 };
        // Part 0 is the whole flow when bidirectional, else direction 0; direction d is
        // part d + 1 when bidirectional.
        let mut ps: Vec<MomentColumns<u32>> = (0..parts).map(|_| MomentColumns::new(n)).collect();
        let mut piat: Vec<MomentColumns<i64>> = (0..parts).map(|_| MomentColumns::new(n)).collect();
        let mut flags: Vec<Vec<u64>> = (0..parts * FLAG_COLUMNS.len())
            .map(|_| vec![0; n])
            .collect();
        let dirs = if self.bidirectional { 2 } else { 0 };
        let mut times: Vec<[Vec<i64>; 3]> = (0..dirs)
            .map(|_| [vec![0; n], vec![0; n], vec![0; n]])
            .collect();
        let mut seen: Vec<Bits> = (0..dirs).map(|_| Bits::new(n)).collect();
        let empty = Hot::default();
        let part = |d: usize| if self.bidirectional { d + 1 } else { d };
        for (i, &slot) in slots.iter().enumerate() {
            let slot = slot as usize;
            let h = self.hot.get(slot).unwrap_or(&empty);
            let used = if self.bidirectional { 2 } else { 1 };
            let mut count = 0u64;
            if h.dirs[..used].iter().all(|x| x.bits & COLD == 0) {
                // Every sum in its 64-bit word.
                for (d, x) in h.dirs[..used].iter().enumerate() {
                    if x.bits & SEEN == 0 {
                        continue;
                    }
                    let k = part(d);
                    let c = u64::from(x.n);
                    count += c;
                    ps[k].narrow(i, c, x.ps_sum, x.ps_sumsq, x.ps_min, x.ps_max);
                    let first = h.whole.dir_first[d];
                    if c > 1 {
                        piat[k].gaps(
                            i,
                            c - 1,
                            first,
                            x.prev_ts,
                            x.piat_sumsq,
                            x.piat_min,
                            x.piat_max,
                        );
                    }
                    if self.bidirectional {
                        seen[d].set(i);
                        let t = &mut times[d];
                        t[0][i] = first;
                        t[1][i] = x.prev_ts;
                        t[2][i] = x.prev_ts.saturating_sub(first);
                    }
                }
                if self.bidirectional {
                    let [a, b] = &h.dirs;
                    match (a.bits & SEEN != 0, b.bits & SEEN != 0) {
                        (true, true) => match (
                            a.ps_sum.checked_add(b.ps_sum),
                            a.ps_sumsq.checked_add(b.ps_sumsq),
                        ) {
                            (Some(sum), Some(sumsq)) => ps[0].narrow(
                                i,
                                count,
                                sum,
                                sumsq,
                                a.ps_min.min(b.ps_min),
                                a.ps_max.max(b.ps_max),
                            ),
                            _ => {
                                let t = [self.dir_totals(slot, h, 0), self.dir_totals(slot, h, 1)];
                                ps[0].wide(i, &t[0].ps.merged(&t[1].ps));
                            }
                        },
                        (true, false) => {
                            ps[0].narrow(i, count, a.ps_sum, a.ps_sumsq, a.ps_min, a.ps_max)
                        }
                        (false, true) => {
                            ps[0].narrow(i, count, b.ps_sum, b.ps_sumsq, b.ps_min, b.ps_max)
                        }
                        (false, false) => {}
                    }
                }
            } else {
                let t = [self.dir_totals(slot, h, 0), self.dir_totals(slot, h, 1)];
                for (d, dir) in t[..used].iter().enumerate() {
                    let k = part(d);
                    ps[k].wide(i, &dir.ps);
                    piat[k].wide(i, &dir.piat);
                    if let (true, Some((first, last))) = (self.bidirectional, dir.times) {
                        seen[d].set(i);
                        let x = &mut times[d];
                        x[0][i] = first;
                        x[1][i] = last;
                        x[2][i] = last.saturating_sub(first);
                    }
                }
                count = t[0].ps.count() + t[1].ps.count();
                if self.bidirectional {
                    ps[0].wide(i, &t[0].ps.merged(&t[1].ps));
                }
            }
            if self.bidirectional {
                let w = &h.whole;
                if w.bits & SEEN != 0 && count > 1 {
                    if w.bits & COLD == 0 {
                        piat[0].gaps(
                            i,
                            count - 1,
                            w.first_ts,
                            w.prev_ts,
                            w.piat_sumsq,
                            w.piat_min,
                            w.piat_max,
                        );
                    } else {
                        piat[0].wide(i, &self.whole_piat(slot, h, count));
                    }
                }
            }
            let [f0, f1] = [0, 1].map(|d| h.dirs[d].bits & FLAGS != 0);
            if f0 || f1 {
                let counts = self.flags.get(slot).copied().unwrap_or_default();
                let counts = [0, 1].map(|d| if [f0, f1][d] { counts[d] } else { [0; 8] });
                for (j, (_, bit)) in FLAG_COLUMNS.iter().enumerate() {
                    let b = bit.trailing_zeros() as usize;
                    if self.bidirectional {
                        flags[j][i] = counts[0][b] + counts[1][b];
                        flags[8 + j][i] = counts[0][b];
                        flags[16 + j][i] = counts[1][b];
                    } else {
                        flags[j][i] = counts[0][b];
                    }
                }
            }
        }
        for m in ps {
            m.write::<UInt32Type>(n, out);
        }
        for m in piat {
            m.write::<Int64Type>(n, out);
        }
        for f in flags {
            out.push(prim::<UInt64Type>(f, None));
        }
        for (t, valid) in times.into_iter().zip(seen) {
            let valid = valid.nulls(n);
            for col in t {
                out.push(prim::<Int64Type>(col, valid.clone()));
            }
        }
    }
}

/// One bit per row, set row by row: a validity bitmap.
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: usize) -> Self {
        Bits(vec![0; n.div_ceil(64)])
    }

    #[inline(always)]
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// The bitmap of `n` rows, None when every row is valid.
    fn nulls(self, n: usize) -> Option<NullBuffer> {
        let b = NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(self.0), 0, n));
        (b.null_count() > 0).then_some(b)
    }
}

/// The min, mean, stddev and max columns of one set of moments, filled by row index
/// (rows without samples stay zero and null).
struct MomentColumns<E> {
    min: Vec<E>,
    mean: Vec<f64>,
    stddev: Vec<f64>,
    max: Vec<E>,
    /// Rows with a sample (min, mean and max valid), with two (stddev valid).
    one: Bits,
    two: Bits,
}

/// The extremes' column type from a 64-bit value.
trait Extreme: Copy + Default {
    fn from_i64(v: i64) -> Self;
}

impl Extreme for u32 {
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v as u32
    }
}

impl Extreme for i64 {
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v
    }
}

impl<E: Extreme> MomentColumns<E> {
    fn new(n: usize) -> Self {
        MomentColumns {
            min: vec![E::default(); n],
            mean: vec![0.0; n],
            stddev: vec![0.0; n],
            max: vec![E::default(); n],
            one: Bits::new(n),
            two: Bits::new(n),
        }
    }

    /// Row `i`: `n` (at least 1) samples whose sums fit 64 bits. The same values as
    /// [`Moments::mean`] and [`Moments::stddev`] of the same sums: the integers are
    /// equal, and converted to floating point once each, from 64 bits instead of 128.
    #[inline(always)]
    fn narrow(&mut self, i: usize, n: u64, sum: u64, sumsq: u64, min: E, max: E) {
        self.min[i] = min;
        self.max[i] = max;
        self.one.set(i);
        self.mean[i] = sum as f64 / n as f64;
        if n < 2 {
            return;
        }
        self.two.set(i);
        self.stddev[i] = match n.checked_mul(sumsq) {
            // `Moments::stddev`'s exact numerator n * sumsq - sum^2, at least 0: with
            // n * sumsq below 2^64, a sum^2 beyond 64 bits exceeds it.
            Some(a) if sum < 1 << 63 => {
                let num = sum.checked_mul(sum).map_or(0, |b| a.saturating_sub(b));
                (num as f64 / (n as f64 * (n - 1) as f64)).sqrt()
            }
            _ => wide_stddev(sum, sumsq, n),
        };
    }

    /// Row `i`: `n` gaps (at least 1) from `first` to `last` (their sum) whose squares
    /// sum to `sumsq` in 64 bits.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn gaps(&mut self, i: usize, n: u64, first: i64, last: i64, sumsq: u64, min: i64, max: i64) {
        match last.checked_sub(first).and_then(|s| u64::try_from(s).ok()) {
            Some(sum) => self.narrow(i, n, sum, sumsq, E::from_i64(min), E::from_i64(max)),
            None => self.wide(
                i,
                &Moments::from_parts(
                    i128::from(last) - i128::from(first),
                    u128::from(sumsq),
                    n,
                    min,
                    max,
                ),
            ),
        }
    }

    /// Row `i` from exact 128-bit moments (any count).
    fn wide(&mut self, i: usize, m: &Moments) {
        let (Some(min), Some(max), Some(mean)) = (m.min(), m.max(), m.mean()) else {
            return;
        };
        self.min[i] = E::from_i64(min);
        self.max[i] = E::from_i64(max);
        self.mean[i] = mean;
        self.one.set(i);
        if let Some(sd) = m.stddev() {
            self.stddev[i] = sd;
            self.two.set(i);
        }
    }

    /// The four columns, as Arrow type `T`.
    fn write<T: ArrowPrimitiveType<Native = E>>(self, n: usize, out: &mut Vec<ArrayRef>) {
        let (one, two) = (self.one.nulls(n), self.two.nulls(n));
        out.push(prim::<T>(self.min, one.clone()));
        out.push(prim::<Float64Type>(self.mean, one.clone()));
        out.push(prim::<Float64Type>(self.stddev, two));
        out.push(prim::<T>(self.max, one));
    }
}

/// [`Moments::stddev`] of sums beyond the 64-bit shortcut.
#[cold]
#[inline(never)]
fn wide_stddev(sum: u64, sumsq: u64, n: u64) -> f64 {
    Moments::from_parts(i128::from(sum), u128::from(sumsq), n, 0, 0)
        .stddev()
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "statistical_tests.rs"]
mod tests;
