//! Side-by-side cost of the flow fast path and etherparse's lax slicing, per packet.
//!
//! `cargo bench --bench flows_fastpath` walks an in-memory classic-pcap-like buffer of
//! 1,000,000 frames (64-byte UDP, then 512-byte TCP) and extracts the 5-tuple with each
//! parser. Prints ns/packet and a checksum so neither loop is optimised away.
//!
//! `cargo bench --bench flows_fastpath -- FILE.pcap` instead times each step over a file:
//! the record walk, walk + fast path, projection into reused columns, the flow table.

use std::hint::black_box;
use std::time::Instant;

use etherparse::{LaxNetSlice, LaxSlicedPacket, TransportSlice};
use paclo::decode::fastpath::{self, linktype, FlowFields};

const COUNT: usize = 1_000_000;

fn frame(tcp: bool, size: usize) -> Vec<u8> {
    let mut f = vec![
        0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x08, 0x00,
    ];
    let ip_len = (size - 14) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&ip_len.to_be_bytes());
    f.extend_from_slice(&[
        0,
        1,
        0,
        0,
        64,
        if tcp { 6 } else { 17 },
        0,
        0,
        10,
        0,
        0,
        1,
        10,
        0,
        0,
        2,
    ]);
    if tcp {
        f.extend_from_slice(&[
            0x9C, 0x40, 0x01, 0xBB, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xFF, 0xFF, 0, 0, 0, 0,
        ]);
    } else {
        f.extend_from_slice(&[0x2E, 0xE0, 0x14, 0xB4]);
        f.extend_from_slice(&(ip_len - 20).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
    }
    f.resize(size, 0xAB);
    f
}

fn buffer(tcp: bool, size: usize) -> Vec<u8> {
    let fr = frame(tcp, size);
    let mut buf = Vec::with_capacity(COUNT * (16 + size));
    for i in 0..COUNT {
        buf.extend_from_slice(&(i as u32).to_le_bytes());
        buf.extend_from_slice(&0u32.to_le_bytes());
        buf.extend_from_slice(&(size as u32).to_le_bytes());
        buf.extend_from_slice(&(size as u32).to_le_bytes());
        buf.extend_from_slice(&fr);
    }
    buf
}

fn walk(buf: &[u8], mut f: impl FnMut(&[u8])) {
    let mut off = 0;
    while off + 16 <= buf.len() {
        let caplen = u32::from_le_bytes(buf[off + 8..off + 12].try_into().unwrap()) as usize;
        let data = &buf[off + 16..off + 16 + caplen];
        f(data);
        off += 16 + caplen;
    }
}

fn fast(buf: &[u8]) -> u64 {
    let mut sum = 0u64;
    let mut out = FlowFields::default();
    walk(buf, |d| {
        fastpath::parse(linktype::ETHERNET, d, &mut out);
        sum = sum.wrapping_add(
            u64::from(out.protocol) + u64::from(out.src_port) + u64::from(out.dst[15]),
        );
    });
    sum
}

fn ether(buf: &[u8]) -> u64 {
    let mut sum = 0u64;
    walk(buf, |d| {
        if let Ok(p) = LaxSlicedPacket::from_ethernet(d) {
            let (proto, dst) = match &p.net {
                Some(LaxNetSlice::Ipv4(s)) => {
                    (s.payload().ip_number.0, s.header().destination()[3])
                }
                _ => (0, 0),
            };
            let sp = match &p.transport {
                Some(TransportSlice::Udp(u)) => u.source_port(),
                Some(TransportSlice::Tcp(t)) => t.source_port(),
                _ => 0,
            };
            sum = sum.wrapping_add(u64::from(proto) + u64::from(sp) + u64::from(dst));
        }
    });
    sum
}

fn time(name: &str, buf: &[u8], f: fn(&[u8]) -> u64) -> (f64, u64) {
    let mut best = f64::MAX;
    let mut check = 0;
    for _ in 0..5 {
        let t = Instant::now();
        check = black_box(f(black_box(buf)));
        best = best.min(t.elapsed().as_nanos() as f64 / COUNT as f64);
    }
    println!("{name:<28} {best:7.1} ns/packet  (checksum {check})");
    (best, check)
}

/// Per-step cost over a capture file: walk, walk + parse, projection, flow table.
fn file_steps(path: &str) {
    use paclo::flow::{FlowOptions, FlowTable, ProjectionBuilder};
    use paclo::pcap::FileReader;
    type Step = (&'static str, fn(&str) -> u64);
    let steps: [Step; 5] = [
        ("walk", |p| {
            let mut r = FileReader::open(p).unwrap();
            let mut n = 0u64;
            while let Some(pkt) = r.next_packet().unwrap() {
                n += u64::from(pkt.caplen);
            }
            n
        }),
        ("walk + fast path", |p| {
            let mut r = FileReader::open(p).unwrap();
            let mut f = FlowFields::default();
            let mut n = 0u64;
            while let Some(pkt) = r.next_packet().unwrap() {
                fastpath::parse(pkt.linktype, pkt.data, &mut f);
                n += u64::from(f.src_port);
            }
            n
        }),
        ("projection (reused columns)", |p| {
            let mut r = FileReader::open(p).unwrap();
            let mut b = ProjectionBuilder::new(65536);
            let mut n = 0u64;
            while let Some(pkt) = r.next_packet().unwrap() {
                b.push(&pkt);
                if b.is_full() {
                    n += b.finish().map_or(0, |x| x.num_rows() as u64);
                }
            }
            n + b.finish().map_or(0, |x| x.num_rows() as u64)
        }),
        ("projection (batches kept)", |p| {
            let mut r = FileReader::open(p).unwrap();
            let mut b = ProjectionBuilder::new(1 << 20);
            let mut kept = Vec::new();
            while let Some(pkt) = r.next_packet().unwrap() {
                b.push(&pkt);
                if b.is_full() {
                    kept.extend(b.finish());
                }
            }
            kept.extend(b.finish());
            kept.iter().map(|x| x.num_rows() as u64).sum()
        }),
        ("flow table", |p| {
            let mut r = FileReader::open(p).unwrap();
            let mut t = FlowTable::new(FlowOptions {
                key_vlan: true,
                ..Default::default()
            });
            while let Some(pkt) = r.next_packet().unwrap() {
                t.push(&pkt);
            }
            t.counts().0
        }),
    ];
    let count = {
        let mut r = FileReader::open(path).unwrap();
        let mut n = 0usize;
        while r.next_packet().unwrap().is_some() {
            n += 1;
        }
        n
    };
    println!("{path}: {count} packets, best of 5");
    for (name, f) in steps {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            black_box(f(black_box(path)));
            best = best.min(t.elapsed().as_nanos() as f64 / count as f64);
        }
        println!("  {name:<28} {best:7.1} ns/packet");
    }
}

fn main() {
    if let Some(path) = std::env::args().skip(1).find(|a| !a.starts_with('-')) {
        return file_steps(&path);
    }
    for (label, tcp, size) in [("udp-64", false, 64), ("tcp-512", true, 512)] {
        let buf = buffer(tcp, size);
        println!("{label}: {COUNT} packets, best of 5");
        let (a, ca) = time("  walk + fast path", &buf, fast);
        let (b, cb) = time("  walk + etherparse lax", &buf, ether);
        assert_eq!(ca, cb, "the two parsers disagree");
        println!(
            "  fast path saves {:.0}% against etherparse",
            100.0 * (1.0 - a / b)
        );
    }
}
