//! The one packet source, and the loop every consumer runs over it.
//!
//! A [`PacketSource`] is a stream of borrowed [`RawPacket`]s: a capture file over an mmap
//! ([`FileReader`](crate::pcap::FileReader)) or a live libpcap device
//! ([`Handle`](crate::capture::Handle)). A file is never idle; a device may have nothing
//! ready ([`Fetch::Idle`]) and then waits, bounded, for packets or for a [`Waker`].
//!
//! [`SourceLoop`] runs a source for a consumer: the BPF filter of a file, the stop
//! conditions ([`Limits`]), the counters and the end ([`Stats`](crate::stats::Stats)).
//! Every consumer reads through it: the Python iterator and [`fold`] (reduce), the flow
//! projection and flow table ([`crate::flow::for_each_packet`]), and the managed capture
//! thread ([`crate::capture::managed`]).

mod run;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;
mod waker;

use std::path::PathBuf;
use std::time::Duration;

use crate::capture::{Handle, LiveOptions};
use crate::error::Result;
use crate::pcap::{FileReader, Oversized};

pub use run::{
    fold, Control, Folded, Host, Limits, NoHost, SourceLoop, Step, StopClock, FOLD_SIGNAL_EVERY,
    SCAN_BUDGET, WAIT_SLICE,
};
pub use waker::Waker;

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

/// What one [`PacketSource::fetch`] found.
#[derive(Debug)]
pub enum Fetch<'a> {
    /// A packet, borrowed until the next call.
    Packet(RawPacket<'a>),
    /// Nothing ready yet (live sources only): [`PacketSource::wait`], then fetch again.
    Idle,
    /// The end of the source (a file's last record).
    End,
}

/// Where a source reads from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceInfo {
    /// A live interface.
    Device(String),
    /// A capture file (absolute path).
    Path(PathBuf),
}

/// What to open: a capture file or a live device with its options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SourceSpec {
    /// A pcap or pcapng file, read through an mmap.
    File(PathBuf),
    /// A live device, opened with libpcap.
    Device {
        /// The interface name.
        name: String,
        /// How to open it.
        options: LiveOptions,
    },
}

impl SourceSpec {
    /// Open the source.
    ///
    /// # Errors
    /// As [`FileReader::open`] and [`Handle::open_live`].
    pub fn open(&self) -> Result<Box<dyn PacketSource>> {
        Ok(match self {
            SourceSpec::File(path) => Box::new(FileReader::open(path)?),
            SourceSpec::Device { name, options } => Box::new(Handle::open_live(name, options)?),
        })
    }
}

/// The kernel's counters of a live source (libpcap's `pcap_stats`, cumulative).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcapCounters {
    /// Packets the kernel saw (`ps_recv`); on Linux loopback each datagram counts twice.
    pub received: u64,
    /// Packets dropped for lack of buffer space (`ps_drop`).
    pub dropped: u64,
    /// Packets dropped by the interface or driver (`ps_ifdrop`).
    pub interface_dropped: u64,
}

/// A source of packets: a capture file or a live device.
///
/// Lending style: the packet borrows the source, so the source can hand out slices of its
/// mmap or of libpcap's buffer without copying. `fetch` never blocks for long; a live
/// source that has nothing ready says [`Fetch::Idle`], and [`wait`](Self::wait) then
/// blocks for at most the given time or until the waker is woken.
pub trait PacketSource: Send {
    /// The next packet if one is ready, [`Fetch::Idle`] if none is yet, or the end.
    ///
    /// # Errors
    /// A malformed record of a file ([`Error::Format`](crate::Error::Format), or
    /// [`Error::Truncated`](crate::Error::Truncated) for a cut last record), or a read
    /// error of a device ([`Error::Capture`](crate::Error::Capture)); never reported as
    /// the end.
    fn fetch(&mut self) -> Result<Fetch<'_>>;

    /// Wait up to `timeout` for packets, or until `waker` is woken. A file returns at once.
    ///
    /// # Errors
    /// The device's descriptor failed (the interface went away).
    fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()> {
        let _ = (timeout, waker);
        Ok(())
    }

    /// The kernel's counters (live sources), `None` when unavailable.
    fn counters(&mut self) -> Option<PcapCounters> {
        None
    }

    /// Where the packets come from.
    fn info(&self) -> SourceInfo;

    /// The link type of the packets (a pcapng file's first interface's); `None` if unknown.
    fn linktype(&self) -> Option<u32>;

    /// The snapshot length packets were captured with.
    fn snaplen(&self) -> u32;

    /// Bytes consumed and the total, for a progress display (files only).
    fn progress(&self) -> Option<(u64, u64)> {
        None
    }

    /// Whether a record longer than its snaplen is an error (`true`) or read whole and
    /// counted (files; a device has no such records).
    fn set_strict(&mut self, strict: bool) {
        let _ = strict;
    }

    /// The records read whole although longer than their snaplen (files); `None` for a
    /// source that has no such rule.
    fn oversized(&self) -> Option<&Oversized> {
        None
    }

    /// Filter the packets `fetch` returns with the BPF expression `expr`: a live handle
    /// compiles it into the kernel (`pcap_setfilter`), a file runs it on each record
    /// (`pcap_offline_filter`) and returns [`Fetch::Idle`] after
    /// [`SCAN_BUDGET`] rejected records in a row.
    ///
    /// # Errors
    /// [`Error::Filter`](crate::Error::Filter) when the expression does not compile.
    fn install_filter(&mut self, expr: &str) -> Result<()>;

    /// Up to `max` packets handed straight to `f`, without a [`Fetch`] per packet: the
    /// packets and their captured bytes. A source stops a burst before anything out of
    /// the ordinary (the end, an error, a filter, an unusual record), which the next
    /// [`fetch`](Self::fetch) reads; `(0, 0)` (the default) means "fetch instead".
    #[inline(always)]
    fn burst<F: FnMut(&RawPacket<'_>)>(&mut self, max: u32, f: &mut F) -> (u32, u64)
    where
        Self: Sized,
    {
        let _ = (max, f);
        (0, 0)
    }
}

impl<S: PacketSource + ?Sized> PacketSource for Box<S> {
    #[inline]
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        (**self).fetch()
    }
    fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()> {
        (**self).wait(timeout, waker)
    }
    fn counters(&mut self) -> Option<PcapCounters> {
        (**self).counters()
    }
    fn info(&self) -> SourceInfo {
        (**self).info()
    }
    fn linktype(&self) -> Option<u32> {
        (**self).linktype()
    }
    fn snaplen(&self) -> u32 {
        (**self).snaplen()
    }
    fn progress(&self) -> Option<(u64, u64)> {
        (**self).progress()
    }
    fn set_strict(&mut self, strict: bool) {
        (**self).set_strict(strict)
    }
    fn oversized(&self) -> Option<&Oversized> {
        (**self).oversized()
    }
    fn install_filter(&mut self, expr: &str) -> Result<()> {
        (**self).install_filter(expr)
    }
}
