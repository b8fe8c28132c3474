//! Streaming flows: a [`FlowTable`] run as a meter over a capture, yielding the expired
//! flows as Arrow batches while it reads, then the flows still live at the end.

use std::path::PathBuf;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use super::{FlowTable, PacketFilter, CHUNK_RECORDS};
use crate::error::{Error, Result};
use crate::pcap::FileReader;
use crate::source::PacketSource;

/// Builds the filter of each file a stream opens.
pub type OwnedFilterFactory =
    Box<dyn Fn(&FileReader) -> Result<Box<dyn PacketFilter + Send>> + Send + Sync>;

/// What one [`FileFlowStream::pull`] found.
#[derive(Debug)]
pub enum Pull {
    /// A batch of expired flows.
    Batch(RecordBatch),
    /// [`CHUNK_RECORDS`] records were read without filling a batch: call again.
    Pending,
    /// The end: every flow has been yielded.
    End,
}

/// The flows of capture files read as one capture, batch by batch as the consumer asks.
pub struct FileFlowStream {
    paths: Vec<PathBuf>,
    next_file: usize,
    filter: OwnedFilterFactory,
    current: Option<(FileReader, Box<dyn PacketFilter + Send>)>,
    table: FlowTable,
    schema: SchemaRef,
    batch_rows: usize,
    /// A truncated last record met on the way, for the caller to warn about.
    warning: Option<Error>,
    finished: bool,
}

impl FileFlowStream {
    /// A stream over `paths` (read in order) metered by `table`, yielding batches of at
    /// most `batch_rows` rows (at least 1). The first file is opened (and its filter
    /// compiled) now, so a bad path or expression fails before any batch.
    ///
    /// # Errors
    /// The first file cannot be opened, or its filter does not compile.
    pub fn new(
        paths: Vec<PathBuf>,
        filter: OwnedFilterFactory,
        table: FlowTable,
        batch_rows: usize,
    ) -> Result<Self> {
        let schema = std::sync::Arc::new(table.schema());
        let mut s = FileFlowStream {
            paths,
            next_file: 0,
            filter,
            current: None,
            table,
            schema,
            batch_rows: batch_rows.max(1),
            warning: None,
            finished: false,
        };
        s.open_next()?;
        Ok(s)
    }

    fn open_next(&mut self) -> Result<bool> {
        let Some(p) = self.paths.get(self.next_file) else {
            return Ok(false);
        };
        self.next_file += 1;
        let reader = FileReader::open(p)?;
        let filter = (self.filter)(&reader)?;
        self.current = Some((reader, filter));
        Ok(true)
    }

    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The meter (for its counters).
    pub fn table(&self) -> &FlowTable {
        &self.table
    }

    /// A truncation met since the last call, if any.
    pub fn take_warning(&mut self) -> Option<Error> {
        self.warning.take()
    }

    /// The next batch, reading at most [`CHUNK_RECORDS`] records before returning
    /// [`Pull::Pending`].
    ///
    /// # Errors
    /// A read error other than a truncated last record, a file that cannot be opened, or
    /// a filter error; the stream then ends.
    pub fn pull(&mut self) -> Result<Pull> {
        if self.table.pending() >= self.batch_rows || self.finished {
            return Ok(self
                .table
                .take_expired(self.batch_rows)
                .map_or(Pull::End, Pull::Batch));
        }
        let result = self.read_chunk();
        if result.is_err() {
            self.finished = true;
            self.current = None;
        }
        result
    }

    fn read_chunk(&mut self) -> Result<Pull> {
        for _ in 0..CHUNK_RECORDS {
            let Some((reader, filter)) = &mut self.current else {
                if !self.open_next()? {
                    self.table.finish();
                    self.finished = true;
                    return Ok(self
                        .table
                        .take_expired(self.batch_rows)
                        .map_or(Pull::End, Pull::Batch));
                }
                continue;
            };
            match reader.next_packet() {
                Ok(Some(pkt)) => {
                    if filter.keep(&pkt)? {
                        self.table.push(&pkt);
                        if self.table.pending() >= self.batch_rows {
                            return Ok(self
                                .table
                                .take_expired(self.batch_rows)
                                .map_or(Pull::Pending, Pull::Batch));
                        }
                    }
                }
                Ok(None) => self.current = None,
                Err(e @ Error::Truncated { .. }) => {
                    self.warning = self.warning.take().or(Some(e));
                    self.current = None;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Pull::Pending)
    }
}

impl Iterator for FileFlowStream {
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
