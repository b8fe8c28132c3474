//! The interpreter around native loops: the GIL released around waits and long walks, and
//! pending signals (Ctrl-C) checked between chunks, so `KeyboardInterrupt` is prompt.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::error::Result;
use crate::flow::{Check, Stop};
use crate::source::Host;

use super::progress::ProgressSink;

/// Packets a native iterator hands out back to back between two checks for signals: a
/// consumer written in C (`list(reader)`) runs no Python code that would notice Ctrl-C.
pub const SIGNAL_CHECK_EVERY: u64 = 1 << 16;

/// The same for a queue's consumer (a capture or a fan-out branch), whose packets cost a
/// lock and a copy each: checked more often.
pub const QUEUE_SIGNAL_CHECK_EVERY: u64 = 1024;

/// The interpreter as the core's [`Host`]: `release` detaches from it, `interrupted` runs
/// the signal handlers.
pub struct PyHost<'py>(pub Python<'py>);

impl Host for PyHost<'_> {
    type Error = PyErr;

    fn release<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R {
        self.0.detach(f)
    }

    fn interrupted(&mut self) -> PyResult<()> {
        self.0.check_signals()
    }
}

/// How often a call waiting for worker threads wakes to check for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(10);

/// Run `work` with the GIL released, passing it a [`Stop`] check that runs the Python
/// signal handlers: the native loop calls it between chunks of records, and a handler's
/// exception (KeyboardInterrupt for Ctrl-C) ends the loop and is raised here.
///
/// With `parallel`, `work` (which fans out to rayon) runs on a scoped thread while this
/// thread wakes every [`SIGNAL_POLL`] to check for signals; on an exception it sets the
/// flag the workers' check reads and joins them before raising.
pub fn interruptible<T: Send>(
    py: Python<'_>,
    parallel: bool,
    work: impl FnOnce(Stop<'_>) -> Result<Option<T>> + Send,
) -> PyResult<T> {
    interruptible_progress(py, parallel, None, work)
}

/// A progress display told the bytes a walk over files read, of `total`.
pub struct WalkProgress {
    pub sink: ProgressSink,
    pub total: u64,
}

impl WalkProgress {
    /// The display for `sink` (none for `None`) over files of `total` bytes.
    pub fn new(sink: Option<ProgressSink>, total: u64) -> Option<Self> {
        sink.map(|sink| WalkProgress { sink, total })
    }
}

/// Report `read` bytes to `progress`, if any.
fn report(py: Python<'_>, progress: Option<&WalkProgress>, read: &AtomicU64) -> PyResult<()> {
    match progress {
        Some(p) => p.sink.update(py, read.load(Ordering::Relaxed), p.total),
        None => Ok(()),
    }
}

/// A check that adds the bytes the loops report to `read`, around the stop check `inner`.
struct Counting<'a, F> {
    inner: F,
    read: &'a AtomicU64,
}

impl<F: Fn() -> bool + Sync> Check for Counting<'_, F> {
    fn stop(&self) -> bool {
        (self.inner)()
    }

    fn read(&self, bytes: u64) {
        self.read.fetch_add(bytes, Ordering::Relaxed);
    }

    fn unread(&self, bytes: u64) {
        // Only this call's loops add to `read`: what they reported is in it.
        let _ = self
            .read
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| {
                Some(r.saturating_sub(bytes))
            });
    }
}

/// [`interruptible`], also telling `progress` the bytes read so far (loops over files
/// report them once per chunk): where the signals are checked (between chunks, or every
/// [`SIGNAL_POLL`] with `parallel`), and once more when `work` has returned. An exception
/// from the display ends the loop as a signal handler's does.
pub fn interruptible_progress<T: Send>(
    py: Python<'_>,
    parallel: bool,
    progress: Option<&WalkProgress>,
    work: impl FnOnce(Stop<'_>) -> Result<Option<T>> + Send,
) -> PyResult<T> {
    let raised: Mutex<Option<PyErr>> = Mutex::new(None);
    let read = AtomicU64::new(0);
    let result = if parallel {
        let stop = AtomicBool::new(false);
        let flag = Counting {
            inner: || stop.load(Ordering::Relaxed),
            read: &read,
        };
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = std::thread::current();
            let (done, flag) = (&done, &flag);
            let worker = s.spawn(move || {
                let out = work(flag);
                // Set before the wake-up, so the waiter does not park again for nothing.
                done.store(true, Ordering::Release);
                waiter.unpark();
                out
            });
            while !done.load(Ordering::Acquire) && !worker.is_finished() {
                py.detach(|| std::thread::park_timeout(SIGNAL_POLL));
                if let Err(e) = py
                    .check_signals()
                    .and_then(|()| report(py, progress, &read))
                {
                    stop.store(true, Ordering::Relaxed);
                    *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                    break;
                }
            }
            py.detach(|| worker.join())
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    } else {
        let check = Counting {
            inner: || {
                Python::attach(|py| {
                    match report(py, progress, &read).and_then(|()| py.check_signals()) {
                        Ok(()) => false,
                        Err(e) => {
                            *raised.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                            true
                        }
                    }
                })
            },
            read: &read,
        };
        py.detach(|| work(&check))
    };
    if let Some(e) = raised.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let out =
        result?.ok_or_else(|| PyRuntimeError::new_err("a native loop stopped without a signal"))?;
    report(py, progress, &read)?;
    Ok(out)
}
