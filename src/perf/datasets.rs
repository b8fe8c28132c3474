//! Deterministic perf datasets (reference §4.4): classic little-endian microsecond pcap,
//! link type 1 (Ethernet), snaplen 65536, one fixed IPv4 frame template per traffic kind.
//!
//! Timestamps: second 1,700,000,000, microsecond `index mod 1,000,000`.

use std::path::Path;

use crate::error::{Error, Result};
use crate::pcap::classic::{FILE_HEADER_LEN, RECORD_HEADER_LEN};
use crate::pcap::PcapWriter;

/// Snapshot length written in the file header.
pub const SNAPLEN: u32 = 65_536;
/// Link type written in the file header (Ethernet).
pub const LINKTYPE: u32 = 1;
/// The timestamp's whole seconds.
pub const BASE_SEC: i64 = 1_700_000_000;

const ETH_DST: [u8; 6] = [0x10, 0x11, 0x12, 0x13, 0x14, 0x15];
const ETH_SRC: [u8; 6] = [0x20, 0x21, 0x22, 0x23, 0x24, 0x25];
const IP_SRC: [u8; 4] = [10, 0, 0, 1];
const IP_DST: [u8; 4] = [10, 0, 0, 2];
const SRC_PORT: u16 = 12_000;
const UDP_DST_PORT: u16 = 5_300;
const TCP_DST_PORT: u16 = 443;
const ETH_LEN: usize = 14;
const IPV4_LEN: usize = 20;

/// A perf case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// 64-byte UDP frames.
    Udp64,
    /// 512-byte TCP SYN frames.
    Tcp512,
    /// Alternating 64-byte UDP and 512-byte TCP, starting with UDP.
    Mixed,
}

/// Traffic kind of one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    /// UDP 12000 -> 5300.
    Udp,
    /// TCP SYN 12000 -> 443.
    Tcp,
}

impl Case {
    /// Every case, in the reference's order.
    pub const ALL: [Case; 3] = [Case::Udp64, Case::Tcp512, Case::Mixed];

    /// The case named `name` (`udp-64`, `tcp-512`, `mixed`).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the allowed values.
    pub fn parse(name: &str) -> Result<Case> {
        Case::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "case must be 'udp-64', 'tcp-512' or 'mixed', not {name:?}"
                ))
            })
    }

    /// The case's name.
    pub fn name(self) -> &'static str {
        match self {
            Case::Udp64 => "udp-64",
            Case::Tcp512 => "tcp-512",
            Case::Mixed => "mixed",
        }
    }

    /// Size and traffic of frame `index`.
    pub fn frame_kind(self, index: u64) -> (usize, Traffic) {
        match self {
            Case::Udp64 => (64, Traffic::Udp),
            Case::Tcp512 => (512, Traffic::Tcp),
            Case::Mixed if index % 2 == 0 => (64, Traffic::Udp),
            Case::Mixed => (512, Traffic::Tcp),
        }
    }

    /// Captured bytes of `count` frames.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the total does not fit in a `u64`.
    pub fn expected_bytes(self, count: u64) -> Result<u64> {
        let total = match self {
            Case::Udp64 => count.checked_mul(64),
            Case::Tcp512 => count.checked_mul(512),
            Case::Mixed => count
                .div_ceil(2)
                .checked_mul(64)
                .zip((count / 2).checked_mul(512))
                .and_then(|(udp, tcp)| udp.checked_add(tcp)),
        };
        total.ok_or_else(|| too_large(count))
    }

    /// Size of the file: 24 + sum(16 + frame).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the size does not fit in a `u64`.
    pub fn expected_file_size(self, count: u64) -> Result<u64> {
        count
            .checked_mul(RECORD_HEADER_LEN as u64)
            .and_then(|headers| headers.checked_add(FILE_HEADER_LEN as u64))
            .zip(self.expected_bytes(count).ok())
            .and_then(|(headers, frames)| headers.checked_add(frames))
            .ok_or_else(|| too_large(count))
    }
}

fn too_large(count: u64) -> Error {
    Error::InvalidArgument(format!(
        "count {count} is too large: the dataset size does not fit in 64 bits"
    ))
}

/// The frame template: Ethernet, IPv4 (DF, TTL 64, checksum 0), then UDP 12000->5300 or
/// TCP 12000->443 SYN, zero payload. `size` must be at least 64.
///
/// # Errors
/// [`Error::InvalidArgument`] for a size below 64 or above 65535 + 14.
pub fn frame(size: usize, traffic: Traffic) -> Result<Vec<u8>> {
    if !(64..=65_535 + ETH_LEN).contains(&size) {
        return Err(Error::InvalidArgument(format!(
            "frame size must be between 64 and 65549, not {size}"
        )));
    }
    let mut f = Vec::with_capacity(size);
    f.extend(ETH_DST);
    f.extend(ETH_SRC);
    f.extend(0x0800u16.to_be_bytes());
    f.push(0x45);
    f.push(0);
    f.extend(((size - ETH_LEN) as u16).to_be_bytes());
    f.extend(1u16.to_be_bytes());
    f.extend(0x4000u16.to_be_bytes());
    f.push(64);
    f.push(if traffic == Traffic::Tcp { 6 } else { 17 });
    f.extend([0, 0]);
    f.extend(IP_SRC);
    f.extend(IP_DST);
    f.extend(SRC_PORT.to_be_bytes());
    match traffic {
        Traffic::Udp => {
            f.extend(UDP_DST_PORT.to_be_bytes());
            f.extend(((size - ETH_LEN - IPV4_LEN) as u16).to_be_bytes());
            f.extend([0, 0]);
        }
        Traffic::Tcp => {
            f.extend(TCP_DST_PORT.to_be_bytes());
            f.extend(1u32.to_be_bytes());
            f.extend(0u32.to_be_bytes());
            f.extend(0x5002u16.to_be_bytes());
            f.extend(65_535u16.to_be_bytes());
            f.extend([0, 0, 0, 0]);
        }
    }
    f.resize(size, 0);
    Ok(f)
}

/// Timestamp of packet `index`, in nanoseconds.
pub fn timestamp_ns(index: u64) -> i64 {
    BASE_SEC * 1_000_000_000 + (index % 1_000_000) as i64 * 1_000
}

/// What [`generate`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dataset {
    /// Packets written.
    pub packets: u64,
    /// Captured bytes written (frames only).
    pub bytes: u64,
    /// Size of the file.
    pub file_size: u64,
}

/// Write `count` packets of `case` to `path` (replacing it), then check its size.
///
/// # Errors
/// [`Error::InvalidArgument`] for a count whose size overflows 64 bits; I/O errors of `path`;
/// [`Error::Io`] if the written size is not the expected one.
pub fn generate(case: Case, count: u64, path: impl AsRef<Path>) -> Result<Dataset> {
    let d = generate_interruptible(case, count, path, &mut |_| false)?;
    // Never interrupted, so a dataset is always there.
    d.ok_or_else(|| Error::InvalidArgument("dataset generation was interrupted".into()))
}

/// Packets written between two calls of the `interrupted` check of
/// [`generate_interruptible`].
pub const CHECK_EVERY: u64 = 1 << 16;

/// As [`generate`], asking `interrupted(written)` every [`CHECK_EVERY`] packets whether to
/// stop (`written`: the packets written so far, for a progress display); when it says so,
/// the partial file is removed and the result is `Ok(None)`.
///
/// # Errors
/// As [`generate`].
pub fn generate_interruptible(
    case: Case,
    count: u64,
    path: impl AsRef<Path>,
    interrupted: &mut dyn FnMut(u64) -> bool,
) -> Result<Option<Dataset>> {
    let path = path.as_ref();
    let expected = case.expected_file_size(count)?;
    let udp = frame(64, Traffic::Udp)?;
    let tcp = frame(512, Traffic::Tcp)?;
    let mut w = PcapWriter::create(path, LINKTYPE, SNAPLEN, false)?;
    let mut bytes = 0;
    for i in 0..count {
        if i % CHECK_EVERY == CHECK_EVERY - 1 && interrupted(i) {
            drop(w);
            let _ = std::fs::remove_file(path);
            return Ok(None);
        }
        let data = match case.frame_kind(i).1 {
            Traffic::Udp => &udp,
            Traffic::Tcp => &tcp,
        };
        w.write_packet(timestamp_ns(i), data, data.len() as u32)?;
        bytes += data.len() as u64;
    }
    let file = w.finish()?;
    let file_size = file.metadata().map_err(|e| Error::from_io(path, e))?.len();
    if file_size != expected {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(format!(
                "dataset file is {file_size} bytes, expected {expected}"
            ))
            .into(),
        });
    }
    Ok(Some(Dataset {
        packets: count,
        bytes,
        file_size,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::FileReader;

    #[test]
    fn udp_frame_bytes() {
        let f = frame(64, Traffic::Udp).unwrap();
        let expect: [u8; 42] = [
            0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x08,
            0x00, //
            0x45, 0x00, 0x00, 0x32, 0x00, 0x01, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1,
            10, 0, 0, 2, //
            0x2e, 0xe0, 0x14, 0xb4, 0x00, 0x1e, 0x00, 0x00,
        ];
        assert_eq!(&f[..42], &expect);
        assert!(f[42..].iter().all(|&b| b == 0));
        assert_eq!(f.len(), 64);
    }

    #[test]
    fn tcp_frame_bytes() {
        let f = frame(512, Traffic::Tcp).unwrap();
        assert_eq!(&f[14..20], &[0x45, 0, 0x01, 0xf2, 0, 1]);
        assert_eq!(f[23], 6);
        assert_eq!(
            &f[34..54],
            &[0x2e, 0xe0, 0x01, 0xbb, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x02, 0xff, 0xff, 0, 0, 0, 0]
        );
        assert_eq!(f.len(), 512);
        assert!(frame(63, Traffic::Udp).is_err());
    }

    #[test]
    fn generate_mixed_reads_back() {
        let path = std::env::temp_dir().join(format!("paclo-ds-{}.pcap", std::process::id()));
        let d = generate(Case::Mixed, 5, &path).unwrap();
        assert_eq!(
            d,
            Dataset {
                packets: 5,
                bytes: 3 * 64 + 2 * 512,
                file_size: 24 + 80 + 1216
            }
        );
        let mut r = FileReader::open(&path).unwrap();
        assert_eq!(r.snaplen(), SNAPLEN);
        let mut sizes = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            assert_eq!(
                p.ts_ns,
                1_700_000_000_000_000_000 + sizes.len() as i64 * 1_000
            );
            sizes.push(p.caplen);
        }
        assert_eq!(sizes, [64, 512, 64, 512, 64]);
        std::fs::remove_file(path).unwrap();
        assert_eq!(timestamp_ns(1_000_001), 1_700_000_000_000_001_000);
        assert!(Case::parse("udp64").is_err());
        assert_eq!(Case::Mixed.expected_bytes(3).unwrap(), 2 * 64 + 512);
        assert!(Case::Tcp512.expected_bytes(u64::MAX / 256).is_err());
        assert!(Case::Udp64.expected_file_size(u64::MAX / 80).is_err());
    }

    #[test]
    fn generation_stops_when_interrupted_and_removes_the_file() {
        let path = std::env::temp_dir().join(format!("paclo-ds-int-{}.pcap", std::process::id()));
        let mut asked = vec![];
        let d = generate_interruptible(Case::Udp64, 10 * CHECK_EVERY, &path, &mut |written| {
            asked.push(written);
            asked.len() == 3
        })
        .unwrap();
        assert_eq!(d, None);
        let every = CHECK_EVERY;
        assert_eq!(asked, [every - 1, 2 * every - 1, 3 * every - 1]);
        assert!(!path.exists());
        assert_eq!(Case::parse("tcp-512").unwrap(), Case::Tcp512);
    }
}
