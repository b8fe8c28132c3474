//! Managed capture over a live device: `lo`, traffic from a bounded sender to a socket the
//! test bound itself (port 0), the filter naming that port. Needs the right to capture (root
//! or CAP_NET_RAW); without it the tests say so and return.

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::managed::PRODUCER_BATCH;
use super::{Handle, LiveOptions, ManagedCapture, ManagedConfig};
use crate::alloc::{thread_counts, AllocCounts};
use crate::capture::queue::Pop;
use crate::error::{Error, Result};
use crate::source::{Fetch, Limits, PacketSource, PcapCounters, SourceInfo, SourceLoop, Waker};

/// Packets each thread handles before its allocations are counted (buffers fill the pool).
const WARM_UP: u64 = 2_000;

/// A live handle that records the capture thread's allocations from its `WARM_UP`th packet
/// to its last one.
struct Counted {
    inner: Handle,
    seen: u64,
    from: Option<AllocCounts>,
    last: Option<AllocCounts>,
    out: Arc<AtomicU64>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        if let (Some(from), Some(last)) = (self.from, self.last) {
            self.out.store(last.since(from).allocs, Ordering::SeqCst);
        }
    }
}

impl PacketSource for Counted {
    fn fetch(&mut self) -> Result<Fetch<'_>> {
        let f = PacketSource::fetch(&mut self.inner)?;
        if let Fetch::Packet(_) = f {
            self.seen += 1;
            let now = thread_counts();
            if self.seen == WARM_UP {
                self.from = Some(now);
            }
            self.last = Some(now);
        }
        Ok(f)
    }
    fn wait(&mut self, timeout: Duration, waker: Option<&Waker>) -> Result<()> {
        PacketSource::wait(&mut self.inner, timeout, waker)
    }
    fn counters(&mut self) -> Option<PcapCounters> {
        PacketSource::counters(&mut self.inner)
    }
    fn info(&self) -> SourceInfo {
        PacketSource::info(&self.inner)
    }
    fn linktype(&self) -> Option<u32> {
        PacketSource::linktype(&self.inner)
    }
    fn snaplen(&self) -> u32 {
        PacketSource::snaplen(&self.inner)
    }
    fn install_filter(&mut self, expr: &str) -> Result<()> {
        PacketSource::install_filter(&mut self.inner, expr)
    }
}

/// Open `lo` immediate-mode, or `None` (with the reason on stderr) without the right to.
fn open_lo() -> Option<Handle> {
    let opts = LiveOptions {
        snaplen: 256,
        timeout_ms: 10,
        buffer_size: Some(8 << 20),
        immediate: Some(true),
        ..LiveOptions::default()
    };
    match Handle::open_live("lo", &opts) {
        Ok(h) => Some(h),
        Err(e @ Error::PermissionDenied { .. }) => {
            eprintln!("skipped: live capture on lo is not permitted here: {e}");
            None
        }
        Err(e) => panic!("cannot open lo: {e}"),
    }
}

/// Send `n` datagrams of 32 bytes to `port` on 127.0.0.1, in bursts with a short pause
/// (so a loaded machine's ring keeps up), for at most 20 s, until `stop` is set.
fn sender(port: u16, n: u64, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let end = Instant::now() + Duration::from_secs(20);
        let mut sent = 0;
        while sent < n && Instant::now() < end && !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                if tx.send_to(&[0x5a; 32], ("127.0.0.1", port)).is_ok() {
                    sent += 1;
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        sent
    })
}

/// The managed path over `lo` (capture thread, bounded queue, a consumer that hands each
/// buffer back) allocates nothing per packet once its buffers are pooled: on either thread,
/// allocations after the warm-up stay below a bound set by the queue, not the packet count.
#[test]
fn a_managed_capture_on_lo_allocates_nothing_per_packet() {
    let Some(handle) = open_lo() else { return };
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = sink.local_addr().unwrap().port();
    const PACKETS: u64 = 30_000;
    const QUEUE_CAP: usize = 16;
    let producer_allocs = Arc::new(AtomicU64::new(u64::MAX));
    let src = Counted {
        inner: handle,
        seen: 0,
        from: None,
        last: None,
        out: producer_allocs.clone(),
    };
    let limits = Limits {
        max_packets: Some(PACKETS),
        idle_timeout: Some(Duration::from_secs(2)),
        max_time: Some(Duration::from_secs(30)),
    };
    let filter = format!("udp dst port {port}");
    let lp = SourceLoop::new(
        Box::new(src) as Box<dyn PacketSource>,
        Some(&filter),
        limits,
    )
    .unwrap();
    let config = ManagedConfig {
        queue_cap: QUEUE_CAP,
        ..ManagedConfig::default()
    };
    let capture = ManagedCapture::start(lp, config).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let tx = sender(port, PACKETS, stop.clone());

    let mut got = 0u64;
    let mut from = None;
    let mut recycle = None;
    loop {
        match capture.pop(Duration::from_millis(50), recycle.take()) {
            Pop::Item(p) => {
                got += 1;
                assert_eq!(p.data.len(), 14 + 20 + 8 + 32);
                capture.count_processed(false);
                recycle = Some(p);
                if got == WARM_UP {
                    from = Some(thread_counts());
                }
            }
            Pop::Empty => {}
            Pop::Finished => break,
        }
    }
    let consumer = from.map(|f| thread_counts().since(f).allocs);
    stop.store(true, Ordering::Relaxed);
    let sent = tx.join().unwrap();
    drop(capture);
    drop(sink);

    assert!(
        got >= PACKETS / 2,
        "too few packets captured to count ({got} of {sent} sent)"
    );
    // Buffers are allocated only while the pool fills: at most as many as can be in flight
    // (queue, producer batch and spares), whatever the packet count.
    let bound = (QUEUE_CAP + 4 * PRODUCER_BATCH) as u64;
    let producer = producer_allocs.load(Ordering::SeqCst);
    assert!(
        producer <= bound,
        "the capture thread allocated {producer} times over {} packets",
        got - WARM_UP
    );
    let consumer = consumer.unwrap();
    assert_eq!(consumer, 0, "the consumer allocated over {got} packets");
}
