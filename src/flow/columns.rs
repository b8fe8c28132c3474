//! Per-packet projection into reused columns, finished into Arrow record batches.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::mem::{align_of, size_of, take, MaybeUninit};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use arrow_array::types::{Int64Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{ArrayRef, BinaryArray, FixedSizeBinaryArray, PrimitiveArray, RecordBatch};
use arrow_buffer::{
    ArrowNativeType, BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::decode::fastpath::{self, FlowFields};
use crate::source::RawPacket;

/// Width of an address column: 16 bytes, IPv4 as IPv4-mapped IPv6.
pub const ADDR_LEN: usize = 16;

/// The address column type: `fixed_size_binary(16)`.
pub fn addr_type() -> DataType {
    DataType::FixedSizeBinary(ADDR_LEN as i32)
}

/// The schema of `project` tables (with a `flow_id` column last when `flow_id`).
pub fn projection_schema_with(flow_id: bool) -> SchemaRef {
    let mut fields = projection_fields();
    if flow_id {
        fields.push(Field::new("flow_id", DataType::UInt64, true));
    }
    Arc::new(Schema::new(fields))
}

/// The schema of `project` tables.
pub fn projection_schema() -> SchemaRef {
    Arc::new(Schema::new(projection_fields()))
}

fn projection_fields() -> Vec<Field> {
    vec![
        Field::new("ts_ns", DataType::Int64, false),
        Field::new("caplen", DataType::UInt32, false),
        Field::new("len", DataType::UInt32, false),
        Field::new("ip_version", DataType::UInt8, true),
        Field::new("protocol", DataType::UInt8, true),
        Field::new("src_ip", addr_type(), true),
        Field::new("dst_ip", addr_type(), true),
        Field::new("src_port", DataType::UInt16, true),
        Field::new("dst_port", DataType::UInt16, true),
        Field::new("vlan_id", DataType::UInt16, true),
        Field::new("tcp_flags", DataType::UInt8, true),
    ]
}

/// The schema of `read_batches` batches.
pub fn raw_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("ts_ns", DataType::Int64, false),
        Field::new("caplen", DataType::UInt32, false),
        Field::new("wirelen", DataType::UInt32, false),
        Field::new("data", DataType::Binary, false),
    ]))
}

pub(crate) fn prim<T: arrow_array::ArrowPrimitiveType>(
    v: Vec<T::Native>,
    valid: Option<NullBuffer>,
) -> ArrayRef {
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(v), valid))
}

/// An address column from a vector whose bytes in memory are the addresses, 16 per row
/// (bytes, or one `u128::from_ne_bytes` value a row): the vector becomes its buffer.
pub(crate) fn addrs<T: ArrowNativeType>(v: Vec<T>, valid: Option<NullBuffer>) -> ArrayRef {
    Arc::new(FixedSizeBinaryArray::new(
        ADDR_LEN as i32,
        Buffer::from_vec(v),
        valid,
    ))
}

/// A validity bitmap from a per-row predicate, packed 64 rows at a time.
pub(crate) fn validity(len: usize, valid: impl FnMut(usize) -> bool) -> NullBuffer {
    NullBuffer::new(BooleanBuffer::collect_bool(len, valid))
}

/// A validity bitmap with a bit per value of `values`, set where `valid` holds: each 64
/// values are packed into a word from a slice of exactly 64, so the loop has no bounds
/// checks.
pub(crate) fn validity_of<T: Copy>(values: &[T], valid: impl Fn(T) -> bool) -> NullBuffer {
    let pack = |chunk: &[T]| {
        chunk
            .iter()
            .enumerate()
            .fold(0u64, |w, (j, &v)| w | u64::from(valid(v)) << j)
    };
    let chunks = values.chunks_exact(64);
    let tail = chunks.remainder();
    let mut words: Vec<u64> = Vec::with_capacity(values.len().div_ceil(64));
    words.extend(chunks.map(pack));
    if !tail.is_empty() {
        words.push(pack(tail));
    }
    NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(words), 0, values.len()))
}

/// The validity bitmap of the rows whose presence byte in `present` has bit `bit` set.
#[cfg(test)]
pub(crate) fn present_bits(present: &[u8], bit: u8) -> NullBuffer {
    let mut words = Vec::with_capacity(present.len().div_ceil(64));
    gather_words(present, bit, &mut words);
    NullBuffer::new(BooleanBuffer::new(
        Buffer::from_vec(words),
        0,
        present.len(),
    ))
}

/// Append to `words` the bits `bit` of the presence bytes `present`, 64 rows a word (the
/// last word holding the rows left). Eight bytes are read as one word and their bits
/// gathered into eight bits of the bitmap by one multiplication, so a row costs about one
/// instruction.
fn gather_words(present: &[u8], bit: u8, words: &mut Vec<u64>) {
    /// Bit 0 of every byte.
    const LOW: u64 = 0x0101_0101_0101_0101;
    /// Moves bit 8k (k = 0..7) of a word holding only those bits to bit 56 + k: the
    /// product's terms are distinct powers of two, so nothing carries.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    let eight = |b: &[u8]| {
        let x = b.try_into().map_or(0, u64::from_le_bytes);
        ((x >> bit) & LOW).wrapping_mul(GATHER) >> 56
    };
    let chunks = present.chunks_exact(64);
    let tail = chunks.remainder();
    words.extend(chunks.map(|c| {
        c.chunks_exact(8)
            .enumerate()
            .fold(0u64, |w, (i, b)| w | eight(b) << (8 * i))
    }));
    if !tail.is_empty() {
        let w = tail
            .iter()
            .enumerate()
            .fold(0u64, |w, (j, &p)| w | u64::from((p >> bit) & 1) << j);
        words.push(w);
    }
}

/// A huge page: columns of at least this many bytes are aligned to it and sized in whole
/// huge pages, so that with transparent huge pages every byte of them is backed by 2 MiB
/// pages (one page fault each) and none by 4 KiB pages at their unaligned ends, and their
/// memory is kept as a spare when they are freed. (Smaller columns would keep a whole huge
/// page resident for less than that.)
const HUGE: usize = 2 << 20;

/// An allocation of column memory: its address and layout.
#[derive(Clone, Copy)]
struct Raw {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a `Raw` is an address and a size; whoever holds it as a `Block` or as a spare
// owns the memory alone and only frees it, so it may move between threads.
unsafe impl Send for Raw {}

impl Raw {
    /// Free the memory.
    ///
    /// # Safety
    /// `ptr` was returned by `alloc` with `layout`, and nothing uses it afterwards.
    unsafe fn free(self) {
        // SAFETY: the caller's contract.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

/// One column's memory, allocated (or taken from the spares) for a batch; when the last
/// Arrow buffer over it is dropped, one on huge pages is kept as a spare ([`keep`]) and
/// any other freed.
struct Block(Raw);

// SAFETY: a `Block` owns its allocation alone; it is only freed or kept (by `Drop`),
// never read or written through the `Block`, so sharing it across threads is sound.
unsafe impl Sync for Block {}

impl Drop for Block {
    fn drop(&mut self) {
        if self.0.layout.align() == HUGE {
            keep(self.0);
        } else {
            // SAFETY: the block owned the allocation, and is gone.
            unsafe { self.0.free() }
        }
    }
}

/// The most memory of freed large columns kept for later batches (of this call or a later
/// one): their pages are then written again without page faults or the kernel zeroing
/// them.
const SPARE_BYTES: usize = 128 << 20;

/// Freed large column allocations, oldest first, and their total size.
struct Spare {
    blocks: Vec<Raw>,
    bytes: usize,
}

static SPARE: Mutex<Spare> = Mutex::new(Spare {
    blocks: Vec::new(),
    bytes: 0,
});

/// The spare blocks, or `None` while another thread holds them: a column then allocates
/// (or frees) as if there were no spares, so the list never makes a thread wait, and a
/// process forked while another thread held it (whose copy of the lock stays held) goes
/// on without spares instead of blocking. A panic elsewhere while they were locked leaves
/// them consistent.
fn spare_blocks() -> Option<MutexGuard<'static, Spare>> {
    match SPARE.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// Keep the freed allocation `raw` as a spare, freeing the oldest spares beyond
/// [`SPARE_BYTES`]. Its pages are marked free lazily (`MADV_FREE`): the kernel may take
/// them back under memory pressure, and until it does they are written again without a
/// fault.
fn keep(raw: Raw) {
    let size = raw.layout.size();
    if size > SPARE_BYTES {
        // SAFETY: the caller's block owned the allocation, and is gone.
        unsafe { raw.free() };
        return;
    }
    let Some(mut spare) = spare_blocks() else {
        // SAFETY: as above.
        unsafe { raw.free() };
        return;
    };
    lazy_free(raw.ptr.as_ptr(), size);
    while spare.bytes + size > SPARE_BYTES {
        let old = spare.blocks.remove(0);
        spare.bytes -= old.layout.size();
        // SAFETY: a spare is owned by the list alone, and was just taken out of it.
        unsafe { old.free() };
    }
    spare.bytes += size;
    spare.blocks.push(raw);
}

/// The smallest spare allocation of `layout`'s alignment and at least its size (at most
/// twice it), the most recently kept of those.
fn reuse(layout: Layout) -> Option<Raw> {
    let mut spare = spare_blocks()?;
    let size = |r: &Raw| r.layout.size();
    let (i, _) = spare
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.layout.align() == layout.align()
                && size(r) >= layout.size()
                && size(r) / 2 <= layout.size()
        })
        .min_by_key(|&(i, r)| (size(r), std::cmp::Reverse(i)))?;
    let raw = spare.blocks.remove(i);
    spare.bytes -= raw.layout.size();
    Some(raw)
}

/// A column of `T` values of a fixed capacity, written in bulk and handed to Arrow as one
/// buffer. Large columns are placed on transparent huge pages (see [`HUGE`]).
struct Column<T> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
    /// The allocation, `None` for an empty column (capacity 0 or a zero-sized type).
    block: Option<Block>,
}

// SAFETY: a column owns its allocation alone, as a `Vec<T>` does; it is moved or shared
// across threads as a `Vec<T>` is.
unsafe impl<T: Send> Send for Column<T> {}
// SAFETY: as for `Send`: `&Column` only reads the values.
unsafe impl<T: Sync> Sync for Column<T> {}

impl<T: ArrowNativeType> Column<T> {
    /// A column without capacity (allocates nothing).
    const fn empty() -> Self {
        Column {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
            block: None,
        }
    }

    /// A column for `cap` values.
    fn with_capacity(cap: usize) -> Self {
        let bytes = cap
            .checked_mul(size_of::<T>())
            .expect("a column's size fits in memory");
        if bytes == 0 {
            return Column::empty();
        }
        let (size, align) = if bytes >= HUGE {
            (bytes.next_multiple_of(HUGE), HUGE)
        } else {
            (bytes, align_of::<T>().max(64))
        };
        let layout = Layout::from_size_align(size, align).expect("a column's layout is valid");
        let raw = match reuse(layout) {
            Some(raw) => raw,
            None => {
                // SAFETY: `layout` has a non-zero size.
                let ptr = unsafe { alloc(layout) };
                let Some(ptr) = NonNull::new(ptr) else {
                    handle_alloc_error(layout)
                };
                if align == HUGE {
                    advise_huge(ptr.as_ptr(), size);
                }
                Raw { ptr, layout }
            }
        };
        Column {
            ptr: raw.ptr.cast(),
            len: 0,
            cap,
            block: Some(Block(raw)),
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn capacity(&self) -> usize {
        self.cap
    }

    /// The values held.
    fn as_slice(&self) -> &[T] {
        // SAFETY: the first `len` values were written by `extend`; `ptr` is aligned and
        // non-null (dangling only when `len` is 0).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// Append `f` of each of `rows` (the column grows if they do not fit). On x86-64 the
    /// values are written with non-temporal stores ([`stream_values`]), which fill whole
    /// cache lines in memory without reading them first; [`publish`] orders those stores
    /// before the column is handed on.
    #[inline]
    fn extend<R>(&mut self, rows: &[R], f: impl Fn(&R) -> T) {
        if rows.len() > self.cap - self.len {
            self.grow(self.len + rows.len());
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `len + rows.len() <= cap` (grown above), so the destination lies inside
        // the allocation.
        unsafe {
            let dst = self.ptr.as_ptr().add(self.len);
            if stream_values(dst, rows, &f) {
                self.len += rows.len();
                return;
            }
        }
        // SAFETY: `len + rows.len() <= cap` (grown above), so every write lands inside
        // the allocation, which holds `cap` values of `T`.
        unsafe {
            let dst = self.ptr.as_ptr().add(self.len);
            for (i, r) in rows.iter().enumerate() {
                dst.add(i).write(f(r));
            }
        }
        self.len += rows.len();
    }

    /// Move the values into a column of at least `need` values (twice the capacity or more).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, need: usize) {
        let mut bigger = Column::with_capacity(need.max(self.cap.saturating_mul(2)));
        bigger.extend(self.as_slice(), |&v| v);
        *self = bigger;
    }

    /// The values as an Arrow buffer (which takes the allocation over); the column is then
    /// empty, without capacity.
    fn take_buffer(&mut self) -> Buffer {
        let col = std::mem::replace(self, Column::empty());
        let bytes = col.len * size_of::<T>();
        match col.block {
            // SAFETY: the block's allocation holds the `len` values written, `bytes` bytes
            // from `ptr`; the buffer keeps the block (and so the memory) alive.
            Some(block) => unsafe {
                Buffer::from_custom_allocation(col.ptr.cast(), bytes, Arc::new(block))
            },
            None => Buffer::from_vec(Vec::<T>::new()),
        }
    }

    /// A primitive array of the values with `valid`.
    fn take_array<P: arrow_array::ArrowPrimitiveType<Native = T>>(
        &mut self,
        valid: Option<NullBuffer>,
    ) -> ArrayRef {
        let len = self.len;
        let values = ScalarBuffer::new(self.take_buffer(), 0, len);
        Arc::new(PrimitiveArray::<P>::new(values, valid))
    }
}

/// [`STAGE_ROWS`] values of a column on their way into it, aligned for 16-byte loads.
#[cfg(target_arch = "x86_64")]
#[repr(C, align(64))]
struct Staged<T>([MaybeUninit<T>; STAGE_ROWS]);

#[cfg(target_arch = "x86_64")]
impl<T: Copy> Staged<T> {
    #[inline]
    fn new() -> Self {
        Staged([MaybeUninit::uninit(); STAGE_ROWS])
    }
}

/// Write `f` of each of `rows` from `dst` on with non-temporal stores: 4-, 8- and 16-byte
/// values one store each, narrower ones gathered in a small buffer first and copied 16
/// bytes a store. False (nothing written) when `dst` is not aligned for them or the rows
/// are more than a stage.
///
/// # Safety
/// `dst` is valid for writes of `rows.len()` values of `T`.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn stream_values<T: Copy, R>(dst: *mut T, rows: &[R], f: impl Fn(&R) -> T) -> bool {
    use std::arch::x86_64::{
        __m128i, _mm_load_si128, _mm_loadu_si128, _mm_stream_si128, _mm_stream_si32,
        _mm_stream_si64,
    };
    let size = size_of::<T>();
    if dst as usize % 16 != 0 || rows.len() > STAGE_ROWS {
        return false;
    }
    // SAFETY: every store is to `dst + i` for `i < rows.len()` (the caller's contract),
    // aligned for `T` (and to 16 bytes for the 16-byte stores); `transmute_copy` reads a
    // value of the same size as `T`; SSE2 is part of x86-64.
    unsafe {
        match size {
            4 => {
                for (i, r) in rows.iter().enumerate() {
                    let v = f(r);
                    _mm_stream_si32(dst.add(i).cast(), std::mem::transmute_copy(&v));
                }
            }
            8 => {
                for (i, r) in rows.iter().enumerate() {
                    let v = f(r);
                    _mm_stream_si64(dst.add(i).cast(), std::mem::transmute_copy(&v));
                }
            }
            16 => {
                for (i, r) in rows.iter().enumerate() {
                    let v = f(r);
                    let v = _mm_loadu_si128(std::ptr::from_ref(&v).cast::<__m128i>());
                    _mm_stream_si128(dst.add(i).cast(), v);
                }
            }
            _ => {
                let mut buf = Staged::<T>::new();
                for (slot, r) in buf.0.iter_mut().zip(rows) {
                    *slot = MaybeUninit::new(f(r));
                }
                let (src, dst) = (buf.0.as_ptr().cast::<u8>(), dst.cast::<u8>());
                let bytes = rows.len() * size;
                let mut done = 0;
                while done + 16 <= bytes {
                    let v = _mm_load_si128(src.add(done).cast::<__m128i>());
                    _mm_stream_si128(dst.add(done).cast::<__m128i>(), v);
                    done += 16;
                }
                std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), bytes - done);
            }
        }
    }
    true
}

/// Order the non-temporal stores of [`stream_values`] before every later store, so that
/// another thread given the columns sees their values.
#[inline]
fn publish() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64; a fence has no other effect.
    unsafe {
        std::arch::x86_64::_mm_sfence();
    }
}

/// Tell the kernel that the contents of the whole pages in `[ptr, ptr + len)` (an
/// allocation of ours) are no longer needed: it may free those pages under memory
/// pressure (the next write then faults in a zeroed page); until it does, they stay as
/// they are. Partial pages at the ends, which the allocator may share, are left alone.
fn lazy_free(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0);
        if page == 0 || !page.is_power_of_two() {
            return;
        }
        let start = (ptr as usize).next_multiple_of(page);
        let end = (ptr as usize + len) & !(page - 1);
        if end > start {
            // SAFETY: `[start, end)` lies inside the allocation, kept as a spare, whose
            // contents are not read again before they are written. A failure is harmless.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_FREE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// Ask the kernel to back `[ptr, ptr + len)` (aligned to [`HUGE`]) with transparent huge
/// pages, so filling it costs one page fault per 2 MiB instead of one per 4 KiB. A hint
/// only: without THP nothing changes.
fn advise_huge(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: the range is an allocation of ours, which outlives the call; MADV_HUGEPAGE
    // changes how the kernel backs those pages, never their contents. A failure is
    // harmless.
    unsafe {
        libc::madvise(ptr.cast(), len, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

/// Rows staged before they are spread into the columns: small enough to stay in the L1
/// cache while they are read back, and a multiple of 64, so that every spread but a
/// batch's last starts its validity bitmaps on a word.
const STAGE_ROWS: usize = 256;

/// One projected row as [`ProjectionBuilder::push_fields`] stages it: a packet costs one
/// store of this, the columns are written in bulk per [`STAGE_ROWS`] rows. Addresses are
/// their 16 bytes in the machine's order (`u128::from_ne_bytes`), one value each.
#[derive(Clone, Copy)]
struct Row {
    ts: i64,
    caplen: u32,
    len: u32,
    src: u128,
    dst: u128,
    src_port: u16,
    dst_port: u16,
    vlan: u16,
    ip_version: u8,
    protocol: u8,
    flags: u8,
    present: u8,
}

/// The validity bitmaps of a batch, one per bit of the rows' presence byte, appended 64
/// rows a word as the rows are spread.
struct Bitmaps {
    words: [Vec<u64>; PRESENT_BITS],
    rows: usize,
}

/// Bits of a row's presence byte (its last bit, [`L3`], included).
const PRESENT_BITS: usize = L3 as usize + 1;

impl Bitmaps {
    fn with_capacity(rows: usize) -> Self {
        Bitmaps {
            words: std::array::from_fn(|_| Vec::with_capacity(rows.div_ceil(64))),
            rows: 0,
        }
    }

    /// Append the presence bits of `rows`; the rows held before must be a multiple of 64.
    fn extend(&mut self, rows: &[Row]) {
        debug_assert!(self.rows % 64 == 0, "bitmaps are appended a word at a time");
        let mut present = [0u8; STAGE_ROWS];
        let present = &mut present[..rows.len()];
        for (p, r) in present.iter_mut().zip(rows) {
            *p = r.present;
        }
        for (bit, words) in self.words.iter_mut().enumerate() {
            gather_words(present, bit as u8, words);
        }
        self.rows += rows.len();
    }

    /// The bitmap of `bit`; the rows are then empty again, the words reserved when the
    /// next batch's first rows are spread.
    fn take(&mut self, bit: u8) -> NullBuffer {
        let words = take(&mut self.words[usize::from(bit)]);
        NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(words), 0, self.rows))
    }
}

/// Columns of the projection, filled without allocating per packet and handed to Arrow
/// once per batch (the column memory is moved into the batch, and allocated again when
/// the next batch's first rows are written). Rows are staged in a small reused buffer and
/// written into the columns in bulk, a column at a time.
pub struct ProjectionBuilder {
    cap: usize,
    /// Rows not yet in the columns (at most [`STAGE_ROWS`]), with their flow ids when
    /// the builder has a flow id column.
    stage: Vec<Row>,
    stage_ids: Vec<u64>,
    ts: Column<i64>,
    caplen: Column<u32>,
    len: Column<u32>,
    ip_version: Column<u8>,
    protocol: Column<u8>,
    src: Column<u128>,
    dst: Column<u128>,
    src_port: Column<u16>,
    dst_port: Column<u16>,
    vlan: Column<u16>,
    flags: Column<u8>,
    /// The validity of every nullable column, from each row's presence byte: bits
    /// [`PORTS`], [`FLAGS`], [`PROTOCOL`], [`VLAN`], [`L3`].
    valid: Bitmaps,
    /// The flow id of each row ([`NO_FLOW`] for packets in no flow), when asked for.
    flow_id: Option<Column<u64>>,
}

/// Marks "in no flow" in the flow id column.
const NO_FLOW: u64 = u64::MAX;

/// Bits of a row's presence byte: ports, TCP flags, protocol, VLAN, an IP layer.
const PORTS: u8 = 0;
const FLAGS: u8 = 1;
const PROTOCOL: u8 = 2;
const VLAN: u8 = 3;
const L3: u8 = 4;
/// Marks "no VLAN" in the VLAN column (ids are 12 bits).
const NO_VLAN: u16 = u16::MAX;

impl ProjectionBuilder {
    /// Columns for batches of `batch_size` rows (at least 1).
    pub fn new(batch_size: usize) -> Self {
        let cap = batch_size.max(1);
        let mut b = ProjectionBuilder {
            cap,
            ts: Column::empty(),
            caplen: Column::empty(),
            len: Column::empty(),
            ip_version: Column::empty(),
            protocol: Column::empty(),
            src: Column::empty(),
            dst: Column::empty(),
            src_port: Column::empty(),
            dst_port: Column::empty(),
            vlan: Column::empty(),
            flags: Column::empty(),
            valid: Bitmaps::with_capacity(0),
            flow_id: None,
            stage: Vec::with_capacity(STAGE_ROWS),
            stage_ids: Vec::new(),
        };
        b.reserve();
        b
    }

    /// Columns as [`new`](Self::new), plus a `flow_id` column filled by
    /// [`push_fields`](Self::push_fields).
    pub fn with_flow_id(batch_size: usize) -> Self {
        let mut b = ProjectionBuilder::new(batch_size);
        b.flow_id = Some(Column::with_capacity(b.cap));
        b.stage_ids = Vec::with_capacity(STAGE_ROWS);
        b
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.ts.len() + self.stage.len()
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the batch is full.
    pub fn is_full(&self) -> bool {
        self.len() >= self.cap
    }

    /// Project one packet into the columns.
    #[inline]
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        let mut f = FlowFields::default();
        fastpath::parse(pkt.linktype, pkt.data, &mut f);
        self.push_fields(pkt, &f, None);
    }

    /// Project one packet whose fields are parsed already; `flow_id` is its flow's id
    /// (kept when the builder has a flow id column).
    #[inline]
    pub fn push_fields(&mut self, pkt: &RawPacket<'_>, f: &FlowFields, flow_id: Option<u64>) {
        if self.stage.len() == STAGE_ROWS {
            self.spread();
        }
        if self.flow_id.is_some() {
            self.stage_ids.push(flow_id.unwrap_or(NO_FLOW));
        }
        self.stage.push(Row {
            ts: pkt.ts_ns,
            caplen: pkt.caplen,
            len: pkt.wirelen,
            src: u128::from_ne_bytes(f.src),
            dst: u128::from_ne_bytes(f.dst),
            src_port: f.src_port,
            dst_port: f.dst_port,
            vlan: if f.has_vlan { f.vlan_id } else { NO_VLAN },
            ip_version: f.ip_version,
            protocol: f.protocol,
            flags: f.tcp_flags,
            present: u8::from(f.has_ports) << PORTS
                | u8::from(f.has_tcp_flags) << FLAGS
                | u8::from(f.has_protocol) << PROTOCOL
                | u8::from(f.has_vlan) << VLAN
                | u8::from(f.ip_version != 0) << L3,
        });
    }

    /// Write the staged rows into the columns, a column at a time, and empty the stage.
    #[inline(never)]
    fn spread(&mut self) {
        if self.ts.capacity() == 0 {
            self.reserve();
        }
        let rows = &self.stage;
        self.ts.extend(rows, |r| r.ts);
        self.caplen.extend(rows, |r| r.caplen);
        self.len.extend(rows, |r| r.len);
        self.ip_version.extend(rows, |r| r.ip_version);
        self.protocol.extend(rows, |r| r.protocol);
        self.src.extend(rows, |r| r.src);
        self.dst.extend(rows, |r| r.dst);
        self.src_port.extend(rows, |r| r.src_port);
        self.dst_port.extend(rows, |r| r.dst_port);
        self.vlan.extend(rows, |r| r.vlan);
        self.flags.extend(rows, |r| r.flags);
        self.valid.extend(rows);
        self.stage.clear();
        if let Some(ids) = &mut self.flow_id {
            ids.extend(&self.stage_ids, |&id| id);
            self.stage_ids.clear();
        }
    }

    /// Allocate the columns for a batch (after [`finish`](Self::finish) moved them out).
    #[cold]
    fn reserve(&mut self) {
        let cap = self.cap;
        self.ts = Column::with_capacity(cap);
        self.caplen = Column::with_capacity(cap);
        self.len = Column::with_capacity(cap);
        self.ip_version = Column::with_capacity(cap);
        self.protocol = Column::with_capacity(cap);
        self.src = Column::with_capacity(cap);
        self.dst = Column::with_capacity(cap);
        self.src_port = Column::with_capacity(cap);
        self.dst_port = Column::with_capacity(cap);
        self.vlan = Column::with_capacity(cap);
        self.flags = Column::with_capacity(cap);
        self.valid = Bitmaps::with_capacity(cap);
        if let Some(ids) = &mut self.flow_id {
            *ids = Column::with_capacity(cap);
        }
    }

    /// The held rows as a batch (None when empty); the columns are then empty again.
    pub fn finish(&mut self) -> Option<RecordBatch> {
        if self.is_empty() {
            return None;
        }
        self.spread();
        publish();
        let has_l3 = self.valid.take(L3);
        let has_ports = self.valid.take(PORTS);
        let has_flags = self.valid.take(FLAGS);
        let has_protocol = self.valid.take(PROTOCOL);
        let has_vlan = self.valid.take(VLAN);
        self.valid.rows = 0;
        let with_ids = self.flow_id.is_some();
        let src_len = self.src.len();
        let dst_len = self.dst.len();
        let mut columns: Vec<ArrayRef> = vec![
            self.ts.take_array::<Int64Type>(None),
            self.caplen.take_array::<UInt32Type>(None),
            self.len.take_array::<UInt32Type>(None),
            self.ip_version
                .take_array::<UInt8Type>(Some(has_l3.clone())),
            self.protocol.take_array::<UInt8Type>(Some(has_protocol)),
            addr_array(self.src.take_buffer(), src_len, Some(has_l3.clone())),
            addr_array(self.dst.take_buffer(), dst_len, Some(has_l3)),
            self.src_port
                .take_array::<UInt16Type>(Some(has_ports.clone())),
            self.dst_port.take_array::<UInt16Type>(Some(has_ports)),
            self.vlan.take_array::<UInt16Type>(Some(has_vlan)),
            self.flags.take_array::<UInt8Type>(Some(has_flags)),
        ];
        if let Some(ids) = &mut self.flow_id {
            let in_flow = validity_of(ids.as_slice(), |id| id != NO_FLOW);
            columns.push(ids.take_array::<UInt64Type>(Some(in_flow)));
        }
        Some(
            RecordBatch::try_new(projection_schema_with(with_ids), columns)
                .expect("projection columns match their schema"),
        )
    }
}

/// An address column of `rows` rows over `values`, 16 bytes a row.
fn addr_array(values: Buffer, rows: usize, valid: Option<NullBuffer>) -> ArrayRef {
    debug_assert_eq!(values.len(), rows * ADDR_LEN);
    Arc::new(FixedSizeBinaryArray::new(ADDR_LEN as i32, values, valid))
}

/// Raw packets (timestamp, lengths, bytes) collected into batches.
pub struct RawBatchBuilder {
    cap: usize,
    ts: Vec<i64>,
    caplen: Vec<u32>,
    wirelen: Vec<u32>,
    offsets: Vec<i32>,
    data: Vec<u8>,
}

impl RawBatchBuilder {
    /// Columns for batches of `batch_size` rows (at least 1).
    pub fn new(batch_size: usize) -> Self {
        let cap = batch_size.max(1);
        let mut offsets = Vec::with_capacity(cap + 1);
        offsets.push(0);
        RawBatchBuilder {
            cap,
            ts: Vec::with_capacity(cap),
            caplen: Vec::with_capacity(cap),
            wirelen: Vec::with_capacity(cap),
            offsets,
            data: Vec::new(),
        }
    }

    /// Whether the batch is full: `batch_size` rows, or the binary column near 2 GiB.
    pub fn is_full(&self) -> bool {
        self.ts.len() >= self.cap || self.data.len() > (i32::MAX as usize) - (1 << 20)
    }

    /// Whether no rows are held.
    pub fn is_empty(&self) -> bool {
        self.ts.is_empty()
    }

    /// Append one packet.
    pub fn push(&mut self, pkt: &RawPacket<'_>) {
        self.ts.push(pkt.ts_ns);
        self.caplen.push(pkt.caplen);
        self.wirelen.push(pkt.wirelen);
        self.data.extend_from_slice(pkt.data);
        self.offsets.push(self.data.len() as i32);
    }

    /// The held rows as a batch (None when empty).
    pub fn finish(&mut self) -> Option<RecordBatch> {
        if self.is_empty() {
            return None;
        }
        let cap = self.cap;
        let offsets = std::mem::replace(&mut self.offsets, Vec::with_capacity(cap + 1));
        self.offsets.push(0);
        let data = std::mem::take(&mut self.data);
        let ts = std::mem::replace(&mut self.ts, Vec::with_capacity(cap));
        let caplen = std::mem::replace(&mut self.caplen, Vec::with_capacity(cap));
        let wirelen = std::mem::replace(&mut self.wirelen, Vec::with_capacity(cap));
        let binary = BinaryArray::new(
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Buffer::from_vec(data),
            None,
        );
        let columns: Vec<ArrayRef> = vec![
            prim::<Int64Type>(ts, None),
            prim::<UInt32Type>(caplen, None),
            prim::<UInt32Type>(wirelen, None),
            Arc::new(binary),
        ];
        Some(RecordBatch::try_new(raw_schema(), columns).expect("raw columns match their schema"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::Array;

    /// Row `i` of a batch numbered `seed`: every field (and every presence) varies with
    /// both, so a value left over from an earlier batch in reused memory shows.
    fn fields(seed: u64, i: u64) -> (RawPacket<'static>, FlowFields, Option<u64>) {
        let x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        let mut f = FlowFields::default();
        if x % 5 != 0 {
            f.ip_version = if x % 3 == 0 { 6 } else { 4 };
            f.src = (u128::from(x) << 7 | u128::from(i)).to_be_bytes();
            f.dst = (u128::from(!x) << 3 ^ u128::from(seed)).to_be_bytes();
        }
        f.has_protocol = x % 7 != 0;
        f.protocol = (x >> 8) as u8;
        f.has_ports = x % 4 != 0;
        f.src_port = (x >> 16) as u16;
        f.dst_port = (x >> 32) as u16;
        f.has_vlan = x % 6 == 1;
        f.vlan_id = (x >> 40) as u16 & 0xfff;
        f.has_tcp_flags = x % 2 == 0;
        f.tcp_flags = (x >> 48) as u8;
        let pkt = RawPacket {
            ts_ns: (x >> 1) as i64,
            caplen: (x >> 20) as u32,
            wirelen: (x >> 24) as u32,
            linktype: 1,
            data: &[],
        };
        let id = (x % 9 != 0).then_some(x >> 3);
        (pkt, f, id)
    }

    /// Every column of `batch` holds the values of [`fields`] for `seed`, row by row.
    fn check(batch: &RecordBatch, seed: u64) {
        let c = |i: usize| batch.column(i);
        for row in 0..batch.num_rows() {
            let (p, f, id) = fields(seed, row as u64);
            let at = format!("batch {seed}, row {row}");
            let l3 = f.ip_version != 0;
            assert_eq!(c(0).as_primitive::<Int64Type>().value(row), p.ts_ns, "{at}");
            assert_eq!(
                c(1).as_primitive::<UInt32Type>().value(row),
                p.caplen,
                "{at}"
            );
            assert_eq!(
                c(2).as_primitive::<UInt32Type>().value(row),
                p.wirelen,
                "{at}"
            );
            let ipv = c(3).as_primitive::<UInt8Type>();
            assert_eq!(
                (ipv.is_valid(row), ipv.value(row)),
                (l3, f.ip_version),
                "{at}"
            );
            let proto = c(4).as_primitive::<UInt8Type>();
            assert_eq!(proto.is_valid(row), f.has_protocol, "{at}");
            assert_eq!(proto.value(row), f.protocol, "{at}");
            for (i, want) in [(5, f.src), (6, f.dst)] {
                let a = c(i).as_fixed_size_binary();
                assert_eq!((a.is_valid(row), a.value(row)), (l3, &want[..]), "{at}");
            }
            for (i, want) in [(7, f.src_port), (8, f.dst_port)] {
                let a = c(i).as_primitive::<UInt16Type>();
                assert_eq!((a.is_valid(row), a.value(row)), (f.has_ports, want), "{at}");
            }
            let vlan = c(9).as_primitive::<UInt16Type>();
            assert_eq!(vlan.is_valid(row), f.has_vlan, "{at}");
            if f.has_vlan {
                assert_eq!(vlan.value(row), f.vlan_id, "{at}");
            }
            let flags = c(10).as_primitive::<UInt8Type>();
            assert_eq!(flags.is_valid(row), f.has_tcp_flags, "{at}");
            assert_eq!(flags.value(row), f.tcp_flags, "{at}");
            if batch.num_columns() > 11 {
                let ids = c(11).as_primitive::<UInt64Type>();
                assert_eq!(ids.is_valid(row).then(|| ids.value(row)), id, "{at}");
            }
        }
    }

    /// A column made and freed while another thread holds the spare list (or while a
    /// forked child's copy of its lock stays held) neither waits nor touches the list.
    #[test]
    fn columns_do_not_wait_for_the_spare_list() {
        let held = loop {
            if let Some(g) = spare_blocks() {
                break g;
            }
            std::thread::yield_now();
        };
        let bytes = held.bytes;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut c = Column::<u64>::with_capacity(2 * HUGE / 8);
            c.extend(&[1u64, 2, 3], |&v| v);
            assert_eq!(c.as_slice(), [1, 2, 3]);
            drop(c);
            tx.send(()).unwrap();
        });
        let done = rx.recv_timeout(std::time::Duration::from_secs(20));
        assert!(done.is_ok(), "a column waited for the spare list");
        assert_eq!(held.bytes, bytes);
    }

    /// The builder moves between threads as it did with plain vectors.
    #[test]
    fn builder_is_send_and_sync() {
        fn both<T: Send + Sync>() {}
        both::<ProjectionBuilder>();
    }

    /// Batches whose columns are large enough for huge pages (and so kept as spares and
    /// reused) hold exactly their own rows, batch after batch, full or not, whether the
    /// batch before them is dropped or kept; so do batches whose rows outgrow the batch
    /// size (the columns grow).
    #[test]
    fn reused_and_grown_columns_hold_their_rows() {
        // 2^17 rows: the address columns take 2 MiB, a huge page.
        let cap = HUGE / ADDR_LEN;
        for flow_id in [false, true] {
            let mut b = if flow_id {
                ProjectionBuilder::with_flow_id(cap)
            } else {
                ProjectionBuilder::new(cap)
            };
            let mut kept = Vec::new();
            for (seed, rows) in [(1, cap), (2, cap - 1), (3, 1000), (4, cap), (5, 3)] {
                for i in 0..rows as u64 {
                    let (p, f, id) = fields(seed, i);
                    b.push_fields(&p, &f, id);
                }
                let batch = b.finish().unwrap();
                assert_eq!(batch.num_rows(), rows);
                check(&batch, seed);
                if seed % 2 == 0 {
                    kept.push((seed, batch));
                }
            }
            for (seed, batch) in &kept {
                check(batch, *seed);
            }
            // Rows beyond the batch size without `finish`: the columns grow.
            let mut b = ProjectionBuilder::new(10);
            for i in 0..700 {
                let (p, f, _) = fields(6, i);
                b.push_fields(&p, &f, None);
            }
            let batch = b.finish().unwrap();
            assert_eq!(batch.num_rows(), 700);
            check(&batch, 6);
        }
    }

    /// The gathered bitmaps are those of a bit-by-bit reading, for every bit and every
    /// length around the word sizes.
    #[test]
    fn present_bits_reads_every_row() {
        let mut x = 0x9E37_79B9_7F4A_7C15_u64;
        let bytes: Vec<u8> = (0..300)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for len in (0..140).chain([255, 256, 257, 300]) {
            let rows = &bytes[..len];
            for bit in 0..8 {
                let got = present_bits(rows, bit);
                let want: Vec<bool> = rows.iter().map(|p| (p >> bit) & 1 == 1).collect();
                let got: Vec<bool> = (0..len).map(|i| got.is_valid(i)).collect();
                assert_eq!(got, want, "{len} rows, bit {bit}");
            }
        }
    }
}
