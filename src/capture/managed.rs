//! Managed capture: a thread runs a [`SourceLoop`] into a bounded queue; one consumer takes
//! the packets; stop, close and statistics work from any thread.
//!
//! Lifecycle: the caller opens the source and installs the filter (a [`SourceLoop`]), then
//! [`ManagedCapture::start`] moves it to a new thread in state `running`. A stop request
//! (any reason; the first one wins) moves the state to `stopping` and wakes the thread; the
//! thread then reads `pcap_stats`, closes the source (exactly once, by dropping it), and
//! ends in `closed`, or `failed` when an error was recorded. [`ManagedCapture::close`] also
//! clears the queue, so a producer blocked on a full queue returns at once, and waits at
//! most the given time.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::queue::{BoundedQueue, Pop, QueueMode};
use crate::error::{Error, Result};
use crate::source::{PacketSource, PcapCounters, RawPacket, SourceInfo, SourceLoop, Step, Waker};
use crate::stats::{Failure, QueueStats, Started, State, Stats, StopReason};

/// The loop a managed capture runs: any source, boxed.
pub type BoxedLoop = SourceLoop<Box<dyn PacketSource>>;

/// A packet copied out of the source's buffer, owned by the queue. Buffers are reused.
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

/// How a managed capture runs (the stop conditions belong to its [`SourceLoop`]).
#[derive(Clone, Debug)]
pub struct ManagedConfig {
    /// Queue capacity (>= 1).
    pub queue_cap: usize,
    /// Queue policy.
    pub queue_mode: QueueMode,
    /// Longest single wait for packets: bounds how late `duration`/`idle_timeout` fire,
    /// and a stop takes effect, when no waker is available.
    pub wait_slice: Duration,
}

impl Default for ManagedConfig {
    fn default() -> Self {
        ManagedConfig {
            queue_cap: 1024,
            queue_mode: QueueMode::Blocking,
            wait_slice: Duration::from_millis(25),
        }
    }
}

struct Status {
    state: State,
    stop_reason: Option<StopReason>,
    error: Option<Failure>,
    pcap: Option<PcapCounters>,
    ended: Option<Instant>,
    done: bool,
    truncated: bool,
    /// The truncation not yet reported to the consumer.
    truncation: Option<Error>,
    /// Records read whole although longer than their snaplen (files), at the end.
    oversized_records: Option<u64>,
    /// The warning about them not yet reported to the consumer.
    oversized: Option<String>,
}

/// A value alone on its cache line(s).
#[repr(align(128))]
struct Padded<T>(T);

struct Shared {
    queue: BoundedQueue<OwnedPacket>,
    status: Mutex<Status>,
    done_cv: Condvar,
    stop: AtomicBool,
    waker: Option<Arc<Waker>>,
    // Written by the capture thread (per batch) and by the consumer (per packet): kept on
    // separate cache lines so the two threads do not contend for one line.
    captured: Padded<AtomicU64>,
    bytes: AtomicU64,
    processed: Padded<AtomicU64>,
    decode_errors: AtomicU64,
    decode_observed: AtomicBool,
    info: SourceInfo,
    started: Started,
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
                if st.state == State::Running {
                    st.state = State::Stopping;
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

    fn record_error(&self, failure: Failure) {
        self.status().error.get_or_insert(failure);
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
            State::Failed
        } else {
            State::Closed
        };
        st.done = true;
        drop(st);
        self.queue.finish();
        self.done_cv.notify_all();
    }
}

/// Packets the capture thread reads before handing them to the queue under one lock.
pub(crate) const PRODUCER_BATCH: usize = 32;

/// The capture thread's side: packets read but not yet offered, and buffers to reuse.
struct Producer<'a> {
    shared: &'a Shared,
    batch: Vec<OwnedPacket>,
    spare: Vec<OwnedPacket>,
}

impl Producer<'_> {
    /// Offer the batch; `captured` (and `bytes`) are published first, so they never trail
    /// the queue counters.
    fn hand_over(&mut self, captured: u64, bytes: u64) {
        if self.batch.is_empty() {
            return;
        }
        self.shared.bytes.store(bytes, Ordering::Relaxed);
        self.shared.captured.0.store(captured, Ordering::Release);
        let stop = &self.shared.stop;
        let abort = || stop.load(Ordering::Acquire);
        self.shared
            .queue
            .push_batch(&mut self.batch, &mut self.spare, &abort);
        self.spare.truncate(2 * PRODUCER_BATCH);
    }
}

/// The managed producer: run `lp` into the queue until it ends, fails or a stop is
/// requested; record how it ended.
fn produce(shared: &Shared, lp: &mut BoxedLoop) {
    let mut prod = Producer {
        shared,
        batch: Vec::with_capacity(PRODUCER_BATCH),
        spare: Vec::with_capacity(3 * PRODUCER_BATCH),
    };
    let outcome = loop {
        if shared.stop.load(Ordering::Acquire) {
            break Ok(());
        }
        match lp.step() {
            Err(e) => break Err(e),
            Ok(Step::Packet(p)) => {
                let mut item = prod.spare.pop().unwrap_or_default();
                item.fill(&p);
                prod.batch.push(item);
                if prod.batch.len() >= PRODUCER_BATCH {
                    prod.hand_over(lp.packets(), lp.bytes());
                }
            }
            Ok(Step::Pending) => {
                // Nothing ready: offer what was read, then the next step waits.
                prod.hand_over(lp.packets(), lp.bytes());
                shared.queue.flush();
            }
            Ok(Step::End) => break Ok(()),
        }
    };
    // Packets read before a stop or an error are offered (and delivered) first; after a
    // stop, a blocking queue that is full cancels them instead of waiting.
    prod.hand_over(lp.packets(), lp.bytes());
    shared.bytes.store(lp.bytes(), Ordering::Relaxed);
    shared.captured.0.store(lp.packets(), Ordering::Release);
    {
        let mut st = shared.status();
        st.oversized_records = lp.source().oversized().map(|o| o.count);
        st.oversized = lp.take_oversized();
    }
    if let Some(t) = lp.take_truncation() {
        let mut st = shared.status();
        st.truncated = true;
        st.truncation = Some(t);
    }
    match outcome {
        Ok(()) => {
            if let Some(reason) = lp.stop_reason() {
                shared.request_stop(reason);
            }
        }
        Err(e) => {
            if let Error::Truncated { .. } = e {
                shared.status().truncated = true;
            }
            shared.record_error(Failure::Source(e));
        }
    }
}

fn run(shared: Arc<Shared>, mut lp: BoxedLoop) {
    if catch_unwind(AssertUnwindSafe(|| produce(&shared, &mut lp))).is_err() {
        shared.record_error(Failure::Source(Error::Capture(
            "the capture thread panicked".to_string(),
        )));
    }
    // Closing the loop reads the kernel's counters and closes the source: exactly once, on
    // this thread.
    let pcap = catch_unwind(AssertUnwindSafe(move || lp.close()))
        .ok()
        .and_then(|s| s.pcap);
    shared.finish(pcap);
}

/// A running (or finished) managed capture. Dropping it stops the thread and closes the source.
pub struct ManagedCapture {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// How long `close` waits for the capture thread by default.
pub const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

impl ManagedCapture {
    /// Start running `lp` on a new thread. Its stop conditions count from now. A live
    /// source gets a [`Waker`], so a stop ends a wait at once; where none can be made, the
    /// wait slice bounds the delay.
    ///
    /// # Errors
    /// `Capture` when the thread cannot be created.
    pub fn start(mut lp: BoxedLoop, config: ManagedConfig) -> Result<Self> {
        let info = lp.info().clone();
        let oversized_records = lp.source().oversized().map(|o| o.count);
        let waker = match info {
            SourceInfo::Device(_) => Waker::new().ok().map(Arc::new),
            SourceInfo::Path(_) => None,
        };
        lp.restart_clock();
        let lp = lp.waker(waker.clone()).wait_slice(config.wait_slice);
        let shared = Arc::new(Shared {
            // The pool keeps every buffer a full queue needs, so a burst that fills the queue
            // allocates its buffers once for the capture, not once per burst.
            queue: BoundedQueue::new(
                config.queue_cap,
                config.queue_mode,
                config.queue_cap.saturating_add(2 * PRODUCER_BATCH),
            ),
            status: Mutex::new(Status {
                state: State::Running,
                stop_reason: None,
                error: None,
                pcap: None,
                ended: None,
                done: false,
                truncated: false,
                truncation: None,
                oversized_records,
                oversized: None,
            }),
            done_cv: Condvar::new(),
            stop: AtomicBool::new(false),
            waker,
            captured: Padded(AtomicU64::new(0)),
            bytes: AtomicU64::new(0),
            processed: Padded(AtomicU64::new(0)),
            decode_errors: AtomicU64::new(0),
            decode_observed: AtomicBool::new(true),
            info,
            started: Started::now(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("paclo-capture".into())
                .spawn(move || run(shared, lp))
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
    pub fn fail(&self, failure: Failure) {
        self.shared.record_error(failure);
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

    /// Whether the capture thread has finished (the source is closed).
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
        let err = Error::Capture(format!(
            "the capture thread did not stop within {} ms",
            timeout.as_millis()
        ));
        let mut st = self.shared.status();
        st.state = State::Failed;
        st.error.get_or_insert(Failure::Source(err.clone()));
        Err(err)
    }

    /// The current state.
    pub fn state(&self) -> State {
        self.shared.status().state
    }

    /// The stop reason, once set.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.shared.status().stop_reason
    }

    /// The recorded error, if any.
    pub fn error(&self) -> Option<Failure> {
        self.shared.status().error.clone()
    }

    /// The truncation that ended a file, once (the consumer reports it as a warning).
    pub fn take_truncation(&self) -> Option<Error> {
        self.shared.status().truncation.take()
    }

    /// The warning about records of a file read whole although longer than their snaplen,
    /// once (the consumer reports it).
    pub fn take_oversized(&self) -> Option<String> {
        self.shared.status().oversized.take()
    }

    /// A statistics snapshot.
    pub fn stats(&self) -> Stats {
        let st = self.shared.status();
        let counters = self.shared.queue.counters();
        Stats {
            state: st.state,
            source: self.shared.info.clone(),
            timing: self.shared.started.timing(st.ended),
            captured: self.shared.captured.0.load(Ordering::Acquire),
            processed: self.shared.processed.0.load(Ordering::Relaxed),
            decode_errors: self
                .shared
                .decode_observed
                .load(Ordering::Relaxed)
                .then(|| self.shared.decode_errors.load(Ordering::Relaxed)),
            bytes: self.shared.bytes.load(Ordering::Relaxed),
            queue: Some(QueueStats {
                mode: self.shared.queue.mode(),
                capacity: self.shared.queue.capacity(),
                counters,
            }),
            pcap: st.pcap,
            stop_reason: st.stop_reason,
            error: st.error.clone(),
            truncated: st.truncated,
            oversized_records: st.oversized_records,
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
    pub fn error(&self) -> Option<Failure> {
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
    use crate::source::testing::{Script, Scripted as Step};
    use crate::source::{Fetch, Limits};

    fn start(script: Box<Script>, limits: Limits, config: ManagedConfig) -> ManagedCapture {
        let lp = SourceLoop::new(script as Box<dyn PacketSource>, None, limits).unwrap();
        ManagedCapture::start(lp, config).unwrap()
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

    fn queue(s: &Stats) -> crate::capture::QueueCounters {
        s.queue.expect("a managed capture has a queue").counters
    }

    #[test]
    fn eof_delivers_everything_in_order() {
        let config = ManagedConfig {
            queue_cap: 4,
            ..Default::default()
        };
        let c = start(
            Script::file((0..50).map(Step::Packet), Step::End),
            Limits::default(),
            config,
        );
        assert_eq!(drain(&c), (0..50).collect::<Vec<_>>());
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (State::Closed, Some(StopReason::Eof))
        );
        let q = queue(&s);
        assert_eq!(
            (s.captured, q.delivered, s.processed, q.enqueued, s.bytes),
            (50, 50, 50, 50, 200)
        );
        assert!(q.blocked_events > 0);
        assert_eq!((s.pcap, s.truncated), (None, false));
        assert_eq!(s.source, SourceInfo::Path("/x.pcap".into()));
    }

    #[test]
    fn read_error_fails_and_is_not_eof() {
        let steps = [Step::Packet(1), Step::Packet(2), Step::Fail];
        let c = start(
            Script::new(steps, Step::End),
            Limits::default(),
            ManagedConfig::default(),
        );
        assert_eq!(drain(&c), vec![1, 2]);
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (State::Failed, Some(StopReason::Error))
        );
        let err = s.error.unwrap();
        assert!(matches!(err, Failure::Source(Error::Capture(_))), "{err:?}");
        assert!(err.message().contains("boom"));
    }

    #[test]
    fn a_cut_last_record_ends_the_capture_as_eof_with_a_truncation() {
        let steps = [Step::Packet(1), Step::Packet(2), Step::Truncated];
        let c = start(
            Script::file(steps, Step::End),
            Limits::default(),
            ManagedConfig::default(),
        );
        assert_eq!(drain(&c), vec![1, 2]);
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason, s.truncated, s.error.is_none()),
            (State::Closed, Some(StopReason::Eof), true, true)
        );
        assert!(matches!(
            c.take_truncation(),
            Some(Error::Truncated { index: 3, .. })
        ));
        assert!(c.take_truncation().is_none(), "reported once");
    }

    #[test]
    fn limit_and_duration_and_idle() {
        let limits = Limits {
            max_packets: Some(7),
            ..Default::default()
        };
        let c = start(
            Script::new([], Step::Packet(9)),
            limits,
            ManagedConfig::default(),
        );
        assert_eq!(drain(&c).len(), 7);
        assert_eq!(c.stop_reason(), Some(StopReason::MaxPackets));

        let limits = Limits {
            max_time: Some(Duration::from_millis(30)),
            ..Default::default()
        };
        let t0 = Instant::now();
        let c = start(
            Script::new([], Step::Idle),
            limits,
            ManagedConfig::default(),
        );
        drain(&c);
        assert_eq!(c.stop_reason(), Some(StopReason::MaxTime));
        assert!(t0.elapsed() >= Duration::from_millis(30));

        let limits = Limits {
            idle_timeout: Some(Duration::from_millis(20)),
            ..Default::default()
        };
        let steps = [Step::Packet(1), Step::Idle, Step::Packet(2)];
        let c = start(
            Script::new(steps, Step::Idle),
            limits,
            ManagedConfig::default(),
        );
        assert_eq!(drain(&c), vec![1, 2]);
        assert_eq!(c.stop_reason(), Some(StopReason::IdleTimeout));
    }

    #[test]
    fn stop_is_idempotent_and_first_reason_wins() {
        let c = start(
            Script::new([], Step::Idle),
            Limits::default(),
            ManagedConfig::default(),
        );
        assert!(c.request_stop(StopReason::Consumer));
        assert!(!c.request_stop(StopReason::Predicate));
        assert!(c.wait_done(Duration::from_secs(5)));
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (State::Closed, Some(StopReason::Consumer))
        );
        assert!(!c.request_stop(StopReason::Closed));
        c.close(CLOSE_TIMEOUT).unwrap();
        assert_eq!(c.stop_reason(), Some(StopReason::Consumer));
    }

    #[test]
    fn close_unblocks_a_producer_on_a_full_queue() {
        let config = ManagedConfig {
            queue_cap: 2,
            ..Default::default()
        };
        let c = start(Script::new([], Step::Packet(1)), Limits::default(), config);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(c.state(), State::Running);
        let t0 = Instant::now();
        c.close(CLOSE_TIMEOUT).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(1));
        let s = c.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (State::Closed, Some(StopReason::Closed))
        );
        let q = queue(&s);
        assert_eq!(q.depth, 0);
        assert_eq!(q.enqueued, q.delivered + q.abandoned);
        assert_eq!(s.captured, q.enqueued + q.dropped + q.cancelled);
    }

    #[test]
    fn dropping_counts_are_exact() {
        let config = ManagedConfig {
            queue_cap: 3,
            queue_mode: QueueMode::Dropping,
            ..Default::default()
        };
        let c = start(
            Script::new((0..200).map(|i| Step::Packet(i as u8)), Step::End),
            Limits::default(),
            config,
        );
        assert!(c.wait_done(Duration::from_secs(5)));
        let got = drain(&c);
        let s = c.stats();
        assert_eq!(got.len() as u64 + queue(&s).dropped, 200);
        assert_eq!(queue(&s).enqueued, 3);
    }

    /// A stop wakes a producer waiting on an idle device at once, well before its wait
    /// slice ends.
    #[test]
    fn a_stop_wakes_the_waiting_producer() {
        let mut script = Script::new([], Step::Idle);
        script.poll_waker = true;
        let lp = SourceLoop::new(script as Box<dyn PacketSource>, None, Limits::default()).unwrap();
        let config = ManagedConfig {
            wait_slice: Duration::from_secs(30),
            ..Default::default()
        };
        let c = ManagedCapture::start(lp, config).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let t0 = Instant::now();
        c.request_stop(StopReason::Consumer);
        assert!(c.wait_done(Duration::from_secs(5)));
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    }

    #[test]
    fn steady_state_capture_does_not_allocate_per_packet() {
        // The producer reuses pooled buffers: allocations on the capture thread do not grow
        // with the packet count.
        fn allocs_for(n: usize) -> u64 {
            struct Counting {
                left: usize,
                buf: Vec<u8>,
                allocs: Arc<AtomicU64>,
                start: Option<crate::alloc::AllocCounts>,
            }
            impl PacketSource for Counting {
                fn fetch(&mut self) -> Result<Fetch<'_>> {
                    if self.start.is_none() {
                        self.start = Some(crate::alloc::thread_counts());
                    }
                    if self.left == 0 {
                        let now = crate::alloc::thread_counts();
                        self.allocs
                            .store(now.since(self.start.unwrap()).allocs, Ordering::SeqCst);
                        return Ok(Fetch::End);
                    }
                    self.left -= 1;
                    Ok(Fetch::Packet(RawPacket {
                        ts_ns: 0,
                        caplen: 64,
                        wirelen: 64,
                        linktype: 1,
                        data: &self.buf,
                    }))
                }
                fn info(&self) -> SourceInfo {
                    SourceInfo::Path("/x.pcap".into())
                }
                fn linktype(&self) -> Option<u32> {
                    Some(1)
                }
                fn snaplen(&self) -> u32 {
                    65535
                }
                fn install_filter(&mut self, _expr: &str) -> Result<()> {
                    Ok(())
                }
            }
            let allocs = Arc::new(AtomicU64::new(0));
            let src = Box::new(Counting {
                left: n,
                buf: vec![7; 64],
                allocs: allocs.clone(),
                start: None,
            });
            let lp =
                SourceLoop::new(src as Box<dyn PacketSource>, None, Limits::default()).unwrap();
            let config = ManagedConfig {
                queue_cap: 8,
                ..Default::default()
            };
            let c = ManagedCapture::start(lp, config).unwrap();
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
