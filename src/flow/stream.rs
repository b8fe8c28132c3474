//! Streaming flows: a [`FlowTable`] run as a meter over passes of a source (the files of a
//! list in order, or a live device), yielding the expired flows as Arrow batches while it
//! reads, then the flows still live at the end.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{open_file, FlowTable, Notices, Pull, CHUNK_RECORDS};
use crate::error::{Error, Result};
use crate::pcap::FileReader;
use crate::source::{PacketSource, SourceInfo, SourceLoop, Step};
use crate::stats::{Stats, StopReason};

/// Opens the next pass of a stream (the next file of a list); `None` when there is none.
pub type NextPass<S> = Box<dyn FnMut() -> Result<Option<SourceLoop<S>>> + Send>;

/// The wall clock in nanoseconds since the Unix epoch (a live source's packet times).
pub fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Whether a pass reads a live device (whose flows also expire on wall time).
pub fn is_live<S: PacketSource>(lp: &SourceLoop<S>) -> bool {
    matches!(lp.info(), SourceInfo::Device(_))
}

/// The flows of one or more passes read as one capture, batch by batch as the consumer
/// asks.
///
/// A batch is handed over when `batch_rows` rows have expired; on a live device also
/// whenever the device is idle or a chunk of [`CHUNK_RECORDS`] packets has been read, so
/// that a flow that expired reaches the consumer while the capture goes on. On an idle
/// device the wall clock expires idle flows (see [`FlowTable::advance`]).
pub struct FlowStream<S> {
    current: Option<SourceLoop<S>>,
    next_pass: NextPass<S>,
    table: FlowTable,
    schema: SchemaRef,
    batch_rows: usize,
    live: bool,
    /// What the passes read so far noticed (a truncated last record, oversized records),
    /// for the caller to warn about.
    notices: Notices,
    /// The statistics of the pass read last (or being read).
    last_stats: Option<Stats>,
    finished: bool,
}

impl<S: PacketSource> FlowStream<S> {
    /// A stream over `first`, then the passes `next_pass` opens, metered by `table`,
    /// yielding batches of at most `batch_rows` rows (at least 1).
    pub fn new(
        first: SourceLoop<S>,
        next_pass: NextPass<S>,
        table: FlowTable,
        batch_rows: usize,
    ) -> Self {
        FlowStream {
            live: is_live(&first),
            current: Some(first),
            next_pass,
            schema: Arc::new(table.schema()),
            table,
            batch_rows: batch_rows.max(1),
            notices: Notices::default(),
            last_stats: None,
            finished: false,
        }
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The meter (for its counters).
    pub fn table(&self) -> &FlowTable {
        &self.table
    }

    /// The statistics of the pass being read, or of the last one read.
    pub fn stats(&self) -> Option<Stats> {
        self.current
            .as_ref()
            .map(SourceLoop::stats)
            .or_else(|| self.last_stats.clone())
    }

    /// What the passes noticed since the last call (nothing, mostly).
    pub fn take_notices(&mut self) -> Notices {
        std::mem::take(&mut self.notices)
    }

    /// Stop reading (the consumer asked): the flows still live become rows (reason `end`,
    /// or `idle` when the clock has passed their timeout), and the batches go on until
    /// they are all taken.
    pub fn stop(&mut self) {
        if let Some(mut lp) = self.current.take() {
            lp.finish(StopReason::Consumer);
            self.last_stats = Some(lp.stats());
        }
        self.next_pass = Box::new(|| Ok(None));
        self.end();
    }

    fn end(&mut self) {
        if !self.finished {
            if self.live {
                self.table.advance(wall_ns());
            }
            self.table.finish();
            self.finished = true;
        }
    }

    fn take(&mut self) -> Option<RecordBatch> {
        self.table.take_expired(self.batch_rows)
    }

    /// The next batch, taking at most [`CHUNK_RECORDS`] steps before returning
    /// [`Pull::Pending`] (also returned when a device is idle: check for signals, then
    /// call again).
    ///
    /// # Errors
    /// A source error other than a truncated last record, a file that cannot be opened,
    /// or a filter error; the stream then ends.
    pub fn pull(&mut self) -> Result<Pull> {
        if self.table.pending() >= self.batch_rows || self.finished {
            return Ok(self.take().map_or(Pull::End, Pull::Batch));
        }
        let result = self.read_chunk();
        if result.is_err() {
            if let Some(lp) = self.current.take() {
                self.last_stats = Some(lp.stats());
            }
            self.finished = true;
        }
        result
    }

    fn read_chunk(&mut self) -> Result<Pull> {
        for _ in 0..CHUNK_RECORDS {
            let Some(lp) = &mut self.current else {
                match (self.next_pass)()? {
                    Some(lp) => {
                        self.live = is_live(&lp);
                        self.current = Some(lp);
                        continue;
                    }
                    None => {
                        self.end();
                        return Ok(self.take().map_or(Pull::End, Pull::Batch));
                    }
                }
            };
            match lp.step()? {
                Step::Packet(pkt) => {
                    self.table.push(&pkt);
                    if self.table.pending() >= self.batch_rows {
                        return Ok(self.take().map_or(Pull::Pending, Pull::Batch));
                    }
                }
                Step::Pending => {
                    if self.live {
                        self.table.advance(wall_ns());
                    }
                    return Ok(self.handover());
                }
                Step::End => {
                    self.notices.extend(Notices::of(lp));
                    self.last_stats = Some(lp.stats());
                    self.current = None;
                }
            }
        }
        Ok(self.handover())
    }

    /// What a pause in reading hands over: the rows expired so far on a live device.
    fn handover(&mut self) -> Pull {
        if self.live {
            if let Some(b) = self.take() {
                return Pull::Batch(b);
            }
        }
        Pull::Pending
    }
}

/// A stream over capture files read in order as one capture, each with `filter`. The
/// first file is opened (and the filter compiled) now, so a bad path or expression fails
/// before any batch.
///
/// # Errors
/// The first file cannot be opened, or the filter does not compile.
pub fn file_stream(
    paths: Vec<PathBuf>,
    filter: Option<String>,
    table: FlowTable,
    batch_rows: usize,
) -> Result<FlowStream<FileReader>> {
    let mut rest = paths.into_iter();
    let first = rest.next().ok_or_else(|| {
        Error::InvalidArgument("source must name at least one capture file".into())
    })?;
    let first = open_file(&first, filter.as_deref())?;
    let next_pass: NextPass<FileReader> = Box::new(move || {
        rest.next()
            .map(|p| open_file(&p, filter.as_deref()))
            .transpose()
    });
    Ok(FlowStream::new(first, next_pass, table, batch_rows))
}

impl<S: PacketSource> Iterator for FlowStream<S> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.pull() {
                Ok(Pull::Batch(b)) => return Some(Ok(b)),
                Ok(Pull::Pending) => {}
                Ok(Pull::End) => return None,
                Err(e) => return Some(Err(e)),
            }
        }
    }
}
