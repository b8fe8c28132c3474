//! Exact-count UDP load generator for live measurements.
//!
//! Sender threads (never touching Python) each own one connected UDP socket (IPv4 or IPv6)
//! and send zero-filled datagrams with `sendmmsg`. The packet count (or the rate, when the
//! run is bounded by time) is split exactly across senders, larger shares first.
//!
//! Pacing uses absolute deadlines: datagram `i` of a sender with rate `r` is due at
//! `start + i / r`. Each `sendmmsg` call sends every datagram already due, at most `batch`
//! of them, so a sender that keeps up sends one at a time and one that falls behind catches
//! up in batch-sized bursts. With nothing due, a sender sleeps while more than `spin` remain
//! and spins for the rest.
//!
//! A datagram counts as sent only when the kernel accepted it (the count `sendmmsg`
//! returns). `ENOBUFS` and `EAGAIN` are retried and counted; `EINTR` is retried; any other
//! error (a refused send, an unreachable network) stops every sender and is returned.
//! The send loop allocates nothing.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use crate::flow::Stop;

/// Most datagrams one `sendmmsg` call may carry (the kernel's `UIO_MAXIOV`).
pub const MAX_BATCH: usize = 1024;
/// Bytes of the IPv4 and UDP headers: a frame of `n` bytes carries `n - 28` bytes of payload.
pub const IPV4_UDP_HEADERS: usize = 28;
/// Bytes of the IPv6 and UDP headers.
pub const IPV6_UDP_HEADERS: usize = 48;
/// How often the coordinating thread checks for an interrupt while senders run.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// What can go wrong before or while sending.
#[derive(Debug, thiserror::Error)]
pub enum GeneratorError {
    /// An option out of its domain.
    #[error("{0}")]
    InvalidArgument(String),
    /// The host name did not resolve.
    #[error("cannot resolve host {host:?}: {source}")]
    Resolve {
        /// The host as given.
        host: String,
        /// The resolver's error.
        #[source]
        source: io::Error,
    },
    /// A socket could not be opened, connected or pinned.
    #[error("cannot open a UDP socket to {dest}: {source}")]
    Socket {
        /// The destination.
        dest: SocketAddr,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The kernel refused a send (e.g. `ECONNREFUSED` after an ICMP port-unreachable).
    #[error("sender {sender} could not send to {dest} after {sent} datagrams: {source}{hint}")]
    Send {
        /// The destination.
        dest: SocketAddr,
        /// Index of the failing sender.
        sender: usize,
        /// Datagrams that sender had sent.
        sent: u64,
        /// The OS error.
        #[source]
        source: io::Error,
        /// What the error usually means.
        hint: &'static str,
    },
    /// The senders did not all start.
    #[error("UDP senders did not become ready")]
    NotReady,
    /// The caller's interrupt check asked to stop.
    #[error("interrupted")]
    Interrupted,
}

/// A generator run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Destination address.
    pub dest: SocketAddr,
    /// Total target rate in datagrams per second (> 0).
    pub rate: u64,
    /// Exact number of datagrams to send; `None` sends until `duration` ends.
    pub packets: Option<u64>,
    /// Sending stops at `start + duration`, whatever is left (with `packets`, a cap).
    pub duration: Option<Duration>,
    /// IP datagram size in bytes; the UDP payload is the rest after the IP and UDP headers
    /// (at least 1 byte).
    pub frame_size: usize,
    /// Sender threads (>= 1).
    pub senders: usize,
    /// Most datagrams per `sendmmsg` call, 1..=[`MAX_BATCH`].
    pub batch: usize,
    /// Delay between opening the sockets and the first due time.
    pub start_delay: Duration,
    /// Sender `i` is pinned to CPU `cpus[i % cpus.len()]`; empty: no pinning.
    pub cpus: Vec<usize>,
    /// Below this much time to the next due datagram a sender spins instead of sleeping.
    pub spin: Duration,
}

impl Config {
    /// A configuration with the defaults: one sender, batches of 64, 64-byte frames, no
    /// delay, no pinning, 50 µs spin.
    pub fn new(dest: SocketAddr, rate: u64) -> Config {
        Config {
            dest,
            rate,
            packets: None,
            duration: None,
            frame_size: 64,
            senders: 1,
            batch: 64,
            start_delay: Duration::ZERO,
            cpus: Vec::new(),
            spin: Duration::from_micros(50),
        }
    }

    /// UDP payload bytes of each datagram.
    pub fn payload_len(&self) -> usize {
        let headers = if self.dest.is_ipv4() {
            IPV4_UDP_HEADERS
        } else {
            IPV6_UDP_HEADERS
        };
        self.frame_size.saturating_sub(headers).max(1)
    }

    /// Check every option; the error names the first one out of its domain.
    pub fn validate(&self) -> Result<(), GeneratorError> {
        let bad = |m: String| Err(GeneratorError::InvalidArgument(m));
        if self.rate == 0 {
            return bad("rate must be positive".into());
        }
        if self.packets.is_none() && self.duration.is_none() {
            return bad("give packets, duration or both".into());
        }
        if self.packets == Some(0) {
            return bad("packets must be positive".into());
        }
        if self.duration == Some(Duration::ZERO) {
            return bad("duration must be positive".into());
        }
        if self.senders == 0 {
            return bad("senders must be positive".into());
        }
        if let Some(p) = self.packets {
            if self.senders as u64 > p {
                return bad(format!(
                    "senders cannot exceed packets ({} > {p})",
                    self.senders
                ));
            }
        }
        if self.senders as u64 > self.rate {
            return bad(format!(
                "senders cannot exceed rate ({} > {})",
                self.senders, self.rate
            ));
        }
        if !(1..=MAX_BATCH).contains(&self.batch) {
            return bad(format!(
                "batch must be between 1 and {MAX_BATCH}, got {}",
                self.batch
            ));
        }
        if self.frame_size == 0 || self.payload_len() > 65_507 {
            return bad(format!(
                "frame size must be between 1 and 65535, got {}",
                self.frame_size
            ));
        }
        if self.dest.port() == 0 {
            return bad("port must be between 1 and 65535".into());
        }
        Ok(())
    }
}

/// Resolve `host:port` to one address (the first the resolver returns).
pub fn resolve(host: &str, port: u16) -> Result<SocketAddr, GeneratorError> {
    let resolve_err = |source| GeneratorError::Resolve {
        host: host.to_string(),
        source,
    };
    (host, port)
        .to_socket_addrs()
        .map_err(resolve_err)?
        .next()
        .ok_or_else(|| resolve_err(io::Error::new(io::ErrorKind::NotFound, "no address")))
}

/// `total` split over `parts` as evenly as possible, larger shares first (10 / 3 -> 4, 3, 3).
pub fn split(total: u64, parts: usize) -> Vec<u64> {
    let parts_u = parts as u64;
    let (base, extra) = (total / parts_u, total % parts_u);
    (0..parts_u).map(|i| base + u64::from(i < extra)).collect()
}

/// Datagrams due strictly before `ns` after the start at `rate` per second: `ceil(ns * rate / 1e9)`.
fn due_before(ns: u64, rate: u64) -> u64 {
    (u128::from(ns) * u128::from(rate)).div_ceil(1_000_000_000) as u64
}

/// Datagrams due at or before `ns` after the start at `rate` per second: `floor(ns * rate / 1e9) + 1`.
fn due_by(ns: u64, rate: u64) -> u64 {
    (u128::from(ns) * u128::from(rate) / 1_000_000_000) as u64 + 1
}

/// The first nanosecond after the start at which datagram `i` is due at `rate` per second.
fn due_at(i: u64, rate: u64) -> u64 {
    (u128::from(i) * 1_000_000_000).div_ceil(u128::from(rate)) as u64
}

/// What one sender did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SenderReport {
    /// Datagrams it was asked to send (`None` when bounded by time only).
    pub requested: Option<u64>,
    /// Its share of the target rate.
    pub target_pps: u64,
    /// Datagrams the kernel accepted.
    pub sent: u64,
    /// `sendmmsg` calls that returned at least one datagram.
    pub calls: u64,
    /// `ENOBUFS`/`EAGAIN` returns, each retried.
    pub retries: u64,
    /// When the first and the last accepted datagram left, ns after the start.
    pub first_ns: Option<u64>,
    /// See `first_ns`.
    pub last_ns: Option<u64>,
    /// The CPU it was pinned to.
    pub cpu: Option<usize>,
    /// Heap allocations the send loop made (after its setup): 0 is the design.
    pub loop_allocations: u64,
}

impl SenderReport {
    /// Datagrams per second over this sender's send window.
    pub fn realized_pps(&self) -> Option<f64> {
        window_rate(self.sent, self.first_ns?, self.last_ns?)
    }
}

/// Why the senders stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// Every sender sent its count.
    Count,
    /// The duration ended (with a count, before every datagram was sent).
    Deadline,
}

impl StopReason {
    /// `count` or `deadline`.
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Count => "count",
            StopReason::Deadline => "deadline",
        }
    }
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Datagrams the kernel accepted, over all senders.
    pub sent: u64,
    /// Per sender, in order.
    pub senders: Vec<SenderReport>,
    /// From the start to the moment the last sender finished, in ns.
    pub elapsed_ns: u64,
    /// From the first to the last accepted datagram over all senders, in ns.
    pub window_ns: Option<u64>,
    /// `ENOBUFS`/`EAGAIN` retries over all senders.
    pub retries: u64,
    /// Why sending stopped.
    pub stop: StopReason,
    /// UDP payload bytes per datagram.
    pub payload_len: usize,
}

impl Report {
    /// Datagrams per second over the send window (first to last accepted datagram of any
    /// sender): `(sent - k) / window` with `k` senders that sent, since each sender paced at
    /// rate `r_i` spends `(n_i - 1) / r_i` on its own `n_i` datagrams. Perfect pacing gives
    /// exactly the target.
    pub fn realized_pps(&self) -> Option<f64> {
        let first = self.senders.iter().filter_map(|s| s.first_ns).min()?;
        let last = self.senders.iter().filter_map(|s| s.last_ns).max()?;
        let active = self.senders.iter().filter(|s| s.sent > 0).count() as u64;
        window_rate(self.sent - (active - 1), first, last)
    }
}

/// The rate of `count` events spread from `first_ns` to `last_ns`: `(count - 1)` intervals
/// over the window, so a perfectly paced run at rate `r` gives exactly `r`. `None` with
/// fewer than two events or an empty window.
pub fn window_rate(count: u64, first_ns: u64, last_ns: u64) -> Option<f64> {
    if count < 2 || last_ns <= first_ns {
        return None;
    }
    Some((count - 1) as f64 * 1e9 / (last_ns - first_ns) as f64)
}

/// Run the generator. `interrupted` is called every 20 ms by the calling thread while the
/// senders run; returning true stops them and yields [`GeneratorError::Interrupted`].
pub fn run(cfg: &Config, interrupted: Stop<'_>) -> Result<Report, GeneratorError> {
    cfg.validate()?;
    let n = cfg.senders;
    let shares: Vec<Option<u64>> = match cfg.packets {
        Some(p) => split(p, n).into_iter().map(Some).collect(),
        None => vec![None; n],
    };
    let rates = split(cfg.rate, n);
    let unspecified: SocketAddr = if cfg.dest.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket_err = |source| GeneratorError::Socket {
        dest: cfg.dest,
        source,
    };
    // Every socket is open and connected before any thread starts; on failure the ones
    // already open are closed as `sockets` drops.
    let mut sockets = Vec::with_capacity(n);
    for _ in 0..n {
        let s = UdpSocket::bind(unspecified).map_err(socket_err)?;
        s.connect(cfg.dest).map_err(socket_err)?;
        sockets.push(s);
    }
    let payload = vec![0u8; cfg.payload_len()];
    let deadline_ns = cfg
        .duration
        .map(|d| d.as_nanos().min(u128::from(u64::MAX)) as u64);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<GeneratorError>> = Mutex::new(None);
    let start: OnceLock<Instant> = OnceLock::new();
    let barrier = Barrier::new(n + 1);
    let ready = AtomicBool::new(true);

    let reports = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (i, sock) in sockets.iter().enumerate() {
            let sender = Sender {
                index: i,
                sock,
                payload: &payload,
                share: shares[i],
                rate: rates[i],
                deadline_ns,
                batch: cfg.batch,
                spin_ns: cfg.spin.as_nanos() as u64,
                cpu: (!cfg.cpus.is_empty()).then(|| cfg.cpus[i % cfg.cpus.len()]),
                dest: cfg.dest,
            };
            let (stop, failure, start, barrier, ready) =
                (&stop, &failure, &start, &barrier, &ready);
            handles.push(scope.spawn(move || {
                let pinned = sender.pin();
                if pinned.is_err() {
                    ready.store(false, Ordering::Relaxed);
                }
                barrier.wait();
                let report = match pinned {
                    Err(e) => Err(e),
                    Ok(()) if !ready.load(Ordering::Relaxed) => Err(GeneratorError::NotReady),
                    Ok(()) => sender.send_all(start.get().copied(), stop),
                };
                match report {
                    Ok(r) => Some(r),
                    Err(e) => {
                        stop.store(true, Ordering::Relaxed);
                        let mut slot = failure.lock().unwrap_or_else(|p| p.into_inner());
                        if slot.is_none() || matches!(*slot, Some(GeneratorError::NotReady)) {
                            *slot = Some(e);
                        }
                        None
                    }
                }
            }));
        }
        thread::sleep(cfg.start_delay);
        let t0 = *start.get_or_init(Instant::now);
        barrier.wait();
        let mut was_interrupted = false;
        while !handles.iter().all(|h| h.is_finished()) {
            if !was_interrupted && interrupted.stop() {
                was_interrupted = true;
                stop.store(true, Ordering::Relaxed);
            }
            thread::sleep(POLL_INTERVAL);
        }
        let elapsed_ns = t0.elapsed().as_nanos() as u64;
        let reports: Vec<Option<SenderReport>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or(None))
            .collect();
        (reports, elapsed_ns, was_interrupted)
    });
    let (reports, elapsed_ns, was_interrupted) = reports;
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    if was_interrupted {
        return Err(GeneratorError::Interrupted);
    }
    let senders: Vec<SenderReport> = reports.into_iter().flatten().collect();
    if senders.len() != n {
        return Err(GeneratorError::NotReady);
    }
    let sent = senders.iter().map(|s| s.sent).sum();
    let complete = senders
        .iter()
        .all(|s| s.requested.is_none_or(|r| s.sent == r));
    let first = senders.iter().filter_map(|s| s.first_ns).min();
    let last = senders.iter().filter_map(|s| s.last_ns).max();
    Ok(Report {
        sent,
        retries: senders.iter().map(|s| s.retries).sum(),
        window_ns: first.zip(last).map(|(f, l)| l - f),
        stop: if cfg.packets.is_some() && complete {
            StopReason::Count
        } else {
            StopReason::Deadline
        },
        senders,
        elapsed_ns,
        payload_len: cfg.payload_len(),
    })
}

/// One sender thread's fixed state.
struct Sender<'a> {
    index: usize,
    sock: &'a UdpSocket,
    payload: &'a [u8],
    share: Option<u64>,
    rate: u64,
    deadline_ns: Option<u64>,
    batch: usize,
    spin_ns: u64,
    cpu: Option<usize>,
    dest: SocketAddr,
}

impl Sender<'_> {
    fn pin(&self) -> Result<(), GeneratorError> {
        let Some(cpu) = self.cpu else { return Ok(()) };
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(GeneratorError::InvalidArgument(format!(
                "cpu {cpu} is out of range"
            )));
        }
        // SAFETY: `set` is a plain bit set owned by this frame; CPU_ZERO/CPU_SET write
        // inside it (cpu < CPU_SETSIZE checked above), and sched_setaffinity(0) reads
        // `size_of::<cpu_set_t>()` bytes of it for the calling thread only.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_ZERO(&mut set);
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
        };
        if rc != 0 {
            return Err(GeneratorError::InvalidArgument(format!(
                "cannot pin sender {} to cpu {cpu}: {}",
                self.index,
                io::Error::last_os_error()
            )));
        }
        Ok(())
    }

    /// Send this sender's share, paced from `start`, until the count, the deadline or `stop`.
    fn send_all(
        &self,
        start: Option<Instant>,
        stop: &AtomicBool,
    ) -> Result<SenderReport, GeneratorError> {
        let start = start.ok_or(GeneratorError::NotReady)?;
        let mut report = SenderReport {
            requested: self.share,
            target_pps: self.rate,
            cpu: self.cpu,
            ..SenderReport::default()
        };
        // Datagrams this sender may send at all: its share, and those due before the deadline.
        let mut total = self.share.unwrap_or(u64::MAX);
        if let Some(d) = self.deadline_ns {
            total = total.min(due_before(d, self.rate));
        }
        let mut iov: Vec<libc::iovec> = (0..self.batch)
            .map(|_| libc::iovec {
                iov_base: self.payload.as_ptr() as *mut libc::c_void,
                iov_len: self.payload.len(),
            })
            .collect();
        // SAFETY: mmsghdr is plain old data; all-zero is a valid value (null name and
        // control, no flags).
        let mut msgs: Vec<libc::mmsghdr> = (0..self.batch)
            .map(|_| unsafe { std::mem::zeroed() })
            .collect();
        for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
            m.msg_hdr.msg_iov = v;
            m.msg_hdr.msg_iovlen = 1;
        }
        let fd = self.sock.as_raw_fd();
        let allocs_before = crate::alloc::thread_counts();
        let mut i = 0u64;
        let mut busy_retries = 0u32;
        // sendmmsg reports an error only when the first datagram of a call fails: a short
        // count means the next one failed and its error is gone. The next calls then send one
        // datagram each, so a persistent error (a refusal) surfaces.
        let mut singles = 0u32;
        while i < total && !stop.load(Ordering::Relaxed) {
            let now = start.elapsed().as_nanos() as u64;
            if self.deadline_ns.is_some_and(|d| now >= d) {
                break;
            }
            let due = due_by(now, self.rate).min(total);
            if due <= i {
                self.wait_until(start, due_at(i, self.rate));
                continue;
            }
            let mut want = (due - i).min(self.batch as u64) as usize;
            if singles > 0 {
                singles -= 1;
                want = 1;
            }
            // SAFETY: `msgs[..want]` are initialised headers whose iovecs point into
            // `payload`, which outlives the call; the kernel only reads them (and writes
            // each `msg_len`). The socket is connected, so no address is given.
            let rc = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), want as libc::c_uint, 0) };
            if rc > 0 {
                let after = start.elapsed().as_nanos() as u64;
                report.first_ns.get_or_insert(after);
                report.last_ns = Some(after);
                report.calls += 1;
                i += rc as u64;
                busy_retries = 0;
                if (rc as usize) < want {
                    singles = 2;
                }
                continue;
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => {}
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => {
                    report.retries += 1;
                    busy_retries += 1;
                    if busy_retries > 16 {
                        thread::sleep(Duration::from_micros(50));
                    } else {
                        thread::yield_now();
                    }
                }
                _ => {
                    return Err(GeneratorError::Send {
                        dest: self.dest,
                        sender: self.index,
                        sent: i,
                        hint: hint(&err),
                        source: err,
                    });
                }
            }
        }
        report.sent = i;
        report.loop_allocations = crate::alloc::thread_counts().since(allocs_before).allocs;
        Ok(report)
    }

    /// Wait until `due_ns` after `start`: sleep while more than `spin_ns` remain, then spin.
    fn wait_until(&self, start: Instant, due_ns: u64) {
        loop {
            let now = start.elapsed().as_nanos() as u64;
            if now >= due_ns {
                return;
            }
            let left = due_ns - now;
            if left > self.spin_ns {
                thread::sleep(Duration::from_nanos(left - self.spin_ns));
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

fn hint(err: &io::Error) -> &'static str {
    match err.raw_os_error() {
        Some(libc::ECONNREFUSED) => {
            " (an ICMP port-unreachable came back: nothing listens on that port; bind a sink \
             socket on the receiver)"
        }
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn sink() -> (UdpSocket, SocketAddr) {
        let s = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = s.local_addr().unwrap();
        (s, addr)
    }

    fn drain(s: &UdpSocket) -> (u64, Vec<usize>) {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 2048];
        let (mut n, mut sizes) = (0, Vec::new());
        while let Ok(len) = s.recv(&mut buf) {
            n += 1;
            if sizes.len() < 4 {
                sizes.push(len);
            }
        }
        (n, sizes)
    }

    #[test]
    fn split_is_exact_and_larger_first() {
        assert_eq!(split(10, 3), vec![4, 3, 3]);
        assert_eq!(split(2, 3), vec![1, 1, 0]);
        assert_eq!(split(15_000_000, 4).iter().sum::<u64>(), 15_000_000);
    }

    #[test]
    fn due_times_are_absolute() {
        assert_eq!(due_at(0, 1000), 0);
        assert_eq!(due_at(3, 1000), 3_000_000);
        assert_eq!(due_at(1, 3), 333_333_334);
        // datagrams due strictly before 2 s at 10k pps: 0..19_999
        assert_eq!(due_before(2_000_000_000, 10_000), 20_000);
        assert_eq!(due_before(1, 10_000), 1);
        assert_eq!(due_before(0, 10_000), 0);
        // due at or before: datagram 0 at once, datagram 1 only from 100 us on
        assert_eq!(due_by(0, 10_000), 1);
        assert_eq!(due_by(99_999, 10_000), 1);
        assert_eq!(due_by(100_000, 10_000), 2);
        for i in [1u64, 7, 333, 10_001] {
            assert_eq!(due_by(due_at(i, 3), 3), i + 1);
            assert_eq!(due_by(due_at(i, 3) - 1, 3), i);
        }
    }

    #[test]
    fn window_rate_counts_intervals() {
        assert_eq!(
            window_rate(200_000, 0, 999_995_000),
            Some(199_999.0 / 0.999995)
        );
        assert_eq!(window_rate(1, 0, 10), None);
        assert_eq!(window_rate(5, 10, 10), None);
    }

    #[test]
    fn realized_rate_over_several_senders() {
        let sender = |n: u64, last: u64| SenderReport {
            sent: n,
            first_ns: Some(0),
            last_ns: Some(last),
            ..SenderReport::default()
        };
        // two senders of 500 datagrams at 25k pps each: 499 intervals of 40 us
        let report = Report {
            sent: 1000,
            senders: vec![sender(500, 19_960_000), sender(500, 19_960_000)],
            elapsed_ns: 20_000_000,
            window_ns: Some(19_960_000),
            retries: 0,
            stop: StopReason::Count,
            payload_len: 36,
        };
        assert!((report.realized_pps().unwrap() - 50_000.0).abs() < 1e-6);
    }

    #[test]
    fn payload_follows_the_address_family() {
        let v4 = Config::new("127.0.0.1:9".parse().unwrap(), 1);
        assert_eq!(v4.payload_len(), 36);
        let v6 = Config {
            frame_size: 100,
            ..Config::new("[::1]:9".parse().unwrap(), 1)
        };
        assert_eq!(v6.payload_len(), 52);
        let tiny = Config {
            frame_size: 10,
            ..v4
        };
        assert_eq!(tiny.payload_len(), 1);
    }

    #[test]
    fn validation_names_the_option() {
        let base = Config {
            packets: Some(10),
            ..Config::new("127.0.0.1:9".parse().unwrap(), 100)
        };
        let msg = |c: Config| c.validate().unwrap_err().to_string();
        assert_eq!(
            msg(Config {
                rate: 0,
                ..base.clone()
            }),
            "rate must be positive"
        );
        assert!(msg(Config {
            senders: 11,
            ..base.clone()
        })
        .starts_with("senders cannot exceed packets"));
        assert!(msg(Config {
            batch: 0,
            ..base.clone()
        })
        .starts_with("batch must be between 1 and 1024"));
        assert_eq!(
            msg(Config {
                packets: None,
                ..base.clone()
            }),
            "give packets, duration or both"
        );
        assert!(base.validate().is_ok());
    }

    #[test]
    fn sends_the_exact_count_over_three_senders() {
        let (s, addr) = sink();
        let cfg = Config {
            packets: Some(10),
            senders: 3,
            frame_size: 100,
            ..Config::new(addr, 10_000)
        };
        let report = run(&cfg, &|| false).unwrap();
        assert_eq!(report.sent, 10);
        let per: Vec<u64> = report.senders.iter().map(|r| r.sent).collect();
        assert_eq!(per, vec![4, 3, 3]);
        let targets: Vec<u64> = report.senders.iter().map(|r| r.target_pps).collect();
        assert_eq!(targets, vec![3334, 3333, 3333]);
        assert_eq!(report.stop, StopReason::Count);
        let (got, sizes) = drain(&s);
        assert_eq!(got, 10);
        assert!(sizes.iter().all(|&n| n == 72), "{sizes:?}");
    }

    #[test]
    fn ipv6_destination_works() {
        let Ok(s) = UdpSocket::bind("[::1]:0") else {
            return; // no IPv6 loopback on this host
        };
        let addr = s.local_addr().unwrap();
        let cfg = Config {
            packets: Some(5),
            ..Config::new(addr, 1000)
        };
        assert_eq!(run(&cfg, &|| false).unwrap().sent, 5);
        assert_eq!(drain(&s).0, 5);
    }

    #[test]
    fn duration_bounds_the_count() {
        let (s, addr) = sink();
        let cfg = Config {
            duration: Some(Duration::from_millis(200)),
            senders: 2,
            ..Config::new(addr, 1_000)
        };
        let report = run(&cfg, &|| false).unwrap();
        // 1000 pps for 0.2 s: 200 datagrams are due before the deadline; a sender still behind
        // when it passes stops there, so never more, and every one counted arrived.
        assert!(report.sent <= 200 && report.sent > 0, "{}", report.sent);
        assert_eq!(report.stop, StopReason::Deadline);
        assert!(report.elapsed_ns >= 199_000_000);
        assert_eq!(drain(&s).0, report.sent);
    }

    #[test]
    fn refused_send_is_an_error() {
        // Bind then drop: the port is (almost surely) unbound now, so lo answers with ICMP
        // port-unreachable and the connected socket's next send fails with ECONNREFUSED,
        // also when the sender is behind and sends full batches (batch 64 at 10M pps).
        let addr = {
            let (s, addr) = sink();
            drop(s);
            addr
        };
        let cfg = Config {
            packets: Some(1_000_000),
            duration: Some(Duration::from_secs(5)),
            ..Config::new(addr, 10_000_000)
        };
        match run(&cfg, &|| false) {
            Err(GeneratorError::Send { source, .. }) => {
                assert_eq!(source.raw_os_error(), Some(libc::ECONNREFUSED))
            }
            other => panic!("expected a refused send, got {other:?}"),
        }
    }

    #[test]
    fn interrupt_stops_the_senders() {
        let (_s, addr) = sink();
        let cfg = Config {
            packets: Some(1_000_000),
            ..Config::new(addr, 1_000)
        };
        let t0 = Instant::now();
        let calls = std::sync::atomic::AtomicU32::new(0);
        let r = run(&cfg, &|| calls.fetch_add(1, Ordering::Relaxed) >= 2);
        assert!(matches!(r, Err(GeneratorError::Interrupted)), "{r:?}");
        assert!(t0.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn unresolvable_host_is_an_error() {
        let e = resolve("no-such-host.invalid", 9).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("cannot resolve host \"no-such-host.invalid\""),
            "{e}"
        );
    }

    #[test]
    fn bad_cpu_is_an_error() {
        let (_s, addr) = sink();
        let cfg = Config {
            packets: Some(5),
            cpus: vec![100_000],
            ..Config::new(addr, 1000)
        };
        let e = run(&cfg, &|| false).unwrap_err();
        assert!(e.to_string().contains("cpu 100000"), "{e}");
    }

    #[test]
    fn send_loop_allocates_nothing() {
        let (s, addr) = sink();
        s.set_nonblocking(true).unwrap();
        let cfg = Config {
            packets: Some(20_000),
            senders: 2,
            batch: 8,
            ..Config::new(addr, 1_000_000)
        };
        let report = run(&cfg, &|| false).unwrap();
        assert_eq!(report.sent, 20_000);
        for r in &report.senders {
            assert!(r.calls > 0);
            assert_eq!(r.loop_allocations, 0, "{r:?}");
        }
    }
}
