//! Capture files: the mmap reader (classic pcap and pcapng), the writer, BPF on buffers.

mod reader;

pub use reader::FileReader;

/// The largest caplen a record may declare (256 KiB); larger is treated as corruption.
pub const MAX_CAPLEN: u32 = 256 * 1024;
