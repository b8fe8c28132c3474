//! Managed capture: a thread reads a source into a bounded queue; one consumer takes the
//! packets; stop, close and statistics work from any thread.
//!
//! Lifecycle: the caller opens the source and installs the filter, then [`ManagedCapture::start`]
//! moves it to a new thread in state `running`. A stop request (any reason; the first one
//! wins) moves the state to `stopping` and wakes the thread; the thread then reads
//! `pcap_stats`, closes the handle (exactly once, by dropping it), and ends in `closed`, or
//! `failed` when an error was recorded. [`ManagedCapture::close`] also clears the queue, so
//! a producer blocked on a full queue returns at once, and waits at most the given time.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::handle::{Handle, Next, PcapCounters, SourceInfo, Waker};
use super::queue::{BoundedQueue, Pop, QueueCounters, QueueMode};
use crate::error::{Error, Result};
use crate::source::RawPacket;

/// Where a capture is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureState {
    /// Opened, not yet reading.
    Starting,
    /// The capture thread is reading.
    Running,
    /// A stop was requested; the thread is finishing.
    Stopping,
    /// Ended normally; the handle is closed.
    Closed,
    /// Ended with an error; the handle is closed.
    Failed,
}

impl CaptureState {
    /// The snake_case name used in statistics.
    pub fn as_str(self) -> &'static str {
        match self {
            CaptureState::Starting => "starting",
            CaptureState::Running => "running",
            CaptureState::Stopping => "stopping",
            CaptureState::Closed => "closed",
            CaptureState::Failed => "failed",
        }
    }

    /// Closed or failed.
    pub fn is_terminal(self) -> bool {
        matches!(self, CaptureState::Closed | CaptureState::Failed)
    }
}

/// Why a capture stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// `stop()` was called.
    Consumer,
    /// `close()` was called (or the capture was dropped).
    Closed,
    /// The `stop_when` predicate matched.
    Predicate,
    /// A reduction returned `Reduced`.
    Reduced,
    /// An error ended the capture.
    Error,
    /// `limit` packets were captured.
    MaxPackets,
    /// `duration` elapsed.
    MaxTime,
    /// No packet arrived for `idle_timeout`.
    IdleTimeout,
    /// The file ended.
    Eof,
}

impl StopReason {
    /// The snake_case name used in statistics.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Consumer => "consumer",
            StopReason::Closed => "closed",
            StopReason::Predicate => "predicate",
            StopReason::Reduced => "reduced",
            StopReason::Error => "error",
            StopReason::MaxPackets => "max_packets",
            StopReason::MaxTime => "max_time",
            StopReason::IdleTimeout => "idle_timeout",
            StopReason::Eof => "eof",
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error as data: the Python exception class it maps to and its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorInfo {
    /// Exception class name (`CaptureError`, `KeyboardInterrupt`, ...).
    pub class: String,
    /// The message.
    pub message: String,
}

/// The stop conditions counted by the reading loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Stop after this many captured packets.
    pub max_packets: Option<u64>,
    /// Stop after this much wall-clock time.
    pub max_time: Option<Duration>,
    /// Stop after this long without a packet.
    pub idle_timeout: Option<Duration>,
}

/// Decides `max_packets`, `max_time` and `idle_timeout` for a reading loop. The clock is
/// read per packet only when `max_time` is set; idleness is measured from the first empty
/// read after the last packet.
#[derive(Debug)]
pub struct StopClock {
    limits: Limits,
    started: Instant,
    count: u64,
    idle_since: Option<Instant>,
}

impl StopClock {
    /// A clock for `limits` started at `started`.
    pub fn new(limits: Limits, started: Instant) -> Self {
        StopClock {
            limits,
            started,
            count: 0,
            idle_since: None,
        }
    }

    /// Packets counted so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Count one packet; the reason to stop now, if any.
    #[inline]
    pub fn on_packet(&mut self) -> Option<StopReason> {
        self.count += 1;
        self.idle_since = None;
        if self.limits.max_packets.is_some_and(|m| self.count >= m) {
            return Some(StopReason::MaxPackets);
        }
        if let Some(t) = self.limits.max_time {
            if self.started.elapsed() >= t {
                return Some(StopReason::MaxTime);
            }
        }
        None
    }

    /// An empty read at `now`; the reason to stop, if any.
    pub fn on_idle(&mut self, now: Instant) -> Option<StopReason> {
        if self
            .limits
            .max_time
            .is_some_and(|t| now.duration_since(self.started) >= t)
        {
            return Some(StopReason::MaxTime);
        }
        let since = *self.idle_since.get_or_insert(now);
        if self
            .limits
            .idle_timeout
            .is_some_and(|t| now.duration_since(since) >= t)
        {
            return Some(StopReason::IdleTimeout);
        }
        None
    }

    /// How long to wait for packets: `slice`, shortened to the next deadline. A deadline
    /// beyond the clock's range is never reached.
    pub fn wait_budget(&self, now: Instant, slice: Duration) -> Duration {
        let until = |from: Instant, t: Duration| {
            from.checked_add(t)
                .map_or(slice, |d| d.saturating_duration_since(now))
        };
        let mut budget = slice;
        if let Some(t) = self.limits.max_time {
            budget = budget.min(until(self.started, t));
        }
        if let (Some(t), Some(since)) = (self.limits.idle_timeout, self.idle_since) {
            budget = budget.min(until(since, t));
        }
        budget.max(Duration::from_millis(1))
    }
}

/// A packet copied out of libpcap's buffer, owned by the queue. Buffers are reused.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnedPacket {
    /// Capture time, ns since the epoch.
    pub ts_ns: i64,
    /// Bytes captured.
    pub caplen: u32,
    /// Length on the wire.
    pub wirelen: u32,
    /// Link-layer type.
    pub linktype: u32,
    /// The bytes (`caplen` of them).
    pub data: Vec<u8>,
}

impl OwnedPacket {
    /// Copy `pkt` into this buffer, keeping its allocation.
    #[inline]
    pub fn fill(&mut self, pkt: &RawPacket<'_>) {
        self.ts_ns = pkt.ts_ns;
        self.caplen = pkt.caplen;
        self.wirelen = pkt.wirelen;
        self.linktype = pkt.linktype;
        self.data.clear();
        self.data.extend_from_slice(pkt.data);
    }

    /// Borrow as a [`RawPacket`].
    #[inline]
    pub fn as_raw(&self) -> RawPacket<'_> {
        RawPacket {
            ts_ns: self.ts_ns,
            caplen: self.caplen,
            wirelen: self.wirelen,
            linktype: self.linktype,
            data: &self.data,
        }
    }
}

/// What the capture thread reads: a libpcap handle, or a fake in tests.
pub trait CaptureSource: Send {
    /// The next packet if one is ready (never blocks for long).
    ///
    /// # Errors
    /// A read error; it ends the capture in state `failed`.
    fn try_next(&mut self) -> Result<Next<'_>>;

    /// Wait up to `timeout` for packets or for `waker`.
    ///
    /// # Errors
    /// A wait error; it ends the capture in state `failed`.
    fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()>;

    /// Final libpcap counters (`None` when unavailable).
    fn stats(&mut self) -> Option<PcapCounters>;
}

impl CaptureSource for Handle {
    fn try_next(&mut self) -> Result<Next<'_>> {
        Handle::try_next(self)
    }

    fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()> {
        Handle::wait(self, timeout, waker)
    }

    fn stats(&mut self) -> Option<PcapCounters> {
        Handle::stats(self)
    }
}

/// How a managed capture runs.
#[derive(Clone, Debug)]
pub struct ManagedConfig {
    /// Queue capacity (>= 1).
    pub queue_cap: usize,
    /// Queue policy.
    pub queue_mode: QueueMode,
    /// Stop conditions checked by the capture thread.
    pub limits: Limits,
    /// Longest single wait for packets: bounds how late `duration`/`idle_timeout` fire
    /// when no waker is available.
    pub wait_slice: Duration,
}

impl Default for ManagedConfig {
    fn default() -> Self {
        ManagedConfig {
            queue_cap: 1024,
            queue_mode: QueueMode::Blocking,
            limits: Limits::default(),
            wait_slice: Duration::from_millis(25),
        }
    }
}

/// A statistics snapshot (schema version 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureStats {
    /// Lifecycle state.
    pub state: CaptureState,
    /// Where packets come from.
    pub source: SourceInfo,
    /// Start time, ms since the epoch.
    pub started_at_ms: u64,
    /// Time since start, frozen at the end.
    pub elapsed_ms: u64,
    /// Packets read from the source.
    pub captured: u64,
    /// Packets taken from the queue by the consumer.
    pub delivered: u64,
    /// Packets converted for the consumer.
    pub processed: u64,
    /// Processed packets that carried a decode error (`None` when not observed).
    pub decode_errors: Option<u64>,
    /// Queue policy and counters.
    pub queue_mode: QueueMode,
    /// Queue capacity.
    pub queue_capacity: usize,
    /// Queue counters.
    pub queue: QueueCounters,
    /// Final libpcap counters (live only, set at the end).
    pub pcap: Option<PcapCounters>,
    /// Why it stopped (`None` while running).
    pub stop_reason: Option<StopReason>,
    /// The error that ended it.
    pub error: Option<ErrorInfo>,
}

struct Status {
    state: CaptureState,
    stop_reason: Option<StopReason>,
    error: Option<ErrorInfo>,
    pcap: Option<PcapCounters>,
    ended: Option<Instant>,
    done: bool,
}

/// A value alone on its cache line(s).
#[repr(align(128))]
struct Padded<T>(T);

struct Shared {
    queue: BoundedQueue<OwnedPacket>,
    status: Mutex<Status>,
    done_cv: Condvar,
    stop: AtomicBool,
    waker: Option<Waker>,
    // Written by the capture thread (per batch) and by the consumer (per packet): kept on
    // separate cache lines so the two threads do not contend for one line.
    captured: Padded<AtomicU64>,
    processed: Padded<AtomicU64>,
    decode_errors: AtomicU64,
    decode_observed: AtomicBool,
    info: SourceInfo,
    started: Instant,
    started_at_ms: u64,
}

impl Shared {
    fn status(&self) -> MutexGuard<'_, Status> {
        self.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn request_stop(&self, reason: StopReason) -> bool {
        let first = {
            let mut st = self.status();
            if st.state.is_terminal() || st.stop_reason.is_some() {
                false
            } else {
                st.stop_reason = Some(reason);
                if st.state == CaptureState::Running {
                    st.state = CaptureState::Stopping;
                }
                true
            }
        };
        self.stop.store(true, Ordering::Release);
        if let Some(w) = &self.waker {
            w.wake();
        }
        self.queue.wake_producer();
        first
    }

    fn record_error(&self, class: &str, message: String) {
        {
            let mut st = self.status();
            if st.error.is_none() {
                st.error = Some(ErrorInfo {
                    class: class.to_string(),
                    message,
                });
            }
        }
        // An earlier stop request keeps its reason; otherwise the reason is `error`.
        if !self.request_stop(StopReason::Error) {
            let mut st = self.status();
            if st.stop_reason.is_none() {
                st.stop_reason = Some(StopReason::Error);
            }
        }
    }

    fn finish(&self, pcap: Option<PcapCounters>) {
        let mut st = self.status();
        st.pcap = pcap;
        st.ended = Some(Instant::now());
        st.state = if st.error.is_some() {
            CaptureState::Failed
        } else {
            CaptureState::Closed
        };
        st.done = true;
        drop(st);
        self.queue.finish();
        self.done_cv.notify_all();
    }
}

/// Packets the capture thread reads before handing them to the queue under one lock.
const PRODUCER_BATCH: usize = 32;

/// The capture thread's side: packets read but not yet offered, and buffers to reuse.
struct Producer<'a> {
    shared: &'a Shared,
    batch: Vec<OwnedPacket>,
    spare: Vec<OwnedPacket>,
}

impl Producer<'_> {
    /// Offer the batch; `captured` is published first, so it never trails the queue counters.
    fn hand_over(&mut self, captured: u64) {
        if self.batch.is_empty() {
            return;
        }
        self.shared.captured.0.store(captured, Ordering::Release);
        let stop = &self.shared.stop;
        let abort = || stop.load(Ordering::Acquire);
        self.shared
            .queue
            .push_batch(&mut self.batch, &mut self.spare, &abort);
        self.spare.truncate(2 * PRODUCER_BATCH);
    }
}

fn produce(
    shared: &Shared,
    src: &mut dyn CaptureSource,
    limits: Limits,
    slice: Duration,
) -> Result<()> {
    let mut clock = StopClock::new(limits, shared.started);
    let mut prod = Producer {
        shared,
        batch: Vec::with_capacity(PRODUCER_BATCH),
        spare: Vec::with_capacity(3 * PRODUCER_BATCH),
    };
    let outcome = loop {
        if shared.stop.load(Ordering::Acquire) {
            break Ok(());
        }
        match src.try_next() {
            Err(e) => break Err(e),
            Ok(Next::Packet(p)) => {
                let mut item = prod.spare.pop().unwrap_or_default();
                item.fill(&p);
                prod.batch.push(item);
                let reason = clock.on_packet();
                if prod.batch.len() >= PRODUCER_BATCH {
                    prod.hand_over(clock.count());
                }
                if let Some(reason) = reason {
                    prod.hand_over(clock.count());
                    shared.request_stop(reason);
                    break Ok(());
                }
            }
            Ok(Next::Idle) => {
                prod.hand_over(clock.count());
                let now = Instant::now();
                if let Some(reason) = clock.on_idle(now) {
                    shared.request_stop(reason);
                    break Ok(());
                }
                shared.queue.flush();
                if let Err(e) = src.wait(clock.wait_budget(now, slice), shared.waker.as_ref()) {
                    break Err(e);
                }
            }
            Ok(Next::End) => {
                prod.hand_over(clock.count());
                shared.request_stop(StopReason::Eof);
                break Ok(());
            }
        }
    };
    // Packets read before a stop or an error are offered (and delivered) first; after a
    // stop, a blocking queue that is full cancels them instead of waiting.
    prod.hand_over(clock.count());
    shared.captured.0.store(clock.count(), Ordering::Release);
    outcome
}

fn run(shared: Arc<Shared>, mut src: Box<dyn CaptureSource>, limits: Limits, slice: Duration) {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        produce(&shared, src.as_mut(), limits, slice)
    }));
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => shared.record_error("CaptureError", e.to_string()),
        Err(_) => shared.record_error("CaptureError", "the capture thread panicked".to_string()),
    }
    let pcap = catch_unwind(AssertUnwindSafe(|| src.stats()))
        .ok()
        .flatten();
    // Dropping the source closes the libpcap handle: exactly once, on this thread.
    let _ = catch_unwind(AssertUnwindSafe(move || drop(src)));
    shared.finish(pcap);
}

/// A running (or finished) managed capture. Dropping it stops the thread and closes the handle.
pub struct ManagedCapture {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// How long `close` waits for the capture thread by default.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl ManagedCapture {
    /// Start reading `source` on a new thread.
    ///
    /// # Errors
    /// `Capture` when the thread or the waker cannot be created.
    pub fn start(
        source: Box<dyn CaptureSource>,
        info: SourceInfo,
        config: ManagedConfig,
    ) -> Result<Self> {
        let waker = match info {
            SourceInfo::Device(_) => Some(Waker::new()?),
            SourceInfo::Path(_) => None,
        };
        let shared = Arc::new(Shared {
            queue: BoundedQueue::new(
                config.queue_cap,
                config.queue_mode,
                config.queue_cap.min(64) + 2,
            ),
            status: Mutex::new(Status {
                state: CaptureState::Running,
                stop_reason: None,
                error: None,
                pcap: None,
                ended: None,
                done: false,
            }),
            done_cv: Condvar::new(),
            stop: AtomicBool::new(false),
            waker,
            captured: Padded(AtomicU64::new(0)),
            processed: Padded(AtomicU64::new(0)),
            decode_errors: AtomicU64::new(0),
            decode_observed: AtomicBool::new(true),
            info,
            started: Instant::now(),
            started_at_ms: epoch_ms(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("paclo-capture".into())
                .spawn(move || run(shared, source, config.limits, config.wait_slice))
                .map_err(|e| Error::Capture(format!("cannot start the capture thread: {e}")))?
        };
        Ok(ManagedCapture {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Ask the capture to stop (asynchronous, idempotent). Returns whether this call set
    /// the stop reason.
    pub fn request_stop(&self, reason: StopReason) -> bool {
        self.shared.request_stop(reason)
    }

    /// Record an error seen by the consumer (for example a failing `stop_when`) and stop.
    pub fn fail(&self, class: &str, message: String) {
        self.shared.record_error(class, message);
    }

    /// Take the next packet, waiting up to `timeout`; `recycle` returns a buffer for reuse.
    pub fn pop(&self, timeout: Duration, recycle: Option<OwnedPacket>) -> Pop<OwnedPacket> {
        self.shared.queue.pop(timeout, recycle)
    }

    /// Count a packet the consumer converted, and whether it had a decode error.
    pub fn count_processed(&self, decode_error: bool) {
        self.shared.processed.0.fetch_add(1, Ordering::Relaxed);
        if decode_error {
            self.shared.decode_errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Declare that decode errors are not observed (a fan-out converts per branch).
    pub fn set_decode_errors_unobserved(&self) {
        self.shared.decode_observed.store(false, Ordering::Relaxed);
    }

    /// Discard queued packets (counted as abandoned).
    pub fn clear_queue(&self) -> u64 {
        self.shared.queue.clear()
    }

    /// Wait until the capture thread has finished, at most `timeout`. Returns whether it has.
    pub fn wait_done(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = self.shared.status();
        while !st.done {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = self
                .shared
                .done_cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        drop(st);
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = t.join();
        }
        true
    }

    /// Whether the capture thread has finished (the handle is closed).
    pub fn is_done(&self) -> bool {
        self.shared.status().done
    }

    /// Stop (reason `closed` unless one is set), clear the queue, and wait for the thread.
    ///
    /// # Errors
    /// `Capture` when the thread does not finish within `timeout`; the state becomes `failed`.
    pub fn close(&self, timeout: Duration) -> Result<()> {
        self.request_stop(StopReason::Closed);
        self.clear_queue();
        if self.wait_done(timeout) {
            // Packets enqueued between the clear and the end are discarded too.
            self.clear_queue();
            return Ok(());
        }
        let message = format!(
            "the capture thread did not stop within {} ms",
            timeout.as_millis()
        );
        let mut st = self.shared.status();
        st.state = CaptureState::Failed;
        if st.error.is_none() {
            st.error = Some(ErrorInfo {
                class: "CaptureError".into(),
                message: message.clone(),
            });
        }
        Err(Error::Capture(message))
    }

    /// The current state.
    pub fn state(&self) -> CaptureState {
        self.shared.status().state
    }

    /// The stop reason, once set.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.shared.status().stop_reason
    }

    /// The recorded error, if any.
    pub fn error(&self) -> Option<ErrorInfo> {
        self.shared.status().error.clone()
    }

    /// A statistics snapshot.
    pub fn stats(&self) -> CaptureStats {
        let st = self.shared.status();
        let queue = self.shared.queue.counters();
        let elapsed = st
            .ended
            .unwrap_or_else(Instant::now)
            .duration_since(self.shared.started);
        CaptureStats {
            state: st.state,
            source: self.shared.info.clone(),
            started_at_ms: self.shared.started_at_ms,
            elapsed_ms: elapsed.as_millis() as u64,
            captured: self.shared.captured.0.load(Ordering::Acquire),
            delivered: queue.delivered,
            processed: self.shared.processed.0.load(Ordering::Relaxed),
            decode_errors: self
                .shared
                .decode_observed
                .load(Ordering::Relaxed)
                .then(|| self.shared.decode_errors.load(Ordering::Relaxed)),
            queue_mode: self.shared.queue.mode(),
            queue_capacity: self.shared.queue.capacity(),
            queue,
            pcap: st.pcap,
            stop_reason: st.stop_reason,
            error: st.error.clone(),
        }
    }
}

/// A handle on a capture's queue for another consumer (a fan-out dispatcher); it keeps the
/// queue alive but does not own the capture thread.
#[derive(Clone)]
pub struct QueueReader {
    shared: Arc<Shared>,
}

impl QueueReader {
    /// Take the next packet, waiting up to `timeout`; delivered packets count as processed.
    pub fn pop(&self, timeout: Duration) -> Pop<OwnedPacket> {
        let item = self.shared.queue.pop(timeout, None);
        if let Pop::Item(_) = item {
            self.shared.processed.0.fetch_add(1, Ordering::Relaxed);
        }
        item
    }

    /// The error that ended the capture, if any.
    pub fn error(&self) -> Option<ErrorInfo> {
        self.shared.status().error.clone()
    }

    /// Ask the capture to stop.
    pub fn request_stop(&self, reason: StopReason) {
        self.shared.request_stop(reason);
    }
}

impl ManagedCapture {
    /// A reader on this capture's queue.
    pub fn reader(&self) -> QueueReader {
        QueueReader {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for ManagedCapture {
    fn drop(&mut self) {
        let _ = self.close(CLOSE_TIMEOUT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// A fake source: a script of packets, idles, errors and an optional end.
    struct Script {
        steps: VecDeque<Step>,
        buf: Vec<u8>,
        then: Step,
        stats: Option<PcapCounters>,
    }

    #[derive(Clone, Copy, Debug)]
    enum Step {
        Packet(u8),
        Idle,
        End,
        Fail,
    }

    impl Script {
        fn new(steps: impl IntoIterator<Item = Step>, then: Step) -> Box<Self> {
            Box::new(Script {
                steps: steps.into_iter().collect(),
                buf: vec![0; 4],
                then,
                stats: None,
            })
        }
    }

    impl CaptureSource for Script {
        fn try_next(&mut self) -> Result<Next<'_>> {
            match self.steps.pop_front().unwrap_or(self.then) {
                Step::Packet(b) => {
                    self.buf = vec![b; 4];
                    Ok(Next::Packet(RawPacket {
                        ts_ns: b as i64,
                        caplen: 4,
                        wirelen: 4,
                        linktype: 1,
                        data: &self.buf,
                    }))
                }
                Step::Idle => Ok(Next::Idle),
                Step::End => Ok(Next::End),
                Step::Fail => Err(Error::Capture("libpcap read error: boom".into())),
            }
        }

        fn wait(&mut self, timeout: Duration, _waker: Option<&Waker>) -> Result<()> {
            std::thread::sleep(timeout.min(Duration::from_millis(2)));
            Ok(())
        }

        fn stats(&mut self) -> Option<PcapCounters> {
            self.stats
        }
    }

    fn file() -> SourceInfo {
        SourceInfo::Path("/x.pcap".into())
    }

    fn drain(c: &ManagedCapture) -> Vec<u8> {
        let mut out = vec![];
        loop {
            match c.pop(Duration::from_millis(50), None) {
                Pop::Item(p) => {
                    c.count_processed(false);
                    out.push(p.data[0]);
                }
                Pop::Empty => {}
                Pop::Finished => return out,
            }
        }
    }

    #[test]
    fn stop_clock_decides_limits_and_bounds_waits() {
        let t0 = Instant::now();
        let limits = Limits {
            max_packets: Some(3),
            max_time: Some(Duration::from_secs(10)),
            idle_timeout: Some(Duration::from_millis(100)),
        };
        let mut c = StopClock::new(limits, t0);
        assert_eq!(c.on_packet(), None);
        assert_eq!(c.on_packet(), None);
        assert_eq!(c.on_packet(), Some(StopReason::MaxPackets));
        let mut c = StopClock::new(limits, t0);
        assert_eq!(c.on_idle(t0), None);
        // Idle since t0: the wait is cut to the idle deadline.
        assert_eq!(
            c.wait_budget(t0 + Duration::from_millis(60), Duration::from_secs(1)),
            Duration::from_millis(40)
        );
        assert_eq!(
            c.on_idle(t0 + Duration::from_millis(100)),
            Some(StopReason::IdleTimeout)
        );
        // A packet resets idleness.
        c.on_packet();
        assert_eq!(c.on_idle(t0 + Duration::from_millis(150)), None);
        assert_eq!(
            c.on_idle(t0 + Duration::from_secs(10)),
            Some(StopReason::MaxTime)
        );
        assert_eq!(
            c.wait_budget(t0 + Duration::from_secs(20), Duration::from_millis(25)),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn stop_clock_takes_limits_beyond_the_clock_range() {
        let t0 = Instant::now();
        let limits = Limits {
            max_packets: None,
            max_time: Some(Duration::MAX),
            idle_timeout: Some(Duration::MAX),
        };
        let mut c = StopClock::new(limits, t0);
        assert_eq!(c.on_idle(t0), None);
        assert_eq!(c.on_packet(), None);
        assert_eq!(c.on_idle(t0 + Duration::from_secs(1)), None);
        let slice = Duration::from_millis(25);
        assert_eq!(c.wait_budget(t0 + Duration::from_secs(1), slice), slice);
    }

    #[test]
    fn eof_delivers_everything_in_order() {
        let c = ManagedCapture::start(
            Script::new((0..50).map(Step::Packet), Step::End),
            file(),
            ManagedConfig {
                queue_cap: 4,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(drain(&c), (0..50).collect::<Vec<_>>());
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (CaptureState::Closed, Some(StopReason::Eof))
        );
        assert_eq!(
            (s.captured, s.delivered, s.processed, s.queue.enqueued),
            (50, 50, 50, 50)
        );
        assert!(s.queue.blocked_events > 0);
        assert_eq!(s.pcap, None);
    }

    #[test]
    fn read_error_fails_and_is_not_eof() {
        let steps = [Step::Packet(1), Step::Packet(2), Step::Fail];
        let c = ManagedCapture::start(
            Script::new(steps, Step::End),
            file(),
            ManagedConfig::default(),
        )
        .unwrap();
        assert_eq!(drain(&c), vec![1, 2]);
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (CaptureState::Failed, Some(StopReason::Error))
        );
        assert!(s.error.unwrap().message.contains("boom"));
    }

    #[test]
    fn limit_and_duration_and_idle() {
        let limits = Limits {
            max_packets: Some(7),
            ..Default::default()
        };
        let c = ManagedCapture::start(
            Script::new([], Step::Packet(9)),
            file(),
            ManagedConfig {
                limits,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(drain(&c).len(), 7);
        assert_eq!(c.stop_reason(), Some(StopReason::MaxPackets));

        let limits = Limits {
            max_time: Some(Duration::from_millis(30)),
            ..Default::default()
        };
        let t0 = Instant::now();
        let c = ManagedCapture::start(
            Script::new([], Step::Idle),
            file(),
            ManagedConfig {
                limits,
                ..Default::default()
            },
        )
        .unwrap();
        drain(&c);
        assert_eq!(c.stop_reason(), Some(StopReason::MaxTime));
        assert!(t0.elapsed() >= Duration::from_millis(30));

        let limits = Limits {
            idle_timeout: Some(Duration::from_millis(20)),
            ..Default::default()
        };
        let steps = [Step::Packet(1), Step::Idle, Step::Packet(2)];
        let c = ManagedCapture::start(
            Script::new(steps, Step::Idle),
            file(),
            ManagedConfig {
                limits,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(drain(&c), vec![1, 2]);
        assert_eq!(c.stop_reason(), Some(StopReason::IdleTimeout));
    }

    #[test]
    fn stop_is_idempotent_and_first_reason_wins() {
        let c = ManagedCapture::start(
            Script::new([], Step::Idle),
            file(),
            ManagedConfig::default(),
        )
        .unwrap();
        assert!(c.request_stop(StopReason::Consumer));
        assert!(!c.request_stop(StopReason::Predicate));
        assert!(c.wait_done(Duration::from_secs(5)));
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (CaptureState::Closed, Some(StopReason::Consumer))
        );
        assert!(!c.request_stop(StopReason::Closed));
        c.close(CLOSE_TIMEOUT).unwrap();
        assert_eq!(c.stop_reason(), Some(StopReason::Consumer));
    }

    #[test]
    fn close_unblocks_a_producer_on_a_full_queue() {
        let c = ManagedCapture::start(
            Script::new([], Step::Packet(1)),
            file(),
            ManagedConfig {
                queue_cap: 2,
                ..Default::default()
            },
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(c.state(), CaptureState::Running);
        let t0 = Instant::now();
        c.close(CLOSE_TIMEOUT).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(1));
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (CaptureState::Closed, Some(StopReason::Closed))
        );
        assert_eq!(s.queue.depth, 0);
        assert_eq!(s.queue.enqueued, s.queue.delivered + s.queue.abandoned);
        assert_eq!(
            s.captured,
            s.queue.enqueued + s.queue.dropped + s.queue.cancelled
        );
    }

    #[test]
    fn dropping_counts_are_exact() {
        let c = ManagedCapture::start(
            Script::new((0..200).map(|i| Step::Packet(i as u8)), Step::End),
            file(),
            ManagedConfig {
                queue_cap: 3,
                queue_mode: QueueMode::Dropping,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(c.wait_done(Duration::from_secs(5)));
        let got = drain(&c);
        let s = c.stats();
        assert_eq!(got.len() as u64 + s.queue.dropped, 200);
        assert_eq!(s.queue.enqueued, 3);
    }

    #[test]
    fn steady_state_capture_does_not_allocate_per_packet() {
        // The producer reuses pooled buffers: allocations on the capture thread do not grow
        // with the packet count.
        fn allocs_for(n: usize) -> u64 {
            struct Counting {
                inner: Box<Script>,
                allocs: Arc<AtomicU64>,
                start: Option<crate::alloc::AllocCounts>,
            }
            impl CaptureSource for Counting {
                fn try_next(&mut self) -> Result<Next<'_>> {
                    if self.start.is_none() {
                        self.start = Some(crate::alloc::thread_counts());
                    }
                    let step = self.inner.steps.pop_front().unwrap_or(Step::End);
                    if let Step::End = step {
                        let now = crate::alloc::thread_counts();
                        self.allocs
                            .store(now.since(self.start.unwrap()).allocs, Ordering::SeqCst);
                        return Ok(Next::End);
                    }
                    Ok(Next::Packet(RawPacket {
                        ts_ns: 0,
                        caplen: 64,
                        wirelen: 64,
                        linktype: 1,
                        data: &self.inner.buf,
                    }))
                }
                fn wait(&mut self, _: Duration, _: Option<&Waker>) -> Result<()> {
                    Ok(())
                }
                fn stats(&mut self) -> Option<PcapCounters> {
                    None
                }
            }
            let allocs = Arc::new(AtomicU64::new(0));
            let mut script = Script::new((0..n).map(|_| Step::Packet(0)), Step::End);
            script.buf = vec![7; 64];
            let src = Box::new(Counting {
                inner: script,
                allocs: allocs.clone(),
                start: None,
            });
            let c = ManagedCapture::start(
                src,
                file(),
                ManagedConfig {
                    queue_cap: 8,
                    ..Default::default()
                },
            )
            .unwrap();
            let mut recycle = None;
            loop {
                match c.pop(Duration::from_millis(50), recycle.take()) {
                    Pop::Item(p) => recycle = Some(p),
                    Pop::Empty => {}
                    Pop::Finished => break,
                }
            }
            allocs.load(Ordering::SeqCst)
        }
        let small = allocs_for(1_000);
        let large = allocs_for(100_000);
        assert!(
            large <= small + 16,
            "allocations grow with packets: {small} vs {large}"
        );
    }
}
