//! The wake-up a stop request sends to a thread waiting on a live source.
//!
//! A [`Waker`] is a descriptor that becomes readable once [`Waker::wake`] is called: a
//! source's `wait` polls it beside the capture descriptor, so a stop takes effect at once
//! instead of at the end of the wait. Linux and Android use an eventfd; every other unix
//! uses a self-pipe (a non-blocking pipe whose read end is polled), which BSD and macOS
//! have had forever. The self-pipe builds on every unix, so its tests run on Linux too.

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};

/// Wakes a thread blocked in a source's `wait`. Waking is idempotent: the descriptor stays
/// readable once woken.
#[derive(Debug)]
pub struct Waker {
    /// The descriptor `wait` polls.
    read_fd: RawFd,
    /// The descriptor `wake` writes (the same eventfd, or the pipe's write end).
    write_fd: RawFd,
    woken: AtomicBool,
}

fn os_error(what: &str) -> Error {
    Error::Capture(format!(
        "{what} failed: {}",
        std::io::Error::last_os_error()
    ))
}

impl Waker {
    /// A new waker: an eventfd on Linux and Android, a self-pipe elsewhere.
    ///
    /// # Errors
    /// `Capture` when the descriptor cannot be created.
    pub fn new() -> Result<Self> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        return Waker::eventfd();
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        return Waker::pipe();
    }

    /// A waker on an eventfd.
    ///
    /// # Errors
    /// `Capture` when the eventfd cannot be created.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub fn eventfd() -> Result<Self> {
        // SAFETY: plain syscall wrapper; the descriptor is owned by the returned Waker.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_error("eventfd"));
        }
        Ok(Waker {
            read_fd: fd,
            write_fd: fd,
            woken: AtomicBool::new(false),
        })
    }

    /// A waker on a self-pipe (any unix).
    ///
    /// # Errors
    /// `Capture` when the pipe cannot be created.
    pub fn pipe() -> Result<Self> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe() writes.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } < 0 {
            return Err(os_error("pipe"));
        }
        let waker = Waker {
            read_fd: fds[0],
            write_fd: fds[1],
            woken: AtomicBool::new(false),
        };
        for fd in fds {
            // SAFETY: fcntl on descriptors this function just created and owns (closed by
            // the Waker's Drop if this fails).
            let ok = unsafe {
                let fl = libc::fcntl(fd, libc::F_GETFL);
                fl >= 0
                    && libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK) >= 0
                    && libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) >= 0
            };
            if !ok {
                return Err(os_error("fcntl on the wake-up pipe"));
            }
        }
        Ok(waker)
    }

    /// Wake the waiting thread (idempotent; the waker stays signalled).
    pub fn wake(&self) {
        if !self.woken.swap(true, Ordering::AcqRel) {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to our own descriptor (an eventfd takes
            // exactly 8; a pipe takes any count). The result is ignored: the only failure
            // is a full pipe, which is readable already.
            unsafe { libc::write(self.write_fd, (&one as *const u64).cast(), 8) };
        }
    }

    /// Whether [`wake`](Self::wake) was called.
    pub fn is_woken(&self) -> bool {
        self.woken.load(Ordering::Acquire)
    }

    /// The descriptor to poll for readability.
    pub fn fd(&self) -> RawFd {
        self.read_fd
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        // SAFETY: the descriptors are ours and closed only here.
        unsafe {
            libc::close(self.read_fd);
            if self.write_fd != self.read_fd {
                libc::close(self.write_fd);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd, ms: i32) -> bool {
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, ms) == 1 && p.revents & libc::POLLIN != 0 }
    }

    fn kinds() -> Vec<Waker> {
        vec![Waker::new().unwrap(), Waker::pipe().unwrap()]
    }

    #[test]
    fn wake_makes_the_descriptor_readable_and_is_idempotent() {
        for w in kinds() {
            assert!(!w.is_woken());
            assert!(!readable(w.fd(), 0));
            w.wake();
            w.wake();
            assert!(w.is_woken());
            assert!(readable(w.fd(), 100));
        }
    }

    #[test]
    fn wake_from_another_thread_ends_a_poll() {
        for w in kinds() {
            let w = std::sync::Arc::new(w);
            let w2 = w.clone();
            let t = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                w2.wake();
            });
            let t0 = std::time::Instant::now();
            assert!(readable(w.fd(), 5_000));
            assert!(t0.elapsed() < std::time::Duration::from_secs(2));
            t.join().unwrap();
        }
    }
}
