//! Fingerprint events into Arrow columns: one row per fingerprint.

use std::sync::Arc;

use arrow_array::builder::ArrayBuilder;
use arrow_array::builder::{
    FixedSizeBinaryBuilder, Int64Builder, StringBuilder, UInt16Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::Event;
use crate::flow::columns::{addr_type, ADDR_LEN};

/// The schema of `fingerprints` tables.
pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts_ns", DataType::Int64, false),
        Field::new("method", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
        Field::new("raw", DataType::Utf8, true),
        Field::new("ip_version", DataType::UInt8, false),
        Field::new("protocol", DataType::UInt8, false),
        Field::new("src_ip", addr_type(), false),
        Field::new("dst_ip", addr_type(), false),
        Field::new("src_port", DataType::UInt16, false),
        Field::new("dst_port", DataType::UInt16, false),
    ]))
}

/// Growing columns of fingerprint rows.
pub struct FingerprintColumns {
    ts: Int64Builder,
    method: StringBuilder,
    value: StringBuilder,
    raw: StringBuilder,
    ip_version: UInt8Builder,
    protocol: UInt8Builder,
    src: FixedSizeBinaryBuilder,
    dst: FixedSizeBinaryBuilder,
    sport: UInt16Builder,
    dport: UInt16Builder,
}

impl Default for FingerprintColumns {
    fn default() -> Self {
        FingerprintColumns {
            ts: Int64Builder::new(),
            method: StringBuilder::new(),
            value: StringBuilder::new(),
            raw: StringBuilder::new(),
            ip_version: UInt8Builder::new(),
            protocol: UInt8Builder::new(),
            src: FixedSizeBinaryBuilder::new(ADDR_LEN as i32),
            dst: FixedSizeBinaryBuilder::new(ADDR_LEN as i32),
            sport: UInt16Builder::new(),
            dport: UInt16Builder::new(),
        }
    }
}

impl FingerprintColumns {
    /// Rows so far.
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append one fingerprint. The raw column is null for methods without a raw form.
    pub fn push(&mut self, e: &Event) {
        self.ts.append_value(e.ts_ns);
        self.method.append_value(e.method.name());
        self.value.append_value(e.value);
        if e.raw.is_empty() {
            self.raw.append_null();
        } else {
            self.raw.append_value(e.raw);
        }
        self.ip_version.append_value(e.ip_version);
        self.protocol.append_value(e.protocol);
        // A 16-byte value always fits a 16-byte column.
        let _ = self.src.append_value(e.src.addr);
        let _ = self.dst.append_value(e.dst.addr);
        self.sport.append_value(e.src.port);
        self.dport.append_value(e.dst.port);
    }

    /// The rows as one record batch (the columns start empty again).
    pub fn finish(&mut self) -> RecordBatch {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.ts.finish()),
            Arc::new(self.method.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.raw.finish()),
            Arc::new(self.ip_version.finish()),
            Arc::new(self.protocol.finish()),
            Arc::new(self.src.finish()),
            Arc::new(self.dst.finish()),
            Arc::new(self.sport.finish()),
            Arc::new(self.dport.finish()),
        ];
        RecordBatch::try_new(schema(), cols).expect("columns match the schema")
    }
}

/// Fingerprint every packet of the pass `lp` into `cols` (the shared loop,
/// [`crate::flow::for_each_packet`], asking `stop` between chunks), then give the JA4SSH
/// windows still open; `false` when `stop` ended the pass early.
///
/// # Errors
/// The source's read error; the rows before it are kept in `cols`.
pub fn fingerprint_source<S: crate::PacketSource>(
    lp: &mut crate::source::SourceLoop<S>,
    stop: crate::flow::Stop<'_>,
    fp: &mut super::Fingerprinter,
    cols: &mut FingerprintColumns,
) -> crate::Result<bool> {
    let walk = crate::flow::for_each_packet(lp, stop, |pkt| {
        fp.process(pkt, &mut |e: &Event| cols.push(e));
    })?;
    fp.finish(&mut |e: &Event| cols.push(e));
    Ok(walk == crate::flow::Walk::Done)
}
