//! The consumer API of docs/architecture.md, as a user of the crate writes it: open a
//! source, run the one loop with a closure, read the end and the statistics.

use paclo::flow::{for_each_packet, never, Walk};
use paclo::pcap::PcapWriter;
use paclo::source::{Limits, SourceInfo, SourceLoop, SourceSpec};
use paclo::stats::{State, StopReason};

#[test]
fn a_consumer_runs_over_a_file_through_the_one_loop() -> paclo::Result<()> {
    let dir = std::env::temp_dir().join(format!("paclo-consumer-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("trace.pcap");
    let mut w = PcapWriter::create(&path, 1, 65535, true)?;
    for i in 0..10u8 {
        let mut frame = vec![0u8; 60];
        frame[12] = 0x08; // EtherType IPv4 and a zero IP header: not TCP
        frame[59] = i;
        w.write_packet(1_700_000_000_000_000_000 + i64::from(i), &frame, 60)?;
    }
    w.finish()?;

    let source = SourceSpec::File(path.clone()).open()?;
    let mut lp = SourceLoop::new(source, None, Limits::default())?;
    let mut seen = Vec::new();
    let walk = for_each_packet(&mut lp, &never, |pkt| seen.push(pkt.data[59]))?;
    assert_eq!(walk, Walk::Done);
    assert!(lp.take_truncation().is_none());
    let stats = lp.close();
    assert_eq!(seen, (0..10).collect::<Vec<u8>>());
    assert_eq!(
        (stats.state, stats.stop_reason, stats.captured, stats.bytes),
        (State::Closed, Some(StopReason::Eof), 10, 600)
    );
    assert_eq!(stats.source, SourceInfo::Path(path.clone()));

    // A filter and a limit are the loop's too.
    let source = SourceSpec::File(path.clone()).open()?;
    let limits = Limits {
        max_packets: Some(3),
        ..Limits::default()
    };
    let mut lp = SourceLoop::new(source, Some("len == 60"), limits)?;
    let mut n = 0;
    for_each_packet(&mut lp, &never, |_| n += 1)?;
    assert_eq!((n, lp.stop_reason()), (3, Some(StopReason::MaxPackets)));
    let source = SourceSpec::File(path).open()?;
    let mut lp = SourceLoop::new(source, Some("tcp"), Limits::default())?;
    for_each_packet(&mut lp, &never, |_| n += 1)?;
    assert_eq!(n, 3);
    std::fs::remove_dir_all(&dir).unwrap();
    Ok(())
}
