//! The aggregated flow table: one row per flow, memory proportional to the flows.

use std::sync::Arc;

use arrow_array::types::{Int64Type, UInt16Type, UInt64Type, UInt8Type};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use hashbrown::HashMap;

use super::columns::{addr_type, addrs, prim, validity, ADDR_LEN};
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

/// The map's key: a [`FlowTuple`] packed into three words, so hashing and comparing cost
/// three operations. Addresses are big-endian numbers, so the derived order is numeric.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Packed {
    src: u128,
    dst: u128,
    /// version | protocol << 8 | src port (+ presence bit) << 16 | dst port << 33 | vlan << 50
    meta: u64,
}

const PORT_PRESENT: u64 = 1 << 16;
const VLAN_PRESENT: u64 = 1 << 12;

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
            src: u128::from_be_bytes(f.src),
            dst: u128::from_be_bytes(f.dst),
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
        if (self.src, self.src_port_bits()) <= (self.dst, self.dst_port_bits()) {
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
            src: self.src.to_be_bytes(),
            src_port: port(self.src_port_bits()),
            dst: self.dst.to_be_bytes(),
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

    #[inline]
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
    /// No packet for `idle_timeout` (seen at the flow's next packet or at the capture's end).
    Idle,
    /// The flow lasted `active_timeout`.
    Active,
    /// The capture ended.
    End,
}

impl Expiration {
    /// The value of the `expiration_reason` column.
    pub fn as_str(self) -> &'static str {
        match self {
            Expiration::Idle => "idle",
            Expiration::Active => "active",
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
}

impl FlowOptions {
    fn timeouts(&self) -> bool {
        self.idle_timeout_ns.is_some() || self.active_timeout_ns.is_some()
    }
}

type Map = HashMap<Packed, FlowStats, foldhash::fast::FixedState>;

/// A flow table being filled.
pub struct FlowTable {
    opts: FlowOptions,
    fields: FlowFields,
    map: Map,
    expired: Vec<(Packed, FlowStats, Expiration)>,
    packets: u64,
    not_aggregated: u64,
    last_ts: i64,
}

impl FlowTable {
    /// An empty table.
    pub fn new(opts: FlowOptions) -> Self {
        FlowTable {
            opts,
            fields: FlowFields::default(),
            map: Map::default(),
            expired: Vec::new(),
            packets: 0,
            not_aggregated: 0,
            last_ts: i64::MIN,
        }
    }

    /// Packets seen, and how many of them no flow counts (no IP layer, or an IPv6
    /// extension chain that hides the protocol).
    pub fn counts(&self) -> (u64, u64) {
        (self.packets, self.not_aggregated)
    }

    /// Live flows plus flows already split off by timeouts.
    pub fn len(&self) -> usize {
        self.map.len() + self.expired.len()
    }

    /// Whether the table holds no flow.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Count one packet.
    #[inline]
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        self.packets += 1;
        self.last_ts = self.last_ts.max(pkt.ts_ns);
        fastpath::parse(pkt.linktype, pkt.data, &mut self.fields);
        if self.fields.ip_version == 0 || !self.fields.has_protocol {
            self.not_aggregated += 1;
            return;
        }
        let key = Packed::new(&self.fields, self.opts.key_vlan);
        let (key, forward) = if self.opts.bidirectional {
            key.canonical()
        } else {
            (key, true)
        };
        let flags = self.fields.has_tcp_flags.then_some(self.fields.tcp_flags);
        let ts = pkt.ts_ns;
        let bytes = u64::from(pkt.wirelen);
        if !self.opts.timeouts() {
            self.map
                .entry(key)
                .or_insert_with(|| FlowStats::start(ts))
                .add(ts, bytes, forward, flags);
            return;
        }
        let stats = self.map.entry(key).or_insert_with(|| FlowStats::start(ts));
        let reason = if self
            .opts
            .idle_timeout_ns
            .is_some_and(|t| stats.packets > 0 && ts.saturating_sub(stats.last_ts_ns) >= t)
        {
            Some(Expiration::Idle)
        } else if self
            .opts
            .active_timeout_ns
            .is_some_and(|t| stats.packets > 0 && ts.saturating_sub(stats.first_ts_ns) >= t)
        {
            Some(Expiration::Active)
        } else {
            None
        };
        if let Some(r) = reason {
            let old = std::mem::replace(stats, FlowStats::start(ts));
            self.expired.push((key, old, r));
        }
        stats.add(ts, bytes, forward, flags);
    }

    /// Fold a table built from another part of the capture in (without timeouts only).
    pub fn merge(&mut self, other: FlowTable) {
        self.packets += other.packets;
        self.not_aggregated += other.not_aggregated;
        self.last_ts = self.last_ts.max(other.last_ts);
        for (k, s) in other.map {
            self.map.entry(k).and_modify(|m| m.merge(&s)).or_insert(s);
        }
        self.expired.extend(other.expired);
    }

    /// Every flow row, ordered by first packet time then key.
    pub fn rows(self) -> Vec<(FlowTuple, FlowStats, Expiration)> {
        let idle = self.opts.idle_timeout_ns;
        let end = self.last_ts;
        let mut rows: Vec<(FlowTuple, FlowStats, Expiration)> = self
            .expired
            .into_iter()
            .map(|(k, s, r)| (k.unpack(), s, r))
            .collect();
        rows.extend(self.map.into_iter().map(|(k, s)| {
            let r = if idle.is_some_and(|t| end.saturating_sub(s.last_ts_ns) >= t) {
                Expiration::Idle
            } else {
                Expiration::End
            };
            (k.unpack(), s, r)
        }));
        rows.sort_unstable_by_key(|r| (r.1.first_ts_ns, r.0, r.2));
        rows
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

    /// The table as one Arrow batch (columns as in [`flow_schema`]).
    pub fn to_batch(self) -> RecordBatch {
        let opts = self.opts;
        let (packets_total, not_aggregated) = self.counts();
        let rows = self.rows();
        flow_batch(&rows, opts, packets_total, not_aggregated)
    }
}

/// The flow table schema for `opts`.
pub fn flow_schema(opts: FlowOptions) -> Schema {
    let mut fields = vec![
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
    ];
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
    if opts.timeouts() {
        fields.push(Field::new("expiration_reason", DataType::Utf8, false));
    }
    Schema::new(fields)
}

fn flow_batch(
    rows: &[(FlowTuple, FlowStats, Expiration)],
    opts: FlowOptions,
    total: u64,
    not_aggregated: u64,
) -> RecordBatch {
    let n = rows.len();
    let col = |f: &dyn Fn(&FlowTuple, &FlowStats) -> u64| -> ArrayRef {
        prim::<UInt64Type>(rows.iter().map(|(k, s, _)| f(k, s)).collect(), None)
    };
    let mut src = Vec::with_capacity(n * ADDR_LEN);
    let mut dst = Vec::with_capacity(n * ADDR_LEN);
    for (k, _, _) in rows {
        src.extend_from_slice(&k.src);
        dst.extend_from_slice(&k.dst);
    }
    let opt16 = |f: &dyn Fn(&FlowTuple) -> Option<u16>| -> ArrayRef {
        let v: Vec<Option<u16>> = rows.iter().map(|(k, _, _)| f(k)).collect();
        prim::<UInt16Type>(
            v.iter().map(|x| x.unwrap_or(0)).collect(),
            Some(validity(n, |i| v[i].is_some())),
        )
    };
    let mut columns: Vec<ArrayRef> = vec![
        prim::<UInt8Type>(rows.iter().map(|r| r.0.ip_version).collect(), None),
        prim::<UInt8Type>(rows.iter().map(|r| r.0.protocol).collect(), None),
        addrs(src, None),
        addrs(dst, None),
        opt16(&|k| k.src_port),
        opt16(&|k| k.dst_port),
        opt16(&|k| k.vlan_id),
        col(&|_, s| s.packets),
        col(&|_, s| s.bytes),
        prim::<Int64Type>(rows.iter().map(|r| r.1.first_ts_ns).collect(), None),
        prim::<Int64Type>(rows.iter().map(|r| r.1.last_ts_ns).collect(), None),
        prim::<Int64Type>(
            rows.iter()
                .map(|r| r.1.last_ts_ns.saturating_sub(r.1.first_ts_ns))
                .collect(),
            None,
        ),
        prim::<UInt8Type>(
            rows.iter().map(|r| r.1.tcp_flags).collect(),
            Some(validity(n, |i| rows[i].1.has_tcp_flags)),
        ),
    ];
    if opts.bidirectional {
        columns.push(col(&|_, s| s.src2dst_packets));
        columns.push(col(&|_, s| s.src2dst_bytes));
        columns.push(col(&|_, s| s.dst2src_packets));
        columns.push(col(&|_, s| s.dst2src_bytes));
        columns.push(col(&|_, s| s.packets));
        columns.push(col(&|_, s| s.bytes));
    }
    if opts.timeouts() {
        columns.push(Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.2.as_str()),
        )));
    }
    let mut schema = flow_schema(opts);
    schema
        .metadata
        .insert("paclo.packets_total".to_string(), total.to_string());
    schema.metadata.insert(
        "paclo.packets_not_aggregated".to_string(),
        not_aggregated.to_string(),
    );
    let schema: SchemaRef = Arc::new(schema);
    RecordBatch::try_new(schema, columns).expect("flow columns match their schema")
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
