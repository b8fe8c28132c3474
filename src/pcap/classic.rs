//! Classic libpcap files: a 24-byte file header, then records of a 16-byte header and the
//! captured bytes. Both byte orders, microsecond and nanosecond magic numbers.

use super::bytes::Endian;
use super::{ts_from_parts, Issue, Oversized, OversizedRecord, MAX_CAPLEN};
use crate::source::RawPacket;

/// Length of the file header.
pub const FILE_HEADER_LEN: usize = 24;
/// Length of a record header.
pub const RECORD_HEADER_LEN: usize = 16;

/// Magic number of a microsecond file, as read in the file's own byte order.
pub const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// Magic number of Alexey Kuznetzov's modified format (microseconds, 24-byte record
/// headers carrying interface index, protocol and packet type), read by libpcap too.
pub const MAGIC_MODIFIED: u32 = 0xa1b2_cd34;
/// Record header length of the modified format.
pub const MODIFIED_RECORD_HEADER_LEN: usize = 24;
/// Magic number of a nanosecond file, as read in the file's own byte order.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;

pub(crate) const HDR_MAGIC: usize = 0;
pub(crate) const HDR_VERSION_MAJOR: usize = 4;
pub(crate) const HDR_VERSION_MINOR: usize = 6;
pub(crate) const HDR_SNAPLEN: usize = 16;
pub(crate) const HDR_LINKTYPE: usize = 20;

pub(crate) const REC_TS_SEC: usize = 0;
pub(crate) const REC_TS_FRAC: usize = 4;
pub(crate) const REC_CAPLEN: usize = 8;
pub(crate) const REC_WIRELEN: usize = 12;

/// The link type lives in the low 16 bits of the header field; the upper bits carry FCS
/// information (as libpcap's `LT_LINKTYPE`).
const LINKTYPE_MASK: u32 = 0xffff;

/// The classic file header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// Byte order of the file.
    pub endian: Endian,
    /// True for the nanosecond magic.
    pub nanosecond: bool,
    /// Bytes before each record's data: 16, or 24 in the modified format.
    pub record_header_len: usize,
    /// Format version (2.4 in practice).
    pub version_major: u16,
    /// Format minor version.
    pub version_minor: u16,
    /// Snapshot length from the header (0 is read as [`MAX_CAPLEN`]).
    pub snaplen: u32,
    /// LINKTYPE of every record (low 16 bits of the header field).
    pub linktype: u32,
}

/// The byte order, precision (true: nanoseconds) and record header length a magic number
/// stands for, if it is a classic magic.
pub fn detect_magic(first4: [u8; 4]) -> Option<(Endian, bool, usize)> {
    let le = u32::from_le_bytes(first4);
    let (endian, magic) = if [MAGIC_MICROS, MAGIC_NANOS, MAGIC_MODIFIED].contains(&le) {
        (Endian::Little, le)
    } else {
        (Endian::Big, le.swap_bytes())
    };
    match magic {
        MAGIC_MICROS => Some((endian, false, RECORD_HEADER_LEN)),
        MAGIC_NANOS => Some((endian, true, RECORD_HEADER_LEN)),
        MAGIC_MODIFIED => Some((endian, false, MODIFIED_RECORD_HEADER_LEN)),
        _ => None,
    }
}

impl FileHeader {
    /// Parse the file header at the start of `buf`.
    ///
    /// # Errors
    /// An [`Issue`] of kind `Format` for a short header or an unknown magic number.
    pub fn parse(buf: &[u8]) -> Result<FileHeader, Issue> {
        if buf.len() < FILE_HEADER_LEN {
            return Err(Issue::format(
                0,
                0,
                format!(
                    "truncated pcap file header: need {FILE_HEADER_LEN} bytes, have {}",
                    buf.len()
                ),
            ));
        }
        let magic: [u8; 4] = buf[HDR_MAGIC..HDR_MAGIC + 4]
            .try_into()
            .map_err(|_| bad_magic())?;
        let (endian, nanosecond, record_header_len) = detect_magic(magic).ok_or_else(bad_magic)?;
        let short = || Issue::format(0, 0, "truncated pcap file header");
        let snaplen = endian.u32(buf, HDR_SNAPLEN).ok_or_else(short)?;
        Ok(FileHeader {
            endian,
            nanosecond,
            record_header_len,
            version_major: endian.u16(buf, HDR_VERSION_MAJOR).ok_or_else(short)?,
            version_minor: endian.u16(buf, HDR_VERSION_MINOR).ok_or_else(short)?,
            snaplen: if snaplen == 0 { MAX_CAPLEN } else { snaplen },
            linktype: endian.u32(buf, HDR_LINKTYPE).ok_or_else(short)? & LINKTYPE_MASK,
        })
    }
}

fn bad_magic() -> Issue {
    Issue::format(0, 0, "not a pcap file: unknown magic number")
}

/// Walks the records of a classic file.
///
/// A record longer than the header's snaplen (up to [`MAX_CAPLEN`]) is read whole and
/// counted in [`ClassicCursor::oversized`]; a strict cursor reports it as a format error.
#[derive(Clone, Debug)]
pub struct ClassicCursor {
    header: FileHeader,
    unit_ns: u32,
    /// Largest caplen read without note: min(snaplen, MAX_CAPLEN).
    max_caplen: u32,
    offset: usize,
    index: u64,
    strict: bool,
    oversized: Oversized,
}

impl ClassicCursor {
    /// A cursor after the file header of `buf`.
    ///
    /// # Errors
    /// See [`FileHeader::parse`].
    pub fn new(buf: &[u8]) -> Result<ClassicCursor, Issue> {
        let header = FileHeader::parse(buf)?;
        Ok(ClassicCursor {
            header,
            unit_ns: if header.nanosecond { 1 } else { 1_000 },
            max_caplen: header.snaplen.min(MAX_CAPLEN),
            offset: FILE_HEADER_LEN,
            index: 0,
            strict: false,
            oversized: Oversized::default(),
        })
    }

    /// Whether a record longer than the snaplen is an error (`true`) or read whole.
    pub fn set_strict(&mut self, strict: bool) {
        self.strict = strict;
    }

    /// The records read whole although longer than the snaplen.
    pub fn oversized(&self) -> &Oversized {
        &self.oversized
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// Byte offset of the next record.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Records read so far.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Go on from the record that starts at `offset` (a boundary found by
    /// [`split`](super::split)), counting records from 0 there.
    pub fn seek(&mut self, offset: usize) {
        self.offset = offset;
        self.index = 0;
    }

    /// The next packet of `buf` (the same buffer given to [`ClassicCursor::new`]).
    ///
    /// # Errors
    /// `Truncated` when `buf` ends inside the record; `Format` for a caplen above
    /// [`MAX_CAPLEN`], or above the file's snaplen when strict. The cursor does not
    /// advance on error.
    #[inline(always)]
    pub fn next<'a>(&mut self, buf: &'a [u8]) -> Result<Option<RawPacket<'a>>, Issue> {
        match self.next_common(buf) {
            Some(p) => Ok(Some(p)),
            None => self.next_checked(buf),
        }
    }

    /// The common record, read with one bounds check for its header and one for its data: a
    /// 16-byte header, a caplen within the snaplen, all of it in `buf`. `None` for anything
    /// else (the end, a cut record, an oversized one, the modified format), which
    /// [`next`](Self::next) reads: the cursor has then not moved.
    #[inline(always)]
    pub fn next_common<'a>(&mut self, buf: &'a [u8]) -> Option<RawPacket<'a>> {
        let (p, end) = self.peek_common(buf)?;
        self.step_to(end);
        Some(p)
    }

    /// [`next_common`](Self::next_common) without moving the cursor: the record and the
    /// offset after it, for [`step_to`](Self::step_to).
    #[inline(always)]
    pub fn peek_common<'a>(&self, buf: &'a [u8]) -> Option<(RawPacket<'a>, usize)> {
        if self.header.record_header_len != RECORD_HEADER_LEN {
            return None;
        }
        let start = self.offset;
        let h: &[u8; RECORD_HEADER_LEN] =
            buf.get(start..start + RECORD_HEADER_LEN)?.try_into().ok()?;
        let word = |at: usize| u32::from_le_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]]);
        let (mut sec, mut frac) = (word(REC_TS_SEC), word(REC_TS_FRAC));
        let (mut caplen, mut wirelen) = (word(REC_CAPLEN), word(REC_WIRELEN));
        if self.header.endian == Endian::Big {
            (sec, frac) = (sec.swap_bytes(), frac.swap_bytes());
            (caplen, wirelen) = (caplen.swap_bytes(), wirelen.swap_bytes());
        }
        if caplen > self.max_caplen {
            return None;
        }
        let from = start + RECORD_HEADER_LEN;
        let end = from + caplen as usize;
        let data = buf.get(from..end)?;
        let p = RawPacket {
            ts_ns: ts_from_parts(sec, frac, self.unit_ns),
            caplen,
            wirelen,
            linktype: self.header.linktype,
            data,
        };
        Some((p, end))
    }

    /// Move past the record [`peek_common`](Self::peek_common) read, which ends at `end`.
    #[inline(always)]
    pub fn step_to(&mut self, end: usize) {
        self.offset = end;
        self.index += 1;
    }

    /// [`next`](Self::next) for every record: the end, cut and oversized records and the
    /// modified format's 24-byte headers.
    #[inline(never)]
    fn next_checked<'a>(&mut self, buf: &'a [u8]) -> Result<Option<RawPacket<'a>>, Issue> {
        let start = self.offset;
        let rest = buf.get(start..).unwrap_or_default();
        if rest.is_empty() {
            return Ok(None);
        }
        let e = self.header.endian;
        let truncated = |need: usize| Issue::truncated(self.index, start, need, rest.len());
        let (Some(sec), Some(frac), Some(caplen), Some(wirelen)) = (
            e.u32(rest, REC_TS_SEC),
            e.u32(rest, REC_TS_FRAC),
            e.u32(rest, REC_CAPLEN),
            e.u32(rest, REC_WIRELEN),
        ) else {
            return Err(truncated(self.header.record_header_len));
        };
        let oversized = caplen > self.max_caplen;
        if oversized && (caplen > MAX_CAPLEN || self.strict) {
            return Err(self.bad_caplen(caplen));
        }
        let hdr_len = self.header.record_header_len;
        let end = hdr_len + caplen as usize;
        let Some(data) = rest.get(hdr_len..end) else {
            return Err(truncated(end));
        };
        if oversized {
            self.oversized.note(OversizedRecord {
                index: self.index,
                offset: start as u64,
                caplen,
                snaplen: self.header.snaplen,
                interface: None,
            });
        }
        self.offset = start + end;
        self.index += 1;
        Ok(Some(RawPacket {
            ts_ns: ts_from_parts(sec, frac, self.unit_ns),
            caplen,
            wirelen,
            linktype: self.header.linktype,
            data,
        }))
    }

    #[cold]
    fn bad_caplen(&self, caplen: u32) -> Issue {
        let message = if caplen > MAX_CAPLEN {
            format!("record caplen {caplen} exceeds the maximum of {MAX_CAPLEN} bytes")
        } else {
            format!(
                "record caplen {caplen} exceeds the file's snaplen {}",
                self.header.snaplen
            )
        };
        Issue::format(self.index, self.offset, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::IssueKind;

    /// A big-endian nanosecond file, snaplen 128, linktype 101 (raw IP), two records.
    static BE_NANOS: [u8; 24 + 16 + 4 + 16 + 2] = [
        0xa1, 0xb2, 0x3c, 0x4d, 0x00, 0x02, 0x00, 0x04, 0, 0, 0, 0, 0, 0, 0, 0, //
        0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x65, //
        0x65, 0x53, 0xf1, 0x00, 0x00, 0x00, 0x00, 0x07, 0, 0, 0, 4, 0, 0, 0, 60, //
        1, 2, 3, 4, //
        0x65, 0x53, 0xf1, 0x01, 0x3b, 0x9a, 0xc9, 0xff, 0, 0, 0, 2, 0, 0, 0, 2, //
        5, 6,
    ];

    /// A little-endian microsecond file, snaplen 65535, Ethernet, one record.
    static LE_MICROS: [u8; 24 + 16 + 3] = [
        0xd4, 0xc3, 0xb2, 0xa1, 0x02, 0x00, 0x04, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, //
        0xff, 0xff, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, //
        0x00, 0xf1, 0x53, 0x65, 0x40, 0x42, 0x0f, 0x00, 3, 0, 0, 0, 9, 0, 0, 0, //
        7, 8, 9,
    ];

    use crate::pcap::test_support::read_all as all;

    #[test]
    fn big_endian_nanoseconds() {
        let h = FileHeader::parse(&BE_NANOS).unwrap();
        assert_eq!(
            (h.endian, h.nanosecond, h.snaplen, h.linktype),
            (Endian::Big, true, 128, 101)
        );
        let (pkts, err) = all(&BE_NANOS);
        assert_eq!(err, None);
        assert_eq!(
            pkts,
            vec![
                (1_700_000_000_000_000_007, 4, 60, 101, vec![1, 2, 3, 4]),
                (1_700_000_001_999_999_999, 2, 2, 101, vec![5, 6]),
            ]
        );
    }

    #[test]
    fn little_endian_microseconds() {
        let (pkts, err) = all(&LE_MICROS);
        assert_eq!(err, None);
        // usec 1_000_000 is out of range but kept as written, as libpcap does.
        assert_eq!(
            pkts,
            vec![(1_700_000_001_000_000_000, 3, 9, 1, vec![7, 8, 9])]
        );
    }

    /// The records of a walk, the issue that ended it and the oversized count.
    type Walked = (Vec<crate::pcap::test_support::Row>, Option<Issue>, u64);

    /// Every record of `buf` through `next` (the common fast path first) and through
    /// `next_checked` alone, with the issue that ended each walk and the oversized count.
    fn both_paths(buf: &[u8], strict: bool) -> [Walked; 2] {
        [false, true].map(|checked_only| {
            let mut c = ClassicCursor::new(buf).unwrap();
            c.set_strict(strict);
            let mut out = Vec::new();
            let issue = loop {
                let next = if checked_only {
                    c.next_checked(buf)
                } else {
                    c.next(buf)
                };
                match next {
                    Ok(Some(p)) => {
                        out.push((p.ts_ns, p.caplen, p.wirelen, p.linktype, p.data.to_vec()))
                    }
                    Ok(None) => break None,
                    Err(e) => break Some(e),
                }
            };
            (out, issue, c.oversized().count)
        })
    }

    proptest::proptest! {
        /// The fast path reads what the checked path reads, record by record, in both byte
        /// orders and precisions, with records above the snaplen (read whole, or an error
        /// when strict), records above the maximum and a file cut anywhere.
        #[test]
        fn fast_path_agrees_with_the_checked_path(
            big in proptest::bool::ANY,
            nanos in proptest::bool::ANY,
            snaplen in 0u32..80,
            records in proptest::collection::vec((0u32..100, 0u32..2_000_000_000, 0u32..100), 0..12),
            huge in proptest::option::of(0usize..12),
            cut in proptest::option::of(0usize..2_000),
            strict in proptest::bool::ANY,
        ) {
            let w = |v: u32| if big { v.to_be_bytes() } else { v.to_le_bytes() };
            let mut buf = Vec::new();
            buf.extend(w(if nanos { MAGIC_NANOS } else { MAGIC_MICROS }));
            buf.extend(if big { [0, 2, 0, 4] } else { [2, 0, 4, 0] });
            buf.extend([0; 8]);
            buf.extend(w(snaplen));
            buf.extend(w(1));
            for (i, (caplen, frac, extra)) in records.iter().enumerate() {
                let caplen = if huge == Some(i) { MAX_CAPLEN + 1 } else { *caplen };
                buf.extend(w(1_700_000_000 + i as u32));
                buf.extend(w(*frac));
                buf.extend(w(caplen));
                buf.extend(w(caplen.saturating_add(*extra)));
                buf.extend((0..caplen.min(100)).map(|b| b as u8 ^ i as u8));
            }
            if let Some(cut) = cut {
                buf.truncate(buf.len().min(24 + cut));
            }
            let [fast, checked] = both_paths(&buf, strict);
            proptest::prop_assert_eq!(fast, checked);
        }
    }

    #[test]
    fn truncated_last_record_after_complete_packets() {
        let buf = &BE_NANOS[..BE_NANOS.len() - 1];
        let (pkts, err) = all(buf);
        assert_eq!(pkts.len(), 1);
        assert_eq!(err, Some(Issue::truncated(1, 44, 18, 17)));
        let buf = &BE_NANOS[..24 + 20 + 5];
        let (pkts, err) = all(buf);
        assert_eq!(pkts.len(), 1);
        assert_eq!(err, Some(Issue::truncated(1, 44, 16, 5)));
    }

    /// BE_NANOS with a snaplen of 3: its first record (caplen 4) is longer than that.
    fn snaplen_3() -> Vec<u8> {
        let mut buf = BE_NANOS.to_vec();
        buf[HDR_SNAPLEN..HDR_SNAPLEN + 4].copy_from_slice(&3u32.to_be_bytes());
        buf
    }

    #[test]
    fn caplen_above_snaplen_is_read_whole_and_counted() {
        let buf = snaplen_3();
        let mut c = ClassicCursor::new(&buf).unwrap();
        let p = c.next(&buf).unwrap().unwrap();
        assert_eq!((p.caplen, p.data), (4, &[1u8, 2, 3, 4][..]));
        assert!(c.next(&buf).unwrap().is_some());
        assert!(c.next(&buf).unwrap().is_none());
        let o = c.oversized();
        assert_eq!(o.count, 1);
        assert_eq!(
            o.first,
            Some(OversizedRecord {
                index: 0,
                offset: 24,
                caplen: 4,
                snaplen: 3,
                interface: None
            })
        );
        let m = o.message(std::path::Path::new("x.pcap")).unwrap();
        assert!(
            m.starts_with(
                "x.pcap: record 0 at byte offset 24 has caplen 4, above the file's snaplen 3"
            ),
            "{m}"
        );
    }

    #[test]
    fn caplen_above_snaplen_is_format_when_strict() {
        let buf = snaplen_3();
        let mut c = ClassicCursor::new(&buf).unwrap();
        c.set_strict(true);
        let err = c.next(&buf).unwrap_err();
        assert_eq!((err.index, err.offset), (0, 24));
        assert!(
            matches!(&err.kind, IssueKind::Format(m) if m.contains("exceeds the file's snaplen 3")),
            "{err:?}"
        );
        assert_eq!(c.oversized().count, 0);
    }

    #[test]
    fn oversized_record_past_the_end_is_truncation() {
        let buf = snaplen_3();
        let (pkts, err) = all(&buf[..24 + 16 + 3]);
        assert!(pkts.is_empty());
        assert_eq!(err, Some(Issue::truncated(0, 24, 20, 19)));
    }

    #[test]
    fn caplen_above_max_is_format_even_lax() {
        let mut buf = LE_MICROS.to_vec();
        buf[16..20].copy_from_slice(&0u32.to_le_bytes()); // snaplen 0 reads as MAX_CAPLEN
        buf[24 + 8..24 + 12].copy_from_slice(&(MAX_CAPLEN + 1).to_le_bytes());
        let (_, err) = all(&buf);
        assert!(
            matches!(&err.unwrap().kind, IssueKind::Format(m) if m.contains("maximum of 262144"))
        );
        // A snaplen above the maximum does not raise it.
        buf[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        let (_, err) = all(&buf);
        assert!(
            matches!(&err.unwrap().kind, IssueKind::Format(m) if m.contains("maximum of 262144"))
        );
    }

    #[test]
    fn modified_format_has_24_byte_records() {
        let mut buf = LE_MICROS[..24].to_vec();
        buf[..4].copy_from_slice(&MAGIC_MODIFIED.to_le_bytes());
        buf.extend(&LE_MICROS[24..40]);
        buf.extend([7, 0, 0, 0, 0x08, 0x00, 4, 0]); // ifindex, protocol, pkt_type, pad
        buf.extend(&LE_MICROS[40..]);
        let (pkts, err) = all(&buf);
        assert_eq!(err, None);
        assert_eq!(
            pkts,
            vec![(1_700_000_001_000_000_000, 3, 9, 1, vec![7, 8, 9])]
        );
        let (pkts, err) = all(&buf[..buf.len() - 1]);
        assert!(pkts.is_empty());
        assert_eq!(err, Some(Issue::truncated(0, 24, 27, 26)));
    }

    #[test]
    fn bad_header() {
        assert!(
            matches!(FileHeader::parse(&LE_MICROS[..23]), Err(Issue { kind: IssueKind::Format(m), .. }) if m.contains("need 24 bytes, have 23"))
        );
        let mut buf = LE_MICROS.to_vec();
        buf[0] = 0;
        assert!(
            matches!(FileHeader::parse(&buf), Err(Issue { kind: IssueKind::Format(m), .. }) if m.contains("magic"))
        );
    }
}
