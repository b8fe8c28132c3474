//! Bounded fan-out: one dispatcher thread takes each item from a source and offers it to
//! every open branch queue in turn.
//!
//! A blocking branch waits for space, which backpressures every branch (and the source); a
//! dropping branch discards what does not fit, so a slow consumer there slows nobody. Each
//! branch keeps source order. Per-branch counters satisfy
//! `offered = enqueued + dropped + cancelled` and `enqueued = delivered + abandoned + depth`
//! at every snapshot (see [`super::queue`]). Closing a branch abandons its queue; when the
//! last branch closes the dispatcher stops (`no_branches`). The `cancel` hook runs once when
//! the dispatcher stops, to stop the source (a managed capture).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::queue::{BoundedQueue, Pop, Push, QueueMode};
use crate::error::{Error, Result};
use crate::stats::{
    BranchState, BranchStats, Failure, FanOutStats, FanOutStopReason, QueueStats, Started, State,
};

/// What the source gave the dispatcher.
#[derive(Debug)]
pub enum SourceItem<T> {
    /// A value to offer to every branch.
    Item(T),
    /// Nothing yet; the source is still running.
    Empty,
    /// The source is exhausted.
    End,
    /// The source failed.
    Failed(Failure),
}

/// One branch's configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BranchConfig {
    /// The branch id.
    pub name: String,
    /// Blocking or dropping.
    pub mode: QueueMode,
    /// Queue capacity (>= 1).
    pub capacity: usize,
}

struct BranchStatus {
    state: BranchState,
    reason: Option<&'static str>,
    error: Option<Failure>,
}

struct Branch<T> {
    name: String,
    queue: BoundedQueue<T>,
    closed: AtomicBool,
    status: Mutex<BranchStatus>,
}

struct FanStatus {
    reason: Option<FanOutStopReason>,
    error: Option<Failure>,
    ended: Option<Instant>,
    done: bool,
    failed: bool,
}

struct Shared<T> {
    branches: Vec<Branch<T>>,
    stop: AtomicBool,
    status: Mutex<FanStatus>,
    done_cv: Condvar,
    received: AtomicU64,
    started: Started,
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T> Shared<T> {
    fn request_stop(&self, reason: FanOutStopReason) {
        {
            let mut st = lock(&self.status);
            if st.reason.is_none() && !st.done {
                st.reason = Some(reason);
            }
        }
        self.stop.store(true, Ordering::Release);
        for b in &self.branches {
            b.queue.wake_producer();
        }
    }
}

type SourceFn<T> = Box<dyn FnMut(Duration) -> SourceItem<T> + Send>;
type CancelFn = Box<dyn FnOnce() + Send>;

fn dispatch<T: Clone>(shared: &Shared<T>, source: &mut SourceFn<T>) {
    loop {
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        let mut next = source(Duration::ZERO);
        if let SourceItem::Empty = next {
            for b in &shared.branches {
                b.queue.flush();
            }
            next = source(Duration::from_millis(25));
        }
        match next {
            SourceItem::Item(v) => {
                shared.received.fetch_add(1, Ordering::Relaxed);
                for b in &shared.branches {
                    if b.closed.load(Ordering::Acquire) {
                        continue;
                    }
                    let abort =
                        || shared.stop.load(Ordering::Acquire) || b.closed.load(Ordering::Acquire);
                    match b.queue.push(v.clone(), &abort) {
                        Push::Enqueued(_) | Push::Dropped(_) | Push::Cancelled(_) => {}
                    }
                }
            }
            SourceItem::Empty => {}
            SourceItem::End => {
                shared.request_stop(FanOutStopReason::SourceExhausted);
                return;
            }
            SourceItem::Failed(failure) => {
                lock(&shared.status).error = Some(failure);
                shared.request_stop(FanOutStopReason::Error);
                return;
            }
        }
    }
}

fn run<T: Clone>(shared: Arc<Shared<T>>, mut source: SourceFn<T>, cancel: CancelFn) {
    if catch_unwind(AssertUnwindSafe(|| dispatch(&shared, &mut source))).is_err() {
        lock(&shared.status).error = Some(Failure::Source(Error::Capture(
            "the fan-out dispatcher panicked".into(),
        )));
        shared.request_stop(FanOutStopReason::Error);
    }
    let _ = catch_unwind(AssertUnwindSafe(cancel));
    drop(source);
    let (reason, error) = {
        let st = lock(&shared.status);
        (st.reason, st.error.clone())
    };
    for b in &shared.branches {
        let mut bs = lock(&b.status);
        if bs.state == BranchState::Open {
            (bs.state, bs.reason) = match reason {
                Some(FanOutStopReason::SourceExhausted) => {
                    (BranchState::Completed, Some("source_exhausted"))
                }
                Some(FanOutStopReason::Error) => (BranchState::Failed, Some("source_error")),
                _ => (BranchState::FanoutClosed, Some("fanout_closed")),
            };
            if bs.state == BranchState::Failed {
                bs.error = error.clone();
            }
        }
        if bs.state == BranchState::FanoutClosed {
            b.queue.clear();
        }
    }
    // The terminal state is recorded before any branch ends, so a consumer that sees its
    // branch finish reads the final state in `stats()`.
    let mut st = lock(&shared.status);
    st.failed = st.error.is_some();
    st.ended = Some(Instant::now());
    st.done = true;
    drop(st);
    for b in &shared.branches {
        b.queue.finish();
    }
    shared.done_cv.notify_all();
}

/// A running (or finished) fan-out. Dropping it closes it.
pub struct FanOut<T> {
    shared: Arc<Shared<T>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl<T: Clone + Send + 'static> FanOut<T> {
    /// Start dispatching `source` to `branches` (at least two, unique names).
    ///
    /// # Errors
    /// `InvalidArgument` for fewer than two branches or a duplicate name; `Capture` when
    /// the thread cannot start.
    pub fn start(
        source: SourceFn<T>,
        cancel: CancelFn,
        branches: Vec<BranchConfig>,
    ) -> Result<Self> {
        if branches.len() < 2 {
            return Err(Error::InvalidArgument(
                "fan_out requires at least two branches".into(),
            ));
        }
        for (i, b) in branches.iter().enumerate() {
            if branches[..i].iter().any(|o| o.name == b.name) {
                return Err(Error::InvalidArgument(format!(
                    "fan_out branch {:?} is given twice",
                    b.name
                )));
            }
        }
        let shared = Arc::new(Shared {
            branches: branches
                .into_iter()
                .map(|c| Branch {
                    name: c.name,
                    queue: BoundedQueue::new(c.capacity, c.mode, 0),
                    closed: AtomicBool::new(false),
                    status: Mutex::new(BranchStatus {
                        state: BranchState::Open,
                        reason: None,
                        error: None,
                    }),
                })
                .collect(),
            stop: AtomicBool::new(false),
            status: Mutex::new(FanStatus {
                reason: None,
                error: None,
                ended: None,
                done: false,
                failed: false,
            }),
            done_cv: Condvar::new(),
            received: AtomicU64::new(0),
            started: Started::now(),
        });
        let thread = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("paclo-fanout".into())
                .spawn(move || run(shared, source, cancel))
                .map_err(|e| Error::Capture(format!("cannot start the fan-out thread: {e}")))?
        };
        Ok(FanOut {
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }
}

impl<T> FanOut<T> {
    /// The index of branch `name`.
    pub fn branch_index(&self, name: &str) -> Option<usize> {
        self.shared.branches.iter().position(|b| b.name == name)
    }

    /// Branch names in configuration order.
    pub fn branch_names(&self) -> Vec<String> {
        self.shared
            .branches
            .iter()
            .map(|b| b.name.clone())
            .collect()
    }

    /// Take the next item of branch `idx`, waiting up to `timeout`.
    pub fn pop(&self, idx: usize, timeout: Duration) -> Pop<T> {
        self.shared.branches[idx].queue.pop(timeout, None)
    }

    /// The error of branch `idx`, when the source failed.
    pub fn branch_error(&self, idx: usize) -> Option<Failure> {
        lock(&self.shared.branches[idx].status).error.clone()
    }

    /// Close branch `idx`: abandon its queue and stop offering to it. Closing the last
    /// open branch stops the dispatcher (`no_branches`).
    pub fn close_branch(&self, idx: usize) {
        let b = &self.shared.branches[idx];
        if b.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        {
            let mut bs = lock(&b.status);
            if bs.state == BranchState::Open {
                bs.state = BranchState::Closed;
                bs.reason = Some("closed");
            }
        }
        // Finish first: a push waiting for space (or about to push) is then cancelled
        // instead of slipping an item into the queue after the clear.
        b.queue.finish();
        b.queue.clear();
        if self
            .shared
            .branches
            .iter()
            .all(|b| b.closed.load(Ordering::Acquire))
        {
            self.shared.request_stop(FanOutStopReason::NoBranches);
        }
    }

    /// Whether the dispatcher has finished.
    pub fn is_done(&self) -> bool {
        lock(&self.shared.status).done
    }

    /// Wait for the dispatcher, at most `timeout`; whether it finished.
    pub fn wait_done(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut st = lock(&self.shared.status);
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
        if let Some(t) = lock(&self.thread).take() {
            let _ = t.join();
        }
        true
    }

    /// Stop the dispatcher (reason `closed`), abandon every queue, wait at most `timeout`.
    ///
    /// # Errors
    /// `Capture` when the dispatcher does not stop in time (state `failed`, reason `close_timeout`).
    pub fn close(&self, timeout: Duration) -> Result<()> {
        self.shared.request_stop(FanOutStopReason::Closed);
        for b in &self.shared.branches {
            b.queue.clear();
        }
        if self.wait_done(timeout) {
            return Ok(());
        }
        let err = Error::Capture("stream dispatcher did not stop".to_string());
        let mut st = lock(&self.shared.status);
        st.reason = Some(FanOutStopReason::CloseTimeout);
        st.failed = true;
        st.error.get_or_insert(Failure::Source(err.clone()));
        Err(err)
    }

    /// A statistics snapshot.
    pub fn stats(&self) -> FanOutStats {
        let st = lock(&self.shared.status);
        let state = if st.failed {
            State::Failed
        } else if st.done {
            State::Closed
        } else if st.reason.is_some() {
            State::Stopping
        } else {
            State::Running
        };
        let branches = self
            .shared
            .branches
            .iter()
            .map(|b| {
                let bs = lock(&b.status);
                BranchStats {
                    name: b.name.clone(),
                    state: bs.state,
                    queue: QueueStats {
                        mode: b.queue.mode(),
                        capacity: b.queue.capacity(),
                        counters: b.queue.counters(),
                    },
                    stop_reason: bs.reason,
                    error: bs.error.clone(),
                }
            })
            .collect();
        FanOutStats {
            state,
            timing: self.shared.started.timing(st.ended),
            received: self.shared.received.load(Ordering::Relaxed),
            branches,
            stop_reason: st.reason,
            error: st.error.clone(),
        }
    }
}

impl<T> Drop for FanOut<T> {
    fn drop(&mut self) {
        let _ = self.close(super::managed::CLOSE_TIMEOUT);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counting_source(n: u32) -> SourceFn<u32> {
        let mut i = 0;
        Box::new(move |_| {
            if i < n {
                i += 1;
                SourceItem::Item(i - 1)
            } else {
                SourceItem::End
            }
        })
    }

    fn cfg(name: &str, mode: QueueMode, capacity: usize) -> BranchConfig {
        BranchConfig {
            name: name.into(),
            mode,
            capacity,
        }
    }

    fn drain(f: &FanOut<u32>, idx: usize, delay: Duration) -> Vec<u32> {
        let mut out = vec![];
        loop {
            match f.pop(idx, Duration::from_millis(50)) {
                Pop::Item(x) => {
                    out.push(x);
                    std::thread::sleep(delay);
                }
                Pop::Empty => {}
                Pop::Finished => return out,
            }
        }
    }

    fn invariants(s: &FanOutStats) {
        for b in &s.branches {
            let c = &b.queue.counters;
            let cap = b.queue.capacity as u64;
            assert_eq!(c.offered, c.enqueued + c.dropped + c.cancelled, "{b:?}");
            assert_eq!(c.enqueued, c.delivered + c.abandoned + c.depth, "{b:?}");
            assert!(c.depth <= cap && c.max_depth <= cap);
            if b.queue.mode == QueueMode::Blocking {
                assert_eq!(c.dropped, 0);
            }
        }
    }

    #[test]
    fn needs_two_unique_branches() {
        let cancel = || -> CancelFn { Box::new(|| {}) };
        assert!(FanOut::start(
            counting_source(1),
            cancel(),
            vec![cfg("a", QueueMode::Blocking, 1)]
        )
        .is_err());
        let dup = vec![
            cfg("a", QueueMode::Blocking, 1),
            cfg("a", QueueMode::Dropping, 1),
        ];
        assert!(FanOut::start(counting_source(1), cancel(), dup).is_err());
    }

    #[test]
    fn blocking_branches_each_get_everything_in_order() {
        let cancelled = Arc::new(AtomicBool::new(false));
        let c2 = cancelled.clone();
        let f = Arc::new(
            FanOut::start(
                counting_source(2000),
                Box::new(move || c2.store(true, Ordering::SeqCst)),
                vec![
                    cfg("a", QueueMode::Blocking, 4),
                    cfg("b", QueueMode::Blocking, 16),
                ],
            )
            .unwrap(),
        );
        let fb = f.clone();
        let t = std::thread::spawn(move || drain(&fb, 1, Duration::ZERO));
        let a = drain(&f, 0, Duration::ZERO);
        let b = t.join().unwrap();
        assert_eq!(a, (0..2000).collect::<Vec<_>>());
        assert_eq!(a, b);
        let s = f.stats();
        assert_eq!(
            (s.state, s.stop_reason, s.received),
            (State::Closed, Some(FanOutStopReason::SourceExhausted), 2000)
        );
        assert!(s.branches.iter().all(|b| b.state == BranchState::Completed));
        assert!(cancelled.load(Ordering::SeqCst));
        invariants(&s);
    }

    #[test]
    fn dropping_branch_isolates_a_slow_consumer() {
        let f = Arc::new(
            FanOut::start(
                counting_source(3000),
                Box::new(|| {}),
                vec![
                    cfg("fast", QueueMode::Blocking, 64),
                    cfg("slow", QueueMode::Dropping, 4),
                ],
            )
            .unwrap(),
        );
        let fs = f.clone();
        let t = std::thread::spawn(move || drain(&fs, 1, Duration::from_millis(2)));
        let fast = drain(&f, 0, Duration::ZERO);
        let slow = t.join().unwrap();
        assert_eq!(fast.len(), 3000);
        assert!(slow.len() < 3000);
        assert!(slow.windows(2).all(|w| w[0] < w[1]));
        let s = f.stats();
        assert_eq!(
            s.branches[1].queue.counters.dropped + s.branches[1].queue.counters.delivered,
            3000
        );
        invariants(&s);
    }

    #[test]
    fn closing_every_branch_stops_the_dispatcher() {
        let f = FanOut::start(
            Box::new(|_| SourceItem::Item(1u32)),
            Box::new(|| {}),
            vec![
                cfg("a", QueueMode::Blocking, 2),
                cfg("b", QueueMode::Dropping, 2),
            ],
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(30));
        f.close_branch(0);
        assert!(!f.is_done());
        f.close_branch(1);
        assert!(f.wait_done(Duration::from_secs(5)));
        let s = f.stats();
        assert_eq!(s.stop_reason, Some(FanOutStopReason::NoBranches));
        assert!(s.branches.iter().all(|b| b.state == BranchState::Closed));
        invariants(&s);
    }

    /// Closing a branch the dispatcher is blocked on leaves nothing in it: the item being
    /// placed is cancelled, not slipped into the closed queue (where it would stay, or be
    /// returned by a later pop).
    #[test]
    fn closing_a_blocked_branch_leaves_it_empty() {
        let f = FanOut::start(
            Box::new(|_| SourceItem::Item(1u32)),
            Box::new(|| {}),
            vec![
                cfg("a", QueueMode::Dropping, 2),
                cfg("b", QueueMode::Blocking, 1),
            ],
        )
        .unwrap();
        let t0 = Instant::now();
        while f.stats().branches[1].queue.counters.blocked_events == 0 {
            assert!(t0.elapsed() < Duration::from_secs(5), "never blocked");
            std::thread::sleep(Duration::from_millis(1));
        }
        f.close_branch(1);
        // The dispatcher moves on (branch a drops everything).
        let received = f.stats().received;
        while f.stats().received < received + 10 {
            assert!(t0.elapsed() < Duration::from_secs(5), "dispatcher stuck");
            std::thread::sleep(Duration::from_millis(1));
        }
        let s = f.stats();
        let b = &s.branches[1];
        assert_eq!(b.state, BranchState::Closed);
        assert_eq!(
            (b.queue.counters.depth, b.queue.counters.cancelled),
            (0, 1),
            "{b:?}"
        );
        assert_eq!(f.pop(1, Duration::ZERO), Pop::Finished);
        invariants(&s);
        f.close(Duration::from_secs(5)).unwrap();
    }

    #[test]
    fn source_error_fails_open_branches_after_draining() {
        let mut n = 0;
        let src: SourceFn<u32> = Box::new(move |_| {
            n += 1;
            if n <= 3 {
                SourceItem::Item(n)
            } else {
                SourceItem::Failed(Failure::Source(Error::Capture("boom".into())))
            }
        });
        let f = FanOut::start(
            src,
            Box::new(|| {}),
            vec![
                cfg("a", QueueMode::Blocking, 8),
                cfg("b", QueueMode::Blocking, 8),
            ],
        )
        .unwrap();
        assert_eq!(drain(&f, 0, Duration::ZERO), vec![1, 2, 3]);
        assert_eq!(f.branch_error(0).unwrap().message(), "boom");
        let s = f.stats();
        assert_eq!(
            (s.state, s.stop_reason),
            (State::Failed, Some(FanOutStopReason::Error))
        );
        assert_eq!(s.branches[0].stop_reason, Some("source_error"));
    }

    #[test]
    fn close_releases_a_backpressured_dispatcher() {
        let f = FanOut::start(
            Box::new(|_| SourceItem::Item(1u32)),
            Box::new(|| {}),
            vec![
                cfg("a", QueueMode::Blocking, 2),
                cfg("b", QueueMode::Blocking, 2),
            ],
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let t0 = Instant::now();
        f.close(Duration::from_secs(5)).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(1));
        let s = f.stats();
        assert_eq!(s.stop_reason, Some(FanOutStopReason::Closed));
        assert!(s
            .branches
            .iter()
            .all(|b| b.state == BranchState::FanoutClosed && b.queue.counters.depth == 0));
        invariants(&s);
    }
}
