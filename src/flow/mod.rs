//! The numeric flow projection (columns) and the aggregated flow table.
//!
//! Both read packets through the fast path ([`crate::decode::fastpath`]), allocate nothing
//! per packet, and hand their results to Arrow: [`columns`] builds `project` and
//! `read_batches` batches, [`table`] aggregates flows in a hash map (foldhash) whose memory
//! grows with the number of flows only. They take any [`SourceLoop`] (a file or a device):
//! [`for_each_packet`] is the one loop, and asks a [`Stop`] check between chunks of
//! records (and whenever a device is idle) so that a caller can end it early (Ctrl-C).
//! The `*_files` functions run one file per rayon task where the order does not matter.

pub mod app;
pub mod columns;
pub mod features;
pub mod fingerprints;
pub mod parallel;
pub mod statistical;
pub mod stream;
pub mod table;
pub mod text;

use std::path::PathBuf;

use arrow_array::RecordBatch;
use rayon::prelude::*;

use crate::decode::fastpath::{self, FlowFields};
use crate::error::{Error, Result};
use crate::pcap::FileReader;
use crate::source::{Limits, PacketSource, RawPacket, SourceLoop, Step};

pub use columns::{ProjectionBuilder, RawBatchBuilder};
pub use features::{FeatureGroup, FeatureSpec, PacketView};
pub use table::{Expiration, FlowOptions, FlowStats, FlowTable, FlowTuple};

/// Steps a loop takes (packets, or runs of filtered-out records) between two calls of its
/// [`Stop`] check: the hot loop pays a counter compare per packet, the check runs once per
/// chunk.
pub const CHUNK_RECORDS: u32 = 1 << 16;

/// What a loop asks between chunks of [`CHUNK_RECORDS`] packets, and whenever the source
/// has nothing ready: whether to end early (a Ctrl-C check, a flag another thread sets).
/// Before asking, a loop over a file tells it the bytes read since its last report (for a
/// progress display). Any `Fn() -> bool` is a check that ignores the bytes.
pub trait Check: Sync {
    /// Whether to end the loop now.
    fn stop(&self) -> bool;

    /// `bytes` more of a file were read (the first report of a pass counts from the file's
    /// start, its header included).
    fn read(&self, bytes: u64) {
        let _ = bytes;
    }

    /// `bytes` reported before are to be read again (a pass that starts over): take them
    /// back from the count.
    fn unread(&self, bytes: u64) {
        let _ = bytes;
    }
}

impl<F: Fn() -> bool + Sync> Check for F {
    fn stop(&self) -> bool {
        self()
    }
}

/// The check of one call, shared by its rayon tasks.
pub type Stop<'a> = &'a dyn Check;

/// The [`Stop`] check that never stops.
pub fn never() -> bool {
    false
}

/// How a walk over a source ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Walk {
    /// The pass ended (the file's end, a limit); a truncated last record is left in the
    /// loop ([`SourceLoop::take_truncation`]) for the caller to warn about.
    Done,
    /// The [`Stop`] check asked to end early.
    Stopped,
}

/// Run `f` over every packet of the pass, asking `stop` after every [`CHUNK_RECORDS`]
/// packets and after every pending step whether to end early; a file's bytes read are
/// reported to it before each of those questions and at the end.
///
/// # Errors
/// A source error other than truncation, or a filter error.
#[inline]
pub fn for_each_packet<S: PacketSource>(
    lp: &mut SourceLoop<S>,
    stop: Stop<'_>,
    mut f: impl FnMut(&RawPacket<'_>),
) -> Result<Walk> {
    let mut left = CHUNK_RECORDS;
    let mut reported = 0;
    loop {
        if left == 0 {
            report_read(lp, stop, &mut reported);
            if stop.stop() {
                return Ok(Walk::Stopped);
            }
            left = CHUNK_RECORDS;
        }
        let n = lp.burst(left, &mut f);
        if n > 0 {
            left -= n;
            continue;
        }
        left -= 1;
        match lp.step()? {
            Step::Packet(pkt) => f(&pkt),
            Step::Pending => {
                report_read(lp, stop, &mut reported);
                if stop.stop() {
                    return Ok(Walk::Stopped);
                }
            }
            Step::End => {
                report_read(lp, stop, &mut reported);
                return Ok(Walk::Done);
            }
        }
    }
}

/// Tell `stop` how far past `reported` the pass's file has been read (nothing for a
/// device), and move `reported` there.
fn report_read<S: PacketSource>(lp: &SourceLoop<S>, stop: Stop<'_>, reported: &mut u64) {
    if let Some((at, _)) = lp.source().progress() {
        stop.read(at.saturating_sub(*reported));
        *reported = at;
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
    /// What the pass `lp`, read to its end, noticed.
    pub fn of<S: PacketSource>(lp: &mut SourceLoop<S>) -> Notices {
        Notices {
            truncated: lp.take_truncation(),
            oversized: lp.take_oversized().into_iter().collect(),
        }
    }

    /// Append the notices of later files.
    pub fn extend(&mut self, later: Notices) {
        self.truncated = self.truncated.take().or(later.truncated);
        self.oversized.extend(later.oversized);
    }
}

/// Batches, and what reading them noticed.
pub type Batches = (Vec<RecordBatch>, Notices);

/// Project every packet of the pass into batches of `batch_size` rows; `None` if `stop`
/// ended the walk early.
///
/// # Errors
/// As [`for_each_packet`].
pub fn project_source<S: PacketSource>(
    lp: &mut SourceLoop<S>,
    batch_size: usize,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let mut b = ProjectionBuilder::new(batch_size);
    let mut out = Vec::new();
    let walk = for_each_packet(lp, stop, |p| {
        b.push(p);
        if b.is_full() {
            out.extend(b.finish());
        }
    })?;
    if walk == Walk::Stopped {
        return Ok(None);
    }
    out.extend(b.finish());
    Ok(Some((out, Notices::of(lp))))
}

/// Project every packet of the pass with the id of its flow in `table` (the flow table's
/// `flow_id` for the same options), into batches of `batch_size` rows; `None` if `stop`
/// ended the walk early. Rows of flows the table expires are dropped as it goes.
///
/// # Errors
/// As [`for_each_packet`].
pub fn project_source_with_ids<S: PacketSource>(
    lp: &mut SourceLoop<S>,
    batch_size: usize,
    table: &mut FlowTable,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let mut b = ProjectionBuilder::with_flow_id(batch_size);
    let mut out = Vec::new();
    let walk = for_each_packet(lp, stop, |p| {
        let mut f = FlowFields::default();
        fastpath::parse(p.linktype, p.data, &mut f);
        let id = table.push_fields(p, &f);
        b.push_fields(p, &f, id);
        if b.is_full() {
            out.extend(b.finish());
            table.discard_expired();
        }
    })?;
    if walk == Walk::Stopped {
        return Ok(None);
    }
    out.extend(b.finish());
    table.discard_expired();
    Ok(Some((out, Notices::of(lp))))
}

/// Project files in order with a `flow_id` column: the ids of a flow table with `opts`
/// over the files as one capture. `None` if `stop` ended the walk early.
///
/// # Errors
/// The first file that fails to open or read.
pub fn project_files_with_ids(
    paths: &[PathBuf],
    filter: Option<&str>,
    batch_size: usize,
    opts: FlowOptions,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let mut table = FlowTable::new(opts);
    let mut out = Vec::new();
    let mut notices = Notices::default();
    for p in paths {
        let mut lp = open_file(p, filter)?;
        let rows = usize::try_from(lp.source().file_len() / 16 + 1).unwrap_or(usize::MAX);
        let Some((b, n)) =
            project_source_with_ids(&mut lp, batch_size.min(rows), &mut table, stop)?
        else {
            return Ok(None);
        };
        out.extend(b);
        notices.extend(n);
    }
    Ok(Some((out, notices)))
}

/// Aggregate every packet of the pass into `table`. A live device's pass ends with the
/// table's clock at the wall time, so flows idle by then expire as they would in a
/// [`stream::FlowStream`].
///
/// # Errors
/// As [`for_each_packet`].
pub fn flows_source<S: PacketSource>(
    lp: &mut SourceLoop<S>,
    table: &mut FlowTable,
    stop: Stop<'_>,
) -> Result<Walk> {
    let walk = for_each_packet(lp, stop, |p| {
        table.push(p);
    })?;
    if stream::is_live(lp) {
        table.advance(stream::wall_ns());
    }
    Ok(walk)
}

/// A pass over the file at `path` with `filter` (compiled now: a bad expression fails
/// before any packet is read).
///
/// # Errors
/// The file cannot be opened, or the filter does not compile.
pub fn open_file(path: &PathBuf, filter: Option<&str>) -> Result<SourceLoop<FileReader>> {
    SourceLoop::new(FileReader::open(path)?, filter, Limits::default())
}

/// Project files: one rayon task per file, batches concatenated in file order (equal to
/// the sequential result). Batches hold at most `batch_size` rows, fewer for small files.
/// `None` if `stop` ended the walk early (every task has returned by then).
///
/// # Errors
/// The first file that fails to open or read, in file order.
pub fn project_files(
    paths: &[PathBuf],
    filter: Option<&str>,
    batch_size: usize,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let one = |p: &PathBuf, stop: Stop<'_>| -> Result<Option<Batches>> {
        let mut lp = open_file(p, filter)?;
        // A record takes at least 16 bytes: no batch needs more rows than that allows.
        let rows = usize::try_from(lp.source().file_len() / 16 + 1).unwrap_or(usize::MAX);
        project_source(&mut lp, batch_size.min(rows), stop)
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

/// Aggregate files as one capture. Without timeouts, `max_flows` and features one rayon
/// task per file builds a partial table and the partial tables are merged (equal to the
/// sequential result); otherwise the files are read in order, since a flow's split and
/// its features depend on the packets before it. `None` if `stop` ended the walk early
/// (every task has returned by then).
///
/// # Errors
/// The first file that fails to open or read, in file order.
pub fn flows_files(
    paths: &[PathBuf],
    filter: Option<&str>,
    opts: FlowOptions,
    stop: Stop<'_>,
) -> Result<Option<Table>> {
    let mut notices = Notices::default();
    if opts.ordered() || paths.len() < 2 {
        let mut table = FlowTable::new(opts);
        for p in paths {
            let mut lp = open_file(p, filter)?;
            if flows_source(&mut lp, &mut table, stop)? == Walk::Stopped {
                return Ok(None);
            }
            notices.extend(Notices::of(&mut lp));
        }
        return Ok(Some((table, notices)));
    }
    let parts: Vec<Result<Option<Table>>> = paths
        .par_iter()
        .map(|p| {
            let mut t = FlowTable::new(opts);
            let mut lp = open_file(p, filter)?;
            Ok(match flows_source(&mut lp, &mut t, stop)? {
                Walk::Done => Some((t, Notices::of(&mut lp))),
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

/// What one [`RawBatches::pull`] found.
#[derive(Debug)]
pub enum Pull {
    /// A full batch (or the last one).
    Batch(RecordBatch),
    /// [`CHUNK_RECORDS`] steps were taken without filling a batch, or the source has
    /// nothing ready: call again (after checking for signals).
    Pending,
    /// The end.
    End,
}

/// Raw packets of a pass as Arrow batches, read as the consumer asks (`read_batches`).
pub struct RawBatches<S> {
    lp: SourceLoop<S>,
    builder: RawBatchBuilder,
    /// An error met after some rows: those rows are returned first, then the error.
    pending: Option<Error>,
}

impl<S: PacketSource> RawBatches<S> {
    /// Batches of up to `batch_size` rows from `lp`.
    pub fn new(lp: SourceLoop<S>, batch_size: usize) -> Self {
        RawBatches {
            lp,
            builder: RawBatchBuilder::new(batch_size),
            pending: None,
        }
    }

    /// The next batch, taking at most [`CHUNK_RECORDS`] steps before returning
    /// [`Pull::Pending`]. A truncated last record ends the batches (the rows before it are
    /// returned) and is then raised, as any other read error.
    ///
    /// # Errors
    /// A source error, after the rows read before it.
    pub fn pull(&mut self) -> Result<Pull> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        for _ in 0..CHUNK_RECORDS {
            let step = match self.lp.step() {
                Ok(step) => step,
                Err(e) => return self.fail(e),
            };
            match step {
                Step::Packet(pkt) => {
                    self.builder.push(&pkt);
                    if self.builder.is_full() {
                        return Ok(self.builder.finish().map_or(Pull::Pending, Pull::Batch));
                    }
                }
                Step::Pending => {
                    return Ok(self.builder.finish().map_or(Pull::Pending, Pull::Batch));
                }
                Step::End => {
                    if let Some(e) = self.lp.take_truncation() {
                        return self.fail(e);
                    }
                    return Ok(self.builder.finish().map_or(Pull::End, Pull::Batch));
                }
            }
        }
        Ok(Pull::Pending)
    }

    /// The warning about records read whole although longer than their snaplen, once
    /// (see [`SourceLoop::take_oversized`]).
    pub fn take_oversized(&mut self) -> Option<String> {
        self.lp.take_oversized()
    }

    fn fail(&mut self, e: Error) -> Result<Pull> {
        match self.builder.finish() {
            Some(b) => {
                self.pending = Some(e);
                Ok(Pull::Batch(b))
            }
            None => Err(e),
        }
    }
}

impl<S: PacketSource> Iterator for RawBatches<S> {
    type Item = std::result::Result<RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.pull() {
                Ok(Pull::Batch(b)) => return Some(Ok(b)),
                Ok(Pull::Pending) => {}
                Ok(Pull::End) => return None,
                Err(e) => return Some(Err(arrow_schema::ArrowError::ExternalError(Box::new(e)))),
            }
        }
    }
}

impl<S: PacketSource> arrow_array::RecordBatchReader for RawBatches<S> {
    fn schema(&self) -> arrow_schema::SchemaRef {
        columns::raw_schema()
    }
}

#[cfg(test)]
mod agreement_tests;
#[cfg(test)]
mod fingerprint_tests;
#[cfg(test)]
mod meter_tests;
#[cfg(test)]
mod progress_tests;
#[cfg(test)]
mod quic_hints_tests;
#[cfg(test)]
pub(crate) mod testdata;
#[cfg(test)]
mod tests;
