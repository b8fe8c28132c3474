//! The file reader: an mmap and a cursor over its records.
//!
//! Minimal classic-pcap reader: little-endian microsecond files only.
//! To be extended to both byte orders, nanosecond files and pcapng.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{Error, Result};
use crate::source::{PacketSource, RawPacket};

const FILE_HEADER_LEN: usize = 24;
const RECORD_HEADER_LEN: usize = 16;

/// A capture file mapped into memory, read record by record without copying.
pub struct FileReader {
    path: PathBuf,
    map: Mmap,
    offset: usize,
    index: u64,
    linktype: u32,
}

impl FileReader {
    /// Open and check the file header.
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::PermissionDenied`], [`Error::Io`], or
    /// [`Error::Format`] for an empty file or an unknown magic number.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| Error::from_io(&path, e))?;
        // SAFETY: the map is read-only; a file truncated by another process while mapped
        // raises SIGBUS, the documented limit of every mmap reader.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::from_io(&path, e))?;
        let fmt = |message: &str| Error::Format {
            path: path.clone(),
            index: 0,
            offset: 0,
            message: message.to_string(),
        };
        if map.len() < FILE_HEADER_LEN {
            return Err(fmt("file too short for a pcap header"));
        }
        if map[..4] != [0xd4, 0xc3, 0xb2, 0xa1] {
            return Err(fmt("unknown magic number"));
        }
        let linktype = u32::from_le_bytes(map[20..24].try_into().unwrap());
        Ok(FileReader { path, map, offset: FILE_HEADER_LEN, index: 0, linktype })
    }

    /// The path this reader was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes consumed so far (file header included).
    pub fn position(&self) -> u64 {
        self.offset as u64
    }

    /// The file's size in bytes.
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }
}

impl PacketSource for FileReader {
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>> {
        let buf = &self.map[..];
        let rest = &buf[self.offset..];
        if rest.is_empty() {
            return Ok(None);
        }
        if rest.len() < RECORD_HEADER_LEN {
            return Err(Error::Truncated {
                path: self.path.clone(),
                index: self.index,
                offset: self.offset as u64,
                need: RECORD_HEADER_LEN as u64,
                have: rest.len() as u64,
            });
        }
        let word = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().unwrap());
        let (sec, usec, caplen, wirelen) = (word(0), word(4), word(8), word(12));
        let end = RECORD_HEADER_LEN + caplen as usize;
        if rest.len() < end {
            return Err(Error::Truncated {
                path: self.path.clone(),
                index: self.index,
                offset: self.offset as u64,
                need: end as u64,
                have: rest.len() as u64,
            });
        }
        let pkt = RawPacket {
            ts_ns: sec as i64 * 1_000_000_000 + usec as i64 * 1_000,
            caplen,
            wirelen,
            linktype: self.linktype,
            data: &buf[self.offset + RECORD_HEADER_LEN..self.offset + end],
        };
        self.offset += end;
        self.index += 1;
        Ok(Some(pkt))
    }
}
