//! The classic pcap writer: a file header, then one record per packet, buffered.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::classic::{
    FILE_HEADER_LEN, HDR_LINKTYPE, HDR_MAGIC, HDR_SNAPLEN, HDR_VERSION_MAJOR, HDR_VERSION_MINOR,
    MAGIC_MICROS, MAGIC_NANOS, RECORD_HEADER_LEN, REC_CAPLEN, REC_TS_FRAC, REC_TS_SEC, REC_WIRELEN,
};
use super::MAX_CAPLEN;
use crate::error::{Error, Result};

/// The format version every writer of classic pcap files records (2.4).
const VERSION_MAJOR: u16 = 2;
const VERSION_MINOR: u16 = 4;

/// Copy `bytes` into `buf` at the field offset `at`.
#[inline]
fn set(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

const WRITE_BUFFER: usize = 1 << 20;

/// Writes a classic little-endian pcap (microsecond or nanosecond magic).
///
/// Records longer than the snaplen are cut to it (their wirelen is kept), so every file
/// it writes reads back without error.
pub struct PcapWriter<W: Write> {
    out: BufWriter<W>,
    path: PathBuf,
    nanosecond: bool,
    snaplen: u32,
    count: u64,
}

impl PcapWriter<File> {
    /// Create (or truncate) `path` and write the file header.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a snaplen outside 1..=262144; the open or write error
    /// of `path` ([`Error::NotFound`], [`Error::PermissionDenied`], [`Error::Io`]).
    pub fn create(
        path: impl AsRef<Path>,
        linktype: u32,
        snaplen: u32,
        nanosecond: bool,
    ) -> Result<Self> {
        let path = path.as_ref();
        check_snaplen(snaplen)?;
        // Replace an existing regular file by a new one rather than truncating it: a reader
        // may still map the old file (e.g. `write_pcap(p, read(p))`), and truncating a mapped
        // file would make that reader fault. Where unlinking fails, creating truncates.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
            let _ = std::fs::remove_file(path);
        }
        let file = File::create(path).map_err(|e| Error::from_io(path, e))?;
        PcapWriter::new(file, path, linktype, snaplen, nanosecond)
    }
}

fn check_snaplen(snaplen: u32) -> Result<()> {
    if snaplen == 0 || snaplen > MAX_CAPLEN {
        return Err(Error::InvalidArgument(format!(
            "snaplen must be between 1 and {MAX_CAPLEN}, not {snaplen}"
        )));
    }
    Ok(())
}

impl<W: Write> PcapWriter<W> {
    /// Write the file header to `out`; `path` names the destination in errors.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a bad snaplen; [`Error::Io`] if the header cannot be written.
    pub fn new(
        out: W,
        path: impl Into<PathBuf>,
        linktype: u32,
        snaplen: u32,
        nanosecond: bool,
    ) -> Result<Self> {
        check_snaplen(snaplen)?;
        let mut w = PcapWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER, out),
            path: path.into(),
            nanosecond,
            snaplen,
            count: 0,
        };
        let magic = if nanosecond {
            MAGIC_NANOS
        } else {
            MAGIC_MICROS
        };
        let mut hdr = [0u8; FILE_HEADER_LEN];
        set(&mut hdr, HDR_MAGIC, &magic.to_le_bytes());
        set(&mut hdr, HDR_VERSION_MAJOR, &VERSION_MAJOR.to_le_bytes());
        set(&mut hdr, HDR_VERSION_MINOR, &VERSION_MINOR.to_le_bytes());
        set(&mut hdr, HDR_SNAPLEN, &snaplen.to_le_bytes());
        set(&mut hdr, HDR_LINKTYPE, &linktype.to_le_bytes());
        w.put(&hdr)?;
        Ok(w)
    }

    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes).map_err(|e| Error::Io {
            path: self.path.clone(),
            source: e.into(),
        })
    }

    /// Append one record: `data` cut to the snaplen, `wirelen` (at least the bytes kept).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a timestamp outside the classic format's range
    /// (1970-01-01 to 2106-02-07); [`Error::Io`] on a write error.
    #[inline]
    pub fn write_packet(&mut self, ts_ns: i64, data: &[u8], wirelen: u32) -> Result<()> {
        let sec = ts_ns.div_euclid(1_000_000_000);
        let sub = ts_ns.rem_euclid(1_000_000_000) as u32;
        let Ok(sec) = u32::try_from(sec) else {
            return Err(Error::InvalidArgument(format!(
                "timestamp {ts_ns} ns is outside the range of a pcap file (0 to 2^32 seconds after 1970)"
            )));
        };
        let frac = if self.nanosecond { sub } else { sub / 1_000 };
        let caplen = data.len().min(self.snaplen as usize);
        let wirelen = wirelen.max(caplen as u32);
        let mut rec = [0u8; RECORD_HEADER_LEN];
        set(&mut rec, REC_TS_SEC, &sec.to_le_bytes());
        set(&mut rec, REC_TS_FRAC, &frac.to_le_bytes());
        set(&mut rec, REC_CAPLEN, &(caplen as u32).to_le_bytes());
        set(&mut rec, REC_WIRELEN, &wirelen.to_le_bytes());
        self.put(&rec)?;
        self.put(&data[..caplen])?;
        self.count += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Flush the buffer and return the destination.
    ///
    /// # Errors
    /// [`Error::Io`] if the buffered bytes cannot be written.
    pub fn finish(self) -> Result<W> {
        let path = self.path;
        self.out.into_inner().map_err(|e| Error::Io {
            path,
            source: e.into_error().into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::RecordCursor;

    #[test]
    fn round_trip_micro_and_nano() {
        for nanosecond in [false, true] {
            let mut w = PcapWriter::new(Vec::new(), "mem", 1, 8, nanosecond).unwrap();
            w.write_packet(1_700_000_000_123_456_789, &[1, 2, 3], 3)
                .unwrap();
            w.write_packet(5, &[9; 20], 0).unwrap();
            assert_eq!(w.count(), 2);
            let buf = w.finish().unwrap();
            let mut c = RecordCursor::new(&buf).unwrap();
            let a = c.next(&buf).unwrap().unwrap();
            let expect = if nanosecond {
                1_700_000_000_123_456_789
            } else {
                1_700_000_000_123_456_000
            };
            assert_eq!(
                (a.ts_ns, a.caplen, a.wirelen, a.data),
                (expect, 3, 3, &[1u8, 2, 3][..])
            );
            let b = c.next(&buf).unwrap().unwrap();
            assert_eq!(
                (b.ts_ns, b.caplen, b.wirelen, b.data),
                (if nanosecond { 5 } else { 0 }, 8, 8, &[9u8; 8][..])
            );
            assert!(c.next(&buf).unwrap().is_none());
        }
    }

    #[test]
    fn rejects_bad_snaplen_and_timestamps() {
        assert!(matches!(
            PcapWriter::new(Vec::new(), "m", 1, 0, false),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            PcapWriter::new(Vec::new(), "m", 1, MAX_CAPLEN + 1, false),
            Err(Error::InvalidArgument(_))
        ));
        let mut w = PcapWriter::new(Vec::new(), "m", 1, 100, false).unwrap();
        assert!(
            matches!(w.write_packet(-1, &[1], 1), Err(Error::InvalidArgument(m)) if m.contains("outside"))
        );
        assert!(w.write_packet((1 << 32) * 1_000_000_000, &[1], 1).is_err());
        assert_eq!(w.count(), 0);
    }
}
