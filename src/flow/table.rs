//! The aggregated flow table and flow meter: one row per flow, memory proportional to the
//! live flows.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow_array::types::{Int64Type, UInt16Type, UInt64Type, UInt8Type};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use hashbrown::hash_map::Entry;
use hashbrown::HashMap;

use super::columns::{addr_type, addrs, prim, validity, ADDR_LEN};
use super::features::{FeatureGroup, FeatureSpec, FeatureStore, PacketView, NO_SLOT};
use crate::decode::fastpath::{self, FlowFields};
use crate::source::RawPacket;

/// What identifies a flow in a table: the 5-tuple and the VLAN (the decoder's
/// [`FlowKey`](crate::decode::FlowKey) is the packet map's protocol-and-ports key).
/// Addresses are 16 bytes (IPv4-mapped for IPv4), so comparing tuples compares addresses
/// numerically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FlowTuple {
    /// 4 or 6.
    pub ip_version: u8,
    /// The transport protocol number.
    pub protocol: u8,
    /// Source address.
    pub src: [u8; ADDR_LEN],
    /// Source port (None for non-TCP/UDP and non-first fragments).
    pub src_port: Option<u16>,
    /// Destination address.
    pub dst: [u8; ADDR_LEN],
    /// Destination port.
    pub dst_port: Option<u16>,
    /// The outermost VLAN id, when the table keys on it.
    pub vlan_id: Option<u16>,
}

/// The map's key: a [`FlowTuple`] packed into three words, so comparing costs three
/// operations and hashing two words. Addresses hold their 16 bytes in the machine's order
/// (a plain load from [`FlowFields`]); [`canonical`](Packed::canonical) compares them as
/// numbers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Packed {
    src: u128,
    dst: u128,
    /// version | protocol << 8 | src port (+ presence bit) << 16 | dst port << 33 | vlan << 50
    meta: u64,
}

const PORT_PRESENT: u64 = 1 << 16;
const VLAN_PRESENT: u64 = 1 << 12;

impl Hash for Packed {
    /// Two words for the hasher instead of five: the addresses folded into one, the
    /// destination turned by 32 bits first (an IPv4-mapped address's four bytes are the top
    /// 32 bits of its word, so the two addresses of an IPv4 pair land in different halves
    /// and a flow's two directions hash apart), then the protocol, ports and VLAN.
    #[inline(always)]
    fn hash<H: Hasher>(&self, h: &mut H) {
        h.write_u128(self.src ^ self.dst.rotate_left(32));
        h.write_u64(self.meta);
    }
}

impl Packed {
    #[inline(always)]
    fn new(f: &FlowFields, with_vlan: bool) -> Packed {
        let ports = if f.has_ports {
            (u64::from(f.src_port) | PORT_PRESENT) << 16
                | (u64::from(f.dst_port) | PORT_PRESENT) << 33
        } else {
            0
        };
        let vlan = if with_vlan && f.has_vlan {
            (u64::from(f.vlan_id & 0x0FFF) | VLAN_PRESENT) << 50
        } else {
            0
        };
        Packed {
            src: u128::from_ne_bytes(f.src),
            dst: u128::from_ne_bytes(f.dst),
            meta: u64::from(f.ip_version) | u64::from(f.protocol) << 8 | ports | vlan,
        }
    }

    #[inline(always)]
    fn src_port_bits(&self) -> u64 {
        (self.meta >> 16) & 0x1_FFFF
    }

    #[inline(always)]
    fn dst_port_bits(&self) -> u64 {
        (self.meta >> 33) & 0x1_FFFF
    }

    /// The smaller endpoint first (a missing port sorts before every port), and whether
    /// the packet ran from the canonical source.
    #[inline(always)]
    fn canonical(self) -> (Packed, bool) {
        let (src, dst) = (u128::from_be(self.src), u128::from_be(self.dst));
        if (src, self.src_port_bits()) <= (dst, self.dst_port_bits()) {
            (self, true)
        } else {
            let low = self.meta & 0xFFFF;
            let high = self.meta & !((1 << 50) - 1);
            let meta = low | high | self.dst_port_bits() << 16 | self.src_port_bits() << 33;
            (
                Packed {
                    src: self.dst,
                    dst: self.src,
                    meta,
                },
                false,
            )
        }
    }

    fn unpack(self) -> FlowTuple {
        let port = |bits: u64| (bits & PORT_PRESENT != 0).then_some(bits as u16);
        let vlan = self.meta >> 50;
        FlowTuple {
            ip_version: self.meta as u8,
            protocol: (self.meta >> 8) as u8,
            src: self.src.to_ne_bytes(),
            src_port: port(self.src_port_bits()),
            dst: self.dst.to_ne_bytes(),
            dst_port: port(self.dst_port_bits()),
            vlan_id: (vlan & VLAN_PRESENT != 0).then_some((vlan & 0x0FFF) as u16),
        }
    }
}

/// Counters of one flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowStats {
    /// Earliest packet time.
    pub first_ts_ns: i64,
    /// Latest packet time.
    pub last_ts_ns: i64,
    /// Packets.
    pub packets: u64,
    /// Sum of wire lengths.
    pub bytes: u64,
    /// Union of TCP flags.
    pub tcp_flags: u8,
    /// Whether any packet carried TCP flags.
    pub has_tcp_flags: bool,
    /// Packets from the key's source to its destination.
    pub src2dst_packets: u64,
    /// Bytes from the key's source to its destination.
    pub src2dst_bytes: u64,
    /// Packets from the key's destination to its source.
    pub dst2src_packets: u64,
    /// Bytes from the key's destination to its source.
    pub dst2src_bytes: u64,
}

impl FlowStats {
    fn start(ts: i64) -> Self {
        FlowStats {
            first_ts_ns: ts,
            last_ts_ns: ts,
            ..Default::default()
        }
    }

    #[inline(always)]
    fn add(&mut self, ts: i64, bytes: u64, forward: bool, flags: Option<u8>) {
        self.first_ts_ns = self.first_ts_ns.min(ts);
        self.last_ts_ns = self.last_ts_ns.max(ts);
        self.packets += 1;
        self.bytes += bytes;
        if forward {
            self.src2dst_packets += 1;
            self.src2dst_bytes += bytes;
        } else {
            self.dst2src_packets += 1;
            self.dst2src_bytes += bytes;
        }
        if let Some(fl) = flags {
            self.tcp_flags |= fl;
            self.has_tcp_flags = true;
        }
    }

    /// Fold another part of the same flow in.
    pub fn merge(&mut self, o: &FlowStats) {
        self.first_ts_ns = self.first_ts_ns.min(o.first_ts_ns);
        self.last_ts_ns = self.last_ts_ns.max(o.last_ts_ns);
        self.packets += o.packets;
        self.bytes += o.bytes;
        self.tcp_flags |= o.tcp_flags;
        self.has_tcp_flags |= o.has_tcp_flags;
        self.src2dst_packets += o.src2dst_packets;
        self.src2dst_bytes += o.src2dst_bytes;
        self.dst2src_packets += o.dst2src_packets;
        self.dst2src_bytes += o.dst2src_bytes;
    }
}

/// Why a flow row ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Expiration {
    /// No packet for `idle_timeout`: a later packet of the capture (or a live source's
    /// wall time) is that far past the flow's last packet.
    Idle,
    /// The flow lasted `active_timeout` (seen at its next packet).
    Active,
    /// Evicted to keep the table within `max_flows` (the least recently active flow).
    Evicted,
    /// The capture ended.
    End,
}

impl Expiration {
    /// The value of the `expiration_reason` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Expiration::Idle => "idle",
            Expiration::Active => "active",
            Expiration::Evicted => "evicted",
            Expiration::End => "end",
        }
    }
}

/// How a table aggregates.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlowOptions {
    /// Canonical keys and per-direction counters.
    pub bidirectional: bool,
    /// Split a flow after this many nanoseconds without a packet.
    pub idle_timeout_ns: Option<i64>,
    /// Split a flow after it has lasted this many nanoseconds.
    pub active_timeout_ns: Option<i64>,
    /// Whether the outermost VLAN id is part of the key.
    pub key_vlan: bool,
    /// At most this many live flows: a new flow beyond it first evicts the least recently
    /// active one (reason `evicted`, counted).
    pub max_flows: Option<usize>,
    /// The feature groups beyond the basic counters.
    pub features: FeatureSpec,
    /// An `expiration_reason` column even without timeouts and `max_flows` (streams).
    pub reasons: bool,
    /// A `flow_id` column first (streams have it always).
    pub flow_id: bool,
}

impl FlowOptions {
    fn timeouts(&self) -> bool {
        self.idle_timeout_ns.is_some() || self.active_timeout_ns.is_some()
    }

    /// Whether rows carry an `expiration_reason`.
    pub fn has_reason(&self) -> bool {
        self.timeouts() || self.max_flows.is_some() || self.reasons
    }

    /// Whether the rows depend on the order of the packets across the whole capture, so
    /// partial tables of a capture's parts cannot be merged: timeouts, `max_flows` and
    /// every feature group need the packets in order.
    pub fn ordered(&self) -> bool {
        self.timeouts() || self.max_flows.is_some() || !self.features.is_basic()
    }
}

type Map = HashMap<Packed, Flow, foldhash::fast::FixedState>;

/// An `in_order` table's index: a key's place in its flows.
type Index = HashMap<Packed, usize, foldhash::fast::FixedState>;

/// A live flow: its counters, its id (creation order) and its feature slot.
#[derive(Clone, Copy, Debug)]
struct Flow {
    stats: FlowStats,
    id: u64,
    slot: u32,
}

/// A flow whose row is written (expired, or still live at the end).
#[derive(Clone, Copy, Debug)]
struct Row {
    key: Packed,
    flow: Flow,
    reason: Expiration,
}

/// A live flow's place in the expiry queue, due at `deadline`: its last packet time plus
/// the idle timeout when it was queued. Packets since then only move the flow's true
/// deadline later, so the queue is fixed up when an entry comes due, never per packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Due {
    deadline: i64,
    id: u64,
    key: Packed,
}

impl Ord for Due {
    /// Reversed, so the max-heap pops the earliest deadline first (ties by id).
    fn cmp(&self, o: &Self) -> Ordering {
        (o.deadline, o.id).cmp(&(self.deadline, self.id))
    }
}

impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// A flow table being filled; also the flow meter that expires flows as it goes.
///
/// Every flow gets an id, its creation order in the capture (0, 1, ...), which
/// [`push`](Self::push) returns for each packet (the `flow_id` of the projection).
/// Without timeouts and `max_flows`, a packet costs at most one hash-map lookup, none when
/// it belongs to the flow of the packet before it (the flows are then held in creation
/// order). With them, flows expire as soon as a packet's time passes their last
/// packet plus `idle_timeout` (a live source's wall time does too, see
/// [`advance`](Self::advance)), or at their next packet after `active_timeout`; expired
/// rows wait in the table until [`take_expired`](Self::take_expired) (streams) or
/// [`to_batch`](Self::to_batch) takes them.
pub struct FlowTable {
    opts: FlowOptions,
    /// The live flows of a table that is not `in_order`.
    map: Map,
    /// The live flows of an `in_order` table, in creation order with their keys; `index`
    /// maps a key to its place here, and `last` is the place of the last packet's flow, so
    /// a packet of the same flow as the one before it needs no hash and no probe.
    dense: Vec<(Packed, Flow)>,
    index: Index,
    /// `usize::MAX` before the first flow.
    last: usize,
    expired: Vec<Row>,
    features: FeatureStore,
    /// Expiry queue (with an idle timeout or `max_flows`).
    due: BinaryHeap<Due>,
    metered: bool,
    /// No timeouts, no `max_flows`: flows in `dense`, at most one map lookup per packet.
    in_order: bool,
    /// `in_order` and no features: the whole packet is counted inline.
    simple: bool,
    clock: i64,
    next_id: u64,
    packets: u64,
    not_aggregated: u64,
    evicted: u64,
}

impl FlowTable {
    /// An empty table.
    pub fn new(opts: FlowOptions) -> Self {
        let features = FeatureStore::new(opts.features, opts.bidirectional);
        FlowTable {
            opts,
            map: Map::default(),
            dense: Vec::new(),
            index: Index::default(),
            last: usize::MAX,
            expired: Vec::new(),
            in_order: !opts.timeouts() && opts.max_flows.is_none(),
            simple: !opts.timeouts() && opts.max_flows.is_none() && features.is_empty(),
            features,
            due: BinaryHeap::new(),
            metered: opts.idle_timeout_ns.is_some() || opts.max_flows.is_some(),
            clock: i64::MIN,
            next_id: 0,
            packets: 0,
            not_aggregated: 0,
            evicted: 0,
        }
    }

    /// Add a feature group (before the first packet); its columns follow the others.
    pub fn add_group(&mut self, group: Box<dyn FeatureGroup>) {
        debug_assert!(
            self.packets == 0,
            "feature groups are added before the first packet"
        );
        self.features.add_group(group);
        self.simple = false;
        // Flows opened before the first group get a slot now.
        let FlowTable {
            dense,
            map,
            features,
            ..
        } = self;
        for flow in dense.iter_mut().map(|e| &mut e.1).chain(map.values_mut()) {
            if flow.slot == NO_SLOT {
                flow.slot = features.open();
            }
        }
    }

    /// The options the table was made with.
    pub fn options(&self) -> FlowOptions {
        self.opts
    }

    /// Packets seen, and how many of them no flow counts (no IP layer, or an IPv6
    /// extension chain that hides the protocol).
    pub fn counts(&self) -> (u64, u64) {
        (self.packets, self.not_aggregated)
    }

    /// Flows evicted to stay within `max_flows`.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Live flows plus flows already expired (rows not yet taken).
    pub fn len(&self) -> usize {
        self.live() + self.expired.len()
    }

    /// Live flows.
    pub fn live(&self) -> usize {
        self.map.len() + self.dense.len()
    }

    /// Whether the table holds no flow.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Count one packet; the id of its flow, `None` for a packet no flow counts.
    #[inline(always)]
    pub fn push(&mut self, pkt: &RawPacket<'_>) -> Option<u64> {
        let mut f = FlowFields::default();
        fastpath::parse(pkt.linktype, pkt.data, &mut f);
        self.push_fields(pkt, &f)
    }

    /// [`push`](Self::push) with the packet's fields parsed already.
    #[inline(always)]
    pub fn push_fields(&mut self, pkt: &RawPacket<'_>, f: &FlowFields) -> Option<u64> {
        self.packets += 1;
        self.clock = self.clock.max(pkt.ts_ns);
        if f.ip_version == 0 || !f.has_protocol {
            self.not_aggregated += 1;
            return None;
        }
        let key = Packed::new(f, self.opts.key_vlan);
        let (key, forward) = if self.opts.bidirectional {
            key.canonical()
        } else {
            (key, true)
        };
        let flags = f.has_tcp_flags.then_some(f.tcp_flags);
        let ts = pkt.ts_ns;
        let bytes = u64::from(pkt.wirelen);
        if self.simple {
            if let Some((k, flow)) = self.dense.get_mut(self.last) {
                if *k == key {
                    flow.stats.add(ts, bytes, forward, flags);
                    return Some(flow.id);
                }
            }
            let at = self.find_or_open(key, ts);
            let flow = &mut self.dense[at].1;
            flow.stats.add(ts, bytes, forward, flags);
            return Some(flow.id);
        }
        self.push_general(pkt, f, key, forward, flags)
    }

    /// [`push_general`](Self::push_general) for an `in_order` table (feature groups alone):
    /// the simple table's scheme, the slot opened with the flow.
    #[inline(always)]
    fn push_in_order(
        &mut self,
        p: &PacketView<'_>,
        key: &Packed,
        flags: Option<u8>,
    ) -> Option<u64> {
        let ts = p.pkt.ts_ns;
        let at = match self.dense.get(self.last) {
            Some((k, _)) if k == key => self.last,
            _ => self.find_or_open(*key, ts),
        };
        let FlowTable {
            dense, features, ..
        } = self;
        let flow = &mut dense[at].1;
        flow.stats
            .add(ts, u64::from(p.pkt.wirelen), p.forward, flags);
        features.packet(flow.slot, p);
        Some(flow.id)
    }

    /// [`push_fields`](Self::push_fields) for a table that is not simple (features,
    /// timeouts, `max_flows`), out of line so that the simple table's loop stays small.
    #[inline(never)]
    fn push_general(
        &mut self,
        pkt: &RawPacket<'_>,
        f: &FlowFields,
        key: Packed,
        forward: bool,
        flags: Option<u8>,
    ) -> Option<u64> {
        let view = PacketView {
            pkt,
            fields: f,
            forward,
        };
        if self.in_order {
            return self.push_in_order(&view, &key, flags);
        }
        let ts = pkt.ts_ns;
        let bytes = u64::from(pkt.wirelen);
        if let Some(idle) = self.opts.idle_timeout_ns {
            // The packet's own time: a packet earlier than the clock (a file out of
            // order) expires nothing.
            if self.due.peek().is_some_and(|d| d.deadline <= ts) {
                self.expire_idle(ts, idle);
            }
        }
        if self
            .opts
            .max_flows
            .is_some_and(|m| self.map.len() >= m.max(1) && !self.map.contains_key(&key))
        {
            self.evict_oldest();
        }
        let FlowOptions {
            idle_timeout_ns: idle,
            active_timeout_ns: active,
            ..
        } = self.opts;
        let queue_delay = idle.unwrap_or(0);
        let FlowTable {
            map,
            expired,
            features,
            due,
            next_id,
            metered,
            ..
        } = self;
        let mut start = || {
            let id = *next_id;
            *next_id += 1;
            let slot = if features.is_empty() {
                NO_SLOT
            } else {
                features.open()
            };
            if *metered {
                due.push(Due {
                    deadline: ts.saturating_add(queue_delay),
                    id,
                    key,
                });
            }
            Flow {
                stats: FlowStats::start(ts),
                id,
                slot,
            }
        };
        let flow = match map.entry(key) {
            Entry::Occupied(e) => {
                let flow = e.into_mut();
                let s = &flow.stats;
                let reason = if idle.is_some_and(|t| ts.saturating_sub(s.last_ts_ns) >= t) {
                    Some(Expiration::Idle)
                } else if active.is_some_and(|t| ts.saturating_sub(s.first_ts_ns) >= t) {
                    Some(Expiration::Active)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    let old = std::mem::replace(flow, start());
                    features.close(old.slot);
                    expired.push(Row {
                        key,
                        flow: old,
                        reason,
                    });
                }
                flow
            }
            Entry::Vacant(v) => v.insert(start()),
        };
        flow.stats.add(ts, bytes, forward, flags);
        if flow.slot != NO_SLOT {
            features.packet(flow.slot, &view);
        }
        let id = flow.id;
        if self.metered && self.due.len() > 2 * self.map.len() + 4096 {
            self.rebuild_queue();
        }
        Some(id)
    }

    /// The place in `dense` of the flow `key` of an `in_order` table, opened at `ts` when
    /// new; it becomes the `last`.
    #[inline(always)]
    fn find_or_open(&mut self, key: Packed, ts: i64) -> usize {
        let at = match self.index.get(&key) {
            Some(&at) => at,
            None => self.open(key, ts),
        };
        self.last = at;
        at
    }

    /// Open the flow `key` of an `in_order` table at `ts` (with its feature slot): its
    /// place in `dense`.
    #[inline(never)]
    fn open(&mut self, key: Packed, ts: i64) -> usize {
        let at = self.dense.len();
        let slot = if self.features.is_empty() {
            NO_SLOT
        } else {
            self.features.open()
        };
        self.dense.push((
            key,
            Flow {
                stats: FlowStats::start(ts),
                id: self.next_id,
                slot,
            },
        ));
        self.next_id += 1;
        self.index.insert(key, at);
        at
    }

    /// Expire the flows whose last packet is `idle` or more before `now`.
    #[inline(never)]
    fn expire_idle(&mut self, now: i64, idle: i64) {
        while self.due.peek().is_some_and(|d| d.deadline <= now) {
            let Some(d) = self.due.pop() else { break };
            let Some(flow) = self.map.get(&d.key).filter(|f| f.id == d.id) else {
                continue; // the flow expired already
            };
            let deadline = flow.stats.last_ts_ns.saturating_add(idle);
            if deadline <= now {
                if let Some(flow) = self.map.remove(&d.key) {
                    self.features.close(flow.slot);
                    self.expired.push(Row {
                        key: d.key,
                        flow,
                        reason: Expiration::Idle,
                    });
                }
            } else {
                self.due.push(Due { deadline, ..d });
            }
        }
    }

    /// Evict the least recently active flow.
    fn evict_oldest(&mut self) {
        let delay = self.opts.idle_timeout_ns.unwrap_or(0);
        while let Some(d) = self.due.pop() {
            let Some(flow) = self.map.get(&d.key).filter(|f| f.id == d.id) else {
                continue;
            };
            let deadline = flow.stats.last_ts_ns.saturating_add(delay);
            if deadline > d.deadline {
                // Active since it was queued: every other entry is due no earlier.
                self.due.push(Due { deadline, ..d });
                continue;
            }
            if let Some(flow) = self.map.remove(&d.key) {
                self.features.close(flow.slot);
                self.expired.push(Row {
                    key: d.key,
                    flow,
                    reason: Expiration::Evicted,
                });
                self.evicted += 1;
            }
            return;
        }
    }

    /// Rebuild the expiry queue from the live flows, dropping entries of expired flows.
    fn rebuild_queue(&mut self) {
        let delay = self.opts.idle_timeout_ns.unwrap_or(0);
        let entries: Vec<Due> = self
            .map
            .iter()
            .map(|(k, f)| Due {
                deadline: f.stats.last_ts_ns.saturating_add(delay),
                id: f.id,
                key: *k,
            })
            .collect();
        self.due = BinaryHeap::from(entries);
    }

    /// Move the clock to `now` (a live source's wall time while no packet arrives) and
    /// expire the flows idle by then.
    pub fn advance(&mut self, now: i64) {
        self.clock = self.clock.max(now);
        if let Some(idle) = self.opts.idle_timeout_ns {
            self.expire_idle(self.clock, idle);
        }
    }

    /// End the capture: every live flow becomes a row (reason `idle` when the clock has
    /// passed its idle timeout, `end` otherwise), in creation order.
    pub fn finish(&mut self) {
        let idle = self.opts.idle_timeout_ns;
        let end = self.clock;
        let mut live: Vec<Row> = self
            .map
            .drain()
            .chain(self.dense.drain(..))
            .map(|(key, flow)| Row {
                key,
                flow,
                reason: if idle.is_some_and(|t| end.saturating_sub(flow.stats.last_ts_ns) >= t) {
                    Expiration::Idle
                } else {
                    Expiration::End
                },
            })
            .collect();
        self.index.clear();
        self.last = usize::MAX;
        live.sort_unstable_by_key(|r| r.flow.id);
        for r in &live {
            self.features.close(r.flow.slot);
        }
        self.expired.extend(live);
        self.due.clear();
    }

    /// Rows expired and not yet taken.
    pub fn pending(&self) -> usize {
        self.expired.len()
    }

    /// Up to `n` expired rows as a batch, in the order they expired (`None` when there
    /// are none). The batch's schema has no metadata; [`counts`](Self::counts) and
    /// [`evicted`](Self::evicted) give the totals.
    pub fn take_expired(&mut self, n: usize) -> Option<RecordBatch> {
        if self.expired.is_empty() || n == 0 {
            return None;
        }
        let take = n.min(self.expired.len());
        let rows: Vec<(FlowTuple, Row)> = self
            .expired
            .drain(..take)
            .map(|r| (r.key.unpack(), r))
            .collect();
        let batch = self.batch(&rows, Arc::new(self.schema()));
        self.features.release(rows.iter().map(|r| r.1.flow.slot));
        Some(batch)
    }

    /// Drop the expired rows (when only the flow ids matter).
    pub fn discard_expired(&mut self) {
        self.features
            .release(self.expired.drain(..).map(|r| r.flow.slot));
    }

    /// Fold a table built from another part of the capture in (tables whose options are
    /// not [`ordered`](FlowOptions::ordered) only). Flows first seen in `other` get ids
    /// after this table's, in their order, so the ids are those of one pass.
    pub fn merge(&mut self, other: FlowTable) {
        self.merge_ids(other);
    }

    /// [`merge`](Self::merge), returning for each id of `other` (the index) the id the
    /// flow has in this table.
    pub fn merge_ids(&mut self, other: FlowTable) -> Vec<u64> {
        debug_assert!(!self.opts.ordered() && other.expired.is_empty());
        let mut ids = vec![0; usize::try_from(other.next_id).unwrap_or(0)];
        self.packets += other.packets;
        self.not_aggregated += other.not_aggregated;
        self.clock = self.clock.max(other.clock);
        let mut theirs: Vec<(Packed, Flow)> = other.map.into_iter().chain(other.dense).collect();
        theirs.sort_unstable_by_key(|(_, f)| f.id);
        for (k, f) in theirs {
            let id = if self.in_order {
                // A flow opened here starts empty at the other's first packet: merged, it
                // holds the other's counters.
                let at = self.find_or_open(k, f.stats.first_ts_ns);
                let mine = &mut self.dense[at].1;
                mine.stats.merge(&f.stats);
                mine.id
            } else {
                self.merge_mapped(k, f)
            };
            if let Some(slot) = usize::try_from(f.id).ok().and_then(|i| ids.get_mut(i)) {
                *slot = id;
            }
        }
        ids
    }

    /// Fold the flow `f` of key `k` into the map of a table that is not `in_order`; its id
    /// here.
    fn merge_mapped(&mut self, k: Packed, f: Flow) -> u64 {
        match self.map.entry(k) {
            Entry::Occupied(mut e) => {
                e.get_mut().stats.merge(&f.stats);
                e.get().id
            }
            Entry::Vacant(v) => {
                v.insert(Flow {
                    id: self.next_id,
                    ..f
                });
                self.next_id += 1;
                self.next_id - 1
            }
        }
    }

    /// Every row, ordered by first packet time, key, reason and id.
    fn sorted_rows(&mut self) -> Vec<(FlowTuple, Row)> {
        self.finish();
        let mut rows: Vec<(FlowTuple, Row)> = self
            .expired
            .drain(..)
            .map(|r| (r.key.unpack(), r))
            .collect();
        rows.sort_unstable_by(|a, b| {
            (a.1.flow.stats.first_ts_ns, a.0, a.1.reason, a.1.flow.id).cmp(&(
                b.1.flow.stats.first_ts_ns,
                b.0,
                b.1.reason,
                b.1.flow.id,
            ))
        });
        rows
    }

    /// Every flow row, ordered by first packet time then key.
    pub fn rows(mut self) -> Vec<(FlowTuple, FlowStats, Expiration)> {
        self.sorted_rows()
            .into_iter()
            .map(|(k, r)| (k, r.flow.stats, r.reason))
            .collect()
    }

    /// The `n` largest flows by packets (or bytes), ties broken by key ascending.
    pub fn top(self, n: usize, by_bytes: bool) -> Vec<(FlowTuple, FlowStats)> {
        let mut rows: Vec<(FlowTuple, FlowStats)> =
            self.rows().into_iter().map(|(k, s, _)| (k, s)).collect();
        let metric = |s: &FlowStats| if by_bytes { s.bytes } else { s.packets };
        rows.sort_unstable_by(|a, b| {
            metric(&b.1)
                .cmp(&metric(&a.1))
                .then(a.0.cmp(&b.0))
                .then(a.1.first_ts_ns.cmp(&b.1.first_ts_ns))
        });
        rows.truncate(n);
        rows
    }

    /// The table's schema (no metadata): the key and counters, the direction counters,
    /// `expiration_reason`, then each feature group's columns.
    pub fn schema(&self) -> Schema {
        let mut fields = basic_fields(self.opts);
        fields.extend(self.features.fields());
        Schema::new(fields)
    }

    /// The whole table as one Arrow batch, rows ordered by first packet time, key and
    /// reason; the schema's metadata holds the totals (`paclo.packets_total`,
    /// `paclo.packets_not_aggregated`, and `paclo.flows_evicted` with `max_flows`).
    pub fn to_batch(mut self) -> RecordBatch {
        let rows = self.sorted_rows();
        let mut schema = self.schema();
        let (total, not_aggregated) = self.counts();
        let md = &mut schema.metadata;
        md.insert("paclo.packets_total".to_string(), total.to_string());
        md.insert(
            "paclo.packets_not_aggregated".to_string(),
            not_aggregated.to_string(),
        );
        if self.opts.max_flows.is_some() {
            md.insert("paclo.flows_evicted".to_string(), self.evicted.to_string());
        }
        self.batch(&rows, Arc::new(schema))
    }

    fn batch(&self, rows: &[(FlowTuple, Row)], schema: SchemaRef) -> RecordBatch {
        let mut columns = basic_columns(rows, self.opts);
        let slots: Vec<u32> = rows.iter().map(|r| r.1.flow.slot).collect();
        if !self.features.is_empty() {
            self.features.columns(&slots, &mut columns);
        }
        RecordBatch::try_new(schema, columns).expect("flow columns match their schema")
    }
}

/// The flow table schema for `opts` with its built-in feature groups.
pub fn flow_schema(opts: FlowOptions) -> Schema {
    FlowTable::new(opts).schema()
}

fn basic_fields(opts: FlowOptions) -> Vec<Field> {
    let mut fields = Vec::new();
    if opts.flow_id {
        fields.push(Field::new("flow_id", DataType::UInt64, false));
    }
    fields.extend([
        Field::new("ip_version", DataType::UInt8, false),
        Field::new("protocol", DataType::UInt8, false),
        Field::new("src_ip", addr_type(), false),
        Field::new("dst_ip", addr_type(), false),
        Field::new("src_port", DataType::UInt16, true),
        Field::new("dst_port", DataType::UInt16, true),
        Field::new("vlan_id", DataType::UInt16, true),
        Field::new("packets", DataType::UInt64, false),
        Field::new("bytes", DataType::UInt64, false),
        Field::new("first_ts_ns", DataType::Int64, false),
        Field::new("last_ts_ns", DataType::Int64, false),
        Field::new("duration_ns", DataType::Int64, false),
        Field::new("tcp_flags", DataType::UInt8, true),
    ]);
    if opts.bidirectional {
        for name in [
            "src2dst_packets",
            "src2dst_bytes",
            "dst2src_packets",
            "dst2src_bytes",
            "bidirectional_packets",
            "bidirectional_bytes",
        ] {
            fields.push(Field::new(name, DataType::UInt64, false));
        }
    }
    if opts.has_reason() {
        fields.push(Field::new("expiration_reason", DataType::Utf8, false));
    }
    fields
}

fn basic_columns(rows: &[(FlowTuple, Row)], opts: FlowOptions) -> Vec<ArrayRef> {
    let n = rows.len();
    let col = |f: &dyn Fn(&FlowStats) -> u64| -> ArrayRef {
        prim::<UInt64Type>(rows.iter().map(|(_, r)| f(&r.flow.stats)).collect(), None)
    };
    let ts = |f: &dyn Fn(&FlowStats) -> i64| -> ArrayRef {
        prim::<Int64Type>(rows.iter().map(|(_, r)| f(&r.flow.stats)).collect(), None)
    };
    let mut src = Vec::with_capacity(n * ADDR_LEN);
    let mut dst = Vec::with_capacity(n * ADDR_LEN);
    for (k, _) in rows {
        src.extend_from_slice(&k.src);
        dst.extend_from_slice(&k.dst);
    }
    let opt16 = |f: &dyn Fn(&FlowTuple) -> Option<u16>| -> ArrayRef {
        let v: Vec<Option<u16>> = rows.iter().map(|(k, _)| f(k)).collect();
        prim::<UInt16Type>(
            v.iter().map(|x| x.unwrap_or(0)).collect(),
            Some(validity(n, |i| v[i].is_some())),
        )
    };
    let mut columns: Vec<ArrayRef> = Vec::new();
    if opts.flow_id {
        columns.push(prim::<UInt64Type>(
            rows.iter().map(|r| r.1.flow.id).collect(),
            None,
        ));
    }
    columns.extend([
        prim::<UInt8Type>(rows.iter().map(|r| r.0.ip_version).collect(), None),
        prim::<UInt8Type>(rows.iter().map(|r| r.0.protocol).collect(), None),
        addrs(src, None),
        addrs(dst, None),
        opt16(&|k| k.src_port),
        opt16(&|k| k.dst_port),
        opt16(&|k| k.vlan_id),
        col(&|s| s.packets),
        col(&|s| s.bytes),
        ts(&|s| s.first_ts_ns),
        ts(&|s| s.last_ts_ns),
        ts(&|s| s.last_ts_ns.saturating_sub(s.first_ts_ns)),
        prim::<UInt8Type>(
            rows.iter().map(|r| r.1.flow.stats.tcp_flags).collect(),
            Some(validity(n, |i| rows[i].1.flow.stats.has_tcp_flags)),
        ),
    ]);
    if opts.bidirectional {
        columns.push(col(&|s| s.src2dst_packets));
        columns.push(col(&|s| s.src2dst_bytes));
        columns.push(col(&|s| s.dst2src_packets));
        columns.push(col(&|s| s.dst2src_bytes));
        columns.push(col(&|s| s.packets));
        columns.push(col(&|s| s.bytes));
    }
    if opts.has_reason() {
        columns.push(Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.1.reason.as_str()),
        )));
    }
    columns
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference the packed key is checked against: the key field by field.
    fn key_of(f: &FlowFields) -> FlowTuple {
        FlowTuple {
            ip_version: f.ip_version,
            protocol: f.protocol,
            src: f.src,
            src_port: f.has_ports.then_some(f.src_port),
            dst: f.dst,
            dst_port: f.has_ports.then_some(f.dst_port),
            vlan_id: f.has_vlan.then_some(f.vlan_id),
        }
    }

    /// The smaller `(address, port)` first (derived `Option` order: `None` first).
    fn canonical(k: FlowTuple) -> (FlowTuple, bool) {
        if (k.src, k.src_port) <= (k.dst, k.dst_port) {
            (k, true)
        } else {
            (
                FlowTuple {
                    src: k.dst,
                    src_port: k.dst_port,
                    dst: k.src,
                    dst_port: k.src_port,
                    ..k
                },
                false,
            )
        }
    }

    proptest! {
        #[test]
        fn packed_keys_round_trip_and_order_like_flow_keys(
            v6 in any::<bool>(), proto in any::<u8>(), src in any::<[u8; 16]>(), dst in any::<[u8; 16]>(),
            ports in proptest::option::of((any::<u16>(), any::<u16>())), vlan in proptest::option::of(0u16..4096),
            same_addr in any::<bool>(),
        ) {
            let f = FlowFields {
                ip_version: if v6 { 6 } else { 4 },
                has_protocol: true,
                protocol: proto,
                src,
                dst: if same_addr { src } else { dst },
                has_ports: ports.is_some(),
                src_port: ports.map_or(0, |p| p.0),
                dst_port: ports.map_or(0, |p| p.1),
                has_vlan: vlan.is_some(),
                vlan_id: vlan.unwrap_or(0),
                ..FlowFields::default()
            };
            let key = key_of(&f);
            let packed = Packed::new(&f, true);
            prop_assert_eq!(packed.unpack(), key);
            let (pc, pf) = packed.canonical();
            let (kc, kf) = canonical(key);
            prop_assert_eq!(pc.unpack(), kc);
            prop_assert_eq!(pf, kf);
        }
    }

    /// A simple table (flows in creation order, the last packet's flow tried before the
    /// map) gives the rows and flow ids of the general path, over runs of one flow,
    /// alternations and returns to older flows, in both key modes; its two halves merged
    /// give them too.
    #[test]
    fn a_simple_table_counts_as_the_general_path() {
        use crate::flow::testdata::{ethernet, ipv4, tcp, udp};
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let frames: Vec<Vec<u8>> = (0..5u16)
            .map(|i| {
                let ip = if i % 2 == 0 {
                    ipv4(17, a, b, 0, 0, &udp(1000 + i, 53, 4))
                } else {
                    ipv4(6, b, a, 0, 0, &tcp(443, 2000 + i, 0x12, 0))
                };
                ethernet(0x0800, &[], &ip)
            })
            .collect();
        let order = [0, 0, 0, 1, 0, 1, 2, 2, 3, 4, 0, 4, 4, 1, 3, 3, 3, 2, 0, 0];
        let packets: Vec<RawPacket<'_>> = order
            .iter()
            .enumerate()
            .map(|(i, &f)| RawPacket {
                ts_ns: 1_000 * i as i64,
                caplen: frames[f].len() as u32,
                wirelen: frames[f].len() as u32 + 4,
                linktype: crate::decode::fastpath::linktype::ETHERNET,
                data: &frames[f],
            })
            .collect();
        let run = |opts: FlowOptions, pkts: &[RawPacket<'_>]| {
            let mut t = FlowTable::new(opts);
            let ids: Vec<Option<u64>> = pkts.iter().map(|p| t.push(p)).collect();
            (t, ids)
        };
        for bidirectional in [false, true] {
            let simple = FlowOptions {
                bidirectional,
                ..FlowOptions::default()
            };
            let general = FlowOptions {
                idle_timeout_ns: Some(i64::MAX),
                ..simple
            };
            let (t, ids) = run(simple, &packets);
            let (g, general_ids) = run(general, &packets);
            assert!(t.simple && !g.simple);
            assert_eq!(ids, general_ids);
            assert_eq!((t.len(), t.live()), (5, 5));
            let rows = t.rows();
            assert_eq!(rows, g.rows());
            let (mut first, _) = run(simple, &packets[..9]);
            let (second, later) = run(simple, &packets[9..]);
            let to_whole = first.merge_ids(second);
            let merged: Vec<Option<u64>> = later
                .iter()
                .map(|id| id.map(|i| to_whole[i as usize]))
                .collect();
            assert_eq!(merged, ids[9..]);
            assert_eq!(first.rows(), rows);
        }
    }

    /// A table with feature groups (flows in creation order, the last packet's flow tried
    /// before the map) gives the flow ids, rows and feature columns of the general path
    /// (a meter that never expires), and of itself made to look every packet up, over
    /// runs of one flow, alternations and returns to older flows, in both key modes; a run
    /// of the last packet's flow allocates nothing.
    #[test]
    fn a_feature_table_counts_as_the_general_path() {
        use crate::alloc::thread_counts;
        use crate::flow::testdata::{ethernet, ipv4, tcp, udp};
        let (a, b) = ([10, 0, 0, 1], [10, 0, 0, 2]);
        let frames: Vec<Vec<u8>> = (0..6u16)
            .map(|i| {
                let ip = match i % 3 {
                    0 => ipv4(17, a, b, 0, 0, &udp(1000 + i, 53, 4 + usize::from(i))),
                    1 => ipv4(6, b, a, 0, 0, &tcp(443, 2000 + i, 0x12, 0)),
                    _ => ipv4(6, a, b, 0, 0, &tcp(2000 + i - 1, 443, 0x10, 0)),
                };
                ethernet(0x0800, &[], &ip)
            })
            .collect();
        // Flows 1 and 2 (and 4 and 5) are the two directions of one bidirectional flow.
        let order = [
            0, 0, 0, 1, 2, 1, 2, 2, 3, 4, 0, 4, 4, 1, 3, 3, 3, 5, 0, 0, 0, 0, 0, 2, 1, 5, 5, 3, 0,
            4, 4, 4, 4, 4, 4, 1,
        ];
        // Mostly 1 µs apart, with jumps of 20 µs.
        let mut ts = 0i64;
        let packets: Vec<RawPacket<'_>> = order
            .iter()
            .enumerate()
            .map(|(i, &f)| {
                ts += if i % 7 == 6 { 20_000 } else { 1_000 };
                RawPacket {
                    ts_ns: ts,
                    caplen: frames[f].len() as u32,
                    wirelen: frames[f].len() as u32 + 4,
                    linktype: crate::decode::fastpath::linktype::ETHERNET,
                    data: &frames[f],
                }
            })
            .collect();
        let every = FeatureSpec {
            statistical: true,
            splt: 3,
            mac: true,
            app: true,
            fingerprints: crate::flow::fingerprints::ALL,
        };
        let statistical = FeatureSpec {
            statistical: true,
            ..FeatureSpec::default()
        };
        let mac = FeatureSpec {
            mac: true,
            ..FeatureSpec::default()
        };
        for features in [every, statistical, mac] {
            for bidirectional in [false, true] {
                let opts = FlowOptions {
                    bidirectional,
                    features,
                    ..FlowOptions::default()
                };
                // `lookup`: the last place forgotten after every packet.
                let run = |opts: FlowOptions, lookup: bool| {
                    let mut t = FlowTable::new(opts);
                    let mut ids = Vec::new();
                    for p in &packets {
                        ids.push(t.push(p));
                        if lookup {
                            t.last = usize::MAX;
                        }
                    }
                    (t.in_order, ids, t.to_batch())
                };
                let (in_order, ids, batch) = run(opts, false);
                assert!(in_order);
                let general = FlowOptions {
                    idle_timeout_ns: Some(i64::MAX),
                    ..opts
                };
                let (in_order, general_ids, mut want) = run(general, false);
                assert!(!in_order);
                assert_eq!(ids, general_ids, "{opts:?}");
                let reason = want.schema().index_of("expiration_reason").unwrap();
                want.remove_column(reason);
                assert_eq!(batch, want, "{opts:?}");
                assert_eq!(run(opts, true).1, ids, "{opts:?}");
                assert_eq!(run(opts, true).2, batch, "{opts:?}");
                // Runs of the flow of the packet before: no allocation, however long.
                let mut t = FlowTable::new(opts);
                t.push(&packets[0]);
                let before = thread_counts();
                for _ in 0..10_000 {
                    t.push(&packets[0]);
                }
                assert_eq!(thread_counts().since(before).allocs, 0, "{opts:?}");
            }
        }
    }

    /// One UDP flow of packets at `ts`, in that order, as a flow batch.
    fn one_flow(ts: &[i64]) -> RecordBatch {
        use crate::flow::testdata::{ethernet, ipv4, udp};
        let frame = ethernet(
            0x0800,
            &[],
            &ipv4(17, [10, 0, 0, 1], [10, 0, 0, 2], 0, 0, &udp(1000, 2000, 4)),
        );
        let mut table = FlowTable::new(FlowOptions::default());
        for &ts_ns in ts {
            table.push(&RawPacket {
                ts_ns,
                caplen: frame.len() as u32,
                wirelen: frame.len() as u32,
                linktype: crate::decode::fastpath::linktype::ETHERNET,
                data: &frame,
            });
        }
        table.to_batch()
    }

    fn column(batch: &RecordBatch, name: &str) -> Vec<i64> {
        use arrow_array::cast::AsArray;
        batch
            .column_by_name(name)
            .unwrap()
            .as_primitive::<Int64Type>()
            .values()
            .to_vec()
    }

    #[test]
    fn a_duration_beyond_i64_saturates_instead_of_overflowing() {
        for ts in [
            [i64::MAX, i64::MIN],
            [i64::MIN, i64::MAX],
            [i64::MIN, 1],
            [-2, i64::MAX],
        ] {
            let batch = one_flow(&ts);
            assert_eq!(batch.num_rows(), 1, "{ts:?}");
            let (first, last) = (ts[0].min(ts[1]), ts[0].max(ts[1]));
            assert_eq!(column(&batch, "first_ts_ns"), [first], "{ts:?}");
            assert_eq!(column(&batch, "last_ts_ns"), [last], "{ts:?}");
            assert_eq!(column(&batch, "duration_ns"), [i64::MAX], "{ts:?}");
        }
        // At the extremes but within range the duration is exact.
        assert_eq!(
            column(&one_flow(&[i64::MIN + 7, i64::MIN]), "duration_ns"),
            [7]
        );
        assert_eq!(
            column(&one_flow(&[i64::MAX, -1]), "duration_ns"),
            [i64::MAX]
        );
        assert_eq!(column(&one_flow(&[i64::MAX, 0]), "duration_ns"), [i64::MAX]);
        assert_eq!(
            column(&one_flow(&[i64::MAX, 1]), "duration_ns"),
            [i64::MAX - 1]
        );
    }
}
