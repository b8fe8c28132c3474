//! The numeric flow projection (columns) and the aggregated flow table.
//!
//! Both read packets through the fast path ([`crate::decode::fastpath`]), allocate nothing
//! per packet, and hand their results to Arrow: [`columns`] builds `project` and
//! `read_batches` batches, [`table`] aggregates flows in a hash map (foldhash) whose memory
//! grows with the number of flows only. The functions here run them over capture files,
//! one file per rayon task where the order does not matter.

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

/// Run `f` over every packet of `source` that passes `filter`.
///
/// A truncated last record ends the walk early: the packets before it have been seen and
/// the truncation error is returned as `Ok(Some(..))`, for the caller to warn about.
///
/// # Errors
/// A read error other than truncation, or a filter error.
pub fn for_each_packet<S: PacketSource + ?Sized>(
    source: &mut S,
    filter: &mut dyn PacketFilter,
    mut f: impl FnMut(&RawPacket<'_>),
) -> Result<Option<Error>> {
    loop {
        match source.next_packet() {
            Ok(Some(pkt)) => {
                if filter.keep(&pkt)? {
                    f(&pkt);
                }
            }
            Ok(None) => return Ok(None),
            Err(e @ Error::Truncated { .. }) => return Ok(Some(e)),
            Err(e) => return Err(e),
        }
    }
}

/// Batches and a possible truncation warning.
pub type Batches = (Vec<RecordBatch>, Option<Error>);

/// Project every packet of `source` into batches of `batch_size` rows.
///
/// # Errors
/// As [`for_each_packet`].
pub fn project_source<S: PacketSource + ?Sized>(source: &mut S, filter: &mut dyn PacketFilter, batch_size: usize) -> Result<Batches> {
    let mut b = ProjectionBuilder::new(batch_size);
    let mut out = Vec::new();
    let warn = for_each_packet(source, filter, |p| {
        b.push(p);
        if b.is_full() {
            out.extend(b.finish());
        }
    })?;
    out.extend(b.finish());
    Ok((out, warn))
}

/// Aggregate every packet of `source` into `table`.
///
/// # Errors
/// As [`for_each_packet`].
pub fn flows_source<S: PacketSource + ?Sized>(source: &mut S, filter: &mut dyn PacketFilter, table: &mut FlowTable) -> Result<Option<Error>> {
    for_each_packet(source, filter, |p| table.push(p))
}

/// Open `path` and build its filter.
fn open(path: &Path, filter: FilterFactory<'_>) -> Result<(FileReader, Box<dyn PacketFilter>)> {
    let reader = FileReader::open(path)?;
    let filter = filter(&reader)?;
    Ok((reader, filter))
}

/// Project files: one rayon task per file, batches concatenated in file order (equal to
/// the sequential result). Batches hold at most `batch_size` rows, fewer for small files.
///
/// # Errors
/// The first file that fails to open or read, in file order.
pub fn project_files(paths: &[PathBuf], filter: FilterFactory<'_>, batch_size: usize) -> Result<Batches> {
    let one = |p: &PathBuf| -> Result<Batches> {
        let (mut r, mut f) = open(p, filter)?;
        // A record takes at least 16 bytes: no batch needs more rows than that allows.
        let rows = usize::try_from(r.file_len() / 16 + 1).unwrap_or(usize::MAX);
        project_source(&mut r, &mut *f, batch_size.min(rows))
    };
    if let [p] = paths {
        return one(p);
    }
    let parts: Vec<Result<Batches>> = paths.par_iter().map(one).collect();
    let mut out = Vec::new();
    let mut warn = None;
    for part in parts {
        let (b, w) = part?;
        out.extend(b);
        warn = warn.or(w);
    }
    Ok((out, warn))
}

/// Aggregate files as one capture. Without timeouts one rayon task per file builds a
/// partial table and the partial tables are merged (equal to the sequential result);
/// with timeouts the files are read in order, since a flow's split depends on the packets
/// before it.
///
/// # Errors
/// The first file that fails to open or read, in file order.
pub fn flows_files(paths: &[PathBuf], filter: FilterFactory<'_>, opts: FlowOptions) -> Result<(FlowTable, Option<Error>)> {
    let mut warn = None;
    if opts.idle_timeout_ns.is_some() || opts.active_timeout_ns.is_some() || paths.len() < 2 {
        let mut table = FlowTable::new(opts);
        for p in paths {
            let (mut r, mut f) = open(p, filter)?;
            let w = flows_source(&mut r, &mut *f, &mut table)?;
            warn = warn.or(w);
        }
        return Ok((table, warn));
    }
    let parts: Vec<Result<(FlowTable, Option<Error>)>> = paths
        .par_iter()
        .map(|p| {
            let mut t = FlowTable::new(opts);
            let (mut r, mut f) = open(p, filter)?;
            let w = flows_source(&mut r, &mut *f, &mut t)?;
            Ok((t, w))
        })
        .collect();
    let mut table = FlowTable::new(opts);
    for part in parts {
        let (t, w) = part?;
        table.merge(t);
        warn = warn.or(w);
    }
    Ok((table, warn))
}

#[cfg(test)]
mod agreement_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testdata;
