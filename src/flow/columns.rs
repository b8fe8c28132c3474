//! Per-packet projection into reused columns, finished into Arrow record batches.

use std::mem::take;
use std::sync::Arc;

use arrow_array::types::{Int64Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{ArrayRef, BinaryArray, FixedSizeBinaryArray, PrimitiveArray, RecordBatch};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::decode::fastpath::{self, FlowFields};
use crate::source::RawPacket;

/// Width of an address column: 16 bytes, IPv4 as IPv4-mapped IPv6.
pub const ADDR_LEN: usize = 16;

/// The address column type: `fixed_size_binary(16)`.
pub fn addr_type() -> DataType {
    DataType::FixedSizeBinary(ADDR_LEN as i32)
}

/// The schema of `project` tables (with a `flow_id` column last when `flow_id`).
pub fn projection_schema_with(flow_id: bool) -> SchemaRef {
    let mut fields = projection_fields();
    if flow_id {
        fields.push(Field::new("flow_id", DataType::UInt64, true));
    }
    Arc::new(Schema::new(fields))
}

/// The schema of `project` tables.
pub fn projection_schema() -> SchemaRef {
    Arc::new(Schema::new(projection_fields()))
}

fn projection_fields() -> Vec<Field> {
    vec![
        Field::new("ts_ns", DataType::Int64, false),
        Field::new("caplen", DataType::UInt32, false),
        Field::new("len", DataType::UInt32, false),
        Field::new("ip_version", DataType::UInt8, true),
        Field::new("protocol", DataType::UInt8, true),
        Field::new("src_ip", addr_type(), true),
        Field::new("dst_ip", addr_type(), true),
        Field::new("src_port", DataType::UInt16, true),
        Field::new("dst_port", DataType::UInt16, true),
        Field::new("vlan_id", DataType::UInt16, true),
        Field::new("tcp_flags", DataType::UInt8, true),
    ]
}

/// The schema of `read_batches` batches.
pub fn raw_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts_ns", DataType::Int64, false),
        Field::new("caplen", DataType::UInt32, false),
        Field::new("wirelen", DataType::UInt32, false),
        Field::new("data", DataType::Binary, false),
    ]))
}

pub(crate) fn prim<T: arrow_array::ArrowPrimitiveType>(
    v: Vec<T::Native>,
    valid: Option<NullBuffer>,
) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), valid))
}

/// An address column from a vector whose bytes in memory are the addresses, 16 per row
/// (bytes, or one `u128::from_ne_bytes` value a row): the vector becomes its buffer.
pub(crate) fn addrs<T: ArrowNativeType>(v: Vec<T>, valid: Option<NullBuffer>) -> ArrayRef {
    Arc::new(FixedSizeBinaryArray::new(
        ADDR_LEN as i32,
        Buffer::from_vec(v),
        valid,
    ))
}

/// A validity bitmap from a per-row predicate, packed 64 rows at a time.
pub(crate) fn validity(len: usize, valid: impl FnMut(usize) -> bool) -> NullBuffer {
    NullBuffer::new(BooleanBuffer::collect_bool(len, valid))
}

/// A validity bitmap with a bit per value of `values`, set where `valid` holds: each 64
/// values are packed into a word from a slice of exactly 64, so the loop has no bounds
/// checks.
pub(crate) fn validity_of<T: Copy>(values: &[T], valid: impl Fn(T) -> bool) -> NullBuffer {
    let pack = |chunk: &[T]| {
        chunk
            .iter()
            .enumerate()
            .fold(0u64, |w, (j, &v)| w | u64::from(valid(v)) << j)
    };
    let chunks = values.chunks_exact(64);
    let tail = chunks.remainder();
    let mut words: Vec<u64> = Vec::with_capacity(values.len().div_ceil(64));
    words.extend(chunks.map(pack));
    if !tail.is_empty() {
        words.push(pack(tail));
    }
    NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(words), 0, values.len()))
}

/// The validity bitmap of the rows whose presence byte in `present` has bit `bit` set.
/// Eight bytes are read as one word and their bits gathered into eight bits of the bitmap
/// by one multiplication, so a row costs about one instruction.
pub(crate) fn present_bits(present: &[u8], bit: u8) -> NullBuffer {
    /// Bit 0 of every byte.
    const LOW: u64 = 0x0101_0101_0101_0101;
    /// Moves bit 8k (k = 0..7) of a word holding only those bits to bit 56 + k: the
    /// product's terms are distinct powers of two, so nothing carries.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let eight = |b: &[u8]| {
        let x = b.try_into().map_or(0, u64::from_le_bytes);
        ((x >> bit) & LOW).wrapping_mul(GATHER) >> 56
    };
    let chunks = present.chunks_exact(64);
    let tail = chunks.remainder();
    let mut words: Vec<u64> = Vec::with_capacity(present.len().div_ceil(64));
    words.extend(chunks.map(|c| {
        c.chunks_exact(8)
            .enumerate()
            .fold(0u64, |w, (i, b)| w | eight(b) << (8 * i))
    }));
    if !tail.is_empty() {
        let w = tail
            .iter()
            .enumerate()
            .fold(0u64, |w, (j, &p)| w | u64::from((p >> bit) & 1) << j);
        words.push(w);
    }
    NullBuffer::new(BooleanBuffer::new(
        Buffer::from_vec(words),
        0,
        present.len(),
    ))
}

/// Ask the kernel to back a large column with transparent huge pages, so filling it costs
/// one page fault per 2 MiB instead of one per 4 KiB. A hint only: without THP nothing changes.
pub(crate) fn advise_huge<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < 2 * HUGE {
            return;
        }
        let start = v.as_mut_ptr() as usize;
        let first = (start + HUGE - 1) & !(HUGE - 1);
        let end = (start + bytes) & !(HUGE - 1);
        if end > first {
            // SAFETY: [first, end) lies inside the vector's allocation (its bounds rounded
            // inwards to 2 MiB), which outlives the call; MADV_HUGEPAGE changes how the
            // kernel backs those pages, never their contents. A failure is harmless.
            unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
            }
        }
    }
}

fn column<T>(cap: usize) -> Vec<T> {
    let mut v = Vec::with_capacity(cap);
    advise_huge(&mut v);
    v
}

/// Rows staged before they are spread into the columns: small enough to stay in the L1
/// cache while they are read back.
const STAGE_ROWS: usize = 256;

/// One projected row as [`ProjectionBuilder::push_fields`] stages it: a packet costs one
/// store of this, the columns are written in bulk per [`STAGE_ROWS`] rows. Addresses are
/// their 16 bytes in the machine's order (`u128::from_ne_bytes`), one value each.
#[derive(Clone, Copy)]
struct Row {
    ts: i64,
    caplen: u32,
    len: u32,
    src: u128,
    dst: u128,
    src_port: u16,
    dst_port: u16,
    vlan: u16,
    ip_version: u8,
    protocol: u8,
    flags: u8,
    present: u8,
}

/// Columns of the projection, filled without allocating per packet and handed to Arrow
/// once per batch (the column vectors are moved into the batch, and reserved again when
/// the next batch's first rows are written). Rows are staged in a small reused buffer and
/// written into the columns in bulk, a column at a time.
pub struct ProjectionBuilder {
    cap: usize,
    /// Rows not yet in the columns (at most [`STAGE_ROWS`]), with their flow ids when
    /// the builder has a flow id column.
    stage: Vec<Row>,
    stage_ids: Vec<u64>,
    ts: Vec<i64>,
    caplen: Vec<u32>,
    len: Vec<u32>,
    ip_version: Vec<u8>,
    protocol: Vec<u8>,
    src: Vec<u128>,
    dst: Vec<u128>,
    src_port: Vec<u16>,
    dst_port: Vec<u16>,
    vlan: Vec<u16>,
    flags: Vec<u8>,
    /// Per row, one bit each: [`PORTS`], [`FLAGS`], [`PROTOCOL`], [`VLAN`], [`L3`]: the
    /// validity of every nullable column in one byte, turned into bitmaps eight rows at a
    /// time ([`present_bits`]).
    present: Vec<u8>,
    /// The flow id of each row ([`NO_FLOW`] for packets in no flow), when asked for.
    flow_id: Option<Vec<u64>>,
}

/// Marks "in no flow" in the flow id column.
const NO_FLOW: u64 = u64::MAX;

/// Bits of a row's presence byte: ports, TCP flags, protocol, VLAN, an IP layer.
const PORTS: u8 = 0;
const FLAGS: u8 = 1;
const PROTOCOL: u8 = 2;
const VLAN: u8 = 3;
const L3: u8 = 4;
/// Marks "no VLAN" in the VLAN column (ids are 12 bits).
const NO_VLAN: u16 = u16::MAX;

impl ProjectionBuilder {
    /// Columns for batches of `batch_size` rows (at least 1).
    pub fn new(batch_size: usize) -> Self {
        let cap = batch_size.max(1);
        ProjectionBuilder {
            cap,
            ts: column(cap),
            caplen: column(cap),
            len: column(cap),
            ip_version: column(cap),
            protocol: column(cap),
            src: column(cap),
            dst: column(cap),
            src_port: column(cap),
            dst_port: column(cap),
            vlan: column(cap),
            flags: column(cap),
            present: Vec::with_capacity(cap),
            flow_id: None,
            stage: Vec::with_capacity(STAGE_ROWS),
            stage_ids: Vec::new(),
        }
    }

    /// Columns as [`new`](Self::new), plus a `flow_id` column filled by
    /// [`push_fields`](Self::push_fields).
    pub fn with_flow_id(batch_size: usize) -> Self {
        let mut b = ProjectionBuilder::new(batch_size);
        b.flow_id = Some(column(b.cap));
        b.stage_ids = Vec::with_capacity(STAGE_ROWS);
        b
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.ts.len() + self.stage.len()
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the batch is full.
    pub fn is_full(&self) -> bool {
        self.len() >= self.cap
    }

    /// Project one packet into the columns.
    #[inline]
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        let mut f = FlowFields::default();
        fastpath::parse(pkt.linktype, pkt.data, &mut f);
        self.push_fields(pkt, &f, None);
    }

    /// Project one packet whose fields are parsed already; `flow_id` is its flow's id
    /// (kept when the builder has a flow id column).
    #[inline]
    pub fn push_fields(&mut self, pkt: &RawPacket<'_>, f: &FlowFields, flow_id: Option<u64>) {
        if self.stage.len() == STAGE_ROWS {
            self.spread();
        }
        if self.flow_id.is_some() {
            self.stage_ids.push(flow_id.unwrap_or(NO_FLOW));
        }
        self.stage.push(Row {
            ts: pkt.ts_ns,
            caplen: pkt.caplen,
            len: pkt.wirelen,
            src: u128::from_ne_bytes(f.src),
            dst: u128::from_ne_bytes(f.dst),
            src_port: f.src_port,
            dst_port: f.dst_port,
            vlan: if f.has_vlan { f.vlan_id } else { NO_VLAN },
            ip_version: f.ip_version,
            protocol: f.protocol,
            flags: f.tcp_flags,
            present: u8::from(f.has_ports) << PORTS
                | u8::from(f.has_tcp_flags) << FLAGS
                | u8::from(f.has_protocol) << PROTOCOL
                | u8::from(f.has_vlan) << VLAN
                | u8::from(f.ip_version != 0) << L3,
        });
    }

    /// Write the staged rows into the columns, a column at a time, and empty the stage.
    #[inline(never)]
    fn spread(&mut self) {
        if self.ts.capacity() == 0 {
            self.reserve();
        }
        let rows = &self.stage;
        self.ts.extend(rows.iter().map(|r| r.ts));
        self.caplen.extend(rows.iter().map(|r| r.caplen));
        self.len.extend(rows.iter().map(|r| r.len));
        self.ip_version.extend(rows.iter().map(|r| r.ip_version));
        self.protocol.extend(rows.iter().map(|r| r.protocol));
        self.src.extend(rows.iter().map(|r| r.src));
        self.dst.extend(rows.iter().map(|r| r.dst));
        self.src_port.extend(rows.iter().map(|r| r.src_port));
        self.dst_port.extend(rows.iter().map(|r| r.dst_port));
        self.vlan.extend(rows.iter().map(|r| r.vlan));
        self.flags.extend(rows.iter().map(|r| r.flags));
        self.present.extend(rows.iter().map(|r| r.present));
        self.stage.clear();
        if let Some(ids) = &mut self.flow_id {
            ids.append(&mut self.stage_ids);
        }
    }

    /// Reserve the columns for a batch (after [`finish`](Self::finish) moved them out).
    #[cold]
    fn reserve(&mut self) {
        let cap = self.cap;
        self.ts = column(cap);
        self.caplen = column(cap);
        self.len = column(cap);
        self.ip_version = column(cap);
        self.protocol = column(cap);
        self.src = column(cap);
        self.dst = column(cap);
        self.src_port = column(cap);
        self.dst_port = column(cap);
        self.vlan = column(cap);
        self.flags = column(cap);
        if let Some(ids) = &mut self.flow_id {
            *ids = column(cap);
        }
    }

    /// The held rows as a batch (None when empty); the columns are then empty again.
    pub fn finish(&mut self) -> Option<RecordBatch> {
        if self.is_empty() {
            return None;
        }
        self.spread();
        let present = &self.present;
        let has_l3 = present_bits(present, L3);
        let has_ports = present_bits(present, PORTS);
        let has_flags = present_bits(present, FLAGS);
        let has_protocol = present_bits(present, PROTOCOL);
        let has_vlan = present_bits(present, VLAN);
        self.present.clear();
        let with_ids = self.flow_id.is_some();
        let mut columns: Vec<ArrayRef> = vec![
            prim::<Int64Type>(take(&mut self.ts), None),
            prim::<UInt32Type>(take(&mut self.caplen), None),
            prim::<UInt32Type>(take(&mut self.len), None),
            prim::<UInt8Type>(take(&mut self.ip_version), Some(has_l3.clone())),
            prim::<UInt8Type>(take(&mut self.protocol), Some(has_protocol)),
            addrs(take(&mut self.src), Some(has_l3.clone())),
            addrs(take(&mut self.dst), Some(has_l3)),
            prim::<UInt16Type>(take(&mut self.src_port), Some(has_ports.clone())),
            prim::<UInt16Type>(take(&mut self.dst_port), Some(has_ports)),
            prim::<UInt16Type>(take(&mut self.vlan), Some(has_vlan)),
            prim::<UInt8Type>(take(&mut self.flags), Some(has_flags)),
        ];
        if let Some(ids) = &mut self.flow_id {
            let in_flow = validity_of(ids, |id| id != NO_FLOW);
            columns.push(prim::<UInt64Type>(take(ids), Some(in_flow)));
        }
        Some(
            RecordBatch::try_new(projection_schema_with(with_ids), columns)
                .expect("projection columns match their schema"),
        )
    }
}

/// Raw packets (timestamp, lengths, bytes) collected into batches.
pub struct RawBatchBuilder {
    cap: usize,
    ts: Vec<i64>,
    caplen: Vec<u32>,
    wirelen: Vec<u32>,
    offsets: Vec<i32>,
    data: Vec<u8>,
}

impl RawBatchBuilder {
    /// Columns for batches of `batch_size` rows (at least 1).
    pub fn new(batch_size: usize) -> Self {
        let cap = batch_size.max(1);
        let mut offsets = Vec::with_capacity(cap + 1);
        offsets.push(0);
        RawBatchBuilder {
            cap,
            ts: Vec::with_capacity(cap),
            caplen: Vec::with_capacity(cap),
            wirelen: Vec::with_capacity(cap),
            offsets,
            data: Vec::new(),
        }
    }

    /// Whether the batch is full: `batch_size` rows, or the binary column near 2 GiB.
    pub fn is_full(&self) -> bool {
        self.ts.len() >= self.cap || self.data.len() > (i32::MAX as usize) - (1 << 20)
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// Append one packet.
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        self.ts.push(pkt.ts_ns);
        self.caplen.push(pkt.caplen);
        self.wirelen.push(pkt.wirelen);
        self.data.extend_from_slice(pkt.data);
        self.offsets.push(self.data.len() as i32);
    }

    /// The held rows as a batch (None when empty).
    pub fn finish(&mut self) -> Option<RecordBatch> {
        if self.is_empty() {
            return None;
        }
        let cap = self.cap;
        let offsets = std::mem::replace(&mut self.offsets, Vec::with_capacity(cap + 1));
        self.offsets.push(0);
        let data = std::mem::take(&mut self.data);
        let ts = std::mem::replace(&mut self.ts, Vec::with_capacity(cap));
        let caplen = std::mem::replace(&mut self.caplen, Vec::with_capacity(cap));
        let wirelen = std::mem::replace(&mut self.wirelen, Vec::with_capacity(cap));
        let binary = BinaryArray::new(
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Buffer::from_vec(data),
            None,
        );
        let columns: Vec<ArrayRef> = vec![
            prim::<Int64Type>(ts, None),
            prim::<UInt32Type>(caplen, None),
            prim::<UInt32Type>(wirelen, None),
            Arc::new(binary),
        ];
        Some(RecordBatch::try_new(raw_schema(), columns).expect("raw columns match their schema"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gathered bitmaps are those of a bit-by-bit reading, for every bit and every
    /// length around the word sizes.
    #[test]
    fn present_bits_reads_every_row() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let bytes: Vec<u8> = (0..300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for len in (0..140).chain([255, 256, 257, 300]) {
            let rows = &bytes[..len];
            for bit in 0..8 {
                let got = present_bits(rows, bit);
                let want: Vec<bool> = rows.iter().map(|p| (p >> bit) & 1 == 1).collect();
                let got: Vec<bool> = (0..len).map(|i| got.is_valid(i)).collect();
                assert_eq!(got, want, "{len} rows, bit {bit}");
            }
        }
    }
}
