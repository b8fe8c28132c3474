//! Fingerprint events into Arrow columns: one row per fingerprint.

use std::sync::Arc;

use arrow_array::builder::ArrayBuilder;
use arrow_array::builder::{
    FixedSizeBinaryBuilder, Int64Builder, StringBuilder, UInt16Builder, UInt8Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use std::path::PathBuf;

use super::{Config, Event, Fingerprinter};
use crate::flow::columns::{addr_type, ADDR_LEN};
use crate::flow::{Stop, Walk};
use crate::source::SourceLoop;
use crate::Error;

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
        self.value.append_value(e.value_str());
        if e.raw.is_empty() {
            self.raw.append_null();
        } else {
            self.raw.append_value(e.raw_str());
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
    lp: &mut SourceLoop<S>,
    stop: Stop<'_>,
    fp: &mut Fingerprinter,
    cols: &mut FingerprintColumns,
) -> crate::Result<bool> {
    let walk = process_source(lp, stop, fp, cols)?;
    fp.finish(&mut |e: &Event| cols.push(e));
    Ok(walk == Walk::Done)
}

/// Fingerprint every packet of the pass `lp` into `cols`, leaving the connections open
/// (the next pass continues them; [`Fingerprinter::finish`] ends them).
///
/// # Errors
/// As [`fingerprint_source`].
pub fn process_source<S: crate::PacketSource>(
    lp: &mut SourceLoop<S>,
    stop: Stop<'_>,
    fp: &mut Fingerprinter,
    cols: &mut FingerprintColumns,
) -> crate::Result<Walk> {
    crate::flow::for_each_packet(lp, stop, |pkt| {
        fp.process(pkt, &mut |e: &Event| cols.push(e));
    })
}

/// Fingerprint the files at `paths`, read in order through one state machine, as one
/// batch, with the first truncation warning met; `None` if `stop` ended the walk early.
///
/// # Errors
/// The first file that fails to open or read, or a filter that does not compile.
pub fn fingerprint_files(
    paths: &[PathBuf],
    filter: Option<&str>,
    config: Config,
    stop: Stop<'_>,
) -> crate::Result<Option<(RecordBatch, Option<Error>)>> {
    let mut fp = Fingerprinter::new(config);
    let mut cols = FingerprintColumns::default();
    let mut warn = None;
    for p in paths {
        let mut lp = crate::flow::open_file(p, filter)?;
        if process_source(&mut lp, stop, &mut fp, &mut cols)? == Walk::Stopped {
            return Ok(None);
        }
        warn = warn.or(lp.take_truncation());
    }
    fp.finish(&mut |e: &Event| cols.push(e));
    Ok(Some((cols.finish(), warn)))
}
