//! Per-flow state of the feature groups in fixed chunks: a growing table allocates a
//! chunk at a time and never moves (copies) the slots it has.

/// Slots per chunk (a power of two).
const CHUNK: usize = 1 << 10;

/// Per-slot values in fixed chunks, allocated as the slots grow (never moved).
pub(crate) struct Chunks<T> {
    chunks: Vec<Box<[T; CHUNK]>>,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks { chunks: Vec::new() }
    }
}

impl<T: Clone + Default> Chunks<T> {
    /// The value of `slot`, its chunk (and those before it) allocated on first need.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, slot: usize) -> &mut T {
        let c = slot / CHUNK;
        if c >= self.chunks.len() {
            self.grow(c);
        }
        &mut self.chunks[c][slot % CHUNK]
    }

    /// The value of `slot` if its chunk exists.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> Option<&T> {
        self.chunks
            .get(slot / CHUNK)
            .map(|chunk| &chunk[slot % CHUNK])
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, c: usize) {
        while self.chunks.len() <= c {
            let chunk: Box<[T]> = vec![T::default(); CHUNK].into_boxed_slice();
            match chunk.try_into() {
                Ok(chunk) => self.chunks.push(chunk),
                Err(_) => unreachable!("a chunk has CHUNK values"),
            }
        }
    }
}

/// Values per chunk of [`Runs`], about.
const RUN_VALUES: usize = 1 << 14;

/// A run of `width` values per slot, in fixed chunks of a power of two slots, allocated
/// as the slots grow (never moved).
pub(crate) struct Runs<T> {
    width: usize,
    /// log2 of the slots per chunk.
    shift: u32,
    chunks: Vec<Box<[T]>>,
}

impl<T: Clone + Default> Runs<T> {
    /// Runs of `width` values (at least 1).
    pub(crate) fn new(width: usize) -> Self {
        let width = width.max(1);
        Runs {
            width,
            shift: (RUN_VALUES / width).max(1).ilog2(),
            chunks: Vec::new(),
        }
    }

    /// The run of `slot`, its chunk (and those before it) allocated on first need.
    #[inline(always)]
    pub(crate) fn get_mut(&mut self, slot: usize) -> &mut [T] {
        let c = slot >> self.shift;
        if c >= self.chunks.len() {
            self.grow(c);
        }
        let at = (slot & ((1 << self.shift) - 1)) * self.width;
        &mut self.chunks[c][at..at + self.width]
    }

    /// The run of `slot` if its chunk exists.
    #[inline]
    pub(crate) fn get(&self, slot: usize) -> Option<&[T]> {
        let at = (slot & ((1 << self.shift) - 1)) * self.width;
        self.chunks
            .get(slot >> self.shift)
            .map(|chunk| &chunk[at..at + self.width])
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, c: usize) {
        while self.chunks.len() <= c {
            let chunk = vec![T::default(); self.width << self.shift].into_boxed_slice();
            self.chunks.push(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_keep_each_slot_apart_across_chunks() {
        // Widths that give 2^k slots per chunk, one slot per chunk, and one run wider
        // than a chunk's nominal size.
        for width in [1usize, 10, 3_000, 20_000] {
            let mut r: Runs<u64> = Runs::new(width);
            let slots = 2_000usize.min(4 * (RUN_VALUES / width).max(1) + 3);
            for s in (0..slots).rev() {
                for (j, v) in r.get_mut(s).iter_mut().enumerate() {
                    *v = (s * 100_000 + j) as u64;
                }
            }
            for s in 0..slots {
                let run = r.get(s).unwrap();
                assert_eq!(run.len(), width);
                assert!(run
                    .iter()
                    .enumerate()
                    .all(|(j, v)| *v == (s * 100_000 + j) as u64));
            }
            assert!(r.get(slots + (RUN_VALUES / width).max(1) * 4).is_none());
        }
    }

    #[test]
    fn chunks_grow_without_moving_a_slot() {
        let mut c: Chunks<u32> = Chunks::default();
        *c.get_mut(5) = 7;
        let at = c.get(5).unwrap() as *const u32;
        *c.get_mut(10 * CHUNK) = 9;
        assert_eq!(at, c.get(5).unwrap() as *const u32);
        assert_eq!(
            (c.get(5), c.get(10 * CHUNK), c.get(CHUNK)),
            (Some(&7), Some(&9), Some(&0))
        );
        assert!(c.get(11 * CHUNK).is_none());
    }
}
