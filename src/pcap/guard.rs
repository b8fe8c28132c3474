//! A file mapping that survives the file being truncated under it.
//!
//! Reading a page of a shared file mapping that lies past the file's current end raises
//! SIGBUS, which kills the process: another process truncating or rewriting a capture
//! while paclo reads it would kill the interpreter. [`GuardedMap`] registers its address
//! range in a process-wide list that a SIGBUS handler (installed once, on the first map)
//! consults: a fault inside a registered map is answered by mapping a zero-filled page
//! over the faulting page and marking the map as faulted, so the read that faulted
//! completes (it sees zeros) and the reader, which checks [`GuardedMap::faulted`] for every
//! record, reports the change as an error. A SIGBUS at any other address goes to the
//! handler that was installed before (or the default action, which ends the process).
//!
//! The list is lock-free and append-only (its nodes are leaked and reused), so the handler
//! walks it without taking a lock or allocating. The handler calls only `mmap`.

use std::fs::File;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

use memmap2::Mmap;

/// One registered range: `len == 0` marks a free node.
struct Node {
    start: AtomicUsize,
    len: AtomicUsize,
    /// Set by the handler when it replaced a page of this range.
    faulted: AtomicBool,
    /// The offset in the range of the first page replaced (`usize::MAX`: none).
    first_fault: AtomicUsize,
    /// Claimed by a map (its range may not be set yet).
    used: AtomicBool,
    next: AtomicPtr<Node>,
}

/// The head of the list of nodes (never freed).
static HEAD: AtomicPtr<Node> = AtomicPtr::new(std::ptr::null_mut());

/// A node for a new map: a free one, or a new one pushed on the list.
fn claim() -> &'static Node {
    let mut p = HEAD.load(Ordering::Acquire);
    while !p.is_null() {
        // SAFETY: nodes are leaked boxes, never freed: every pointer in the list is valid
        // for the life of the process.
        let n = unsafe { &*p };
        if n.used
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return n;
        }
        p = n.next.load(Ordering::Acquire);
    }
    let n: &'static Node = Box::leak(Box::new(Node {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        faulted: AtomicBool::new(false),
        first_fault: AtomicUsize::new(usize::MAX),
        used: AtomicBool::new(true),
        next: AtomicPtr::new(std::ptr::null_mut()),
    }));
    let mut head = HEAD.load(Ordering::Acquire);
    loop {
        n.next.store(head, Ordering::Release);
        let me = n as *const Node as *mut Node;
        match HEAD.compare_exchange(head, me, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return n,
            Err(h) => head = h,
        }
    }
}

/// A read-only map of a whole file whose pages past a later end of the file read as zeros
/// instead of killing the process; [`GuardedMap::faulted`] says whether that happened.
pub struct GuardedMap {
    map: Mmap,
    node: &'static Node,
}

impl GuardedMap {
    /// Map `file` (which must not be empty) read-only and register the range.
    ///
    /// # Errors
    /// The error of `mmap`.
    pub fn map(file: &File) -> std::io::Result<GuardedMap> {
        #[cfg(unix)]
        handler::install();
        // SAFETY: the map is read-only and nothing in this process writes to the file; a
        // truncation by another process makes the pages past the new end fault, and the
        // handler registered below turns those faults into zero pages (see the module).
        let map = unsafe { Mmap::map(file) }?;
        let node = claim();
        node.faulted.store(false, Ordering::Relaxed);
        node.first_fault.store(usize::MAX, Ordering::Relaxed);
        node.start.store(map.as_ptr() as usize, Ordering::Release);
        node.len.store(map.len(), Ordering::Release);
        Ok(GuardedMap { map, node })
    }

    /// Whether a page of the map was read after the file had shrunk past it (the bytes read
    /// there were zeros, not the file's).
    #[inline(always)]
    pub fn faulted(&self) -> bool {
        self.node.faulted.load(Ordering::Relaxed)
    }

    /// The offset of the first byte that read as zeros instead of the file's (the start of
    /// the lowest page replaced), if any.
    pub fn first_fault(&self) -> Option<usize> {
        match self.node.first_fault.load(Ordering::Acquire) {
            usize::MAX => None,
            at => Some(at),
        }
    }

    /// The mapping itself (for `madvise`).
    pub fn mmap(&self) -> &Mmap {
        &self.map
    }
}

/// The page size the handler replaces pages of (4096 before the first map).
#[inline(always)]
pub fn page_size() -> usize {
    #[cfg(unix)]
    return handler::PAGE.load(Ordering::Relaxed);
    #[cfg(not(unix))]
    4096
}

impl Deref for GuardedMap {
    type Target = [u8];

    #[inline(always)]
    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        // Unregister before the map is unmapped (the field is dropped after this): nothing
        // reads the map any more, so no fault can be lost in between.
        self.node.len.store(0, Ordering::Release);
        self.node.start.store(0, Ordering::Release);
        self.node.used.store(false, Ordering::Release);
    }
}

impl std::fmt::Debug for GuardedMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardedMap")
            .field("len", &self.map.len())
            .field("faulted", &self.faulted())
            .finish()
    }
}

#[cfg(unix)]
mod handler {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Once;

    use super::{Node, HEAD};

    /// The action installed before ours, called for faults outside every map.
    static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();
    static INSTALL: Once = Once::new();
    pub(super) static PAGE: AtomicUsize = AtomicUsize::new(4096);

    /// Install the SIGBUS handler once per process.
    pub(super) fn install() {
        INSTALL.call_once(|| {
            // SAFETY: sysconf and sigaction are called with valid arguments; PREVIOUS is
            // written here once, by sigaction, before the handler that reads it runs.
            unsafe {
                let page = libc::sysconf(libc::_SC_PAGESIZE);
                if page > 0 {
                    PAGE.store(page as usize, Ordering::Release);
                }
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_sigbus as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut act.sa_mask);
                let prev = std::ptr::addr_of_mut!(PREVIOUS).cast::<libc::sigaction>();
                libc::sigaction(libc::SIGBUS, &act, prev);
            }
        });
    }

    /// The node whose range holds `addr`, if any.
    fn owner(addr: usize) -> Option<&'static Node> {
        let mut p = HEAD.load(Ordering::Acquire);
        while !p.is_null() {
            // SAFETY: nodes are never freed (see `claim`).
            let n = unsafe { &*p };
            let start = n.start.load(Ordering::Acquire);
            let len = n.len.load(Ordering::Acquire);
            if len != 0 && addr >= start && addr - start < len {
                return Some(n);
            }
            p = n.next.load(Ordering::Acquire);
        }
        None
    }

    extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo for a SA_SIGINFO handler. Only
        // async-signal-safe work follows: atomic loads and stores, mmap, sigaction.
        unsafe {
            let addr = (*info).si_addr() as usize;
            if let Some(n) = owner(addr) {
                let size = PAGE.load(Ordering::Acquire);
                let page = addr & !(size - 1);
                // Replace the page that lies past the file's end with a private zero page,
                // read-only like the map; the faulting read then completes.
                let r = libc::mmap(
                    page as *mut libc::c_void,
                    size,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                );
                if r != libc::MAP_FAILED {
                    let start = n.start.load(Ordering::Acquire);
                    n.first_fault
                        .fetch_min(page.saturating_sub(start), Ordering::AcqRel);
                    n.faulted.store(true, Ordering::Release);
                    return;
                }
            }
            let prev = &*std::ptr::addr_of!(PREVIOUS).cast::<libc::sigaction>();
            if prev.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(prev.sa_sigaction);
                f(sig, info, ctx);
            } else if prev.sa_sigaction == libc::SIG_DFL || prev.sa_sigaction == libc::SIG_IGN {
                // Not ours: restore the default action; returning re-runs the faulting
                // instruction, which now ends the process as it would have without us.
                let mut dfl: libc::sigaction = std::mem::zeroed();
                dfl.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &dfl, std::ptr::null_mut());
            } else {
                let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
                f(sig);
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_truncated_file_reads_zeros_and_is_flagged() {
        let dir = std::env::temp_dir().join(format!("paclo-guard-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        let mut f = File::create(&path).unwrap();
        f.write_all(&vec![0xAB; 64 * 1024]).unwrap();
        drop(f);
        let file = File::open(&path).unwrap();
        let map = GuardedMap::map(&file).unwrap();
        assert!(!map.faulted());
        assert_eq!(map[40_000], 0xAB);
        // Another handle truncates the file, as another process would.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(4096)
            .unwrap();
        assert_eq!(map[100], 0xAB);
        assert!(!map.faulted());
        // Past the new end: a zero page, flagged, no SIGBUS.
        assert_eq!(std::hint::black_box(&map[..])[50_000], 0);
        assert!(map.faulted());
        assert_eq!(map.first_fault(), Some(49_152));
        let other = GuardedMap::map(&file).unwrap();
        assert!(!other.faulted());
        drop(map);
        drop(other);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
