//! A bounded queue with a blocking or dropping policy and exact counters.
//!
//! One mutex guards the items and every counter, so a snapshot always satisfies
//! `offered = enqueued + dropped + cancelled` and `enqueued = delivered + abandoned + depth`,
//! and `depth`/`max_depth` are exact even while producer and consumer run. Condition
//! variables are signalled only when someone waits, and in batches: a waiting consumer once
//! a quarter of the queue (at most 64 items) is filled or the producer runs out of input
//! ([`BoundedQueue::flush`]), a blocked producer once the queue is half empty. So neither
//! thread wakes the other for every item. A pool of returned items lets a producer reuse
//! buffers.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// What a full queue does with a new item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueMode {
    /// Wait for space (backpressure), counting blocked events and time.
    Blocking,
    /// Discard the new item and count it.
    Dropping,
}

impl QueueMode {
    /// The option value: `"blocking"` or `"dropping"`.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueMode::Blocking => "blocking",
            QueueMode::Dropping => "dropping",
        }
    }

    /// Parse the option value.
    ///
    /// # Errors
    /// A message naming `option` and the allowed values.
    pub fn parse(option: &str, value: &str) -> crate::Result<Self> {
        match value {
            "blocking" => Ok(QueueMode::Blocking),
            "dropping" => Ok(QueueMode::Dropping),
            other => Err(crate::Error::InvalidArgument(format!(
                "{option} must be 'blocking' or 'dropping', not {other:?}"
            ))),
        }
    }
}

/// A consistent snapshot of a queue's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Items handed to `push` whose outcome is decided: an item waiting for space in a
    /// blocking queue is counted once it is enqueued or cancelled.
    pub offered: u64,
    /// Items accepted into the queue.
    pub enqueued: u64,
    /// Items taken by the consumer.
    pub delivered: u64,
    /// Items a full dropping queue discarded.
    pub dropped: u64,
    /// Items a blocking push gave up on because of a stop request, and items offered
    /// after [`BoundedQueue::finish`].
    pub cancelled: u64,
    /// Items cleared from the queue without being delivered.
    pub abandoned: u64,
    /// Items in the queue now.
    pub depth: u64,
    /// The largest depth seen.
    pub max_depth: u64,
    /// Pushes that found a blocking queue full and had to wait.
    pub blocked_events: u64,
    /// Total time pushes spent waiting, nanoseconds.
    pub blocked_ns: u64,
}

/// The outcome of [`BoundedQueue::push`].
#[derive(Debug)]
pub enum Push<T> {
    /// Accepted; carries a pooled item to reuse, if the pool had one.
    Enqueued(Option<T>),
    /// The dropping queue was full; the item comes back.
    Dropped(T),
    /// A blocking push was cancelled by `abort`, or the queue was already finished; the
    /// item comes back.
    Cancelled(T),
}

/// The outcome of [`BoundedQueue::pop`].
#[derive(Debug, PartialEq, Eq)]
pub enum Pop<T> {
    /// The oldest item.
    Item(T),
    /// Nothing arrived within the timeout; the producer is still running.
    Empty,
    /// The queue is empty and the producer has finished.
    Finished,
}

/// What the mutex guards: the items, the recycled buffers, the counters and who waits.
struct Guarded<T> {
    items: VecDeque<T>,
    pool: Vec<T>,
    counters: QueueCounters,
    producer_done: bool,
    consumer_waiting: bool,
    producer_waiting: bool,
}

/// A bounded multi-thread queue (one producer and one consumer in this crate).
pub struct BoundedQueue<T> {
    capacity: usize,
    wake_batch: usize,
    pool_cap: usize,
    mode: QueueMode,
    state: Mutex<Guarded<T>>,
    not_empty: Condvar,
    not_full: Condvar,
}

/// How often a blocked push re-checks its abort condition.
pub const BLOCKED_RECHECK: Duration = Duration::from_millis(25);

impl<T> BoundedQueue<T> {
    /// A queue holding at most `capacity` (>= 1) items; up to `pool_cap` recycled items are kept.
    pub fn new(capacity: usize, mode: QueueMode, pool_cap: usize) -> Self {
        let capacity = capacity.max(1);
        BoundedQueue {
            capacity,
            wake_batch: (capacity / 4).clamp(1, 64),
            pool_cap,
            mode,
            state: Mutex::new(Guarded {
                items: VecDeque::with_capacity(capacity.min(1 << 16)),
                pool: Vec::new(),
                counters: QueueCounters::default(),
                producer_done: false,
                consumer_waiting: false,
                producer_waiting: false,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
        }
    }

    /// The policy.
    pub fn mode(&self) -> QueueMode {
        self.mode
    }

    /// The capacity.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> MutexGuard<'_, Guarded<T>> {
        // A panic while holding the lock cannot leave the counters half-updated in a way
        // that matters more than losing the capture, so poisoning is ignored.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn accept(&self, st: &mut Guarded<T>, item: T) -> Option<T> {
        st.items.push_back(item);
        let c = &mut st.counters;
        c.enqueued += 1;
        c.depth = st.items.len() as u64;
        c.max_depth = c.max_depth.max(c.depth);
        // A waiting consumer is woken once a batch is queued (a full queue always wakes
        // it); a producer about to wait for input calls `flush` to hand over the rest. It is
        // woken once: until it runs, later items do not signal again (each signal is a
        // system call).
        if st.consumer_waiting && st.items.len() >= self.wake_batch {
            st.consumer_waiting = false;
            self.not_empty.notify_one();
        }
        st.pool.pop()
    }

    /// Wake a waiting consumer if anything is queued. A producer calls this before it
    /// waits for more input, so a partial batch is never held back.
    pub fn flush(&self) {
        let mut st = self.lock();
        if st.consumer_waiting && !st.items.is_empty() {
            st.consumer_waiting = false;
            self.not_empty.notify_one();
        }
    }

    /// Offer `item`. A dropping queue discards it when full; a blocking queue waits for
    /// space, re-checking `abort` at least every [`BLOCKED_RECHECK`], and gives the item
    /// back as cancelled once `abort` returns true. A finished queue cancels every item.
    pub fn push(&self, item: T, abort: &dyn Fn() -> bool) -> Push<T> {
        let mut st = self.lock();
        if st.producer_done {
            st.counters.offered += 1;
            st.counters.cancelled += 1;
            return Push::Cancelled(item);
        }
        if st.items.len() < self.capacity {
            st.counters.offered += 1;
            let pooled = self.accept(&mut st, item);
            return Push::Enqueued(pooled);
        }
        if self.mode == QueueMode::Dropping {
            st.counters.offered += 1;
            st.counters.dropped += 1;
            return Push::Dropped(item);
        }
        st.counters.blocked_events += 1;
        let start = Instant::now();
        loop {
            // A queue finished while the push waited (a closed fan-out branch) takes nothing.
            if st.producer_done || abort() {
                st.counters.offered += 1;
                st.counters.cancelled += 1;
                st.counters.blocked_ns += start.elapsed().as_nanos() as u64;
                return Push::Cancelled(item);
            }
            st.producer_waiting = true;
            st = self
                .not_full
                .wait_timeout(st, BLOCKED_RECHECK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            st.producer_waiting = false;
            if !st.producer_done && st.items.len() < self.capacity {
                st.counters.offered += 1;
                st.counters.blocked_ns += start.elapsed().as_nanos() as u64;
                let pooled = self.accept(&mut st, item);
                return Push::Enqueued(pooled);
            }
        }
    }

    /// Offer every item of `batch` in order under one lock, leaving `batch` empty. Items a
    /// dropping queue discards, items cancelled by `abort` (the one being offered and all
    /// after it) and pooled items for reuse (at most one per accepted item) go to `spare`.
    /// A blocking queue waits for space as [`push`](Self::push) does; a finished queue
    /// cancels every item.
    pub fn push_batch(&self, batch: &mut Vec<T>, spare: &mut Vec<T>, abort: &dyn Fn() -> bool) {
        let mut st = self.lock();
        let mut items = batch.drain(..);
        'items: while let Some(item) = items.next() {
            if st.producer_done {
                st.counters.offered += 1;
                st.counters.cancelled += 1;
                spare.push(item);
                for rest in items.by_ref() {
                    st.counters.offered += 1;
                    st.counters.cancelled += 1;
                    spare.push(rest);
                }
                break 'items;
            }
            if st.items.len() < self.capacity {
                st.counters.offered += 1;
                if let Some(p) = self.accept(&mut st, item) {
                    spare.push(p);
                }
                continue;
            }
            if self.mode == QueueMode::Dropping {
                st.counters.offered += 1;
                st.counters.dropped += 1;
                spare.push(item);
                continue;
            }
            st.counters.blocked_events += 1;
            let start = Instant::now();
            loop {
                if st.producer_done || abort() {
                    st.counters.blocked_ns += start.elapsed().as_nanos() as u64;
                    st.counters.offered += 1;
                    st.counters.cancelled += 1;
                    spare.push(item);
                    for rest in items.by_ref() {
                        st.counters.offered += 1;
                        st.counters.cancelled += 1;
                        spare.push(rest);
                    }
                    break 'items;
                }
                st.producer_waiting = true;
                st = self
                    .not_full
                    .wait_timeout(st, BLOCKED_RECHECK)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                st.producer_waiting = false;
                if !st.producer_done && st.items.len() < self.capacity {
                    st.counters.offered += 1;
                    st.counters.blocked_ns += start.elapsed().as_nanos() as u64;
                    if let Some(p) = self.accept(&mut st, item) {
                        spare.push(p);
                    }
                    continue 'items;
                }
            }
        }
    }

    /// Take the oldest item, waiting up to `timeout`. `recycle` (a delivered item the
    /// consumer is done with) goes to the pool in the same lock.
    pub fn pop(&self, timeout: Duration, recycle: Option<T>) -> Pop<T> {
        let mut st = self.lock();
        if let Some(r) = recycle {
            if st.pool.len() < self.pool_cap {
                st.pool.push(r);
            }
        }
        let mut deadline: Option<Instant> = None;
        loop {
            if let Some(item) = st.items.pop_front() {
                st.counters.delivered += 1;
                st.counters.depth = st.items.len() as u64;
                // Wake a blocked producer only once the queue is half empty, so producer and
                // consumer do not hand the CPU back and forth for every item.
                if st.producer_waiting && st.items.len() <= self.capacity / 2 {
                    st.producer_waiting = false;
                    self.not_full.notify_one();
                }
                return Pop::Item(item);
            }
            if st.producer_done {
                return Pop::Finished;
            }
            if timeout.is_zero() {
                return Pop::Empty;
            }
            let now = Instant::now();
            let deadline = *deadline.get_or_insert(now + timeout);
            if now >= deadline {
                return Pop::Empty;
            }
            st.consumer_waiting = true;
            st = self
                .not_empty
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            st.consumer_waiting = false;
        }
    }

    /// Discard every queued item (counted as abandoned) and wake a blocked producer.
    /// Returns how many were discarded.
    pub fn clear(&self) -> u64 {
        let mut st = self.lock();
        let n = st.items.len() as u64;
        st.items.clear();
        st.pool.clear();
        st.counters.abandoned += n;
        st.counters.depth = 0;
        self.not_full.notify_all();
        n
    }

    /// Mark the producer finished: a consumer sees [`Pop::Finished`] once the queue is empty,
    /// and any later (or waiting) push is cancelled.
    pub fn finish(&self) {
        let mut st = self.lock();
        st.producer_done = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }

    /// Whether [`finish`](Self::finish) was called.
    pub fn is_finished(&self) -> bool {
        self.lock().producer_done
    }

    /// Wake a producer blocked in `push` so it re-checks its abort condition now.
    pub fn wake_producer(&self) {
        let _st = self.lock();
        self.not_full.notify_all();
    }

    /// A consistent snapshot of the counters.
    pub fn counters(&self) -> QueueCounters {
        self.lock().counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn never() -> bool {
        false
    }

    fn check_invariants(c: &QueueCounters, cap: u64) {
        assert_eq!(c.offered, c.enqueued + c.dropped + c.cancelled, "{c:?}");
        assert_eq!(c.enqueued, c.delivered + c.abandoned + c.depth, "{c:?}");
        assert!(c.depth <= cap && c.max_depth <= cap, "{c:?}");
    }

    #[test]
    fn dropping_discards_new_items_when_full() {
        let q = BoundedQueue::new(3, QueueMode::Dropping, 0);
        let mut dropped = vec![];
        for i in 0..10 {
            if let Push::Dropped(x) = q.push(i, &never) {
                dropped.push(x);
            }
        }
        assert_eq!(dropped, (3..10).collect::<Vec<_>>());
        let c = q.counters();
        assert_eq!((c.enqueued, c.dropped, c.depth, c.max_depth), (3, 7, 3, 3));
        assert_eq!(q.pop(Duration::ZERO, None), Pop::Item(0));
        assert_eq!(q.pop(Duration::ZERO, None), Pop::Item(1));
        assert_eq!(q.pop(Duration::ZERO, None), Pop::Item(2));
        assert_eq!(q.pop(Duration::ZERO, None), Pop::Empty);
        q.finish();
        assert_eq!(q.pop(Duration::ZERO, None), Pop::Finished);
        check_invariants(&q.counters(), 3);
    }

    #[test]
    fn blocking_waits_for_space_and_counts_it() {
        let q = Arc::new(BoundedQueue::new(2, QueueMode::Blocking, 0));
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                for i in 0..100u32 {
                    assert!(matches!(q.push(i, &never), Push::Enqueued(_)));
                }
                q.finish();
            })
        };
        let mut got = vec![];
        loop {
            match q.pop(Duration::from_millis(100), None) {
                Pop::Item(x) => {
                    got.push(x);
                    if got.len() % 10 == 0 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Pop::Empty => {}
                Pop::Finished => break,
            }
        }
        producer.join().unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        let c = q.counters();
        assert_eq!(
            (c.enqueued, c.delivered, c.dropped, c.depth),
            (100, 100, 0, 0)
        );
        assert!(c.blocked_events > 0 && c.blocked_ns > 0, "{c:?}");
        assert_eq!(c.max_depth, 2);
        check_invariants(&c, 2);
    }

    #[test]
    fn abort_releases_a_blocked_push_within_the_recheck() {
        let q = Arc::new(BoundedQueue::new(1, QueueMode::Blocking, 0));
        let stop = Arc::new(AtomicBool::new(false));
        assert!(matches!(q.push(1, &never), Push::Enqueued(_)));
        let t = {
            let (q, stop) = (q.clone(), stop.clone());
            std::thread::spawn(move || {
                let abort = || stop.load(Ordering::Acquire);
                matches!(q.push(2, &abort), Push::Cancelled(2))
            })
        };
        std::thread::sleep(Duration::from_millis(30));
        let t0 = Instant::now();
        stop.store(true, Ordering::Release);
        assert!(t.join().unwrap());
        assert!(t0.elapsed() < Duration::from_millis(500));
        let c = q.counters();
        assert_eq!(
            (c.offered, c.enqueued, c.cancelled, c.blocked_events),
            (2, 1, 1, 1)
        );
        check_invariants(&c, 1);
    }

    #[test]
    fn clear_abandons_and_unblocks() {
        let q = Arc::new(BoundedQueue::new(2, QueueMode::Blocking, 0));
        q.push(1, &never);
        q.push(2, &never);
        let t = {
            let q = q.clone();
            std::thread::spawn(move || matches!(q.push(3, &never), Push::Enqueued(_)))
        };
        std::thread::sleep(Duration::from_millis(20));
        assert_eq!(q.clear(), 2);
        assert!(t.join().unwrap());
        let c = q.counters();
        assert_eq!((c.enqueued, c.abandoned, c.depth), (3, 2, 1));
        check_invariants(&c, 2);
    }

    #[test]
    fn push_batch_keeps_order_and_counts() {
        let q = BoundedQueue::new(4, QueueMode::Dropping, 8);
        let mut spare = vec![];
        let mut batch: Vec<u32> = (0..6).collect();
        q.push_batch(&mut batch, &mut spare, &never);
        assert!(batch.is_empty());
        assert_eq!(spare, vec![4, 5]);
        let c = q.counters();
        assert_eq!((c.offered, c.enqueued, c.dropped, c.depth), (6, 4, 2, 4));
        for i in 0..4 {
            assert_eq!(q.pop(Duration::ZERO, None), Pop::Item(i));
        }
        check_invariants(&q.counters(), 4);

        // Blocking: a stop cancels the waiting item and everything after it.
        let q = BoundedQueue::new(2, QueueMode::Blocking, 0);
        let mut spare = vec![];
        let mut batch: Vec<u32> = (0..5).collect();
        q.push_batch(&mut batch, &mut spare, &|| true);
        assert_eq!(spare, vec![2, 3, 4]);
        let c = q.counters();
        assert_eq!(
            (c.offered, c.enqueued, c.cancelled, c.blocked_events),
            (5, 2, 3, 1)
        );
        check_invariants(&c, 2);
    }

    #[test]
    fn push_batch_blocks_until_the_consumer_makes_room() {
        let q = Arc::new(BoundedQueue::new(3, QueueMode::Blocking, 0));
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut spare = vec![];
                for chunk in (0..300u32).collect::<Vec<_>>().chunks(32) {
                    let mut batch = chunk.to_vec();
                    q.push_batch(&mut batch, &mut spare, &never);
                }
                q.finish();
                spare.len()
            })
        };
        let mut got = vec![];
        loop {
            match q.pop(Duration::from_millis(100), None) {
                Pop::Item(x) => got.push(x),
                Pop::Empty => {}
                Pop::Finished => break,
            }
        }
        assert_eq!(producer.join().unwrap(), 0);
        assert_eq!(got, (0..300).collect::<Vec<_>>());
        check_invariants(&q.counters(), 3);
    }

    #[test]
    fn pool_returns_recycled_items() {
        let q = BoundedQueue::new(4, QueueMode::Blocking, 2);
        q.push(vec![1u8], &never);
        let Pop::Item(v) = q.pop(Duration::ZERO, None) else {
            panic!()
        };
        q.pop(Duration::ZERO, Some(v));
        match q.push(vec![2u8], &never) {
            Push::Enqueued(Some(reused)) => assert_eq!(reused, vec![1u8]),
            other => panic!("{other:?}"),
        }
    }

    /// A snapshot taken while a blocking push waits for space (the lock released) holds
    /// the invariants: the waiting item is counted once its fate is decided.
    #[test]
    fn snapshot_while_a_push_waits_holds_the_invariants() {
        for batched in [false, true] {
            let q = Arc::new(BoundedQueue::new(1, QueueMode::Blocking, 0));
            assert!(matches!(q.push(0u32, &never), Push::Enqueued(_)));
            let producer = {
                let q = q.clone();
                std::thread::spawn(move || {
                    if batched {
                        let (mut batch, mut spare) = (vec![1u32, 2], vec![]);
                        q.push_batch(&mut batch, &mut spare, &never);
                    } else {
                        q.push(1u32, &never);
                    }
                })
            };
            let t0 = Instant::now();
            while q.counters().blocked_events == 0 {
                assert!(
                    t0.elapsed() < Duration::from_secs(5),
                    "the push never blocked"
                );
                std::thread::yield_now();
            }
            let c = q.counters();
            check_invariants(&c, 1);
            assert_eq!((c.offered, c.enqueued, c.depth), (1, 1, 1), "{c:?}");
            let want = if batched { vec![0, 1, 2] } else { vec![0, 1] };
            let mut got = vec![];
            while got.len() < want.len() {
                if let Pop::Item(x) = q.pop(Duration::from_millis(50), None) {
                    got.push(x);
                    check_invariants(&q.counters(), 1);
                }
            }
            producer.join().unwrap();
            assert_eq!(got, want);
            let c = q.counters();
            assert_eq!(c.offered, want.len() as u64);
            check_invariants(&c, 1);
        }
    }

    #[test]
    fn concurrent_snapshots_hold_the_invariants() {
        let q = Arc::new(BoundedQueue::new(8, QueueMode::Dropping, 0));
        let producer = {
            let q = q.clone();
            std::thread::spawn(move || {
                for i in 0..20_000u32 {
                    q.push(i, &never);
                }
                q.finish();
            })
        };
        let watcher = {
            let q = q.clone();
            std::thread::spawn(move || {
                while !q.is_finished() {
                    check_invariants(&q.counters(), 8);
                }
            })
        };
        let mut last: Option<u32> = None;
        loop {
            match q.pop(Duration::from_millis(10), None) {
                Pop::Item(x) => {
                    assert!(last.is_none_or(|l| x > l), "order");
                    last = Some(x);
                }
                Pop::Empty => {}
                Pop::Finished => break,
            }
        }
        producer.join().unwrap();
        watcher.join().unwrap();
        let c = q.counters();
        assert_eq!(c.enqueued + c.dropped, 20_000);
        check_invariants(&c, 8);
    }
}
