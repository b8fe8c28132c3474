//! Capture files: the mmap reader (classic pcap and pcapng), the writer, BPF on buffers.
//!
//! Untrusted bytes enter through one checked path: a cursor ([`RecordCursor`]) walks the
//! records of a `&[u8]`; every read is bounds-checked and every problem is returned as an
//! [`Issue`], so no input can make the reader panic. [`FileReader`] maps a file and adds
//! the path to each issue, turning it into a crate [`Error`](crate::Error).

pub mod bpf;
mod bytes;
pub mod classic;
pub mod guard;
pub mod pcapng;
mod reader;
pub mod split;
pub mod writer;

pub use bpf::{BpfFilter, FileFilter};
pub use bytes::Endian;
pub use guard::GuardedMap;
pub use reader::{FileReader, RecordCursor};
pub use writer::PcapWriter;

use std::path::Path;

use crate::error::Error;

/// The largest caplen a record may declare (256 KiB); larger is treated as corruption.
pub const MAX_CAPLEN: u32 = 256 * 1024;

/// The capture file format, detected from the first four bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileFormat {
    /// Classic libpcap format (microsecond or nanosecond magic, either byte order).
    Pcap,
    /// pcapng.
    PcapNg,
}

/// What went wrong at one place of a capture, before the path is known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    /// Index of the record being read (0-based; 0 for file-header problems).
    pub index: u64,
    /// Byte offset where the record (or header) starts.
    pub offset: u64,
    /// What kind of problem.
    pub kind: IssueKind,
}

/// The two kinds of problem a cursor reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IssueKind {
    /// The bytes are not a valid capture: bad magic, impossible lengths.
    Format(String),
    /// The data ends inside a record: `need` bytes from `offset`, `have` present.
    Truncated {
        /// Bytes the record needs from `offset`.
        need: u64,
        /// Bytes present from `offset`.
        have: u64,
    },
}

impl Issue {
    pub(crate) fn format(index: u64, offset: usize, message: impl Into<String>) -> Issue {
        Issue {
            index,
            offset: offset as u64,
            kind: IssueKind::Format(message.into()),
        }
    }

    pub(crate) fn truncated(index: u64, offset: usize, need: usize, have: usize) -> Issue {
        Issue {
            index,
            offset: offset as u64,
            kind: IssueKind::Truncated {
                need: need as u64,
                have: have as u64,
            },
        }
    }

    /// The crate error for this issue in the file at `path`.
    pub fn into_error(self, path: &Path) -> Error {
        let path = path.to_path_buf();
        match self.kind {
            IssueKind::Format(message) => Error::Format {
                path,
                index: self.index,
                offset: self.offset,
                message,
            },
            IssueKind::Truncated { need, have } => Error::Truncated {
                path,
                index: self.index,
                offset: self.offset,
                need,
                have,
            },
        }
    }
}

/// The first record found longer than the snaplen that governs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OversizedRecord {
    /// Index of the record (pcapng: of the block).
    pub index: u64,
    /// Byte offset where the record starts.
    pub offset: u64,
    /// The record's caplen.
    pub caplen: u32,
    /// The snaplen it exceeds.
    pub snaplen: u32,
    /// The pcapng interface whose snaplen it is (`None`: the classic file header's).
    pub interface: Option<u32>,
}

/// Records longer than their snaplen (the classic file header's, or their pcapng
/// interface's) that a cursor read whole: how many, and the first.
///
/// Real files have them (a capture tool whose snaplen is below the largest frame it
/// writes); libpcap cuts such a record to the snaplen (classic) or stops with an error
/// (pcapng), tshark keeps it whole, as the cursors do unless they are strict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Oversized {
    /// Records read whole although their caplen exceeds the snaplen.
    pub count: u64,
    /// The first of them.
    pub first: Option<OversizedRecord>,
}

impl Oversized {
    #[cold]
    pub(crate) fn note(&mut self, record: OversizedRecord) {
        self.count += 1;
        self.first.get_or_insert(record);
    }

    /// The warning for the file at `path`, once a record was found (`None` before).
    pub fn message(&self, path: &Path) -> Option<String> {
        let r = self.first?;
        let limit = match r.interface {
            None => format!("the file's snaplen {}", r.snaplen),
            Some(i) => format!("the snaplen {} of interface {i}", r.snaplen),
        };
        Some(format!(
            "{}: record {} at byte offset {} has caplen {}, above {limit}; it is read whole, \
             and so is every later such record of the file (libpcap cuts or rejects them)",
            path.display(),
            r.index,
            r.offset,
            r.caplen,
        ))
    }
}

/// Nanoseconds from whole seconds and a sub-second count in `unit_ns` units, saturating.
#[inline]
pub(crate) fn ts_from_parts(sec: u32, frac: u32, unit_ns: u32) -> i64 {
    // sec < 2^32 and frac * unit_ns < 2^42: the sum stays far below i64::MAX.
    sec as i64 * 1_000_000_000 + frac as i64 * unit_ns as i64
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::{Issue, RecordCursor};

    /// One packet as (ts_ns, caplen, wirelen, linktype, data).
    pub type Row = (i64, u32, u32, u32, Vec<u8>);

    /// Every packet of a whole file in `buf`, and the issue that ended the walk, if any.
    pub fn read_all(buf: &[u8]) -> (Vec<Row>, Option<Issue>) {
        let mut c = RecordCursor::new(buf).expect("a valid file header");
        let mut out = Vec::new();
        loop {
            match c.next(buf) {
                Ok(Some(p)) => {
                    out.push((p.ts_ns, p.caplen, p.wirelen, p.linktype, p.data.to_vec()))
                }
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }
}
