//! Capture files: the mmap reader (classic pcap and pcapng), the writer, BPF on buffers.
//!
//! Untrusted bytes enter through one checked path: a cursor ([`RecordCursor`]) walks the
//! records of a `&[u8]`; every read is bounds-checked and every problem is returned as an
//! [`Issue`], so no input can make the reader panic. [`FileReader`] maps a file and adds
//! the path to each issue, turning it into a crate [`Error`](crate::Error).

pub mod bpf;
mod bytes;
pub mod classic;
pub mod pcapng;
mod reader;
pub mod writer;

pub use bpf::{BpfFilter, FileFilter};
pub use bytes::Endian;
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
