//! The compact statistical state and its column writer against a plain exact state and a
//! plain writer: per packet, 128-bit sums of every sample ([`Moments::add`]), explicit gap
//! moments, min/max times and flag counters, written a value at a time through
//! `Option`s. The columns must be equal bit for bit, whatever the times (out of order,
//! extreme, saturating), sizes and flags.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, PrimitiveArray};
use arrow_buffer::ScalarBuffer;
use proptest::prelude::*;

use super::*;
use crate::decode::fastpath::FlowFields;
use crate::source::RawPacket;

/// One direction, every sample added to exact 128-bit moments.
#[derive(Clone, Copy, Default)]
struct RefDir {
    ps: Moments,
    piat: Moments,
    prev_ts: i64,
    first_ts: i64,
    last_ts: i64,
    flags: [u64; 8],
}

#[derive(Clone, Copy, Default)]
struct RefFlow {
    dirs: [RefDir; 2],
    piat: Moments,
    prev_ts: i64,
}

/// The reference: a plain column writer over the plain state.
struct Reference {
    bidirectional: bool,
    flows: Vec<RefFlow>,
}

impl Reference {
    fn packet(&mut self, slot: usize, ts: i64, size: u32, forward: bool, flags: u8) {
        let s = &mut self.flows[slot];
        if self.bidirectional {
            if s.dirs[0].ps.count() + s.dirs[1].ps.count() > 0 {
                s.piat.add(ts.saturating_sub(s.prev_ts));
            }
            s.prev_ts = ts;
        }
        let d = &mut s.dirs[usize::from(!forward)];
        if d.ps.count() > 0 {
            d.piat.add(ts.saturating_sub(d.prev_ts));
            d.first_ts = d.first_ts.min(ts);
            d.last_ts = d.last_ts.max(ts);
        } else {
            d.first_ts = ts;
            d.last_ts = ts;
        }
        d.prev_ts = ts;
        d.ps.add(i64::from(size));
        for (bit, count) in d.flags.iter_mut().enumerate() {
            *count += u64::from(flags >> bit & 1);
        }
    }

    fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        // Parts in column order: the whole flow (None), then each direction.
        let parts: &[Option<usize>] = if self.bidirectional {
            &[None, Some(0), Some(1)]
        } else {
            &[Some(0)]
        };
        let flows: Vec<&RefFlow> = slots.iter().map(|&s| &self.flows[s as usize]).collect();
        let moments = |ps: bool, part: Option<usize>, f: &RefFlow| match (ps, part) {
            (true, None) => f.dirs[0].ps.merged(&f.dirs[1].ps),
            (false, None) => f.piat,
            (true, Some(d)) => f.dirs[d].ps,
            (false, Some(d)) => f.dirs[d].piat,
        };
        for ps in [true, false] {
            for &part in parts {
                let m: Vec<Moments> = flows.iter().map(|f| moments(ps, part, f)).collect();
                let ends = |v: Vec<Option<i64>>| {
                    if ps {
                        nullable::<UInt32Type>(v.into_iter().map(|x| x.map(|x| x as u32)))
                    } else {
                        nullable::<Int64Type>(v.into_iter())
                    }
                };
                out.push(ends(m.iter().map(Moments::min).collect()));
                out.push(nullable::<Float64Type>(m.iter().map(Moments::mean)));
                out.push(nullable::<Float64Type>(m.iter().map(Moments::stddev)));
                out.push(ends(m.iter().map(Moments::max).collect()));
            }
        }
        for &part in parts {
            for (_, bit) in FLAG_COLUMNS {
                let i = bit.trailing_zeros() as usize;
                let count = |f: &&RefFlow| match part {
                    None => f.dirs[0].flags[i] + f.dirs[1].flags[i],
                    Some(d) => f.dirs[d].flags[i],
                };
                let v: Vec<u64> = flows.iter().map(count).collect();
                out.push(Arc::new(PrimitiveArray::<UInt64Type>::new(
                    ScalarBuffer::from(v),
                    None,
                )));
            }
        }
        if self.bidirectional {
            for d in 0..2 {
                let times = |f: &&RefFlow| {
                    let x = &f.dirs[d];
                    (x.ps.count() > 0).then_some((x.first_ts, x.last_ts))
                };
                let t: Vec<Option<(i64, i64)>> = flows.iter().map(times).collect();
                out.push(nullable::<Int64Type>(t.iter().map(|t| t.map(|t| t.0))));
                out.push(nullable::<Int64Type>(t.iter().map(|t| t.map(|t| t.1))));
                out.push(nullable::<Int64Type>(
                    t.iter().map(|t| t.map(|t| t.1.saturating_sub(t.0))),
                ));
            }
        }
    }
}

/// A primitive column with a value or null per row (null buffer only with a null).
fn nullable<T: ArrowPrimitiveType>(
    rows: impl ExactSizeIterator<Item = Option<T::Native>>,
) -> ArrayRef {
    let mut values = Vec::with_capacity(rows.len());
    let mut valid = Vec::with_capacity(rows.len());
    for v in rows {
        valid.push(v.is_some());
        values.push(v.unwrap_or_default());
    }
    let nulls = NullBuffer::from(valid);
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls))
}

/// A packet: (slot, time, size, forward, TCP flags or none).
type Pkt = (usize, i64, u32, bool, Option<u8>);

fn feed(g: &mut Statistical, r: &mut Reference, p: &Pkt) {
    let fields = FlowFields {
        has_tcp_flags: p.4.is_some(),
        tcp_flags: p.4.unwrap_or(0),
        ..FlowFields::default()
    };
    let pkt = RawPacket {
        ts_ns: p.1,
        caplen: 0,
        wirelen: p.2,
        linktype: 1,
        data: &[],
    };
    g.packet(
        p.0,
        &PacketView {
            pkt: &pkt,
            fields: &fields,
            forward: p.3,
        },
    );
    r.packet(p.0, p.1, p.2, p.3, p.4.unwrap_or(0));
}

/// Equal columns, floats compared bit for bit.
fn assert_same(g: &Statistical, r: &Reference, slots: &[u32]) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    g.columns(slots, &mut a);
    r.columns(slots, &mut b);
    let names: Vec<String> = g.fields().iter().map(|f| f.name().clone()).collect();
    assert_eq!(a.len(), names.len());
    assert_eq!(a.len(), b.len());
    for ((x, y), name) in a.iter().zip(&b).zip(&names) {
        if x.data_type() == &DataType::Float64 {
            let bits = |c: &ArrayRef| -> Vec<Option<u64>> {
                c.as_primitive::<Float64Type>()
                    .iter()
                    .map(|v| v.map(f64::to_bits))
                    .collect()
            };
            assert_eq!(bits(x), bits(y), "{name}");
        } else {
            assert_eq!(x.to_data(), y.to_data(), "{name}");
        }
        // A null buffer only where a value is null, in both.
        assert_eq!(x.nulls().is_some(), y.nulls().is_some(), "{name}");
    }
}

fn time() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 0i64..10_000,
        2 => 0i64..(1 << 40),
        1 => any::<i64>(),
        1 => prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0i64), Just(-1i64)],
    ]
}

fn size() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 40u32..1600, 1 => any::<u32>(), 1 => Just(u32::MAX)]
}

/// Packets over `slots` flows: times mostly rising by small or large steps, sometimes
/// anything.
fn packets(slots: usize) -> impl Strategy<Value = Vec<Pkt>> {
    packets_up_to(slots, 120)
}

fn packets_up_to(slots: usize, most: usize) -> impl Strategy<Value = Vec<Pkt>> {
    let step = (
        0..slots,
        prop_oneof![8 => 0i64..5_000_000, 1 => 0i64..(1 << 36), 1 => any::<i64>()],
        prop::bool::weighted(0.9),
        time(),
        size(),
        any::<bool>(),
        proptest::option::weighted(0.5, any::<u8>()),
    );
    (time(), prop::collection::vec(step, 0..most)).prop_map(|(start, steps)| {
        let mut t = start;
        steps
            .into_iter()
            .map(|(slot, dt, rel, abs, size, fwd, flags)| {
                t = if rel { t.saturating_add(dt) } else { abs };
                (slot, t, size, fwd, flags)
            })
            .collect()
    })
}

fn pair(bidirectional: bool, slots: usize) -> (Statistical, Reference) {
    let mut g = Statistical::new(bidirectional);
    let mut r = Reference {
        bidirectional,
        flows: vec![RefFlow::default(); slots],
    };
    for s in 0..slots {
        g.open(s);
    }
    r.flows.fill(RefFlow::default());
    (g, r)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn columns_equal_the_plain_exact_computation(
        bidirectional in any::<bool>(), first in packets(3), second in packets(3),
    ) {
        let (mut g, mut r) = pair(bidirectional, 3);
        let slots = [0u32, 1, 2];
        for p in &first {
            feed(&mut g, &mut r, p);
        }
        assert_same(&g, &r, &slots);
        // Reopened slots start afresh (their cold record and flag counters too).
        for s in 0..3 {
            g.open(s);
            r.flows[s] = RefFlow::default();
        }
        for p in &second {
            feed(&mut g, &mut r, p);
        }
        assert_same(&g, &r, &slots);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// Validity bitmaps over several words, flows without packets in a direction or at
    /// all, rows asked in any order and more than once.
    #[test]
    fn many_flows_in_any_row_order(
        bidirectional in any::<bool>(),
        pkts in packets_up_to(150, 600),
        order in Just((0u32..150).collect::<Vec<u32>>()).prop_shuffle(),
        repeat in 0usize..150,
    ) {
        let (mut g, mut r) = pair(bidirectional, 150);
        for p in &pkts {
            feed(&mut g, &mut r, p);
        }
        let mut slots = order;
        slots.push(slots[repeat]);
        assert_same(&g, &r, &slots);
    }
}

#[test]
fn counts_and_sums_carry_past_64_bits_exactly() {
    // Past 2^32 packets and 2^64 in the sums, without sending that many: both states
    // are set to the same large totals after a few packets, then go on.
    for bidirectional in [false, true] {
        let (mut g, mut r) = pair(bidirectional, 1);
        let mut t = 1_000i64;
        for i in 0..4 {
            t += 1_000 + i;
            feed(&mut g, &mut r, &(0, t, 1500, true, Some(0x10)));
        }
        let x = &mut g.hot.get_mut(0).dirs[0];
        x.n = u32::MAX - 2;
        x.ps_sum = u64::MAX - 3_000;
        x.ps_sumsq = u64::MAX - 5_000_000;
        x.piat_sumsq = u64::MAX - 2_000_000;
        let d = &mut r.flows[0].dirs[0];
        d.ps.n = u64::from(u32::MAX - 2);
        d.ps.sum = i128::from(u64::MAX - 3_000);
        d.ps.sumsq = u128::from(u64::MAX - 5_000_000);
        d.piat.n = d.ps.n - 1;
        d.piat.sumsq = u128::from(u64::MAX - 2_000_000);
        // Every packet runs forward: the whole flow has as many gaps as that direction.
        let gaps = d.piat.n;
        if bidirectional {
            r.flows[0].piat.n = gaps;
        }
        for i in 0..6 {
            t += 1_000 + i;
            feed(&mut g, &mut r, &(0, t, 1500 + i as u32, true, Some(0x18)));
        }
        assert_eq!(g.hot.get(0).unwrap().dirs[0].n, 3, "the count wrapped");
        // The piat sum is not kept but rebuilt: the reference's is the true sum of its
        // gaps; the forced count does not change it.
        assert_same(&g, &r, &[0]);
    }
}

#[test]
fn udp_flows_never_allocate_flag_counters_or_cold_records() {
    let (mut g, mut r) = pair(true, 2);
    for i in 0..100i64 {
        feed(
            &mut g,
            &mut r,
            &((i % 2) as usize, 1_000 * i, 100, i % 3 == 0, None),
        );
    }
    assert!(g.flags.get(0).is_none() && g.cold.get(0).is_none());
    assert_same(&g, &r, &[0, 1]);
    // One TCP packet and one gap of 2^32 ns bring them in.
    feed(&mut g, &mut r, &(0, 1 << 33, 100, true, Some(0x02)));
    assert!(g.flags.get(0).is_some() && g.cold.get(0).is_some());
    assert_same(&g, &r, &[0, 1]);
}

/// The mean and deviation by the general 128-bit formula (checked products), which the
/// shortcut of [`Moments::stddev`] must equal bit for bit.
fn general(m: &Moments) -> (Option<u64>, Option<u64>) {
    let mean = (m.n > 0).then(|| (m.sum as f64 / m.n as f64).to_bits());
    let sd = (m.n >= 2).then(|| {
        let n = i128::from(m.n);
        let num = i128::try_from(m.sumsq)
            .ok()
            .and_then(|s2| n.checked_mul(s2))
            .and_then(|a| m.sum.checked_mul(m.sum).and_then(|b| a.checked_sub(b)));
        let var = match num {
            Some(num) => num.max(0) as f64 / (m.n as f64 * (m.n - 1) as f64),
            None => {
                let (nf, s) = (m.n as f64, m.sum as f64);
                ((m.sumsq as f64 - s * s / nf) / (nf - 1.0)).max(0.0)
            }
        };
        var.sqrt().to_bits()
    });
    (mean, sd)
}

proptest! {
    #[test]
    fn the_deviation_shortcut_rounds_as_the_general_formula(
        sum in prop_oneof![any::<i64>().prop_map(i128::from), any::<i128>()],
        sumsq in prop_oneof![any::<u64>().prop_map(u128::from), any::<u128>()],
        n in prop_oneof![0u64..1000, any::<u64>()],
    ) {
        let m = Moments::from_parts(sum, sumsq, n, 0, 0);
        let (mean, sd) = general(&m);
        prop_assert_eq!(m.mean().map(f64::to_bits), mean);
        prop_assert_eq!(m.stddev().map(f64::to_bits), sd);
    }
}
