//! Bounds-checked integer reads: every accessor returns `None` past the end of the slice.

/// The byte order of a file or a pcapng section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// The `u16` at `at`, or `None` if the slice is too short.
    #[inline]
    pub fn u16(self, buf: &[u8], at: usize) -> Option<u16> {
        let b: [u8; 2] = buf.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        })
    }

    /// The `u32` at `at`, or `None` if the slice is too short.
    #[inline]
    pub fn u32(self, buf: &[u8], at: usize) -> Option<u32> {
        let b: [u8; 4] = buf.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        })
    }

    /// The `u64` at `at`, or `None` if the slice is too short.
    #[inline]
    pub fn u64(self, buf: &[u8], at: usize) -> Option<u64> {
        let b: [u8; 8] = buf.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        })
    }
}
