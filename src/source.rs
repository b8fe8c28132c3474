//! The packet every source yields and every consumer reads.

use crate::error::Result;

/// One captured packet, borrowed from its source until the source's next call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawPacket<'a> {
    /// Capture time in nanoseconds since the Unix epoch.
    pub ts_ns: i64,
    /// Bytes captured (`data.len()`).
    pub caplen: u32,
    /// Length of the packet on the wire (>= caplen when snaplen cut it).
    pub wirelen: u32,
    /// The link-layer type (DLT/LINKTYPE number) of `data`.
    pub linktype: u32,
    /// The captured bytes.
    pub data: &'a [u8],
}

impl RawPacket<'_> {
    /// Whole seconds of the timestamp (floor division, also for times before 1970).
    #[inline]
    pub fn ts_sec(&self) -> i64 {
        self.ts_ns.div_euclid(1_000_000_000)
    }

    /// Microseconds within the second (truncated).
    #[inline]
    pub fn ts_usec(&self) -> i64 {
        self.ts_ns.rem_euclid(1_000_000_000) / 1_000
    }
}

/// A source of packets: a capture file or a live device.
///
/// Lending style: the packet borrows the source, so the source can hand out slices of its
/// mmap or of libpcap's buffer without copying.
pub trait PacketSource {
    /// The next packet, `Ok(None)` at the end.
    ///
    /// # Errors
    /// A malformed record, or a read error of the underlying device.
    fn next_packet(&mut self) -> Result<Option<RawPacket<'_>>>;
}
