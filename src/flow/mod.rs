//! The numeric flow projection (columns) and the aggregated flow table.
//!
//! Both read packets through the fast path ([`crate::decode::fastpath`]), allocate nothing
//! per packet, and hand their results to Arrow: [`columns`] builds `project` and
//! `read_batches` batches, [`table`] aggregates flows in a hash map (foldhash) whose memory
//! grows with the number of flows only. The functions here run them over capture files,
//! one file per rayon task where the order does not matter, and ask a [`Stop`] check
//! between chunks of records so that a caller can end a long walk early (Ctrl-C).

pub mod columns;
pub mod table;

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::pcap::FileReader;
use crate::source::{PacketSource, RawPacket};

pub use columns::{ProjectionBuilder, RawBatchBuilder};
pub use table::{FlowKey, FlowOptions, FlowStats, FlowTable};

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

/// What a walk over files noticed without failing, for the caller to warn about.
#[derive(Debug, Default)]
pub struct Notices {
    /// The first truncated last record, in file order (the packets before it were used).
    pub truncated: Option<Error>,
    /// For each file with records longer than their snaplen (read whole), in file order,
    /// the message naming the first of them.
    pub oversized: Vec<String>,
}

impl Notices {
    /// Add what reading `reader` to the end (or to `truncated`) noticed.
    fn add(&mut self, reader: &FileReader, truncated: Option<Error>) {
        self.truncated = self.truncated.take().or(truncated);
        self.oversized
            .extend(reader.oversized().message(reader.path()));
    }

    /// Append the notices of later files.
    fn extend(&mut self, later: Notices) {
        self.truncated = self.truncated.take().or(later.truncated);
        self.oversized.extend(later.oversized);
    }
}

/// Batches, and what reading them noticed.
pub type Batches = (Vec<RecordBatch>, Notices);

/// Project every packet of `source` into batches of `batch_size` rows, with the truncated
/// last record if there was one; `None` if `stop` ended the walk early.
///
/// # Errors
/// As [`for_each_packet`].
pub fn project_source<S: PacketSource + ?Sized>(
    source: &mut S,
    filter: &mut dyn PacketFilter,
    batch_size: usize,
    stop: Stop<'_>,
) -> Result<Option<(Vec<RecordBatch>, Option<Error>)>> {
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
    for_each_packet(source, filter, stop, |p| table.push(p))
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
        let Some((batches, truncated)) =
            project_source(&mut r, &mut *f, batch_size.min(rows), stop)?
        else {
            return Ok(None);
        };
        let mut notices = Notices::default();
        notices.add(&r, truncated);
        Ok(Some((batches, notices)))
    };
    if let [p] = paths {
        return one(p, stop);
    }
    let parts: Vec<Result<Option<Batches>>> = paths.par_iter().map(|p| one(p, stop)).collect();
    let mut out = Vec::new();
    let mut notices = Notices::default();
    for part in parts {
        let Some((b, n)) = part? else { return Ok(None) };
        out.extend(b);
        notices.extend(n);
    }
    Ok(Some((out, notices)))
}

/// A flow table, and what reading it noticed.
pub type Table = (FlowTable, Notices);

/// Aggregate files as one capture. Without timeouts one rayon task per file builds a
/// partial table and the partial tables are merged (equal to the sequential result);
/// with timeouts the files are read in order, since a flow's split depends on the packets
/// before it. `None` if `stop` ended the walk early (every task has returned by then).
///
/// # Errors
/// The first file that fails to open or read, in file order.
pub fn flows_files(
    paths: &[PathBuf],
    filter: FilterFactory<'_>,
    opts: FlowOptions,
    stop: Stop<'_>,
) -> Result<Option<Table>> {
    let mut notices = Notices::default();
    if opts.idle_timeout_ns.is_some() || opts.active_timeout_ns.is_some() || paths.len() < 2 {
        let mut table = FlowTable::new(opts);
        for p in paths {
            let (mut r, mut f) = open(p, filter)?;
            match flows_source(&mut r, &mut *f, &mut table, stop)? {
                Walk::Done(w) => notices.add(&r, w),
                Walk::Stopped => return Ok(None),
            }
        }
        return Ok(Some((table, notices)));
    }
    let parts: Vec<Result<Option<Table>>> = paths
        .par_iter()
        .map(|p| {
            let mut t = FlowTable::new(opts);
            let (mut r, mut f) = open(p, filter)?;
            Ok(match flows_source(&mut r, &mut *f, &mut t, stop)? {
                Walk::Done(w) => {
                    let mut n = Notices::default();
                    n.add(&r, w);
                    Some((t, n))
                }
                Walk::Stopped => None,
            })
        })
        .collect();
    let mut table = FlowTable::new(opts);
    for part in parts {
        let Some((t, n)) = part? else { return Ok(None) };
        table.merge(t);
        notices.extend(n);
    }
    Ok(Some((table, notices)))
}

#[cfg(test)]
mod agreement_tests;
#[cfg(test)]
pub(crate) mod testdata;
#[cfg(test)]
mod tests;
