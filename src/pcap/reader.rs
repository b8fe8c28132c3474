//! The file reader: an mmap and a cursor over its records.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::bpf::FileFilter;
use super::classic::{self, ClassicCursor};
use super::guard::GuardedMap;
use super::pcapng::{NgCursor, BLOCK_SHB};
use super::{FileFormat, Issue, Oversized};
use crate::decode::link::LINKTYPE_ETHERNET;
use crate::error::{Error, Result};
use crate::source::{Fetch, PacketSource, RawPacket, SourceInfo, SCAN_BUDGET};

/// A cursor over the records of either format, parsing from a `&[u8]`.
#[derive(Clone, Debug)]
pub enum RecordCursor {
    /// A classic pcap file.
    Pcap(ClassicCursor),
    /// A pcapng file.
    PcapNg(NgCursor),
}

impl RecordCursor {
    /// Detect the format of `buf` and read its file header.
    ///
    /// # Errors
    /// An [`Issue`] of kind `Format` for an empty buffer, an unknown magic number or a
    /// short or invalid file header.
    pub fn new(buf: &[u8]) -> std::result::Result<RecordCursor, Issue> {
        let Some(first4) = buf.get(..4) else {
            let message = if buf.is_empty() {
                "empty file: not a pcap or pcapng capture".to_string()
            } else {
                format!("truncated file header: {} bytes", buf.len())
            };
            return Err(Issue::format(0, 0, message));
        };
        let first4: [u8; 4] = first4
            .try_into()
            .map_err(|_| Issue::format(0, 0, "truncated file header"))?;
        if u32::from_le_bytes(first4) == BLOCK_SHB {
            Ok(RecordCursor::PcapNg(NgCursor::new(buf)?))
        } else if classic::detect_magic(first4).is_some() {
            Ok(RecordCursor::Pcap(ClassicCursor::new(buf)?))
        } else {
            Err(Issue::format(
                0,
                0,
                format!(
                    "not a pcap or pcapng file: unknown magic number 0x{:08x}",
                    u32::from_be_bytes(first4)
                ),
            ))
        }
    }

    /// The next packet of `buf` (the buffer given to [`RecordCursor::new`]).
    ///
    /// # Errors
    /// See [`ClassicCursor::next`] and [`NgCursor::next`].
    #[inline(always)]
    pub fn next<'a>(&mut self, buf: &'a [u8]) -> std::result::Result<Option<RawPacket<'a>>, Issue> {
        match self {
            RecordCursor::Pcap(c) => c.next(buf),
            RecordCursor::PcapNg(c) => c.next(buf),
        }
    }

    /// Whether a record longer than its snaplen is a format error (`true`) or read whole
    /// and counted in [`RecordCursor::oversized`] (the default).
    pub fn set_strict(&mut self, strict: bool) {
        match self {
            RecordCursor::Pcap(c) => c.set_strict(strict),
            RecordCursor::PcapNg(c) => c.set_strict(strict),
        }
    }

    /// The records read whole although longer than their snaplen.
    #[inline]
    pub fn oversized(&self) -> &Oversized {
        match self {
            RecordCursor::Pcap(c) => c.oversized(),
            RecordCursor::PcapNg(c) => c.oversized(),
        }
    }

    /// Byte offset of the next record.
    #[inline]
    pub fn offset(&self) -> usize {
        match self {
            RecordCursor::Pcap(c) => c.offset(),
            RecordCursor::PcapNg(c) => c.offset(),
        }
    }

    /// Index of the next record.
    pub fn index(&self) -> u64 {
        match self {
            RecordCursor::Pcap(c) => c.index(),
            RecordCursor::PcapNg(c) => c.index(),
        }
    }

    /// The file format.
    pub fn format(&self) -> FileFormat {
        match self {
            RecordCursor::Pcap(_) => FileFormat::Pcap,
            RecordCursor::PcapNg(_) => FileFormat::PcapNg,
        }
    }
}

/// Bytes of the map read past before they are released from this process's resident set.
const RELEASE_EVERY: usize = 8 << 20;
/// The smallest page size of the platforms paclo runs on; releases start and end on it.
const PAGE: usize = 4096;

/// A capture file mapped into memory, read record by record without copying.
///
/// Reading allocates nothing: packets borrow the map. As a [`PacketSource`] it applies the
/// BPF filter installed with [`PacketSource::install_filter`]; [`next_packet`](Self::next_packet)
/// reads every record. The pages the cursor has moved past are released from the process
/// every [`RELEASE_EVERY`] bytes, so a read keeps O(1) of the file resident however large
/// it is (the page cache keeps them; a packet that still refers to them reads them back
/// from it).
pub struct FileReader {
    path: PathBuf,
    /// Kept open to read the file's size when its map faults or ends.
    file: File,
    map: Arc<GuardedMap>,
    cursor: RecordCursor,
    /// Set after an error: the reader then reports the end.
    done: bool,
    linktype: Option<u32>,
    snaplen: u32,
    filter: Option<FileFilter>,
    /// The map before this offset has been released from the resident set.
    released: usize,
}

impl FileReader {
    /// Open a capture file and read its header.
    ///
    /// # Errors
    /// [`Error::NotFound`], [`Error::PermissionDenied`], [`Error::Io`] on open; [`Error::Format`]
    /// for an empty file, an unknown magic number or a truncated or invalid file header.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        // Check the kind first: opening a FIFO would block until a writer appears.
        let kind = std::fs::metadata(&path).map_err(|e| Error::from_io(&path, e))?;
        if !kind.is_file() {
            let source = if kind.is_dir() {
                std::io::Error::new(std::io::ErrorKind::IsADirectory, "is a directory")
            } else {
                std::io::Error::other("is not a regular file (pipes and devices cannot be mapped)")
            };
            return Err(Error::Io {
                path,
                source: source.into(),
            });
        }
        let file = File::open(&path).map_err(|e| Error::from_io(&path, e))?;
        let meta = file.metadata().map_err(|e| Error::from_io(&path, e))?;
        // A file truncated by another process while mapped reads zeros past its new end
        // and flags the map (no SIGBUS): see `guard`.
        let map = if meta.len() == 0 {
            None
        } else {
            Some(GuardedMap::map(&file).map_err(|e| Error::from_io(&path, e))?)
        };
        let Some(map) = map else {
            return Err(
                Issue::format(0, 0, "empty file: not a pcap or pcapng capture").into_error(&path),
            );
        };
        #[cfg(unix)]
        let _ = map.mmap().advise(memmap2::Advice::Sequential);
        let cursor = RecordCursor::new(&map).map_err(|i| i.into_error(&path))?;
        let (linktype, snaplen) = match &cursor {
            RecordCursor::Pcap(c) => (Some(c.header().linktype), c.header().snaplen),
            RecordCursor::PcapNg(c) => (c.peek_linktype(&map), super::MAX_CAPLEN),
        };
        Ok(FileReader {
            path,
            file,
            map: Arc::new(map),
            cursor,
            done: false,
            linktype,
            snaplen,
            filter: None,
            released: 0,
        })
    }

    /// Whether a record longer than its snaplen is a format error (`true`) or read whole
    /// and counted in [`FileReader::oversized`] (the default).
    pub fn set_strict(&mut self, strict: bool) {
        self.cursor.set_strict(strict);
    }

    /// The records read so far whole although longer than their snaplen.
    #[inline]
    pub fn oversized(&self) -> &Oversized {
        self.cursor.oversized()
    }

    /// The path this reader was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes consumed so far (file header included).
    pub fn position(&self) -> u64 {
        self.cursor.offset() as u64
    }

    /// The file's size in bytes.
    pub fn file_len(&self) -> u64 {
        self.map.len() as u64
    }

    /// The file format.
    pub fn format(&self) -> FileFormat {
        self.cursor.format()
    }

    /// The link type of the file (classic pcap) or of its first interface (pcapng, read
    /// ahead); `None` for a pcapng without an interface description before its first packet.
    pub fn linktype(&self) -> Option<u32> {
        self.linktype
    }

    /// The snapshot length of the file header (pcapng: [`MAX_CAPLEN`](super::MAX_CAPLEN)).
    pub fn snaplen(&self) -> u32 {
        self.snaplen
    }

    /// The whole mapped file, shared: packets may keep it alive after the reader closes.
    pub fn shared_map(&self) -> &Arc<GuardedMap> {
        &self.map
    }

    /// Records read since the file's start (or since [`seek`](Self::seek)).
    pub fn records(&self) -> u64 {
        self.cursor.index()
    }

    /// Go on from the classic record that starts at `offset`, a record boundary (see
    /// [`split`](super::split)): record indices count from 0 there, and the pages before it
    /// are left to whoever reads them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a pcapng file or an offset past the end.
    pub fn seek(&mut self, offset: usize) -> Result<()> {
        let RecordCursor::Pcap(c) = &mut self.cursor else {
            return Err(Error::InvalidArgument(format!(
                "{}: only a classic pcap file is read from an offset",
                self.path.display()
            )));
        };
        if offset < classic::FILE_HEADER_LEN || offset > self.map.len() {
            return Err(Error::InvalidArgument(format!(
                "{}: offset {offset} is outside the file's records",
                self.path.display()
            )));
        }
        c.seek(offset);
        self.released = offset & !(PAGE - 1);
        Ok(())
    }

    /// Offset of `data` (a slice of a packet from this reader) within the map.
    pub fn offset_of(&self, data: &[u8]) -> usize {
        (data.as_ptr() as usize).wrapping_sub(self.map.as_ptr() as usize)
    }
}

impl FileReader {
    /// The next record, `Ok(None)` at the end; the filter is not applied.
    ///
    /// # Errors
    /// [`Error::Format`] for a malformed record, [`Error::Truncated`] for a cut last
    /// record; the reader then reports the end.
    #[inline(always)]
    pub fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>> {
        if self.done {
            return Ok(None);
        }
        read_record(
            &mut self.cursor,
            &self.map,
            &self.file,
            &self.path,
            &mut self.released,
            &mut self.done,
        )
    }
}

/// The next record of `map` (see [`FileReader::next_packet`]); `done` is set at the end
/// and after an error. A record parsed from zeros that stand in for pages cut off the file
/// is not the file's: the change is the error (checked before the record is returned, and
/// at the end, for a cut inside the last page). (Fields, not `&mut FileReader`: the
/// caller may go on reading while it holds no packet.)
#[inline(always)]
fn read_record<'a>(
    cursor: &mut RecordCursor,
    map: &'a GuardedMap,
    file: &File,
    path: &Path,
    released: &mut usize,
    done: &mut bool,
) -> Result<Option<RawPacket<'a>>> {
    release_behind(map.mmap(), cursor.offset(), released);
    let (at, index) = (cursor.offset(), cursor.index());
    let result = cursor.next(map);
    let changed = match &result {
        Ok(Some(_)) => {
            // Bytes past the new end of a cut file read as zeros up to the end of their
            // page, without a fault; the page after reads nothing at all and faults. So
            // the record is the file's if the first byte of the page after it can be read
            // (the last page of the map has no page after it: the file's size is read).
            // Once a page faulted, a record counts if it ends before the first zero byte:
            // before that page and before the file's current end.
            let end = cursor.offset();
            // (The page size is a power of two: a mask, not a division.)
            let page = super::guard::page_size();
            match map.get((end + page - 1) & !(page - 1)) {
                Some(b) => {
                    // SAFETY: a read of a valid reference to a byte of the map.
                    _ = unsafe { std::ptr::read_volatile(b) };
                    probed();
                }
                None => {
                    if file.metadata().is_ok_and(|m| (end as u64) > m.len()) {
                        return Err(changed_error(path, file, map.len(), index, at, done));
                    }
                }
            }
            map.faulted() && !before_cut(map, file, end)
        }
        Ok(None) | Err(_) => map.faulted() || shrunk(file, map.len()),
    };
    if changed {
        return Err(changed_error(path, file, map.len(), index, at, done));
    }
    match result {
        Ok(Some(p)) => Ok(Some(p)),
        Ok(None) => {
            *done = true;
            Ok(None)
        }
        Err(issue) => {
            *done = true;
            Err(issue.into_error(path))
        }
    }
}

/// After the guard's probe of the map, before its fault flag is read: the probe's fault
/// runs the SIGBUS handler, which sets the flag on this thread. A volatile read is ordered
/// only against other volatile accesses, so without this fence the compiler could load
/// the flag (a relaxed atomic) before the probe and miss the fault. A signal fence emits
/// no instruction.
#[inline(always)]
fn probed() {
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// Whether `file` is now shorter than its map of `len` bytes.
#[cold]
fn shrunk(file: &File, len: usize) -> bool {
    file.metadata().is_ok_and(|m| m.len() < len as u64)
}

/// Whether the first `end` bytes of `map` (which has faulted) are the file's: before the
/// first replaced page and within the file's current size.
#[cold]
fn before_cut(map: &GuardedMap, file: &File, end: usize) -> bool {
    let now = file.metadata().map_or(0, |m| m.len());
    map.first_fault().is_some_and(|f| end <= f) && end as u64 <= now
}

/// The error for a file that shrank while it was read, at record `index` (offset `at`);
/// the reader is `done`.
#[cold]
fn changed_error(
    path: &Path,
    file: &File,
    len: usize,
    index: u64,
    at: usize,
    done: &mut bool,
) -> Error {
    *done = true;
    let now = file.metadata().map(|m| m.len()).unwrap_or(0);
    Error::Format {
        path: path.to_path_buf(),
        index,
        offset: at as u64,
        message: format!(
            "the file changed while it was read: it is now {now} bytes, it had {len} when opened"
        ),
    }
}

/// Release the pages of `map` more than [`RELEASE_EVERY`] bytes behind `at` (the cursor)
/// from the resident set, once [`RELEASE_EVERY`] more bytes have been read since
/// `released`, which moves on. (Fields, not `&mut FileReader`: the caller may hold a packet
/// borrowed from the map.)
#[inline]
fn release_behind(map: &memmap2::Mmap, at: usize, released: &mut usize) {
    if at - *released >= 2 * RELEASE_EVERY {
        // Keep the last RELEASE_EVERY bytes: the current record starts there.
        let to = (at - RELEASE_EVERY) & !(PAGE - 1);
        release(map, *released, to);
        *released = to;
    }
}

/// Release `map[from..to]` (rounded inwards to pages) from the resident set.
#[cold]
fn release(map: &memmap2::Mmap, from: usize, to: usize) {
    #[cfg(unix)]
    {
        // SAFETY: the map is a read-only mapping of a file that nothing writes through;
        // MADV_DONTNEED only drops this process's page-table entries for the range, and the
        // next access faults the same bytes back in from the file (the kernel's page cache),
        // so every slice of the map stays valid and unchanged. The range lies within the map.
        let _ = unsafe {
            map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)
        };
    }
    #[cfg(not(unix))]
    let _ = (map, from, to);
}

impl FileReader {
    /// Up to `max` records of an unfiltered classic file handed to `f` in one loop: the
    /// packets and their captured bytes. It reads what [`next_packet`](Self::next_packet)
    /// reads and stops before any record that needs more than the common path (the end, a
    /// cut, oversized or modified-format record, pcapng) or more than the guard's one
    /// probe (the map's last page, a fault): `next_packet` then reads that record.
    #[inline(always)]
    pub fn burst<F: FnMut(&RawPacket<'_>)>(&mut self, max: u32, f: &mut F) -> (u32, u64) {
        self.burst_before(max, usize::MAX, f)
    }

    /// [`burst`](Self::burst) of the records that end at or before offset `limit` (a part
    /// of the file): one that runs past it is left to `next_packet`.
    #[inline(always)]
    pub fn burst_before<F: FnMut(&RawPacket<'_>)>(
        &mut self,
        max: u32,
        limit: usize,
        f: &mut F,
    ) -> (u32, u64) {
        let (RecordCursor::Pcap(c), false, None) = (&mut self.cursor, self.done, &self.filter)
        else {
            return (0, 0);
        };
        let map: &GuardedMap = &self.map;
        let records = &map[..limit.min(map.len())];
        let page = super::guard::page_size();
        let (mut n, mut bytes) = (0u32, 0u64);
        while n < max {
            release_behind(map.mmap(), c.offset(), &mut self.released);
            let Some((p, end)) = c.peek_common(records) else {
                break;
            };
            // The guard of `read_record`: the first byte of the page after the record
            // must read (a volatile load), and no page of the map may have faulted.
            let Some(b) = map.get((end + page - 1) & !(page - 1)) else {
                break;
            };
            // SAFETY: a read of a valid reference to a byte of the map.
            _ = unsafe { std::ptr::read_volatile(b) };
            probed();
            if map.faulted() {
                break;
            }
            c.step_to(end);
            n += 1;
            bytes += u64::from(p.caplen);
            f(&p);
        }
        (n, bytes)
    }

    /// [`PacketSource::fetch`] with a filter: records are read until one matches (or
    /// [`SCAN_BUDGET`] did not).
    #[inline(never)]
    fn fetch_filtered(&mut self) -> Result<Fetch<'_>> {
        let mut rejected = 0u32;
        loop {
            let next = read_record(
                &mut self.cursor,
                &self.map,
                &self.file,
                &self.path,
                &mut self.released,
                &mut self.done,
            )?;
            let Some(p) = next else {
                return Ok(Fetch::End);
            };
            if let Some(f) = self.filter.as_mut() {
                match f.matches(&p) {
                    Ok(true) => {}
                    Ok(false) => {
                        rejected += 1;
                        if rejected >= SCAN_BUDGET {
                            return Ok(Fetch::Idle);
                        }
                        continue;
                    }
                    Err(e) => {
                        self.done = true;
                        return Err(e);
                    }
                }
            }
            return Ok(Fetch::Packet(p));
        }
    }
}

impl PacketSource for FileReader {
    /// Without a filter, one record: inlined into the loop that calls it.
    #[inline(always)]
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        if self.done {
            return Ok(Fetch::End);
        }
        if self.filter.is_some() {
            return self.fetch_filtered();
        }
        Ok(self.next_packet()?.map_or(Fetch::End, Fetch::Packet))
    }

    /// Common classic records (see [`FileReader::burst`]).
    #[inline(always)]
    fn burst<F: FnMut(&RawPacket<'_>)>(&mut self, max: u32, f: &mut F) -> (u32, u64) {
        FileReader::burst(self, max, f)
    }

    fn info(&self) -> SourceInfo {
        SourceInfo::Path(std::path::absolute(&self.path).unwrap_or_else(|_| self.path.clone()))
    }

    fn linktype(&self) -> Option<u32> {
        self.linktype
    }

    fn snaplen(&self) -> u32 {
        self.snaplen
    }

    fn progress(&self) -> Option<(u64, u64)> {
        Some((self.position(), self.file_len()))
    }

    fn set_strict(&mut self, strict: bool) {
        FileReader::set_strict(self, strict);
    }

    fn oversized(&self) -> Option<&Oversized> {
        Some(FileReader::oversized(self))
    }

    /// Compiled for the file's link type (pcapng: its first interface's, Ethernet when none
    /// is described before the first packet), and for each other link type when met.
    fn install_filter(&mut self, expr: &str) -> Result<()> {
        let first = self.linktype.unwrap_or(LINKTYPE_ETHERNET);
        self.filter = Some(FileFilter::new(expr, first, self.snaplen.max(1))?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn write_temp(name: &str, bytes: &[u8]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("paclo-reader-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    /// A classic LE µs file of `n` 64-byte packets.
    pub(crate) fn classic_file(n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + n * 80);
        out.extend(0xa1b2_c3d4u32.to_le_bytes());
        out.extend(2u16.to_le_bytes());
        out.extend(4u16.to_le_bytes());
        out.extend([0; 8]);
        out.extend(65535u32.to_le_bytes());
        out.extend(1u32.to_le_bytes());
        for i in 0..n {
            out.extend(1_700_000_000u32.to_le_bytes());
            out.extend(((i % 1_000_000) as u32).to_le_bytes());
            out.extend(64u32.to_le_bytes());
            out.extend(64u32.to_le_bytes());
            out.extend([i as u8; 64]);
        }
        out
    }

    /// Truncate `path` to `len` bytes through another handle, as another process would.
    fn truncate(path: &Path, len: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(len)
            .unwrap();
    }

    /// A file cut under the reader gives a format error naming the change, never a SIGBUS,
    /// whether the cut drops whole pages or lands inside the last one; through
    /// `next_packet` and through `fetch` (the loops' path).
    #[test]
    fn a_file_truncated_while_read_is_an_error() {
        let n = 10_000; // 80 bytes a record: about 200 pages
        for (name, cut, by_fetch) in [
            ("cut-pages.pcap", 4096 * 20, false),
            ("cut-pages-fetch.pcap", 4096 * 20, true),
            ("cut-mid-page.pcap", 4096 * 20 + 1000, false),
            ("cut-last-page.pcap", 24 + 80 * (n as u64) - 100, false),
        ] {
            let path = write_temp(name, &classic_file(n));
            let mut r = FileReader::open(&path).unwrap();
            for _ in 0..100 {
                r.next_packet().unwrap().unwrap();
            }
            truncate(&path, cut);
            let mut read = 100;
            let err = loop {
                let step = if by_fetch {
                    r.fetch()
                        .map(|f| matches!(f, Fetch::Packet(_)).then_some(()))
                } else {
                    r.next_packet().map(|p| p.map(|_| ()))
                };
                match step {
                    Ok(Some(())) => read += 1,
                    Ok(None) => panic!("{name}: the end, after {read} packets, no error"),
                    Err(e) => break e,
                }
            };
            assert!(read < n, "{name}");
            let message = err.to_string();
            assert!(
                matches!(err, Error::Format { .. })
                    && message.contains(&format!(
                        "the file changed while it was read: it is now {cut} bytes, it had {} when opened",
                        24 + 80 * n
                    )),
                "{name}: {message}"
            );
            assert!(
                r.next_packet().unwrap().is_none(),
                "{name}: the end after the error"
            );
            // Every complete record before the cut was read.
            assert_eq!(read as u64, (cut - 24) / 80, "{name}");
        }
    }

    /// A burst stops before a file cut under it: every record it hands over is the
    /// file's, and the record after the last one is `next_packet`'s error.
    #[test]
    fn a_burst_stops_at_a_file_truncated_while_read() {
        let n = 10_000;
        for (name, cut) in [
            ("burst-cut-pages.pcap", 4096 * 20),
            ("burst-cut-mid-page.pcap", 4096 * 20 + 1000),
            ("burst-cut-last-page.pcap", 24 + 80 * (n as u64) - 100),
        ] {
            let path = write_temp(name, &classic_file(n));
            let mut r = FileReader::open(&path).unwrap();
            let (first, _) = r.burst(100, &mut |_| {});
            assert_eq!(first, 100, "{name}");
            truncate(&path, cut);
            let (mut read, mut bursts) = (100u64, 0);
            let err = loop {
                let (got, bytes) = r.burst(u32::MAX, &mut |p| assert_eq!(p.caplen, 64));
                assert_eq!(bytes, 64 * u64::from(got));
                read += u64::from(got);
                bursts += u32::from(got > 0);
                match r.next_packet() {
                    Ok(Some(_)) => read += 1,
                    Ok(None) => panic!("{name}: the end, after {read} packets, no error"),
                    Err(e) => break e,
                }
            };
            assert!(bursts > 0, "{name}");
            assert!(
                err.to_string()
                    .contains("the file changed while it was read"),
                "{name}: {err}"
            );
            assert_eq!(read, (cut - 24) / 80, "{name}");
            assert_eq!(r.burst(u32::MAX, &mut |_| {}), (0, 0), "{name}: done");
        }
    }

    /// A classic file of records of `lens` bytes (wirelen = caplen + 1), snaplen
    /// `snaplen`, in either byte order.
    fn records_file(lens: &[u32], snaplen: u32, big: bool) -> Vec<u8> {
        let w = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend(w(0xa1b2_c3d4));
        out.extend(if big { [0, 2, 0, 4] } else { [2, 0, 4, 0] });
        out.extend([0; 8]);
        out.extend(w(snaplen));
        out.extend(w(1));
        for (i, &len) in lens.iter().enumerate() {
            out.extend(w(1_700_000_000 + i as u32));
            out.extend(w(i as u32 * 7));
            out.extend(w(len));
            out.extend(w(len + 1));
            out.extend((0..len).map(|b| (b as usize + i) as u8));
        }
        out
    }

    /// Bursts and single records together read exactly what `next_packet` reads: both
    /// byte orders, records above the snaplen in between, a cut last record; a filter
    /// and pcapng leave bursts out.
    #[test]
    fn bursts_read_what_next_packet_reads() {
        type Rec = (i64, u32, u32, Vec<u8>);
        let rec = |p: &RawPacket<'_>| (p.ts_ns, p.caplen, p.wirelen, p.data.to_vec());
        let lens: Vec<u32> = (0..3000).map(|i| [60, 0, 1500, 61, 33][i % 5]).collect();
        for (name, snaplen, big, cut) in [
            ("burst-le.pcap", 65535, false, 0),
            ("burst-be.pcap", 65535, true, 0),
            ("burst-oversized.pcap", 1000, false, 0),
            ("burst-cut.pcap", 65535, true, 700),
        ] {
            let mut bytes = records_file(&lens, snaplen, big);
            bytes.truncate(bytes.len() - cut);
            let path = write_temp(name, &bytes);
            // Every record, with bursts of up to 97 between single reads or without.
            let read = |burst_max: u32| {
                let mut r = FileReader::open(&path).unwrap();
                let (mut recs, mut burst): (Vec<Rec>, u64) = (Vec::new(), 0);
                let err = loop {
                    let (n, b) = r.burst(burst_max, &mut |p| recs.push(rec(p)));
                    let sum: u64 = recs[recs.len() - n as usize..]
                        .iter()
                        .map(|g| u64::from(g.1))
                        .sum();
                    assert_eq!(b, sum, "{name}");
                    burst += u64::from(n);
                    match r.next_packet() {
                        Ok(Some(p)) => recs.push(rec(&p)),
                        Ok(None) => break None,
                        Err(e) => break Some(e.to_string()),
                    }
                };
                (recs, err, burst, *r.oversized())
            };
            let (want, want_err, none, want_oversized) = read(0);
            assert_eq!(none, 0, "{name}");
            let (got, got_err, burst, oversized) = read(97);
            assert_eq!(oversized, want_oversized, "{name}");
            assert_eq!(got, want, "{name}");
            assert_eq!(got_err, want_err, "{name}");
            assert_eq!(want_err.is_some(), cut > 0, "{name}");
            assert!(burst > want.len() as u64 / 2, "{name}: {burst} in bursts");
            assert_eq!(want_oversized.count > 0, snaplen < 1500, "{name}");
        }
        let path = write_temp("burst-filtered.pcap", &classic_file(10));
        let mut r = FileReader::open(&path).unwrap();
        r.install_filter("udp").unwrap();
        assert_eq!(r.burst(u32::MAX, &mut |_| {}), (0, 0));
    }

    /// A file that grows while read is read to the size it had when opened.
    #[test]
    fn a_file_grown_while_read_is_read_to_its_size_at_open() {
        use std::io::Write;
        let path = write_temp("grows.pcap", &classic_file(1000));
        let mut r = FileReader::open(&path).unwrap();
        r.next_packet().unwrap().unwrap();
        let more = &classic_file(500)[24..];
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(more)
            .unwrap();
        let mut n = 1;
        while r.next_packet().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 1000);
        assert_eq!(FileReader::open(&path).unwrap().file_len(), 24 + 80 * 1500);
    }

    #[test]
    fn open_errors() {
        let err = FileReader::open("/nonexistent/paclo/x.pcap").err().unwrap();
        assert!(matches!(err, Error::NotFound { .. }));
        let dir = std::env::temp_dir();
        let err = FileReader::open(&dir).err().unwrap();
        assert!(
            matches!(&err, Error::Io { path, source } if path == &dir
                && source.kind() == std::io::ErrorKind::IsADirectory),
            "{err}"
        );
        let empty = write_temp("empty.pcap", &[]);
        let err = FileReader::open(&empty).err().unwrap();
        assert!(
            matches!(&err, Error::Format { message, offset: 0, index: 0, path } if message.contains("empty file") && path == &empty),
            "{err}"
        );
        let junk = write_temp("junk.pcap", b"hello world, not a capture");
        let err = FileReader::open(&junk).err().unwrap();
        assert!(
            err.to_string().contains("unknown magic number 0x68656c6c"),
            "{err}"
        );
        let short = write_temp("short.pcap", &classic_file(0)[..10]);
        let err = FileReader::open(&short).err().unwrap();
        assert!(
            err.to_string().contains("truncated pcap file header"),
            "{err}"
        );
    }

    #[test]
    fn reads_file_then_truncated_error_then_end() {
        let mut bytes = classic_file(3);
        bytes.truncate(bytes.len() - 10);
        let path = write_temp("trunc.pcap", &bytes);
        let mut r = FileReader::open(&path).unwrap();
        assert_eq!(
            (r.linktype(), r.snaplen(), r.format()),
            (Some(1), 65535, FileFormat::Pcap)
        );
        let mut n = 0;
        let err = loop {
            match r.next_packet() {
                Ok(Some(p)) => {
                    assert_eq!(p.data, &[n as u8; 64][..]);
                    n += 1;
                }
                Ok(None) => panic!("expected an error"),
                Err(e) => break e,
            }
        };
        assert_eq!(n, 2);
        assert!(
            matches!(
                err,
                Error::Truncated {
                    index: 2,
                    offset: 184,
                    need: 80,
                    have: 70,
                    ..
                }
            ),
            "{err}"
        );
        assert!(r.next_packet().unwrap().is_none());
    }

    /// The native read loop allocates nothing per packet: 0 allocations over 1,000,000.
    #[test]
    fn read_loop_allocates_nothing() {
        let path = write_temp("million.pcap", &classic_file(1_000_000));
        let mut r = FileReader::open(&path).unwrap();
        // Warm up.
        let first = r.next_packet().unwrap().unwrap().caplen;
        let before = crate::alloc::thread_counts();
        let (mut n, mut bytes) = (1u64, first as u64);
        while let Some(p) = r.next_packet().unwrap() {
            n += 1;
            bytes += p.caplen as u64;
        }
        let delta = crate::alloc::thread_counts().since(before);
        assert_eq!((n, bytes), (1_000_000, 64_000_000));
        assert_eq!(delta.allocs, 0, "{delta:?}");
        std::fs::remove_file(path).unwrap();
    }

    type Row = (i64, u32, u32, Vec<u8>);

    /// Every packet libpcap reads from `path` (nanosecond precision).
    fn libpcap_rows(path: &Path) -> Vec<Row> {
        let mut cap = pcap::Capture::from_file_with_precision(path, pcap::Precision::Nano).unwrap();
        let mut out = Vec::new();
        loop {
            match cap.next_packet() {
                Ok(p) => {
                    let ts = p.header.ts.tv_sec * 1_000_000_000 + p.header.ts.tv_usec;
                    out.push((ts, p.header.caplen, p.header.len, p.data.to_vec()));
                }
                Err(pcap::Error::NoMorePackets) => return out,
                Err(e) => panic!("libpcap: {e}"),
            }
        }
    }

    fn paclo_rows(path: &Path) -> Vec<Row> {
        let mut r = FileReader::open(path).unwrap();
        let mut out = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            out.push((p.ts_ns, p.caplen, p.wirelen, p.data.to_vec()));
        }
        out
    }

    /// The same packets as libpcap, for classic files in both byte orders and precisions
    /// and for a pcapng with three timestamp resolutions.
    #[test]
    fn same_packets_as_libpcap() {
        let mut w = crate::pcap::PcapWriter::new(Vec::new(), "m", 1, 65535, true).unwrap();
        for i in 0..50u32 {
            let data: Vec<u8> = (0..(20 + i * 7)).map(|b| (b * 31 + i) as u8).collect();
            let ts = 1_700_000_000_000_000_000 + i64::from(i) * 987_654_321;
            w.write_packet(ts, &data, data.len() as u32 + i % 3)
                .unwrap();
        }
        let le_ns = w.finish().unwrap();
        // The same file big-endian: swap every header field.
        let mut be_ns = le_ns.clone();
        for at in (0..24).step_by(4).filter(|&a| a != 4) {
            be_ns[at..at + 4].reverse();
        }
        be_ns[4..6].reverse();
        be_ns[6..8].reverse();
        let mut at = 24;
        while at < be_ns.len() {
            let caplen = u32::from_le_bytes(le_ns[at + 8..at + 12].try_into().unwrap()) as usize;
            for f in 0..4 {
                be_ns[at + f * 4..at + f * 4 + 4].reverse();
            }
            at += 16 + caplen;
        }
        let mut ng = crate::pcap::pcapng::tests::Builder::new(crate::pcap::Endian::Big);
        ng.shb();
        ng.idb(1, 0, &[]);
        ng.idb(1, 0, &[(9, vec![9])]);
        ng.idb(1, 0, &[(9, vec![0x80 | 20])]);
        for i in 0..30u64 {
            ng.epb(
                (i % 3) as u32,
                1_700_000_000_000_000 + i * 1_234_567,
                &[i as u8; 40],
                60,
            );
        }
        for (name, bytes) in [
            ("le-ns.pcap", le_ns),
            ("be-ns.pcap", be_ns),
            ("x.pcapng", ng.out),
        ] {
            let path = write_temp(name, &bytes);
            let ours = paclo_rows(&path);
            assert_eq!(ours.len(), if name.ends_with("pcapng") { 30 } else { 50 });
            assert_eq!(ours, libpcap_rows(&path), "{name}");
        }
    }

    fn drain(buf: &[u8]) -> std::result::Result<usize, Issue> {
        let mut c = RecordCursor::new(buf)?;
        let mut n = 0;
        while c.next(buf)?.is_some() {
            n += 1;
        }
        Ok(n)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Arbitrary bytes never panic: they read or return an issue.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = drain(&bytes);
        }

        /// Arbitrary bytes after a valid header of either format never panic.
        #[test]
        fn arbitrary_records_never_panic(ng in any::<bool>(), tail in proptest::collection::vec(any::<u8>(), 0..1024)) {
            let mut buf = if ng {
                let mut b = crate::pcap::pcapng::tests::Builder::new(crate::pcap::Endian::Little);
                b.shb();
                b.idb(1, 0, &[]);
                b.out
            } else {
                classic_file(0)
            };
            buf.extend(tail);
            let _ = drain(&buf);
        }

        /// Cutting a valid file anywhere yields its leading packets, then at most one issue.
        #[test]
        fn cut_file_yields_prefix(cut in 0usize..24 + 5 * 80) {
            let full = classic_file(5);
            let buf = &full[..cut];
            match drain(buf) {
                Ok(n) => prop_assert_eq!(n, (cut - 24) / 80),
                Err(i) => prop_assert!(cut < 24 || (cut - 24) % 80 != 0, "{:?}", i),
            }
        }
    }
}
