//! The numeric flow projection (columns) and the aggregated flow table.
//!
//! Both read packets through the fast path ([`crate::decode::fastpath`]), allocate nothing
//! per packet, and hand their results to Arrow: [`columns`] builds `project` and
//! `read_batches` batches, [`table`] aggregates flows in a hash map (foldhash) whose memory
//! grows with the number of flows only. The functions here run them over capture files,
//! one file per rayon task where the order does not matter, and ask a [`Stop`] check
//! between chunks of records so that a caller can end a long walk early (Ctrl-C).

pub mod app;
pub mod columns;
pub mod features;
pub mod stream;
pub mod table;

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use rayon::prelude::*;

use crate::decode::fastpath::{self, FlowFields};
use crate::error::{Error, Result};
use crate::pcap::FileReader;
use crate::source::{PacketSource, RawPacket};

pub use columns::{ProjectionBuilder, RawBatchBuilder};
pub use features::{FeatureGroup, FeatureSpec, PacketView};
pub use table::{Expiration, FlowKey, FlowOptions, FlowStats, FlowTable};

/// A per-packet predicate (a BPF program, or nothing).
pub trait PacketFilter {
    /// Whether `pkt` passes.
    ///
    /// # Errors
    /// The filter could not be compiled for the packet's link type.
    fn keep(&mut self, pkt: &RawPacket<'_>) -> Result<bool>;
}

/// The filter that keeps everything.
pub struct KeepAll;

impl PacketFilter for KeepAll {
    #[inline]
    fn keep(&mut self, _pkt: &RawPacket<'_>) -> Result<bool> {
        Ok(true)
    }
}

/// Builds one filter per opened file (filters hold per-file state such as the link type).
pub type FilterFactory<'a> = &'a (dyn Fn(&FileReader) -> Result<Box<dyn PacketFilter>> + Sync);

/// Records a loop reads (kept by the filter or not) between two calls of its [`Stop`]
/// check: the hot loop pays a counter compare per record, the check runs once per chunk.
pub const CHUNK_RECORDS: u32 = 1 << 16;

/// Asked between chunks of [`CHUNK_RECORDS`] records whether to end the loop early (a
/// Ctrl-C check, a flag another thread sets). Shared by the rayon tasks of one call.
pub type Stop<'a> = &'a (dyn Fn() -> bool + Sync);

/// The [`Stop`] check that never stops.
pub fn never() -> bool {
    false
}

/// How a walk over a source ended.
#[derive(Debug)]
pub enum Walk {
    /// Every record was read; a truncated last record is carried as `Some(error)`, for the
    /// caller to warn about (the packets before it have been seen).
    Done(Option<Error>),
    /// The [`Stop`] check asked to end early.
    Stopped,
}

/// Run `f` over every packet of `source` that passes `filter`, asking `stop` after every
/// [`CHUNK_RECORDS`] records whether to end early.
///
/// # Errors
/// A read error other than truncation, or a filter error.
#[inline]
pub fn for_each_packet<S: PacketSource + ?Sized>(
    source: &mut S,
    filter: &mut dyn PacketFilter,
    stop: Stop<'_>,
    mut f: impl FnMut(&RawPacket<'_>),
) -> Result<Walk> {
    let mut left = CHUNK_RECORDS;
    loop {
        if left == 0 {
            if stop() {
                return Ok(Walk::Stopped);
            }
            left = CHUNK_RECORDS;
        }
        left -= 1;
        match source.next_packet() {
            Ok(Some(pkt)) => {
                if filter.keep(&pkt)? {
                    f(&pkt);
                }
            }
            Ok(None) => return Ok(Walk::Done(None)),
            Err(e @ Error::Truncated { .. }) => return Ok(Walk::Done(Some(e))),
            Err(e) => return Err(e),
        }
    }
}

/// Batches and a possible truncation warning.
pub type Batches = (Vec<RecordBatch>, Option<Error>);

/// Project every packet of `source` into batches of `batch_size` rows; `None` if `stop`
/// ended the walk early.
///
/// # Errors
/// As [`for_each_packet`].
pub fn project_source<S: PacketSource + ?Sized>(
    source: &mut S,
    filter: &mut dyn PacketFilter,
    batch_size: usize,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let mut b = ProjectionBuilder::new(batch_size);
    let mut out = Vec::new();
    let walk = for_each_packet(source, filter, stop, |p| {
        b.push(p);
        if b.is_full() {
            out.extend(b.finish());
        }
    })?;
    let Walk::Done(warn) = walk else {
        return Ok(None);
    };
    out.extend(b.finish());
    Ok(Some((out, warn)))
}

/// Project every packet of `source` with the id of its flow in `table` (the flow table's
/// `flow_id` for the same options), into batches of `batch_size` rows; `None` if `stop`
/// ended the walk early. Rows of flows the table expires are dropped as it goes.
///
/// # Errors
/// As [`for_each_packet`].
pub fn project_source_with_ids<S: PacketSource + ?Sized>(
    source: &mut S,
    filter: &mut dyn PacketFilter,
    batch_size: usize,
    table: &mut FlowTable,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let mut b = ProjectionBuilder::with_flow_id(batch_size);
    let mut out = Vec::new();
    let walk = for_each_packet(source, filter, stop, |p| {
        let mut f = FlowFields::default();
        fastpath::parse(p.linktype, p.data, &mut f);
        let id = table.push_fields(p, &f);
        b.push_fields(p, &f, id);
        if b.is_full() {
            out.extend(b.finish());
            table.discard_expired();
        }
    })?;
    let Walk::Done(warn) = walk else {
        return Ok(None);
    };
    out.extend(b.finish());
    table.discard_expired();
    Ok(Some((out, warn)))
}

/// Project files in order with a `flow_id` column: the ids of a flow table with `opts`
/// over the files as one capture. `None` if `stop` ended the walk early.
///
/// # Errors
/// The first file that fails to open or read.
pub fn project_files_with_ids(
    paths: &[PathBuf],
    filter: FilterFactory<'_>,
    batch_size: usize,
    opts: FlowOptions,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let mut table = FlowTable::new(opts);
    let mut out = Vec::new();
    let mut warn = None;
    for p in paths {
        let (mut r, mut f) = open(p, filter)?;
        let rows = usize::try_from(r.file_len() / 16 + 1).unwrap_or(usize::MAX);
        let size = batch_size.min(rows);
        let Some((b, w)) = project_source_with_ids(&mut r, &mut *f, size, &mut table, stop)? else {
            return Ok(None);
        };
        out.extend(b);
        warn = warn.or(w);
    }
    Ok(Some((out, warn)))
}

/// Aggregate every packet of `source` into `table`.
///
/// # Errors
/// As [`for_each_packet`].
pub fn flows_source<S: PacketSource + ?Sized>(
    source: &mut S,
    filter: &mut dyn PacketFilter,
    table: &mut FlowTable,
    stop: Stop<'_>,
) -> Result<Walk> {
    for_each_packet(source, filter, stop, |p| {
        table.push(p);
    })
}

/// Open `path` and build its filter.
fn open(path: &Path, filter: FilterFactory<'_>) -> Result<(FileReader, Box<dyn PacketFilter>)> {
    let reader = FileReader::open(path)?;
    let filter = filter(&reader)?;
    Ok((reader, filter))
}

/// Project files: one rayon task per file, batches concatenated in file order (equal to
/// the sequential result). Batches hold at most `batch_size` rows, fewer for small files.
/// `None` if `stop` ended the walk early (every task has returned by then).
///
/// # Errors
/// The first file that fails to open or read, in file order.
pub fn project_files(
    paths: &[PathBuf],
    filter: FilterFactory<'_>,
    batch_size: usize,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let one = |p: &PathBuf, stop: Stop<'_>| -> Result<Option<Batches>> {
        let (mut r, mut f) = open(p, filter)?;
        // A record takes at least 16 bytes: no batch needs more rows than that allows.
        let rows = usize::try_from(r.file_len() / 16 + 1).unwrap_or(usize::MAX);
        project_source(&mut r, &mut *f, batch_size.min(rows), stop)
    };
    if let [p] = paths {
        return one(p, stop);
    }
    let parts: Vec<Result<Option<Batches>>> = paths.par_iter().map(|p| one(p, stop)).collect();
    let mut out = Vec::new();
    let mut warn = None;
    for part in parts {
        let Some((b, w)) = part? else { return Ok(None) };
        out.extend(b);
        warn = warn.or(w);
    }
    Ok(Some((out, warn)))
}

/// A flow table and a possible truncation warning.
pub type Table = (FlowTable, Option<Error>);

/// Aggregate files as one capture. Without timeouts, `max_flows` and features one rayon
/// task per file builds a partial table and the partial tables are merged (equal to the
/// sequential result); otherwise the files are read in order, since a flow's split and
/// its features depend on the packets before it. `None` if `stop` ended the walk early (every task has returned by then).
///
/// # Errors
/// The first file that fails to open or read, in file order.
pub fn flows_files(
    paths: &[PathBuf],
    filter: FilterFactory<'_>,
    opts: FlowOptions,
    stop: Stop<'_>,
) -> Result<Option<Table>> {
    let mut warn = None;
    if opts.ordered() || paths.len() < 2 {
        let mut table = FlowTable::new(opts);
        for p in paths {
            let (mut r, mut f) = open(p, filter)?;
            match flows_source(&mut r, &mut *f, &mut table, stop)? {
                Walk::Done(w) => warn = warn.or(w),
                Walk::Stopped => return Ok(None),
            }
        }
        return Ok(Some((table, warn)));
    }
    let parts: Vec<Result<Option<Table>>> = paths
        .par_iter()
        .map(|p| {
            let mut t = FlowTable::new(opts);
            let (mut r, mut f) = open(p, filter)?;
            Ok(match flows_source(&mut r, &mut *f, &mut t, stop)? {
                Walk::Done(w) => Some((t, w)),
                Walk::Stopped => None,
            })
        })
        .collect();
    let mut table = FlowTable::new(opts);
    for part in parts {
        let Some((t, w)) = part? else { return Ok(None) };
        table.merge(t);
        warn = warn.or(w);
    }
    Ok(Some((table, warn)))
}

#[cfg(test)]
mod agreement_tests;
#[cfg(test)]
pub(crate) mod testdata;
#[cfg(test)]
mod meter_tests;
#[cfg(test)]
mod tests;
