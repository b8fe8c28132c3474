//! pcapng files: a sequence of blocks (type, total length, body, total length again).
//!
//! Supported: section header blocks in either byte order (several sections per file),
//! interface description blocks with `if_tsresol` (power of 10 or of 2) and `if_tsoffset`,
//! several interfaces with different link types, enhanced, simple and obsolete packet
//! blocks. Every other block type is skipped by its length.
//!
//! A record here is a block: issue indexes count blocks, not packets.

use super::bytes::Endian;
use super::{Issue, Oversized, OversizedRecord, MAX_CAPLEN};
use crate::source::RawPacket;

/// Section header block type (a palindrome, the same in both byte orders).
pub const BLOCK_SHB: u32 = 0x0a0d_0d0a;
/// Interface description block.
pub const BLOCK_IDB: u32 = 0x0000_0001;
/// Obsolete packet block.
pub const BLOCK_PB: u32 = 0x0000_0002;
/// Simple packet block.
pub const BLOCK_SPB: u32 = 0x0000_0003;
/// Enhanced packet block.
pub const BLOCK_EPB: u32 = 0x0000_0006;
/// Byte-order magic of a section header, as read in the section's byte order.
pub const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

/// Largest block accepted (16 MiB, libpcap's own limit); a longer length is corruption.
pub const MAX_BLOCK_LEN: usize = 16 * 1024 * 1024;

/// Block type + leading total length.
const BLOCK_HEADER_LEN: usize = 8;
/// Header + trailing total length.
const BLOCK_OVERHEAD: usize = 12;

// Offsets within a block body.
const SHB_BYTE_ORDER: usize = 0;
const SHB_VERSION_MAJOR: usize = 4;
const SHB_FIXED_LEN: usize = 16;
const IDB_LINKTYPE: usize = 0;
const IDB_SNAPLEN: usize = 4;
const IDB_OPTIONS: usize = 8;
const EPB_INTERFACE: usize = 0;
const EPB_TS_HIGH: usize = 4;
const EPB_TS_LOW: usize = 8;
const EPB_CAPLEN: usize = 12;
const EPB_ORIGLEN: usize = 16;
const EPB_DATA: usize = 20;
const PB_INTERFACE: usize = 0;
const PB_TS_HIGH: usize = 4;
const PB_TS_LOW: usize = 8;
const PB_CAPLEN: usize = 12;
const PB_ORIGLEN: usize = 16;
const PB_DATA: usize = 20;
const SPB_ORIGLEN: usize = 0;
const SPB_DATA: usize = 4;

const OPT_END: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// How an interface's timestamp units become nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TsScale {
    /// Units are 10^-9 / factor seconds or coarser: multiply.
    Mul(u64),
    /// Units finer than a nanosecond (10^-k, k > 9): divide.
    Div(u64),
    /// Units of 2^-k seconds.
    Pow2(u32),
}

impl TsScale {
    fn from_tsresol(v: u8) -> TsScale {
        let exp = u32::from(v & 0x7f);
        if v & 0x80 != 0 {
            return TsScale::Pow2(exp);
        }
        if exp <= 9 {
            TsScale::Mul(10u64.pow(9 - exp))
        } else {
            // 10^(exp-9) overflows u64 past exp 28; such units round every timestamp to 0.
            match 10u64.checked_pow(exp - 9) {
                Some(d) => TsScale::Div(d),
                None => TsScale::Mul(0),
            }
        }
    }

    #[inline]
    fn to_ns(self, units: u64) -> i128 {
        match self {
            TsScale::Mul(m) => units as i128 * m as i128,
            TsScale::Div(d) => (units / d) as i128,
            TsScale::Pow2(k) => {
                let ns = units as u128 * 1_000_000_000;
                (if k >= 128 { 0 } else { ns >> k }) as i128
            }
        }
    }
}

/// One interface description of the current section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interface {
    /// LINKTYPE of the interface's packets.
    pub linktype: u32,
    /// Snapshot length (0: no limit).
    pub snaplen: u32,
    scale: TsScale,
    /// `if_tsoffset`, seconds added to every timestamp.
    pub ts_offset_s: i64,
}

impl Interface {
    #[inline]
    fn ts_ns(&self, units: u64) -> i64 {
        let ns = self.scale.to_ns(units) + self.ts_offset_s as i128 * 1_000_000_000;
        ns.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

/// What the cursor found in one block.
enum Step<'a> {
    Packet(RawPacket<'a>),
    Other,
}

/// The fields an enhanced or obsolete packet block carries, read in its own layout.
struct PacketFields {
    /// Interface id.
    id: u32,
    /// Timestamp in the interface's units.
    ts: u64,
    caplen: u32,
    wirelen: u32,
    /// Offset of the packet data in the block body.
    at: usize,
    /// The block's name in error messages.
    kind: &'static str,
}

/// Walks the blocks of a pcapng file and yields its packets.
///
/// An enhanced or obsolete packet block longer than its interface's snaplen (up to
/// [`MAX_CAPLEN`]) is read whole and counted in [`NgCursor::oversized`]; a strict cursor
/// reports it as a format error.
#[derive(Clone, Debug)]
pub struct NgCursor {
    endian: Endian,
    interfaces: Vec<Interface>,
    offset: usize,
    index: u64,
    strict: bool,
    oversized: Oversized,
}

impl NgCursor {
    /// A cursor at the start of `buf`, whose first block must be a section header.
    ///
    /// # Errors
    /// An [`Issue`] of kind `Format` when the first section header is short or invalid.
    pub fn new(buf: &[u8]) -> Result<NgCursor, Issue> {
        let mut c = NgCursor {
            endian: Endian::Little,
            interfaces: Vec::new(),
            offset: 0,
            index: 0,
            strict: false,
            oversized: Oversized::default(),
        };
        // The first section header is the file header: any problem with it is a format error.
        match c.block(buf) {
            Ok(_) => Ok(c),
            Err(mut issue) => {
                if let super::IssueKind::Truncated { need, have } = issue.kind {
                    issue.kind = super::IssueKind::Format(format!(
                        "truncated pcapng section header: need {need} bytes, have {have}"
                    ));
                }
                Err(issue)
            }
        }
    }

    /// Whether a packet longer than its interface's snaplen is an error (`true`) or read
    /// whole.
    pub fn set_strict(&mut self, strict: bool) {
        self.strict = strict;
    }

    /// The packets read whole although longer than their interface's snaplen.
    pub fn oversized(&self) -> &Oversized {
        &self.oversized
    }

    /// Byte order of the current section.
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Interfaces of the current section, in interface-id order.
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// Byte offset of the next block.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Blocks read so far.
    pub fn index(&self) -> u64 {
        self.index
    }

    /// The link type of the first interface, reading ahead (at most 64 blocks) without
    /// moving this cursor; `None` if no interface is described before the first packet.
    pub fn peek_linktype(&self, buf: &[u8]) -> Option<u32> {
        let mut ahead = self.clone();
        for _ in 0..64 {
            if let Some(i) = ahead.interfaces.first() {
                return Some(i.linktype);
            }
            match ahead.block(buf) {
                Ok(Some(Step::Other)) => {}
                _ => return None,
            }
        }
        None
    }

    /// The next packet of `buf` (the same buffer given to [`NgCursor::new`]).
    ///
    /// # Errors
    /// `Truncated` when `buf` ends inside a block; `Format` for an inconsistent block
    /// length, a bad section header, an unknown interface id or an impossible caplen
    /// (above [`MAX_CAPLEN`] or its block; above its interface's snaplen when strict).
    /// The cursor does not advance on error.
    #[inline]
    pub fn next<'a>(&mut self, buf: &'a [u8]) -> Result<Option<RawPacket<'a>>, Issue> {
        loop {
            match self.block(buf)? {
                None => return Ok(None),
                Some(Step::Packet(p)) => return Ok(Some(p)),
                Some(Step::Other) => {}
            }
        }
    }

    /// Read one block and advance past it.
    fn block<'a>(&mut self, buf: &'a [u8]) -> Result<Option<Step<'a>>, Issue> {
        let start = self.offset;
        let rest = buf.get(start..).unwrap_or_default();
        if rest.is_empty() {
            return Ok(None);
        }
        let index = self.index;
        let truncated = |need: usize| Issue::truncated(index, start, need, rest.len());
        let format = |msg: String| Issue::format(index, start, msg);

        let mut endian = self.endian;
        let block_type = endian
            .u32(rest, 0)
            .ok_or_else(|| truncated(BLOCK_HEADER_LEN))?;
        if block_type == BLOCK_SHB {
            let bom = rest
                .get(BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + 4)
                .ok_or_else(|| truncated(BLOCK_OVERHEAD))?;
            let bom: [u8; 4] = bom.try_into().map_err(|_| truncated(BLOCK_OVERHEAD))?;
            endian = match u32::from_le_bytes(bom) {
                BYTE_ORDER_MAGIC => Endian::Little,
                m if m.swap_bytes() == BYTE_ORDER_MAGIC => Endian::Big,
                m => {
                    return Err(format(format!(
                        "section header has an invalid byte-order magic 0x{m:08x}"
                    )))
                }
            };
        } else if start == 0 {
            return Err(format(
                "not a pcapng file: the first block is not a section header".into(),
            ));
        }
        let len = endian
            .u32(rest, 4)
            .ok_or_else(|| truncated(BLOCK_HEADER_LEN))? as usize;
        if len < BLOCK_OVERHEAD || len % 4 != 0 {
            return Err(format(format!(
                "inconsistent block length {len}: must be a multiple of 4 and at least {BLOCK_OVERHEAD}"
            )));
        }
        if len > MAX_BLOCK_LEN {
            return Err(format(format!(
                "block length {len} exceeds the maximum of {MAX_BLOCK_LEN} bytes"
            )));
        }
        let block = rest.get(..len).ok_or_else(|| truncated(len))?;
        let trailer = endian.u32(block, len - 4).ok_or_else(|| truncated(len))? as usize;
        if trailer != len {
            return Err(format(format!(
                "inconsistent block length: the header says {len}, the trailer says {trailer}"
            )));
        }
        let body = block.get(BLOCK_HEADER_LEN..len - 4).unwrap_or_default();

        let step = match block_type {
            BLOCK_SHB => {
                if body.len() < SHB_FIXED_LEN {
                    return Err(format(format!(
                        "section header body too short: {} bytes",
                        body.len()
                    )));
                }
                let _ = SHB_BYTE_ORDER;
                let major = endian.u16(body, SHB_VERSION_MAJOR).unwrap_or(0);
                if major != 1 {
                    return Err(format(format!("unsupported pcapng major version {major}")));
                }
                self.endian = endian;
                self.interfaces.clear();
                Step::Other
            }
            BLOCK_IDB => {
                let iface = parse_idb(endian, body).map_err(format)?;
                self.interfaces.push(iface);
                Step::Other
            }
            BLOCK_EPB => {
                let (Some(id), Some(hi), Some(lo), Some(caplen), Some(wirelen)) = (
                    endian.u32(body, EPB_INTERFACE),
                    endian.u32(body, EPB_TS_HIGH),
                    endian.u32(body, EPB_TS_LOW),
                    endian.u32(body, EPB_CAPLEN),
                    endian.u32(body, EPB_ORIGLEN),
                ) else {
                    return Err(format(format!(
                        "enhanced packet block too short: {} bytes",
                        len
                    )));
                };
                let ts = (u64::from(hi) << 32) | u64::from(lo);
                let fields = PacketFields {
                    id,
                    ts,
                    caplen,
                    wirelen,
                    at: EPB_DATA,
                    kind: "enhanced",
                };
                self.packet(body, fields, &format)?
            }
            BLOCK_PB => {
                let (Some(id), Some(hi), Some(lo), Some(caplen), Some(wirelen)) = (
                    endian.u16(body, PB_INTERFACE),
                    endian.u32(body, PB_TS_HIGH),
                    endian.u32(body, PB_TS_LOW),
                    endian.u32(body, PB_CAPLEN),
                    endian.u32(body, PB_ORIGLEN),
                ) else {
                    return Err(format(format!("packet block too short: {} bytes", len)));
                };
                let ts = (u64::from(hi) << 32) | u64::from(lo);
                let id = u32::from(id);
                let fields = PacketFields {
                    id,
                    ts,
                    caplen,
                    wirelen,
                    at: PB_DATA,
                    kind: "obsolete",
                };
                self.packet(body, fields, &format)?
            }
            BLOCK_SPB => {
                let wirelen = endian.u32(body, SPB_ORIGLEN).ok_or_else(|| {
                    format(format!("simple packet block too short: {} bytes", len))
                })?;
                let iface = self.interface(0, &format)?;
                let room = body.len() - SPB_DATA.min(body.len());
                let mut caplen = (wirelen as usize).min(room);
                if iface.snaplen != 0 {
                    caplen = caplen.min(iface.snaplen as usize);
                }
                let caplen = caplen.min(MAX_CAPLEN as usize) as u32;
                let data = packet_data(body, SPB_DATA, caplen, "simple", &format)?;
                Step::Packet(RawPacket {
                    ts_ns: 0,
                    caplen,
                    wirelen,
                    linktype: iface.linktype,
                    data,
                })
            }
            _ => Step::Other,
        };
        self.offset = start + len;
        self.index += 1;
        Ok(Some(step))
    }

    /// The packet of an enhanced or obsolete packet block: its interface's link type,
    /// snaplen and timestamp resolution applied to the block's fields.
    #[inline]
    fn packet<'a>(
        &mut self,
        body: &'a [u8],
        f: PacketFields,
        format: &impl Fn(String) -> Issue,
    ) -> Result<Step<'a>, Issue> {
        let iface = self.interface(f.id, format)?;
        let oversized = iface.snaplen != 0 && f.caplen > iface.snaplen;
        if oversized && self.strict {
            return Err(format(format!(
                "packet caplen {} exceeds the snaplen {} of interface {}",
                f.caplen, iface.snaplen, f.id
            )));
        }
        let data = packet_data(body, f.at, f.caplen, f.kind, format)?;
        if oversized {
            self.oversized.note(OversizedRecord {
                index: self.index,
                offset: self.offset as u64,
                caplen: f.caplen,
                snaplen: iface.snaplen,
                interface: Some(f.id),
            });
        }
        Ok(Step::Packet(RawPacket {
            ts_ns: iface.ts_ns(f.ts),
            caplen: f.caplen,
            wirelen: f.wirelen,
            linktype: iface.linktype,
            data,
        }))
    }

    #[inline]
    fn interface(&self, id: u32, format: &impl Fn(String) -> Issue) -> Result<Interface, Issue> {
        self.interfaces.get(id as usize).copied().ok_or_else(|| {
            format(format!(
                "packet refers to interface {id}, but the section describes {}",
                self.interfaces.len()
            ))
        })
    }
}

#[inline]
fn packet_data<'a>(
    body: &'a [u8],
    at: usize,
    caplen: u32,
    kind: &str,
    format: &impl Fn(String) -> Issue,
) -> Result<&'a [u8], Issue> {
    if caplen > MAX_CAPLEN {
        return Err(format(format!(
            "{kind} packet caplen {caplen} exceeds the maximum of {MAX_CAPLEN} bytes"
        )));
    }
    body.get(at..at + caplen as usize).ok_or_else(|| {
        format(format!(
            "{kind} packet caplen {caplen} exceeds its block ({} bytes of data)",
            body.len().saturating_sub(at)
        ))
    })
}

fn parse_idb(endian: Endian, body: &[u8]) -> Result<Interface, String> {
    let (Some(linktype), Some(snaplen)) = (
        endian.u16(body, IDB_LINKTYPE),
        endian.u32(body, IDB_SNAPLEN),
    ) else {
        return Err(format!(
            "interface description block too short: {} bytes of body",
            body.len()
        ));
    };
    let mut iface = Interface {
        linktype: u32::from(linktype),
        snaplen,
        scale: TsScale::Mul(1_000),
        ts_offset_s: 0,
    };
    let mut at = IDB_OPTIONS;
    while let (Some(code), Some(len)) = (endian.u16(body, at), endian.u16(body, at + 2)) {
        let value_at = at + 4;
        let len = usize::from(len);
        let Some(value) = body.get(value_at..value_at + len) else {
            return Err(format!(
                "interface option {code} of length {len} overruns its block"
            ));
        };
        match code {
            OPT_END => break,
            OPT_IF_TSRESOL if len == 1 => iface.scale = TsScale::from_tsresol(value[0]),
            OPT_IF_TSOFFSET if len == 8 => {
                iface.ts_offset_s = endian.u64(value, 0).unwrap_or(0) as i64
            }
            _ => {}
        }
        at = value_at + len.div_ceil(4) * 4;
    }
    Ok(iface)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::pcap::IssueKind;

    /// Little-endian section: IDB 0 Ethernet (µs default), IDB 1 raw IP with if_tsresol=9
    /// (ns) and if_tsoffset=10 s, an EPB on each, an unknown block, a SPB, an obsolete PB.
    fn sample(e: Endian) -> Vec<u8> {
        let mut b = Builder::new(e);
        b.shb();
        b.idb(1, 0, &[]);
        b.idb(
            101,
            0,
            &[(OPT_IF_TSRESOL, vec![9]), (OPT_IF_TSOFFSET, b.u64b(10))],
        );
        b.epb(0, 1_700_000_000_000_001, &[0xaa; 5], 60);
        b.block(0x0bad, &[1, 2, 3, 4]);
        b.epb(1, 7, &[0x45, 0, 0], 3);
        b.spb(4, &[9, 9, 9, 9]);
        b.pb(1, 2, &[1, 2]);
        b.out
    }

    pub(crate) struct Builder {
        pub e: Endian,
        pub out: Vec<u8>,
    }

    impl Builder {
        pub fn new(e: Endian) -> Self {
            Builder { e, out: Vec::new() }
        }
        fn u16b(&self, v: u16) -> Vec<u8> {
            match self.e {
                Endian::Little => v.to_le_bytes().to_vec(),
                Endian::Big => v.to_be_bytes().to_vec(),
            }
        }
        fn u32b(&self, v: u32) -> Vec<u8> {
            match self.e {
                Endian::Little => v.to_le_bytes().to_vec(),
                Endian::Big => v.to_be_bytes().to_vec(),
            }
        }
        pub fn u64b(&self, v: u64) -> Vec<u8> {
            match self.e {
                Endian::Little => v.to_le_bytes().to_vec(),
                Endian::Big => v.to_be_bytes().to_vec(),
            }
        }
        pub fn block(&mut self, kind: u32, body: &[u8]) {
            let mut body = body.to_vec();
            while body.len() % 4 != 0 {
                body.push(0);
            }
            let len = (body.len() + 12) as u32;
            let mut blk = self.u32b(kind);
            blk.extend(self.u32b(len));
            blk.extend(body);
            blk.extend(self.u32b(len));
            self.out.extend(blk);
        }
        pub fn shb(&mut self) {
            let mut body = self.u32b(BYTE_ORDER_MAGIC);
            body.extend(self.u16b(1));
            body.extend(self.u16b(0));
            body.extend(u64::MAX.to_le_bytes());
            self.block(BLOCK_SHB, &body);
        }
        pub fn idb(&mut self, linktype: u16, snaplen: u32, opts: &[(u16, Vec<u8>)]) {
            let mut body = self.u16b(linktype);
            body.extend([0, 0]);
            body.extend(self.u32b(snaplen));
            for (code, v) in opts {
                body.extend(self.u16b(*code));
                body.extend(self.u16b(v.len() as u16));
                body.extend(v);
                while body.len() % 4 != 0 {
                    body.push(0);
                }
            }
            body.extend([0, 0, 0, 0]);
            self.block(BLOCK_IDB, &body);
        }
        pub fn epb(&mut self, iface: u32, ts: u64, data: &[u8], wirelen: u32) {
            let mut body = self.u32b(iface);
            body.extend(self.u32b((ts >> 32) as u32));
            body.extend(self.u32b(ts as u32));
            body.extend(self.u32b(data.len() as u32));
            body.extend(self.u32b(wirelen));
            body.extend(data);
            self.block(BLOCK_EPB, &body);
        }
        pub fn spb(&mut self, wirelen: u32, data: &[u8]) {
            let mut body = self.u32b(wirelen);
            body.extend(data);
            self.block(BLOCK_SPB, &body);
        }
        pub fn pb(&mut self, iface: u16, ts: u64, data: &[u8]) {
            let mut body = self.u16b(iface);
            body.extend([0, 0]);
            body.extend(self.u32b((ts >> 32) as u32));
            body.extend(self.u32b(ts as u32));
            body.extend(self.u32b(data.len() as u32));
            body.extend(self.u32b(data.len() as u32));
            body.extend(data);
            self.block(BLOCK_PB, &body);
        }
    }

    use crate::pcap::test_support::{read_all as all, Row};

    fn expected() -> Vec<Row> {
        vec![
            (1_700_000_000_000_001_000, 5, 60, 1, vec![0xaa; 5]),
            (10_000_000_007, 3, 3, 101, vec![0x45, 0, 0]),
            (0, 4, 4, 1, vec![9, 9, 9, 9]),
            (10_000_000_002, 2, 2, 101, vec![1, 2]),
        ]
    }

    #[test]
    fn both_byte_orders_two_interfaces() {
        for e in [Endian::Little, Endian::Big] {
            let buf = sample(e);
            let (pkts, err) = all(&buf);
            assert_eq!(err, None, "{e:?}");
            assert_eq!(pkts, expected(), "{e:?}");
        }
    }

    #[test]
    fn peek_linktype_reads_ahead_without_moving() {
        let buf = sample(Endian::Big);
        let c = NgCursor::new(&buf).unwrap();
        assert_eq!(c.peek_linktype(&buf), Some(1));
        assert_eq!(c.index(), 1);
    }

    #[test]
    fn several_sections_reset_interfaces_and_byte_order() {
        let mut buf = sample(Endian::Little);
        let mut b = Builder::new(Endian::Big);
        b.shb();
        b.idb(113, 0, &[(OPT_IF_TSRESOL, vec![0x80 | 10])]); // 2^-10 s units
        b.epb(0, 1024 * 3 + 512, &[1], 1);
        buf.extend(&b.out);
        let (pkts, err) = all(&buf);
        assert_eq!(err, None);
        assert_eq!(pkts.len(), 5);
        assert_eq!(pkts[4], (3_500_000_000, 1, 1, 113, vec![1]));
    }

    #[test]
    fn tsresol_variants() {
        assert_eq!(TsScale::from_tsresol(6).to_ns(5), 5_000);
        assert_eq!(TsScale::from_tsresol(0).to_ns(2), 2_000_000_000);
        assert_eq!(TsScale::from_tsresol(12).to_ns(5_000), 5);
        assert_eq!(
            TsScale::from_tsresol(0x80 | 20).to_ns(1 << 20),
            1_000_000_000
        );
        assert_eq!(TsScale::from_tsresol(0x7f).to_ns(u64::MAX), 0);
        assert_eq!(TsScale::from_tsresol(0xff).to_ns(u64::MAX), 0);
    }

    #[test]
    fn snaplen_limits_simple_packet_caplen() {
        let mut b = Builder::new(Endian::Little);
        b.shb();
        b.idb(1, 2, &[]);
        b.spb(100, &[1, 2, 3, 4]);
        let (pkts, err) = all(&b.out);
        assert_eq!(err, None);
        assert_eq!(pkts, vec![(0, 2, 100, 1, vec![1, 2])]);
    }

    #[test]
    fn inconsistent_length_is_format() {
        let mut buf = sample(Endian::Little);
        let n = buf.len();
        buf[n - 4] ^= 4; // trailer of the last block
        let (pkts, err) = all(&buf);
        assert_eq!(pkts.len(), 3);
        let err = err.unwrap();
        assert_eq!(err.index, 7);
        assert!(
            matches!(&err.kind, IssueKind::Format(m) if m.contains("trailer")),
            "{err:?}"
        );

        let mut buf = sample(Endian::Little);
        buf[28 + 4] = 13; // IDB length not a multiple of 4
        let (_, err) = all(&buf);
        let err = err.unwrap();
        assert_eq!((err.index, err.offset), (1, 28));
        assert!(matches!(&err.kind, IssueKind::Format(m) if m.contains("multiple of 4")));
    }

    #[test]
    fn truncated_last_block() {
        let buf = sample(Endian::Big);
        let cut = &buf[..buf.len() - 3];
        let (pkts, err) = all(cut);
        assert_eq!(pkts.len(), 3);
        assert!(matches!(err.unwrap().kind, IssueKind::Truncated { .. }));
    }

    fn two_snaplens() -> Vec<u8> {
        let mut b = Builder::new(Endian::Little);
        b.shb();
        b.idb(1, 0, &[]);
        b.idb(1, 4, &[]);
        b.epb(0, 0, &[1; 8], 8);
        b.epb(1, 0, &[1; 4], 8);
        b.epb(1, 0, &[1; 5], 8);
        b.epb(1, 0, &[2; 6], 8);
        b.out
    }

    #[test]
    fn caplen_above_interface_snaplen_is_read_whole_and_counted() {
        let buf = two_snaplens();
        let mut c = NgCursor::new(&buf).unwrap();
        let mut got = Vec::new();
        while let Some(p) = c.next(&buf).unwrap() {
            got.push(p.data.to_vec());
        }
        assert_eq!(got, vec![vec![1; 8], vec![1; 4], vec![1; 5], vec![2; 6]]);
        let o = c.oversized();
        assert_eq!(o.count, 2);
        let first = o.first.unwrap();
        assert_eq!(
            (first.index, first.caplen, first.snaplen, first.interface),
            (5, 5, 4, Some(1))
        );
        let m = o.message(std::path::Path::new("x.pcapng")).unwrap();
        assert!(
            m.contains("has caplen 5, above the snaplen 4 of interface 1;"),
            "{m}"
        );
    }

    #[test]
    fn caplen_above_interface_snaplen_is_format_when_strict() {
        let buf = two_snaplens();
        let mut c = NgCursor::new(&buf).unwrap();
        c.set_strict(true);
        let mut n = 0;
        let err = loop {
            match c.next(&buf) {
                Ok(Some(_)) => n += 1,
                Ok(None) => panic!("expected an error"),
                Err(e) => break e,
            }
        };
        assert_eq!((n, err.index), (2, 5));
        assert!(
            matches!(&err.kind, IssueKind::Format(m) if m.contains("exceeds the snaplen 4 of interface 1")),
            "{err:?}"
        );
    }

    #[test]
    fn unknown_interface_and_oversized_caplen() {
        let mut b = Builder::new(Endian::Little);
        b.shb();
        b.epb(0, 0, &[1], 1);
        let (_, err) = all(&b.out);
        assert!(matches!(err.unwrap().kind, IssueKind::Format(m) if m.contains("interface 0")));

        let mut b = Builder::new(Endian::Little);
        b.shb();
        b.idb(1, 0, &[]);
        b.epb(0, 0, &[1, 2, 3, 4], 4);
        let n = b.out.len();
        b.out[n - 4 - 4 - 8..n - 4 - 4 - 4].copy_from_slice(&8u32.to_le_bytes()); // caplen 8 > 4 bytes
        let (_, err) = all(&b.out);
        assert!(
            matches!(err.unwrap().kind, IssueKind::Format(m) if m.contains("exceeds its block"))
        );
    }

    #[test]
    fn bad_first_block() {
        let buf = sample(Endian::Little);
        assert!(
            matches!(NgCursor::new(&buf[..10]), Err(Issue { kind: IssueKind::Format(m), .. }) if m.contains("truncated pcapng section header"))
        );
        let mut bad = buf.clone();
        bad[8] = 0;
        assert!(
            matches!(NgCursor::new(&bad), Err(Issue { kind: IssueKind::Format(m), .. }) if m.contains("byte-order magic"))
        );
    }
}
