//! Tests of the one loop: files, scripted devices, limits, waits, folds, allocations.

use std::time::{Duration, Instant};

use super::testing::{Script, Scripted};
use super::*;
use crate::error::Error;
use crate::pcap::FileReader;
use crate::stats::{Failure, State, StopReason};

fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("paclo-source-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// A classic µs file of `n` 64-byte Ethernet/IPv4/UDP packets (source port 1000 + i % 7).
fn udp_file(n: usize) -> Vec<u8> {
    let mut w = crate::pcap::PcapWriter::new(Vec::new(), "udp.pcap", 1, 65535, false).unwrap();
    for i in 0..n {
        let ip = crate::flow::testdata::ipv4(
            17,
            [10, 0, 0, 1],
            [10, 0, 0, 2],
            0,
            0,
            &crate::flow::testdata::udp(1000 + (i % 7) as u16, 53, 22),
        );
        let frame = crate::flow::testdata::ethernet(0x0800, &[], &ip);
        let ts = 1_700_000_000_000_000_000 + i as i64 * 1_000;
        w.write_packet(ts, &frame, frame.len() as u32).unwrap();
    }
    w.finish().unwrap()
}

fn drain<S: PacketSource>(lp: &mut SourceLoop<S>) -> Result<Vec<i64>> {
    let mut out = vec![];
    loop {
        match lp.step()? {
            Step::Packet(p) => out.push(p.ts_ns),
            Step::Pending => {}
            Step::End => return Ok(out),
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
fn a_cut_file_yields_its_packets_then_ends_with_a_truncation() {
    let mut bytes = udp_file(3);
    bytes.truncate(bytes.len() - 10);
    let path = temp_file("cut.pcap", &bytes);
    let mut lp =
        SourceLoop::new(FileReader::open(&path).unwrap(), None, Limits::default()).unwrap();
    assert_eq!(lp.stats().state, State::Running);
    assert_eq!(drain(&mut lp).unwrap().len(), 2);
    let s = lp.stats();
    assert_eq!(
        (s.state, s.stop_reason, s.truncated, s.captured, s.processed),
        (State::Closed, Some(StopReason::Eof), true, 2, 2)
    );
    assert_eq!(s.bytes, 2 * 64);
    assert_eq!(s.source, SourceInfo::Path(path.clone()));
    assert!(matches!(
        lp.take_truncation(),
        Some(Error::Truncated { index: 2, .. })
    ));
    assert!(lp.take_truncation().is_none());
    // Strict: the same cut fails the pass.
    let mut lp = SourceLoop::new(FileReader::open(&path).unwrap(), None, Limits::default())
        .unwrap()
        .strict(true);
    assert!(matches!(drain(&mut lp), Err(Error::Truncated { .. })));
    let s = lp.stats();
    assert_eq!(
        (s.state, s.stop_reason, s.truncated),
        (State::Failed, Some(StopReason::Error), true)
    );
    assert!(matches!(
        s.error,
        Some(Failure::Source(Error::Truncated { .. }))
    ));
}

#[test]
fn the_filter_and_the_limit_apply_to_a_file() {
    let path = temp_file("ports.pcap", &udp_file(70));
    let open = |filter: Option<&str>, max: Option<u64>| {
        let limits = Limits {
            max_packets: max,
            ..Default::default()
        };
        SourceLoop::new(FileReader::open(&path).unwrap(), filter, limits).unwrap()
    };
    let mut lp = open(Some("udp src port 1003"), None);
    assert_eq!(drain(&mut lp).unwrap().len(), 10);
    let mut lp = open(Some("udp"), Some(25));
    assert_eq!(drain(&mut lp).unwrap().len(), 25);
    assert_eq!(lp.stop_reason(), Some(StopReason::MaxPackets));
    let mut lp = open(None, Some(0));
    assert_eq!(drain(&mut lp).unwrap().len(), 0);
    assert_eq!(lp.stop_reason(), Some(StopReason::MaxPackets));
    let err = SourceLoop::new(
        FileReader::open(&path).unwrap(),
        Some("nonsense here"),
        Limits::default(),
    )
    .err()
    .unwrap();
    assert!(matches!(err, Error::Filter { .. }), "{err}");
}

/// A device that is idle makes the loop pending, then wait (once per pending step), and a
/// quiet spell of `idle_timeout` ends it.
#[test]
fn an_idle_device_is_waited_for_and_idle_timeout_ends_it() {
    let steps = [
        Scripted::Packet(1),
        Scripted::Idle,
        Scripted::Idle,
        Scripted::Packet(2),
        Scripted::Packet(3),
    ];
    let limits = Limits {
        idle_timeout: Some(Duration::from_millis(30)),
        ..Default::default()
    };
    let mut lp = SourceLoop::new(Script::new(steps, Scripted::Idle), Some("udp"), limits).unwrap();
    assert_eq!(
        lp.source().filter.as_deref(),
        Some("udp"),
        "installed in the device"
    );
    let t0 = Instant::now();
    assert_eq!(drain(&mut lp).unwrap(), vec![1, 2, 3]);
    assert!(t0.elapsed() >= Duration::from_millis(30));
    assert_eq!(lp.stop_reason(), Some(StopReason::IdleTimeout));
    assert!(lp.source().waits >= 3, "{}", lp.source().waits);
    let s = lp.close();
    assert_eq!(
        (s.state, s.source),
        (State::Closed, SourceInfo::Device("script0".into()))
    );
}

#[test]
fn a_device_read_error_fails_the_pass_and_is_not_the_end() {
    let steps = [Scripted::Packet(1), Scripted::Fail];
    let mut lp =
        SourceLoop::new(Script::new(steps, Scripted::End), None, Limits::default()).unwrap();
    assert!(matches!(drain(&mut lp), Err(Error::Capture(_))));
    let s = lp.stats();
    assert_eq!(
        (s.state, s.stop_reason, s.captured),
        (State::Failed, Some(StopReason::Error), 1)
    );
    assert!(s.error.unwrap().message().contains("boom"));
}

/// A host that counts what the loop asks of it and raises after `raise_after` asks.
struct Counting {
    released: u32,
    asked: u32,
    raise_after: Option<u32>,
}

impl Host for Counting {
    type Error = &'static str;

    fn release<R: Send>(&mut self, f: impl FnOnce() -> R + Send) -> R {
        self.released += 1;
        f()
    }

    fn interrupted(&mut self) -> std::result::Result<(), &'static str> {
        self.asked += 1;
        match self.raise_after {
            Some(n) if self.asked > n => Err("interrupted"),
            _ => Ok(()),
        }
    }
}

fn host(raise_after: Option<u32>) -> Counting {
    Counting {
        released: 0,
        asked: 0,
        raise_after,
    }
}

/// The reduce loop over a device: packets between idle spells are folded with the host
/// held; each pending step asks for signals and the next step (the wait) runs released.
#[test]
fn fold_over_a_device_releases_the_host_for_every_wait() {
    let mut steps = vec![];
    for i in 0..200u8 {
        steps.push(Scripted::Packet(i));
        if i % 50 == 0 {
            steps.push(Scripted::Idle);
        }
    }
    let limits = Limits {
        idle_timeout: Some(Duration::from_millis(20)),
        ..Default::default()
    };
    let mut lp = SourceLoop::new(Script::new(steps, Scripted::Idle), None, limits).unwrap();
    let mut h = host(None);
    let mut acc = 0u64;
    fold(&mut lp, &mut h, &mut acc, |a, p| {
        *a += p.ts_ns as u64;
        Ok(Control::Continue)
    })
    .unwrap();
    assert_eq!(acc, (0..200u64).sum::<u64>());
    assert_eq!(lp.stop_reason(), Some(StopReason::IdleTimeout));
    // Four idle spells inside the stream, then the final quiet one.
    assert!(
        h.released >= 5 && h.released == lp.source().waits,
        "{} {}",
        h.released,
        lp.source().waits
    );
    // Asked after every pending step, and every FOLD_SIGNAL_EVERY packets.
    assert!(h.asked >= h.released + (200 / FOLD_SIGNAL_EVERY) as u32);
}

#[test]
fn fold_stops_on_request_on_error_and_on_a_signal() {
    let steps = (0..100u8).map(Scripted::Packet);
    let mut lp =
        SourceLoop::new(Script::file(steps, Scripted::End), None, Limits::default()).unwrap();
    let mut n = 0;
    fold(&mut lp, &mut host(None), &mut n, |n, _| {
        *n += 1;
        Ok(if *n == 10 {
            Control::Stop(StopReason::Reduced)
        } else {
            Control::Continue
        })
    })
    .unwrap();
    assert_eq!((n, lp.stop_reason()), (10, Some(StopReason::Reduced)));

    let mut lp = SourceLoop::new(
        Script::file((0..100u8).map(Scripted::Packet), Scripted::End),
        None,
        Limits::default(),
    )
    .unwrap();
    let mut n = 0;
    let out = fold(&mut lp, &mut host(None), &mut n, |n, _| {
        *n += 1;
        if *n == 5 {
            Err("fn raised")
        } else {
            Ok(Control::Continue)
        }
    });
    assert!(matches!(out, Err(Folded::Consumer("fn raised"))));
    assert!(!lp.has_ended(), "the caller records a consumer failure");
    lp.fail(Failure::Consumer {
        class: "KeyError".into(),
        message: "fn raised".into(),
    });
    assert_eq!(
        (lp.stats().state, lp.stop_reason()),
        (State::Failed, Some(StopReason::Error))
    );

    let mut lp = SourceLoop::new(
        Script::new([], Scripted::Packet(1)),
        None,
        Limits::default(),
    )
    .unwrap();
    let mut n = 0u64;
    let out = fold(&mut lp, &mut host(Some(2)), &mut n, |n, _| {
        *n += 1;
        Ok(Control::Continue)
    });
    assert!(matches!(out, Err(Folded::Interrupted("interrupted"))));
    assert_eq!(
        (n, lp.stop_reason()),
        (3 * FOLD_SIGNAL_EVERY, Some(StopReason::Closed))
    );

    let steps = [Scripted::Packet(1), Scripted::Fail];
    let mut lp =
        SourceLoop::new(Script::new(steps, Scripted::End), None, Limits::default()).unwrap();
    let out = fold(&mut lp, &mut host(None), &mut 0, |_, _| {
        Ok(Control::Continue)
    });
    assert!(matches!(out, Err(Folded::Source(Error::Capture(_)))));
    assert_eq!(lp.stats().state, State::Failed);
}

/// The loop over a file, filter included, allocates nothing per packet.
#[test]
fn the_file_loop_allocates_nothing() {
    let path = temp_file("million.pcap", &udp_file(200_000));
    let mut lp = SourceLoop::new(
        FileReader::open(&path).unwrap(),
        Some("udp"),
        Limits::default(),
    )
    .unwrap();
    let Step::Packet(_) = lp.step().unwrap() else {
        panic!("a packet")
    };
    let before = crate::alloc::thread_counts();
    let mut n = 1;
    while let Step::Packet(_) = lp.step().unwrap() {
        n += 1;
    }
    let delta = crate::alloc::thread_counts().since(before);
    assert_eq!(n, 200_000);
    assert_eq!(delta.allocs, 0, "{delta:?}");
    std::fs::remove_file(path).unwrap();
}
