//! Per-flow features beyond the basic counters, opt-in (`features=`).
//!
//! A feature group keeps its own state for every live flow, in a slot the
//! [`FeatureStore`] hands out when the flow starts, updates it for each of the flow's
//! packets, and writes its columns when the flow's row is written. Slots are reused once
//! a row is written, so a long run allocates per flow at most, never per packet. The
//! basic table has no group and pays nothing for them.
//!
//! Built-in groups: [`Statistical`] (packet size and inter-arrival statistics, per-flag
//! counts), [`Splt`] (the first N packets), [`Macs`] (Ethernet addresses) and the
//! application hints of [`super::app`]. Other modules add their own group through the
//! [`FeatureGroup`] trait (see [`FeatureStore::add_group`]).

use std::sync::Arc;

use arrow_array::types::{Int64Type, Int8Type, UInt32Type};
use arrow_array::{ArrayRef, FixedSizeBinaryArray, ListArray, PrimitiveArray};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field};

use super::app::AppHints;
use super::fingerprints::{self, FlowFingerprints};
pub use super::statistical::Statistical;
use crate::decode::fastpath::{linktype, FlowFields};
use crate::error::{Error, Result};
use crate::fingerprint::{Method, Methods};
use crate::source::RawPacket;

/// Which built-in feature groups a table computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeatureSpec {
    /// Packet size and inter-arrival statistics, per-flag packet counts.
    pub statistical: bool,
    /// Sizes, directions and gaps of the first `splt` packets (0: off).
    pub splt: u16,
    /// Source and destination MAC addresses.
    pub mac: bool,
    /// Application protocol by payload signature, server name, user agent, ALPN.
    pub app: bool,
    /// The fingerprint columns (methods of [`super::fingerprints::COLUMNS`]; none: off).
    pub fingerprints: Methods,
}

/// The names `features=` accepts, in the order of their columns; each fingerprint
/// column's name (`"ja4"`, `"ja4s"`, ...) asks for that column alone.
pub const FEATURE_NAMES: [&str; 7] = [
    "basic",
    "statistical",
    "splt",
    "mac",
    "app",
    "fingerprints",
    "all",
];

impl FeatureSpec {
    /// No group: the basic table.
    pub fn is_basic(&self) -> bool {
        *self == FeatureSpec::default()
    }

    /// The groups `names` ask for (see [`FEATURE_NAMES`]; `"all"` is statistical, splt,
    /// mac and app, `"basic"` adds nothing, `"fingerprints"` every fingerprint column: JA4+
    /// methods are named, never implied); `splt` is the number of packets of `"splt"`
    /// (1-65535).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming an unknown feature, or a bad `splt`.
    pub fn parse<S: AsRef<str>>(names: &[S], splt: u32) -> Result<FeatureSpec> {
        let mut spec = FeatureSpec::default();
        let splt = u16::try_from(splt).ok().filter(|n| *n > 0).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "splt must be a number of packets from 1 to 65535, not {splt}"
            ))
        })?;
        for name in names {
            match name.as_ref() {
                "basic" => {}
                "statistical" => spec.statistical = true,
                "splt" => spec.splt = splt,
                "mac" => spec.mac = true,
                "app" => spec.app = true,
                "all" => {
                    spec.statistical = true;
                    spec.splt = splt;
                    spec.mac = true;
                    spec.app = true;
                }
                "fingerprints" => spec.fingerprints = fingerprints::ALL,
                other => match Method::from_name(other).filter(|m| fingerprints::ALL.has(*m)) {
                    Some(m) => spec.fingerprints = spec.fingerprints.with(m),
                    None => {
                        return Err(Error::InvalidArgument(format!(
                            "features must name {} or a fingerprint column ({}), not '{other}'",
                            FEATURE_NAMES.map(|n| format!("'{n}'")).join(", "),
                            fingerprints::COLUMNS
                                .map(|m| format!("'{}'", m.name()))
                                .join(", ")
                        )))
                    }
                },
            }
        }
        Ok(spec)
    }
}

/// What a feature group sees of one packet.
#[derive(Clone, Copy, Debug)]
pub struct PacketView<'a> {
    /// The packet.
    pub pkt: &'a RawPacket<'a>,
    /// Its fast-path fields.
    pub fields: &'a FlowFields,
    /// Whether it runs from the flow key's source to its destination (always true for
    /// unidirectional tables).
    pub forward: bool,
}

impl<'a> PacketView<'a> {
    /// The TCP or UDP payload (empty for other protocols).
    #[inline]
    pub fn payload(&self) -> &'a [u8] {
        self.fields.payload(self.pkt.data)
    }
}

/// A group of per-flow features: per-flow state in slots, finalised into columns.
///
/// The store calls [`open`](Self::open) when a flow starts in a slot, then
/// [`packet`](Self::packet) for every packet of that flow (its first included), then
/// [`columns`](Self::columns) when rows are written (a slot is not reopened before its
/// row is written). `packet` must not allocate.
pub trait FeatureGroup: Send {
    /// The group's columns, in the order [`columns`](Self::columns) writes them.
    fn fields(&self) -> Vec<Field>;
    /// A flow starts in `slot`: a slot seen before is reset, a new one is `len` (the
    /// number of slots opened so far).
    fn open(&mut self, slot: usize);
    /// One packet of the flow in `slot`.
    fn packet(&mut self, slot: usize, p: &PacketView<'_>);
    /// The flow in `slot` ended (expired, evicted, or the input ended); its row is
    /// written later.
    fn close(&mut self, _slot: usize) {}
    /// Append the group's columns for the flows in `slots`, in that order.
    fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>);
}

/// A slot index of a flow without features.
pub const NO_SLOT: u32 = u32::MAX;

/// Run `$body` with `$g` bound to each group of `$store` in column order: the built-in
/// groups by their own types (no indirect call), then those added through the trait.
macro_rules! each_group {
    ($store:expr, $g:ident => $body:expr) => {{
        let store = $store;
        if let Some($g) = &mut store.statistical {
            $body;
        }
        if let Some($g) = &mut store.splt {
            $body;
        }
        if let Some($g) = &mut store.macs {
            $body;
        }
        if let Some($g) = &mut store.app {
            $body;
        }
        for $g in &mut store.others {
            $body;
        }
    }};
}

/// The feature groups of a table and the slots of its flows. The built-in groups are
/// held by value, so that a packet reaches them without an indirect call and their
/// update is inlined; their columns come first, in this order, then those of the groups
/// added through the trait.
#[derive(Default)]
pub struct FeatureStore {
    statistical: Option<Statistical>,
    splt: Option<Splt>,
    macs: Option<Macs>,
    app: Option<AppHints>,
    others: Vec<Box<dyn FeatureGroup>>,
    free: Vec<u32>,
    slots: u32,
}

impl FeatureStore {
    /// The built-in groups of `spec`; `bidirectional` names the direction columns.
    pub fn new(spec: FeatureSpec, bidirectional: bool) -> Self {
        let mut s = FeatureStore {
            statistical: spec.statistical.then(|| Statistical::new(bidirectional)),
            splt: (spec.splt > 0).then(|| Splt::new(spec.splt)),
            macs: spec.mac.then(Macs::default),
            app: spec.app.then(AppHints::default),
            ..FeatureStore::default()
        };
        if !spec.fingerprints.is_empty() {
            s.add_group(Box::new(FlowFingerprints::new(
                spec.fingerprints,
                bidirectional,
            )));
        }
        s
    }

    /// Add a group; its columns follow those of the groups added before it.
    pub fn add_group(&mut self, g: Box<dyn FeatureGroup>) {
        self.others.push(g);
    }

    /// Whether there is no group.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.statistical.is_none()
            && self.splt.is_none()
            && self.macs.is_none()
            && self.app.is_none()
            && self.others.is_empty()
    }

    /// Every group, in column order.
    fn groups(&self) -> impl Iterator<Item = &dyn FeatureGroup> {
        let statistical = self.statistical.iter().map(|g| g as &dyn FeatureGroup);
        let splt = self.splt.iter().map(|g| g as &dyn FeatureGroup);
        let macs = self.macs.iter().map(|g| g as &dyn FeatureGroup);
        let app = self.app.iter().map(|g| g as &dyn FeatureGroup);
        let others = self.others.iter().map(|g| g.as_ref());
        statistical.chain(splt).chain(macs).chain(app).chain(others)
    }

    /// A slot for a new flow, opened in every group.
    pub fn open(&mut self) -> u32 {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots += 1;
            self.slots - 1
        });
        each_group!(self, g => g.open(slot as usize));
        slot
    }

    /// One packet of the flow in `slot`.
    #[inline(always)]
    pub fn packet(&mut self, slot: u32, p: &PacketView<'_>) {
        let slot = slot as usize;
        each_group!(self, g => g.packet(slot, p));
    }

    /// The flow in `slot` ended.
    pub fn close(&mut self, slot: u32) {
        if slot == NO_SLOT {
            return;
        }
        let slot = slot as usize;
        each_group!(self, g => g.close(slot));
    }

    /// Make `slots` available again (their rows are written).
    pub fn release(&mut self, slots: impl IntoIterator<Item = u32>) {
        self.free
            .extend(slots.into_iter().filter(|s| *s != NO_SLOT));
    }

    /// The columns of every group, in order.
    pub fn fields(&self) -> Vec<Field> {
        self.groups().flat_map(|g| g.fields()).collect()
    }

    /// Every group's columns for the flows in `slots`.
    pub fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        for g in self.groups() {
            g.columns(slots, out);
        }
    }
}

/// Count, sum and sum of squares of integer samples, exactly (128-bit), with min and max.
///
/// Mean and sample variance come from the exact sums at the end: the variance numerator
/// `n * sum(x^2) - sum(x)^2` is an exact integer, so there is no cancellation and no
/// rounding until the one division (a running Welford update would round at every
/// packet and divide per packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moments {
    pub(crate) sum: i128,
    pub(crate) sumsq: u128,
    pub(crate) n: u64,
    pub(crate) min: i64,
    pub(crate) max: i64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            sum: 0,
            sumsq: 0,
            n: 0,
            min: i64::MAX,
            max: i64::MIN,
        }
    }
}

impl Moments {
    /// Add one sample.
    #[inline(always)]
    pub fn add(&mut self, x: i64) {
        let w = i128::from(x);
        self.n += 1;
        self.sum = self.sum.wrapping_add(w);
        self.sumsq = self.sumsq.wrapping_add(w.unsigned_abs() * w.unsigned_abs());
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// The moments of both sample sets together (exact).
    pub fn merged(&self, o: &Moments) -> Moments {
        Moments {
            sum: self.sum.wrapping_add(o.sum),
            sumsq: self.sumsq.wrapping_add(o.sumsq),
            n: self.n + o.n,
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    /// The moments of samples whose exact sums, count and extremes are known.
    pub(crate) fn from_parts(sum: i128, sumsq: u128, n: u64, min: i64, max: i64) -> Moments {
        Moments {
            sum,
            sumsq,
            n,
            min,
            max,
        }
    }

    /// Samples added.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The smallest sample.
    pub fn min(&self) -> Option<i64> {
        (self.n > 0).then_some(self.min)
    }

    /// The largest sample.
    pub fn max(&self) -> Option<i64> {
        (self.n > 0).then_some(self.max)
    }

    /// The mean.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / self.n as f64)
    }

    /// The sample standard deviation (n - 1 in the denominator), for two samples or more.
    pub fn stddev(&self) -> Option<f64> {
        if self.n < 2 {
            return None;
        }
        let n = i128::from(self.n);
        let num = if self.n < 1 << 63 && self.sumsq < 1 << 64 && self.sum.unsigned_abs() < 1 << 63 {
            // Both products are below 2^127: no overflow to check.
            Some(n * self.sumsq as i128 - self.sum * self.sum)
        } else {
            i128::try_from(self.sumsq)
                .ok()
                .and_then(|s2| n.checked_mul(s2))
                .and_then(|a| {
                    self.sum
                        .checked_mul(self.sum)
                        .and_then(|b| a.checked_sub(b))
                })
        };
        let var = match num {
            Some(num) => num.max(0) as f64 / (self.n as f64 * (self.n - 1) as f64),
            // Beyond 128 bits: the same formula in floating point.
            None => {
                let (nf, s) = (self.n as f64, self.sum as f64);
                ((self.sumsq as f64 - s * s / nf) / (nf - 1.0)).max(0.0)
            }
        };
        Some(var.sqrt())
    }
}

/// Early-flow features (nfstream's `splt_analysis`): the direction, wire length and gap
/// to the previous packet of the flow's first `n` packets, as list columns.
pub struct Splt {
    n: usize,
    /// Per slot: packets recorded so far and the last packet's time.
    seen: Vec<(u16, i64)>,
    /// `n` entries per slot.
    direction: Vec<i8>,
    ps: Vec<u32>,
    piat: Vec<i64>,
}

impl Splt {
    /// The first `n` packets (at least 1).
    pub fn new(n: u16) -> Self {
        Splt {
            n: usize::from(n.max(1)),
            seen: Vec::new(),
            direction: Vec::new(),
            ps: Vec::new(),
            piat: Vec::new(),
        }
    }

    fn list<T: arrow_array::ArrowPrimitiveType>(
        &self,
        slots: &[u32],
        values: &[T::Native],
        item: DataType,
    ) -> ArrayRef {
        let mut offsets = Vec::with_capacity(slots.len() + 1);
        let mut flat = Vec::new();
        offsets.push(0i32);
        for &s in slots {
            let s = s as usize;
            let len = usize::from(self.seen[s].0);
            flat.extend_from_slice(&values[s * self.n..s * self.n + len]);
            offsets.push(flat.len() as i32);
        }
        let values = PrimitiveArray::<T>::new(ScalarBuffer::from(flat), None);
        Arc::new(ListArray::new(
            Arc::new(Field::new("item", item, false)),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(values),
            None,
        ))
    }
}

impl FeatureGroup for Splt {
    fn fields(&self) -> Vec<Field> {
        let list = |item: DataType| DataType::List(Arc::new(Field::new("item", item, false)));
        vec![
            Field::new("splt_direction", list(DataType::Int8), false),
            Field::new("splt_ps", list(DataType::UInt32), false),
            Field::new("splt_piat_ns", list(DataType::Int64), false),
        ]
    }

    fn open(&mut self, slot: usize) {
        if slot == self.seen.len() {
            self.seen.push((0, 0));
            self.direction.resize(self.direction.len() + self.n, 0);
            self.ps.resize(self.ps.len() + self.n, 0);
            self.piat.resize(self.piat.len() + self.n, 0);
        } else {
            self.seen[slot] = (0, 0);
        }
    }

    #[inline]
    fn packet(&mut self, slot: usize, p: &PacketView<'_>) {
        let (count, last) = &mut self.seen[slot];
        let i = usize::from(*count);
        if i == self.n {
            return;
        }
        let at = slot * self.n + i;
        let ts = p.pkt.ts_ns;
        self.direction[at] = i8::from(!p.forward);
        self.ps[at] = p.pkt.wirelen;
        self.piat[at] = if i == 0 { 0 } else { ts.saturating_sub(*last) };
        *last = ts;
        *count += 1;
    }

    fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        out.push(self.list::<Int8Type>(slots, &self.direction, DataType::Int8));
        out.push(self.list::<UInt32Type>(slots, &self.ps, DataType::UInt32));
        out.push(self.list::<Int64Type>(slots, &self.piat, DataType::Int64));
    }
}

/// Width of a MAC address column: `fixed_size_binary(6)`.
pub const MAC_LEN: usize = 6;

/// The Ethernet addresses of the flow key's source and destination, from the flow's
/// first packet (null for link types without Ethernet addresses).
#[derive(Default)]
pub struct Macs {
    /// Per slot: src, dst, whether known, whether the first packet was seen.
    macs: Vec<([u8; MAC_LEN], [u8; MAC_LEN], bool, bool)>,
}

impl FeatureGroup for Macs {
    fn fields(&self) -> Vec<Field> {
        let ty = DataType::FixedSizeBinary(MAC_LEN as i32);
        vec![
            Field::new("src_mac", ty.clone(), true),
            Field::new("dst_mac", ty, true),
        ]
    }

    fn open(&mut self, slot: usize) {
        let fresh = ([0; MAC_LEN], [0; MAC_LEN], false, false);
        match self.macs.get_mut(slot) {
            Some(m) => *m = fresh,
            None => self.macs.push(fresh),
        }
    }

    #[inline]
    fn packet(&mut self, slot: usize, p: &PacketView<'_>) {
        let m = &mut self.macs[slot];
        if m.3 {
            return;
        }
        m.3 = true;
        if p.pkt.linktype != linktype::ETHERNET {
            return;
        }
        let Some(h) = p.pkt.data.get(..2 * MAC_LEN) else {
            return;
        };
        let (dst, src) = h.split_at(MAC_LEN);
        let (a, b) = if p.forward { (src, dst) } else { (dst, src) };
        m.0.copy_from_slice(a);
        m.1.copy_from_slice(b);
        m.2 = true;
    }

    fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        for pick in [0, 1] {
            let mut bytes = Vec::with_capacity(slots.len() * MAC_LEN);
            let mut valid = Vec::with_capacity(slots.len());
            for &s in slots {
                let m = &self.macs[s as usize];
                bytes.extend_from_slice(if pick == 0 { &m.0 } else { &m.1 });
                valid.push(m.2);
            }
            let nulls = NullBuffer::from(valid);
            out.push(Arc::new(FixedSizeBinaryArray::new(
                MAC_LEN as i32,
                Buffer::from_vec(bytes),
                (nulls.null_count() > 0).then_some(nulls),
            )));
        }
    }
}
