//! One capture file read by several threads: a classic pcap file is split into parts at
//! record boundaries ([`crate::pcap::split`]), each part runs the ordinary loop (the
//! projection, the flow table) on a thread of its own, and the parts are joined in file
//! order.
//!
//! The joined result is the single-threaded one. A part's boundary is only a candidate
//! (payload bytes can imitate record headers); the reader of the part before it proves it
//! by ending exactly on it, and the first part starts after the file header: so, part by
//! part, every boundary is shown to be a record start. When one is not (the reader passed
//! it inside a record), the file is read again on one thread. Record indices in errors and
//! warnings are those of the whole file (each part's count is added to the parts after it).
//!
//! What is split: a classic pcap file of at least two [`MIN_PART`](crate::pcap::split::MIN_PART)
//! parts; a flow table only without timeouts, `max_flows` and feature groups (its rows then
//! do not depend on the packets' order across the file, so part tables merge exactly). The
//! rest runs on one thread.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::UInt64Type;
use arrow_array::{RecordBatch, UInt64Array};

use super::{
    flows_files, flows_source, project_files, project_files_with_ids, project_source,
    project_source_with_ids, Batches, Check, FlowOptions, FlowTable, Notices, Stop, Table, Walk,
};
use crate::decode::link::LINKTYPE_ETHERNET;
use crate::error::{Error, Result};
use crate::pcap::classic::FileHeader;
use crate::pcap::split::{ranges, MIN_PART};
use crate::pcap::{FileFilter, FileFormat, FileReader, GuardedMap, Oversized};
use crate::source::{Fetch, Limits, PacketSource, RawPacket, SourceInfo, SourceLoop, SCAN_BUDGET};

/// The threads `threads` asks for: `None` is every core this process may use.
pub fn resolve_threads(threads: Option<usize>) -> usize {
    threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The records of one part of a classic file, `[start, end)`, as a [`PacketSource`]: the
/// file's reader moved to `start`, ending before the first record at or past `end`.
pub struct Part {
    reader: FileReader,
    /// The map the reader reads, for the packets a filter keeps.
    map: Arc<GuardedMap>,
    /// Where the progress of this part counts from (0 for the first, whose file header
    /// is read too).
    base: u64,
    end: u64,
    filter: Option<FileFilter>,
}

impl Part {
    /// The part `[start, end)` of the classic file at `path`.
    ///
    /// # Errors
    /// The file cannot be opened, or is not a classic pcap file.
    pub fn open(path: &Path, start: usize, end: usize) -> Result<Part> {
        let mut reader = FileReader::open(path)?;
        reader.seek(start)?;
        let map = Arc::clone(reader.shared_map());
        let base = if start == crate::pcap::classic::FILE_HEADER_LEN {
            0
        } else {
            start as u64
        };
        Ok(Part {
            reader,
            map,
            base,
            end: end as u64,
            filter: None,
        })
    }

    /// Whether the reader stopped exactly at the part's end (a record boundary).
    pub fn ends_on_boundary(&self) -> bool {
        self.reader.position() == self.end
    }

    /// Records read from the part's start.
    pub fn records(&self) -> u64 {
        self.reader.records()
    }

    /// The records of the part longer than their snaplen.
    pub fn oversized(&self) -> Oversized {
        *self.reader.oversized()
    }

    #[inline(never)]
    fn fetch_filtered(&mut self) -> Result<Fetch<'_>> {
        let mut rejected = 0u32;
        loop {
            if self.reader.position() >= self.end {
                return Ok(Fetch::End);
            }
            let Some(p) = self.reader.next_packet()? else {
                return Ok(Fetch::End);
            };
            let Some(f) = self.filter.as_mut() else {
                return Ok(Fetch::End);
            };
            let keep = f.matches(&p).inspect_err(|_| self.end = 0)?;
            if keep {
                // The packet again, borrowed from the map rather than the reader.
                let at = (p.data.as_ptr() as usize).wrapping_sub(self.map.as_ptr() as usize);
                let kept = RawPacket {
                    data: &self.map[at..at + p.data.len()],
                    ..p
                };
                return Ok(Fetch::Packet(kept));
            }
            rejected += 1;
            if rejected >= SCAN_BUDGET {
                return Ok(Fetch::Idle);
            }
        }
    }
}

impl PacketSource for Part {
    #[inline(always)]
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        if self.filter.is_some() {
            return self.fetch_filtered();
        }
        if self.reader.position() >= self.end {
            return Ok(Fetch::End);
        }
        Ok(self.reader.next_packet()?.map_or(Fetch::End, Fetch::Packet))
    }

    /// The reader's bursts, over the records that end within the part: a record that runs
    /// past the end is left to `fetch`, which reads every record that starts before it.
    #[inline(always)]
    fn burst<F: FnMut(&RawPacket<'_>)>(&mut self, max: u32, f: &mut F) -> (u32, u64) {
        if self.filter.is_some() {
            return (0, 0);
        }
        let end = usize::try_from(self.end).unwrap_or(usize::MAX);
        self.reader.burst_before(max, end, f)
    }

    fn info(&self) -> SourceInfo {
        self.reader.info()
    }

    fn linktype(&self) -> Option<u32> {
        self.reader.linktype()
    }

    fn snaplen(&self) -> u32 {
        self.reader.snaplen()
    }

    fn progress(&self) -> Option<(u64, u64)> {
        Some((
            self.reader.position().min(self.end) - self.base,
            self.reader.file_len(),
        ))
    }

    fn set_strict(&mut self, strict: bool) {
        self.reader.set_strict(strict);
    }

    fn oversized(&self) -> Option<&Oversized> {
        Some(self.reader.oversized())
    }

    fn install_filter(&mut self, expr: &str) -> Result<()> {
        let first = self.reader.linktype().unwrap_or(LINKTYPE_ETHERNET);
        self.filter = Some(FileFilter::new(expr, first, self.reader.snaplen().max(1))?);
        Ok(())
    }
}

/// The parts `threads` threads read the file at `path` in; `None` when it is read whole
/// on one thread (one thread asked, a pcapng file, a file too small for two parts).
///
/// # Errors
/// The file cannot be opened.
pub fn split_file(path: &Path, threads: usize) -> Result<Option<Vec<(usize, usize)>>> {
    if threads < 2 {
        return Ok(None);
    }
    let reader = FileReader::open(path)?;
    if reader.format() != FileFormat::Pcap {
        return Ok(None);
    }
    let map = reader.shared_map();
    let header = FileHeader::parse(map).map_err(|i| i.into_error(path))?;
    let parts = ranges(map, &header, threads, MIN_PART);
    Ok((parts.len() > 1).then_some(parts))
}

/// What the parts of a file gave, joined in order.
pub enum Joined<T> {
    /// Each part's result, and what the parts noticed (indices of the whole file).
    Parts(Vec<T>, Notices),
    /// The [`Stop`] check ended a part early.
    Stopped,
    /// A boundary was not a record start: the file is to be read on one thread. The parts
    /// reported `reported` bytes to the check.
    Misaligned { reported: u64 },
}

/// The check of a part's loop: `inner`'s, counting the bytes the parts report to it (for
/// a rerun on one thread to take them back).
struct Reported<'a> {
    inner: Stop<'a>,
    bytes: AtomicU64,
}

impl Check for Reported<'_> {
    fn stop(&self) -> bool {
        self.inner.stop()
    }

    fn read(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.inner.read(bytes);
    }

    fn unread(&self, bytes: u64) {
        let _ = self
            .bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(bytes))
            });
        self.inner.unread(bytes);
    }
}

/// Add `base` to the record index of a file error.
fn shift(e: Error, base: u64) -> Error {
    match e {
        Error::Format {
            path,
            index,
            offset,
            message,
        } => Error::Format {
            path,
            index: index + base,
            offset,
            message,
        },
        Error::Truncated {
            path,
            index,
            offset,
            need,
            have,
        } => Error::Truncated {
            path,
            index: index + base,
            offset,
            need,
            have,
        },
        other => other,
    }
}

/// What one part's thread hands back: the work's result and the part's loop.
type PartRun<T> = (Result<Option<(T, Notices)>>, SourceLoop<Part>);

/// The error for a part's thread that panicked.
fn panicked(path: &Path, panic: &(dyn std::any::Any + Send)) -> Error {
    let what = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string());
    Error::Io {
        path: path.to_path_buf(),
        source: Arc::new(std::io::Error::other(format!(
            "a thread reading part of the file failed: {what}"
        ))),
    }
}

/// Run `work` over each part of the file at `path` on a thread of its own (one
/// `SourceLoop` a part, with `filter`), and join the results in file order. `work` hands
/// back what it made and what the part's loop noticed ([`Notices::of`]).
///
/// Each part's record indices count from its start: its records' count is added to the
/// indices of the parts after it (errors, the truncated last record, the first record
/// longer than its snaplen).
///
/// # Errors
/// The first part (in file order) that fails to open or read, with the file's record
/// index; a part's thread that panicked.
pub fn run_parts<T: Send>(
    path: &Path,
    filter: Option<&str>,
    parts: &[(usize, usize)],
    stop: Stop<'_>,
    work: impl Fn(&mut SourceLoop<Part>, Stop<'_>) -> Result<Option<(T, Notices)>> + Sync,
) -> Result<Joined<T>> {
    let work = &work;
    let reported = Reported {
        inner: stop,
        bytes: AtomicU64::new(0),
    };
    let stop: Stop<'_> = &reported;
    let runs: Vec<Result<PartRun<T>>> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter()
            .map(|&(start, end)| {
                s.spawn(move || -> Result<PartRun<T>> {
                    let part = Part::open(path, start, end)?;
                    let mut lp = SourceLoop::new(part, filter, Limits::default())?;
                    let out = work(&mut lp, stop);
                    Ok((out, lp))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| Err(panicked(path, p.as_ref()))))
            .collect()
    });
    let mut out = Vec::with_capacity(runs.len());
    let mut notices = Notices::default();
    let mut oversized = Oversized::default();
    let mut base = 0u64;
    let last = runs.len().saturating_sub(1);
    for (i, run) in runs.into_iter().enumerate() {
        let (result, lp) = run.map_err(|e| shift(e, base))?;
        let Some((value, part_notices)) = result.map_err(|e| shift(e, base))? else {
            return Ok(Joined::Stopped);
        };
        if i < last && !lp.source().ends_on_boundary() {
            return Ok(Joined::Misaligned {
                reported: reported.bytes.load(Ordering::Relaxed),
            });
        }
        let part_oversized = lp.source().oversized();
        if let Some(first) = part_oversized.first {
            oversized.count += part_oversized.count;
            if oversized.first.is_none() {
                oversized.first = Some(crate::pcap::OversizedRecord {
                    index: first.index + base,
                    ..first
                });
            }
        }
        notices.truncated = notices
            .truncated
            .take()
            .or(part_notices.truncated.map(|e| shift(e, base)));
        base += lp.source().records();
        out.push(value);
    }
    notices.oversized.extend(oversized.message(path));
    Ok(Joined::Parts(out, notices))
}

/// The rows of a batch of the part `lp` reads: `batch_size`, or fewer when the part
/// cannot hold that many records (a record takes at least 16 bytes).
fn part_rows(lp: &SourceLoop<Part>, batch_size: usize) -> usize {
    let (start, end) = (lp.source().base, lp.source().end);
    batch_size.min(usize::try_from((end - start) / 16 + 1).unwrap_or(usize::MAX))
}

/// The result of one file read in parts by `threads` threads: `work` over each part,
/// `join` of the parts' results in file order; `one` (the single-threaded call) when the
/// file is not split or a boundary was not a record start.
fn in_parts<T: Send, R>(
    path: &Path,
    filter: Option<&str>,
    threads: usize,
    stop: Stop<'_>,
    one: impl FnOnce() -> Result<Option<R>>,
    work: impl Fn(&mut SourceLoop<Part>, Stop<'_>) -> Result<Option<(T, Notices)>> + Sync,
    join: impl FnOnce(Vec<T>, Notices) -> R,
) -> Result<Option<R>> {
    let Some(parts) = split_file(path, threads)? else {
        return one();
    };
    match run_parts(path, filter, &parts, stop, work)? {
        Joined::Parts(values, notices) => Ok(Some(join(values, notices))),
        Joined::Stopped => Ok(None),
        Joined::Misaligned { reported } => {
            // The file is read again from its start: its progress too.
            stop.unread(reported);
            one()
        }
    }
}

/// [`flows_files`] of one file with `threads` threads (see the module: tables with
/// timeouts, `max_flows` or features, pcapng and small files are read on one thread).
/// `None` if `stop` ended the walk early.
///
/// # Errors
/// As [`flows_files`].
pub fn flows_file(
    path: &PathBuf,
    filter: Option<&str>,
    opts: FlowOptions,
    threads: usize,
    stop: Stop<'_>,
) -> Result<Option<Table>> {
    let one = || flows_files(std::slice::from_ref(path), filter, opts, stop);
    if opts.ordered() {
        return one();
    }
    let work = |lp: &mut SourceLoop<Part>, stop: Stop<'_>| {
        let mut t = FlowTable::new(opts);
        Ok(match flows_source(lp, &mut t, stop)? {
            Walk::Done => Some((t, Notices::of(lp))),
            Walk::Stopped => None,
        })
    };
    in_parts(path, filter, threads, stop, one, work, |tables, notices| {
        let mut table = FlowTable::new(opts);
        for t in tables {
            table.merge(t);
        }
        (table, notices)
    })
}

/// [`project_files`] of one file with `threads` threads: the parts' batches in file
/// order, the rows those of one thread (a part's last batch may hold fewer than
/// `batch_size` rows). `None` if `stop` ended the walk early.
///
/// # Errors
/// As [`project_files`].
pub fn project_file(
    path: &PathBuf,
    filter: Option<&str>,
    batch_size: usize,
    threads: usize,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let one = || project_files(std::slice::from_ref(path), filter, batch_size, stop);
    let work = |lp: &mut SourceLoop<Part>, stop: Stop<'_>| {
        let rows = part_rows(lp, batch_size);
        project_source(lp, rows, stop)
    };
    in_parts(path, filter, threads, stop, one, work, |parts, notices| {
        (parts.into_iter().flatten().collect(), notices)
    })
}

/// [`project_files_with_ids`] of one file with `threads` threads, for options whose table
/// is split (no timeouts, no `max_flows`). Each part projects with a table of its own;
/// the tables are merged in file order, which gives each part's flows their ids in the
/// single-threaded table, and each part's `flow_id` column is renumbered with them.
/// `None` if `stop` ended the walk early.
///
/// # Errors
/// As [`project_files_with_ids`].
pub fn project_file_with_ids(
    path: &PathBuf,
    filter: Option<&str>,
    batch_size: usize,
    opts: FlowOptions,
    threads: usize,
    stop: Stop<'_>,
) -> Result<Option<Batches>> {
    let paths = std::slice::from_ref(path);
    let one = || project_files_with_ids(paths, filter, batch_size, opts, stop);
    if opts.ordered() {
        return one();
    }
    let work = |lp: &mut SourceLoop<Part>, stop: Stop<'_>| {
        let rows = part_rows(lp, batch_size);
        let mut t = FlowTable::new(opts);
        let out = project_source_with_ids(lp, rows, &mut t, stop)?;
        Ok(out.map(|(b, n)| ((b, t), n)))
    };
    in_parts(path, filter, threads, stop, one, work, |parts, notices| {
        let mut table = FlowTable::new(opts);
        let mut out = Vec::new();
        for (batches, t) in parts {
            let ids = table.merge_ids(t);
            out.extend(batches.into_iter().map(|b| renumber(b, &ids)));
        }
        (out, notices)
    })
}

/// `batch` with its `flow_id` column mapped through `ids` (a part's id to the file's).
fn renumber(batch: RecordBatch, ids: &[u64]) -> RecordBatch {
    let Ok(i) = batch.schema().index_of("flow_id") else {
        return batch;
    };
    let mut columns = batch.columns().to_vec();
    let mapped: UInt64Array = columns[i].as_primitive::<UInt64Type>().unary(|id| {
        usize::try_from(id)
            .ok()
            .and_then(|x| ids.get(x))
            .copied()
            .unwrap_or(id)
    });
    columns[i] = Arc::new(mapped);
    RecordBatch::try_new(batch.schema(), columns).expect("the same schema and lengths")
}

#[cfg(test)]
#[path = "parallel_tests.rs"]
mod tests;
