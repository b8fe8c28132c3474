//! The one statistics type: what a read, a reduce, a capture or a fan-out reports.
//!
//! [`Stats`] describes one pass over a [`PacketSource`](crate::source::PacketSource): its
//! lifecycle [`State`], where the packets came from, when it ran, the packet counters, the
//! queue (managed captures), the kernel's counters (devices), why it stopped and what
//! failed. A fan-out adds per-branch counters ([`FanOutStats`]), built from the same
//! parts. Both are converted to Python dicts in one place (`src/python/stats.rs`), with
//! [`SCHEMA_VERSION`].

use std::fmt;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::capture::queue::{QueueCounters, QueueMode};
use crate::error::Error;
use crate::source::{PcapCounters, SourceInfo};

/// The version of the statistics schema (the dicts' `schema_version`).
pub const SCHEMA_VERSION: u32 = 1;

/// Where a pass over a source is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Opened, not yet reading.
    Starting,
    /// Reading.
    Running,
    /// A stop was requested; the reader is finishing.
    Stopping,
    /// Ended normally; the source is closed (or will be when the reader is dropped).
    Closed,
    /// Ended with an error.
    Failed,
}

impl State {
    /// The snake_case name used in statistics.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Running => "running",
            State::Stopping => "stopping",
            State::Closed => "closed",
            State::Failed => "failed",
        }
    }

    /// Closed or failed.
    pub fn is_terminal(self) -> bool {
        matches!(self, State::Closed | State::Failed)
    }
}

/// Why a pass over a source stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The consumer asked (`Capture.stop()`).
    Consumer,
    /// The reader or capture was closed (or dropped, or interrupted).
    Closed,
    /// The `stop_when` predicate matched.
    Predicate,
    /// A reduction returned `Reduced`.
    Reduced,
    /// An error ended it.
    Error,
    /// `limit` packets were read.
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

/// What ended a pass with an error, as data.
#[derive(Clone, Debug)]
pub enum Failure {
    /// The source, its filter or the machinery around it failed: the crate error.
    Source(Error),
    /// The consumer failed (a Python callback raised): the exception's type name and
    /// message, as the bindings report them.
    Consumer {
        /// The exception's type name.
        class: String,
        /// Its message.
        message: String,
    },
}

impl Failure {
    /// The error's message.
    pub fn message(&self) -> String {
        match self {
            Failure::Source(e) => e.to_string(),
            Failure::Consumer { message, .. } => message.clone(),
        }
    }

    /// The source error, if the source failed.
    pub fn source_error(&self) -> Option<&Error> {
        match self {
            Failure::Source(e) => Some(e),
            Failure::Consumer { .. } => None,
        }
    }
}

/// When a pass started and how long it has run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// Start time, ms since the epoch.
    pub started_at_ms: u64,
    /// Time since the start, frozen at the end.
    pub elapsed_ms: u64,
}

/// The start of a pass: a monotonic instant for durations and the wall-clock time.
#[derive(Clone, Copy, Debug)]
pub struct Started {
    at: Instant,
    at_ms: u64,
}

impl Started {
    /// Now.
    pub fn now() -> Started {
        Started {
            at: Instant::now(),
            at_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        }
    }

    /// The monotonic start.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// The timing up to `ended`, or up to now while running.
    pub fn timing(&self, ended: Option<Instant>) -> Timing {
        let end = ended.unwrap_or_else(Instant::now);
        Timing {
            started_at_ms: self.at_ms,
            elapsed_ms: end.duration_since(self.at).as_millis() as u64,
        }
    }
}

/// A bounded queue in a snapshot: its policy, capacity and counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueStats {
    /// Blocking or dropping.
    pub mode: QueueMode,
    /// Capacity in packets.
    pub capacity: usize,
    /// The counters, read under one lock.
    pub counters: QueueCounters,
}

/// A statistics snapshot of one pass over a source (reader, reduce, capture).
#[derive(Clone, Debug)]
pub struct Stats {
    /// Lifecycle state.
    pub state: State,
    /// Where packets come from.
    pub source: SourceInfo,
    /// Start time and elapsed time.
    pub timing: Timing,
    /// Packets read from the source (after the filter).
    pub captured: u64,
    /// Packets handed to (or converted for) the consumer.
    pub processed: u64,
    /// Processed packets whose decoded form carries a decode error; `None` when not
    /// observed (a fan-out converts per branch).
    pub decode_errors: Option<u64>,
    /// Captured bytes (caplen) of the packets read.
    pub bytes: u64,
    /// The queue between the capture thread and the consumer (managed captures only).
    pub queue: Option<QueueStats>,
    /// The kernel's counters, read at the end (devices only).
    pub pcap: Option<PcapCounters>,
    /// Why it stopped (`None` while running).
    pub stop_reason: Option<StopReason>,
    /// The error that ended it.
    pub error: Option<Failure>,
    /// Whether the file ended inside a record (a truncated capture; every complete packet
    /// before it was read).
    pub truncated: bool,
    /// Records read whole although their caplen exceeds the snaplen of their file (or
    /// pcapng interface); `None` for a device.
    pub oversized_records: Option<u64>,
}

/// A fan-out branch's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BranchState {
    /// Receiving items.
    Open,
    /// The source ended; the queue drains.
    Completed,
    /// The source failed.
    Failed,
    /// The consumer closed it.
    Closed,
    /// The fan-out was closed.
    FanoutClosed,
}

impl BranchState {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            BranchState::Open => "open",
            BranchState::Completed => "completed",
            BranchState::Failed => "failed",
            BranchState::Closed => "closed",
            BranchState::FanoutClosed => "fanout_closed",
        }
    }
}

/// Why a fan-out's dispatcher stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanOutStopReason {
    /// The source ended.
    SourceExhausted,
    /// Every branch was closed.
    NoBranches,
    /// `close` was called.
    Closed,
    /// The source failed.
    Error,
    /// The dispatcher did not stop within the close timeout.
    CloseTimeout,
}

impl FanOutStopReason {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            FanOutStopReason::SourceExhausted => "source_exhausted",
            FanOutStopReason::NoBranches => "no_branches",
            FanOutStopReason::Closed => "closed",
            FanOutStopReason::Error => "error",
            FanOutStopReason::CloseTimeout => "close_timeout",
        }
    }
}

/// One fan-out branch in a snapshot.
#[derive(Clone, Debug)]
pub struct BranchStats {
    /// The branch name.
    pub name: String,
    /// Its state.
    pub state: BranchState,
    /// Its queue (offered, enqueued, delivered, dropped, cancelled, abandoned, depth, ...).
    pub queue: QueueStats,
    /// Why it stopped receiving (`source_exhausted`, `source_error`, `closed`, `fanout_closed`).
    pub stop_reason: Option<&'static str>,
    /// The source error, for a failed branch.
    pub error: Option<Failure>,
}

/// A fan-out snapshot: the dispatcher and every branch.
#[derive(Clone, Debug)]
pub struct FanOutStats {
    /// `Running`, `Stopping`, `Closed` or `Failed`.
    pub state: State,
    /// Start time and elapsed time.
    pub timing: Timing,
    /// Items taken from the source.
    pub received: u64,
    /// Per branch, in configuration order.
    pub branches: Vec<BranchStats>,
    /// Why the dispatcher stopped.
    pub stop_reason: Option<FanOutStopReason>,
    /// The error that ended it.
    pub error: Option<Failure>,
}
