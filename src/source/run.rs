//! [`SourceLoop`]: one pass over a [`PacketSource`] for one consumer, and [`fold`], the
//! reduce loop over it.
//!
//! The loop owns what every consumer needs around the source: the stop conditions
//! ([`Limits`], decided by a [`StopClock`]), bounded waits on an idle device, the counters
//! and the end of the pass ([`Stats`]). It never blocks for longer than one wait slice and
//! says [`Step::Pending`] whenever it has nothing to hand over yet (an idle device, a long
//! run of records the filter rejected), so a caller can check for signals or hand packets
//! on between steps.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Fetch, PacketSource, PcapCounters, RawPacket, SourceInfo, Waker};
use crate::error::{Error, Result};
use crate::stats::{Failure, Started, State, Stats, StopReason};

/// Records a file's filter may reject within one fetch before the source says
/// [`Fetch::Idle`], so a filter that rarely matches cannot hold off Ctrl-C for a whole file.
pub const SCAN_BUDGET: u32 = 1 << 16;

/// The stop conditions of a pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Stop after this many packets (after the filter).
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
    /// `limits.max_packets`, or `u64::MAX` without one (one compare per packet).
    packet_cap: u64,
    started: Instant,
    count: u64,
    idle_since: Option<Instant>,
}

impl StopClock {
    /// A clock for `limits` started at `started`.
    pub fn new(limits: Limits, started: Instant) -> Self {
        StopClock {
            limits,
            packet_cap: limits.max_packets.unwrap_or(u64::MAX),
            started,
            count: 0,
            idle_since: None,
        }
    }

    /// Packets counted so far.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Count one packet; the reason to stop after it, if any.
    #[inline]
    pub fn on_packet(&mut self) -> Option<StopReason> {
        self.count += 1;
        self.idle_since = None;
        if self.count >= self.packet_cap {
            return Some(StopReason::MaxPackets);
        }
        match self.limits.max_time {
            Some(t) => self.out_of_time(t),
            None => None,
        }
    }

    #[inline(never)]
    fn out_of_time(&self, t: Duration) -> Option<StopReason> {
        (self.started.elapsed() >= t).then_some(StopReason::MaxTime)
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

/// What one [`SourceLoop::step`] found.
#[derive(Debug)]
pub enum Step<'a> {
    /// A packet for the consumer, borrowed from the source until the next call.
    Packet(RawPacket<'a>),
    /// Nothing to hand over yet (an idle device, or a long run of filtered-out records):
    /// call again. The next call first waits for the device (at most one wait slice), so
    /// make it with the interpreter released.
    Pending,
    /// The pass has ended; [`SourceLoop::stats`] says why.
    End,
}

/// The end of a pass, as the loop records it (a sub-struct, so the read path can update it
/// while it holds a packet borrowed from the source).
#[derive(Debug)]
struct Status {
    /// Whether the next step must look at more than the source: the pass has ended, a
    /// limit was reached, the device must be waited for. The one flag the hot path reads
    /// for all of them.
    attention: bool,
    started: Started,
    ended: Option<Instant>,
    stop_reason: Option<StopReason>,
    error: Option<Failure>,
    truncated: bool,
    /// The truncation not yet reported to the consumer (a warning, in Python).
    truncation: Option<Error>,
    /// Whether the records read whole although longer than their snaplen were reported.
    oversized_reported: bool,
    bytes: u64,
    decode_errors: u64,
    pcap: Option<PcapCounters>,
}

impl Status {
    fn end(&mut self, reason: StopReason) {
        self.attention = true;
        if self.ended.is_none() {
            self.ended = Some(Instant::now());
            self.stop_reason.get_or_insert(reason);
        }
    }

    fn fail(&mut self, failure: Failure) {
        if self.ended.is_none() {
            self.error.get_or_insert(failure);
            self.end(StopReason::Error);
        }
    }

    /// A source error: a cut last record ends the pass (reported by
    /// [`SourceLoop::take_truncation`]) unless `strict`; any other error fails it.
    fn source_error(&mut self, e: Error, strict: bool) -> Result<Step<'static>> {
        if let Error::Truncated { .. } = e {
            self.truncated = true;
            if !strict {
                self.truncation = Some(e);
                self.end(StopReason::Eof);
                return Ok(Step::End);
            }
        }
        self.fail(Failure::Source(e.clone()));
        Err(e)
    }
}

/// One pass over a source: the source with its filter installed, the stop conditions,
/// bounded waits, counters and the end.
///
/// The hot path is [`step`](Self::step): a fetch, a counter, a limit check; it allocates
/// nothing.
pub struct SourceLoop<S> {
    source: S,
    info: SourceInfo,
    clock: StopClock,
    status: Status,
    /// The reason to end at the next call (a limit reached by the last packet).
    stop_after: Option<StopReason>,
    /// Wait for the device before the next fetch.
    must_wait: bool,
    wait_slice: Duration,
    waker: Option<Arc<Waker>>,
    strict: bool,
}

/// The longest single wait on an idle device, by default.
pub const WAIT_SLICE: Duration = Duration::from_millis(50);

impl<S: PacketSource> SourceLoop<S> {
    /// A pass over `source`, with `filter` (a BPF expression; blank means none) installed:
    /// in the kernel for a device, in the reader for a file. An invalid filter fails here,
    /// before any packet is read.
    ///
    /// # Errors
    /// [`Error::Filter`] when the expression does not compile.
    pub fn new(mut source: S, filter: Option<&str>, limits: Limits) -> Result<Self> {
        if let Some(expr) = filter.filter(|f| !f.trim().is_empty()) {
            source.install_filter(expr)?;
        }
        let started = Started::now();
        Ok(SourceLoop {
            info: source.info(),
            source,
            clock: StopClock::new(limits, started.instant()),
            status: Status {
                attention: limits.max_packets == Some(0),
                started,
                ended: None,
                stop_reason: None,
                error: None,
                truncated: false,
                truncation: None,
                oversized_reported: false,
                bytes: 0,
                decode_errors: 0,
                pcap: None,
            },
            stop_after: (limits.max_packets == Some(0)).then_some(StopReason::MaxPackets),
            must_wait: false,
            wait_slice: WAIT_SLICE,
            waker: None,
            strict: false,
        })
    }

    /// With `strict`, a truncated last record fails the pass instead of ending it, and a
    /// record longer than its snaplen is an error instead of being read whole.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self.source.set_strict(strict);
        self
    }

    /// The longest single wait on an idle device (bounds how late a time limit fires
    /// without a waker).
    pub fn wait_slice(mut self, slice: Duration) -> Self {
        self.wait_slice = slice;
        self
    }

    /// Poll `waker` beside the device while waiting, so a stop request ends a wait at once.
    pub fn waker(mut self, waker: Option<Arc<Waker>>) -> Self {
        self.waker = waker;
        self
    }

    /// Count the stop conditions and the pass's timing from now (a managed capture starts
    /// its thread after `on_ready` ran).
    pub fn restart_clock(&mut self) {
        let started = Started::now();
        self.clock = StopClock::new(self.clock.limits, started.instant());
        self.status.started = started;
    }

    /// The source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// Where the packets come from.
    pub fn info(&self) -> &SourceInfo {
        &self.info
    }

    /// The next packet, [`Step::Pending`] when there is none to hand over yet, or
    /// [`Step::End`]. A cut last record of a file ends the pass (see
    /// [`take_truncation`](Self::take_truncation)) unless the loop is strict.
    ///
    /// # Errors
    /// A source error (a malformed record, a device read error, a filter that does not
    /// compile for a link type met later); the pass has then failed.
    #[inline(always)]
    pub fn step(&mut self) -> Result<Step<'_>> {
        if self.status.attention && !self.attend()? {
            return Ok(Step::End);
        }
        match self.source.fetch() {
            Ok(Fetch::Packet(p)) => {
                self.status.bytes += u64::from(p.caplen);
                if let Some(reason) = self.clock.on_packet() {
                    self.stop_after = Some(reason);
                    self.status.attention = true;
                }
                Ok(Step::Packet(p))
            }
            Ok(Fetch::Idle) => {
                if let Some(reason) = self.clock.on_idle(Instant::now()) {
                    self.status.end(reason);
                    return Ok(Step::End);
                }
                self.must_wait = true;
                self.status.attention = true;
                Ok(Step::Pending)
            }
            Ok(Fetch::End) => {
                self.status.end(StopReason::Eof);
                Ok(Step::End)
            }
            Err(e) => self.status.source_error(e, self.strict),
        }
    }

    /// Up to `max` packets handed to `f` through the source's [`PacketSource::burst`],
    /// counted as [`step`](Self::step) counts them: how many. 0 when the next packet needs
    /// a step (the loop needs attention, a packet or time limit is set, or the source has
    /// no burst now).
    #[inline(always)]
    pub fn burst<F: FnMut(&RawPacket<'_>)>(&mut self, max: u32, f: &mut F) -> u32
    where
        S: Sized,
    {
        if self.status.attention
            || self.clock.limits.max_packets.is_some()
            || self.clock.limits.max_time.is_some()
        {
            return 0;
        }
        let (n, bytes) = self.source.burst(max, f);
        if n > 0 {
            self.clock.count += u64::from(n);
            self.clock.idle_since = None;
            self.status.bytes += bytes;
        }
        n
    }

    /// What [`step`](Self::step) does before a fetch when `status.attention` is set: `false`
    /// when the pass has ended (or ends now, at a limit), else `true` (after waiting for the
    /// device).
    #[inline(never)]
    fn attend(&mut self) -> Result<bool> {
        if self.status.ended.is_some() {
            return Ok(false);
        }
        if let Some(reason) = self.stop_after {
            self.finish(reason);
            return Ok(false);
        }
        if self.must_wait {
            self.wait()?;
        }
        self.status.attention = false;
        Ok(true)
    }

    #[cold]
    fn wait(&mut self) -> Result<()> {
        self.must_wait = false;
        let budget = self.clock.wait_budget(Instant::now(), self.wait_slice);
        let waited = self.source.wait(budget, self.waker.as_deref());
        if let Err(e) = &waited {
            self.status.fail(Failure::Source(e.clone()));
        }
        waited
    }

    /// The next packet handed to `consume` (with the host held), `None` at the end. After
    /// a [`Step::Pending`] the host is asked whether to stop (a signal) and the next step
    /// is taken with the host released, so a wait never holds it.
    ///
    /// # Errors
    /// Outer: the host's error (a signal); inner: a source error, as for [`step`](Self::step).
    #[inline]
    pub fn next_with<H: Host, R>(
        &mut self,
        host: &mut H,
        consume: impl FnOnce(&RawPacket<'_>) -> R,
    ) -> std::result::Result<Result<Option<R>>, H::Error>
    where
        S: Send,
    {
        let mut step = self.step();
        loop {
            match step {
                Ok(Step::Packet(p)) => return Ok(Ok(Some(consume(&p)))),
                Ok(Step::End) => return Ok(Ok(None)),
                Err(e) => return Ok(Err(e)),
                Ok(Step::Pending) => {}
            }
            host.interrupted()?;
            let this = &mut *self;
            step = host.release(move || {
                let this = this;
                this.step()
            });
        }
    }

    /// End the pass now with `reason` (unless it has ended already), e.g. `Reduced` or
    /// `Closed`.
    pub fn finish(&mut self, reason: StopReason) {
        self.status.end(reason);
    }

    /// End the pass with an error (unless it has ended already).
    pub fn fail(&mut self, failure: Failure) {
        self.status.fail(failure);
    }

    /// Count a packet whose decoded form carries a decode error.
    #[inline]
    pub fn count_decode_error(&mut self) {
        self.status.decode_errors += 1;
    }

    /// Count `n` packets whose decoded form carries a decode error.
    pub fn count_decode_errors(&mut self, n: u64) {
        self.status.decode_errors += n;
    }

    /// The truncation that ended the pass, once: the consumer reports it (a warning).
    pub fn take_truncation(&mut self) -> Option<Error> {
        self.status.truncation.take()
    }

    /// The warning about records read whole although longer than their snaplen, once per
    /// pass, as soon as the source has read one: the consumer reports it (a warning).
    #[inline]
    pub fn take_oversized(&mut self) -> Option<String> {
        if self.status.oversized_reported || self.source.oversized().is_none_or(|o| o.count == 0) {
            return None;
        }
        self.take_oversized_now()
    }

    #[cold]
    fn take_oversized_now(&mut self) -> Option<String> {
        let SourceInfo::Path(path) = &self.info else {
            return None;
        };
        let message = self.source.oversized()?.message(path)?;
        self.status.oversized_reported = true;
        Some(message)
    }

    /// Whether the pass has ended.
    pub fn has_ended(&self) -> bool {
        self.status.ended.is_some()
    }

    /// Packets handed to the consumer so far.
    pub fn packets(&self) -> u64 {
        self.clock.count()
    }

    /// Captured bytes of the packets handed over so far.
    pub fn bytes(&self) -> u64 {
        self.status.bytes
    }

    /// Why the pass ended (`None` while it runs).
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.status.stop_reason
    }

    /// The error that ended the pass.
    pub fn error(&self) -> Option<&Failure> {
        self.status.error.as_ref()
    }

    /// A statistics snapshot.
    pub fn stats(&self) -> Stats {
        let st = &self.status;
        let state = match (st.ended, &st.error) {
            (None, _) => State::Running,
            (Some(_), None) => State::Closed,
            (Some(_), Some(_)) => State::Failed,
        };
        Stats {
            state,
            source: self.info.clone(),
            timing: st.started.timing(st.ended),
            captured: self.clock.count(),
            processed: self.clock.count(),
            decode_errors: Some(st.decode_errors),
            bytes: st.bytes,
            queue: None,
            pcap: st.pcap,
            stop_reason: st.stop_reason,
            error: st.error.clone(),
            truncated: st.truncated,
            oversized_records: self.source.oversized().map(|o| o.count),
        }
    }

    /// End the pass (reason `Closed` unless it has ended), read the kernel's counters and
    /// close the source; the final statistics.
    pub fn close(mut self) -> Stats {
        self.finish(StopReason::Closed);
        self.status.pcap = self.source.counters();
        self.stats()
    }
}

/// What a loop needs from the thread that runs it: in the bindings, the Python
/// interpreter (released around waits, asked for pending signals).
pub trait Host {
    /// What [`interrupted`](Self::interrupted) raises (a `KeyboardInterrupt`).
    type Error;

    /// Run `f` with the host released (the GIL, for Python).
    fn release<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R;

    /// An error when the loop must stop now (a pending signal).
    ///
    /// # Errors
    /// The signal handler's exception.
    fn interrupted(&mut self) -> std::result::Result<(), Self::Error>;
}

/// A host with nothing to release and no signals: plain Rust callers and tests.
pub struct NoHost;

impl Host for NoHost {
    type Error = std::convert::Infallible;

    fn release<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R {
        f()
    }

    fn interrupted(&mut self) -> std::result::Result<(), Self::Error> {
        Ok(())
    }
}

/// What a reduction step asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Go on with the next packet.
    Continue,
    /// End the pass now (`Reduced`, `Predicate`).
    Stop(StopReason),
}

/// How a [`fold`] ended early.
#[derive(Debug)]
pub enum Folded<E> {
    /// The source failed (recorded in the loop's statistics; the pass has failed).
    Source(Error),
    /// The host asked to stop (a signal); the pass ended with reason `Closed`.
    Interrupted(E),
    /// The step function raised. The pass has not ended: the caller records the failure
    /// with [`SourceLoop::fail`], in its own terms (a Python exception's type name).
    Consumer(E),
}

/// Packets between two checks for signals in a reduction (the step may be a builtin that
/// never runs the interpreter's own checks).
pub const FOLD_SIGNAL_EVERY: u64 = 64;

/// Fold `step(acc, packet)` over every packet of the pass. `step` runs with the host held;
/// waits release it; the host is asked for signals after every pending step and every
/// [`FOLD_SIGNAL_EVERY`] packets. A signal ends the pass with reason `Closed`.
///
/// # Errors
/// See [`Folded`]. A truncated last record is not an error (see
/// [`SourceLoop::take_truncation`]).
pub fn fold<S, H, A>(
    lp: &mut SourceLoop<S>,
    host: &mut H,
    acc: &mut A,
    mut step: impl FnMut(&mut A, &RawPacket<'_>) -> std::result::Result<Control, H::Error>,
) -> std::result::Result<(), Folded<H::Error>>
where
    S: PacketSource,
    H: Host,
{
    loop {
        let outcome = match lp.next_with(host, |p| step(acc, p)) {
            Ok(outcome) => outcome,
            Err(interrupt) => {
                lp.finish(StopReason::Closed);
                return Err(Folded::Interrupted(interrupt));
            }
        };
        match outcome {
            Ok(None) => return Ok(()),
            Ok(Some(Ok(Control::Continue))) => {}
            Ok(Some(Ok(Control::Stop(reason)))) => {
                lp.finish(reason);
                return Ok(());
            }
            Ok(Some(Err(e))) => return Err(Folded::Consumer(e)),
            Err(e) => return Err(Folded::Source(e)),
        }
        if lp.packets() % FOLD_SIGNAL_EVERY == 0 {
            if let Err(interrupt) = host.interrupted() {
                lp.finish(StopReason::Closed);
                return Err(Folded::Interrupted(interrupt));
            }
        }
    }
}
