//! One benchmark per JA4-family method on one packet of the kind it reads, in the format
//! of the JA4 library's `go test -bench` output (ns/op, B/op, allocs/op), so the two tables
//! sit side by side in docs/fingerprints.md.
//!
//! `cargo bench --bench fingerprints` runs each benchmark for about 0.3 s, five times, and
//! prints the median ns/op with the spread of the five runs. Every op goes through
//! `Fingerprinter::process` (the decode of the Ethernet frame included, as the reference
//! includes gopacket's decode) with only the measured method enabled, and resets the
//! per-connection state inside the timed loop as the reference does. JA4X is also
//! measured on its own (the DER certificate alone), which is what the reference's JA4X
//! benchmark reads. Allocation counts come from paclo's counting allocator.
//!
//! `-- NAME --ops=N` runs exactly N ops of each selected benchmark once (no calibration,
//! no timing): the difference of `perf stat -e instructions:u` between two values of N,
//! divided by their difference, is the instructions per op, which a loaded machine does
//! not change.

use std::hint::black_box;
use std::time::Duration;

use paclo::alloc::thread_counts;
use paclo::fingerprint::frames::{self, Tcp, LINUX_SYN_OPTIONS};
use paclo::fingerprint::{
    hello, ja4, ja4d, ja4d6, ja4h, ja4s, ja4t, ja4x, Config, Event, Fingerprinter, Method, Methods,
    Output, Text, VALUE_CAP,
};
use paclo::RawPacket;

/// This thread's CPU time: on a shared machine, time the thread was not running is not
/// the code's.
fn cpu_now() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer to a local.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

const C: [u8; 4] = [192, 168, 1, 10];
const S: [u8; 4] = [93, 184, 216, 34];

fn seg(client: bool, flags: u8, seq: u32, options: &[u8], payload: &[u8]) -> Vec<u8> {
    let (src, dst, sport, dport, ttl) = if client {
        (C, S, 51234, 443, 64)
    } else {
        (S, C, 443, 51234, 52)
    };
    frames::tcp(
        &Tcp {
            src,
            dst,
            sport,
            dport,
            flags,
            seq,
            ack: 1,
            window: 64240,
            options,
            ttl,
        },
        payload,
    )
}

fn ssh_seg(payload: &[u8]) -> Vec<u8> {
    frames::tcp(
        &Tcp {
            src: C,
            dst: S,
            sport: 51234,
            dport: 22,
            flags: 0x18,
            seq: 1,
            ack: 1,
            window: 501,
            options: &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
            ttl: 64,
        },
        payload,
    )
}

/// A TLS 1.2 ServerHello and a certificate of a usual shape (3 issuer and 1 subject
/// attributes, 9 extensions).
fn certificate() -> Vec<u8> {
    frames::certificate(
        &["550406", "55040a", "550403"],
        &["550403"],
        &[
            "551d0f",
            "551d25",
            "551d13",
            "551d0e",
            "551d23",
            "2b06010505070101",
            "551d11",
            "551d20",
            "2b06010401d679020402",
        ],
    )
}

fn server_hello_body() -> Vec<u8> {
    let mut sh = vec![3, 3];
    sh.extend_from_slice(&[5; 32]);
    sh.push(32);
    sh.extend_from_slice(&[6; 32]);
    sh.extend_from_slice(&[0xc0, 0x2f, 0]);
    let exts = [0xff, 0x01, 0, 1, 0, 0, 0x0b, 0, 2, 1, 0, 0x00, 0x17, 0, 0];
    sh.extend_from_slice(&(exts.len() as u16).to_be_bytes());
    sh.extend_from_slice(&exts);
    sh
}

fn server_hello_record() -> Vec<u8> {
    hello::wrap_handshake(2, &server_hello_body())
}

fn server_flight() -> Vec<u8> {
    let sh = server_hello_body();
    let c = certificate();
    let mut list = (c.len() as u32).to_be_bytes()[1..].to_vec();
    list.extend_from_slice(&c);
    let mut body = (list.len() as u32).to_be_bytes()[1..].to_vec();
    body.extend_from_slice(&list);
    [
        hello::wrap_handshake(2, &sh),
        hello::wrap_handshake(11, &body),
        hello::wrap_handshake(14, &[]),
    ]
    .concat()
}

const HTTP: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\nAccept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br\r\nConnection: keep-alive\r\nReferer: https://www.example.com/\r\nCookie: session=abc123; theme=dark; _ga=GA1.2.3456; lang=en\r\nUpgrade-Insecure-Requests: 1\r\nSec-Fetch-Dest: document\r\nSec-Fetch-Mode: navigate\r\n\r\n";

/// A DHCPDISCOVER with a client id, a requested address, a host name, a vendor class and a
/// parameter request list.
fn dhcp_discover() -> Vec<u8> {
    frames::dhcp(&[
        (53, &[1]),
        (61, &[1, 0, 0x0c, 0x29, 0x3e, 0x53, 0xf7]),
        (50, &[192, 168, 1, 10]),
        (12, b"laptop"),
        (60, b"MSFT 5.0"),
        (
            55,
            &[1, 3, 6, 15, 31, 33, 43, 44, 46, 47, 119, 121, 249, 252],
        ),
    ])
}

fn dhcpv6_solicit() -> Vec<u8> {
    let opt = |c: u16, d: &[u8]| {
        [
            c.to_be_bytes().to_vec(),
            (d.len() as u16).to_be_bytes().to_vec(),
            d.to_vec(),
        ]
        .concat()
    };
    let mut m = vec![1, 0x12, 0x34, 0x56];
    m.extend(opt(8, &[0, 0]));
    m.extend(opt(1, &[0; 14]));
    m.extend(opt(3, &[0; 12]));
    m.extend(opt(39, &[0, 4, b'h', b'o', b's', b't']));
    m.extend(opt(
        16,
        &[
            0, 0, 1, 55, 0, 8, b'M', b'S', b'F', b'T', b' ', b'5', b'.', b'0',
        ],
    ));
    m.extend(opt(6, &[0, 17, 0, 23, 0, 24, 0, 39]));
    m
}

struct Case {
    name: &'static str,
    method: Option<Method>,
    packets: Vec<Vec<u8>>,
}

fn cases() -> Vec<Case> {
    let v6 = dhcpv6_solicit();
    let dhcp = dhcp_discover();
    let syn = seg(true, 0x02, 0, &LINUX_SYN_OPTIONS, &[]);
    vec![
        Case {
            name: "DecodeOnlyOneSYNPacket",
            method: Some(Method::Ja4D6),
            packets: vec![syn.clone()],
        },
        Case {
            name: "ProcessorProcessesOneSYNPacket",
            method: None,
            packets: vec![syn.clone()],
        },
        Case {
            name: "JA4FingerprintsOneClientHello",
            method: Some(Method::Ja4),
            packets: vec![seg(true, 0x18, 1, &[], &frames::sample_client_hello())],
        },
        Case {
            name: "JA4SFingerprintsOneServerHello",
            method: Some(Method::Ja4S),
            packets: vec![seg(false, 0x18, 1, &[], &server_hello_record())],
        },
        Case {
            name: "JA4HFingerprintsOneHTTPRequest",
            method: Some(Method::Ja4H),
            packets: vec![seg(true, 0x18, 1, &[], HTTP)],
        },
        Case {
            name: "JA4LFingerprintsOneTCPHandshake",
            method: Some(Method::Ja4LC),
            packets: vec![
                syn.clone(),
                seg(false, 0x12, 0, &LINUX_SYN_OPTIONS, &[]),
                seg(true, 0x10, 1, &[], &[]),
            ],
        },
        Case {
            name: "JA4XFingerprintsOneCertificateSegment",
            method: Some(Method::Ja4X),
            packets: vec![seg(false, 0x18, 1, &[], &server_flight())],
        },
        Case {
            name: "JA4SSHFingerprintsOneSSHPacket",
            method: Some(Method::Ja4Ssh),
            packets: vec![ssh_seg(&[0x5a; 36])],
        },
        Case {
            name: "JA4TFingerprintsOneSYNPacket",
            method: Some(Method::Ja4T),
            packets: vec![syn.clone()],
        },
        Case {
            name: "JA4TSFingerprintsOneSYNACKPacket",
            method: Some(Method::Ja4TS),
            packets: vec![seg(false, 0x12, 0, &LINUX_SYN_OPTIONS, &[])],
        },
        Case {
            name: "JA4DFingerprintsOneDHCPMessage",
            method: Some(Method::Ja4D),
            packets: vec![frames::udp(C, [255; 4], 68, 67, &dhcp)],
        },
        Case {
            name: "JA4D6FingerprintsOneDHCPv6Message",
            method: Some(Method::Ja4D6),
            packets: vec![frames::udp(C, S, 546, 547, &v6)],
        },
    ]
}

struct Run {
    ns: f64,
    bytes: f64,
    allocs: f64,
    fps: f64,
    ops: u64,
}

/// Exactly `n` ops through `process`, for counting instructions.
fn run_fixed(fp: &mut Fingerprinter, pkts: &[RawPacket], n: u64) {
    for _ in 0..n {
        fp.clear();
        for p in pkts {
            fp.process(p, &mut |e: &Event| {
                black_box(e.value);
            });
        }
    }
}

fn run(fp: &mut Fingerprinter, pkts: &[RawPacket], target: Duration) -> Run {
    // Calibrate the op count to about `target`.
    let mut n = 1u64;
    loop {
        let t = cpu_now();
        for _ in 0..n {
            fp.clear();
            for p in pkts {
                fp.process(p, &mut |e: &Event| {
                    black_box(e.value);
                });
            }
        }
        if (cpu_now() - t) >= target / 10 || n > 1 << 30 {
            break;
        }
        n *= 4;
    }
    let n = (n * 10).max(1);
    let mut fps = 0u64;
    let before = thread_counts();
    let t = cpu_now();
    for _ in 0..n {
        fp.clear();
        for p in pkts {
            fp.process(p, &mut |e: &Event| {
                fps += 1;
                black_box(e.value);
            });
        }
    }
    let el = cpu_now() - t;
    let a = thread_counts().since(before);
    Run {
        ns: el.as_nanos() as f64 / n as f64,
        bytes: a.bytes as f64 / n as f64,
        allocs: a.allocs as f64 / n as f64,
        fps: fps as f64 / n as f64,
        ops: n,
    }
}

fn report(name: &str, runs: &mut [Run]) {
    runs.sort_by(|a, b| a.ns.total_cmp(&b.ns));
    let med = &runs[runs.len() / 2];
    let (lo, hi) = (runs[0].ns, runs[runs.len() - 1].ns);
    println!(
        "Benchmark{name:<44} {:>10} {:>10.1} ns/op {:>6.0} B/op {:>6.0} allocs/op   [{lo:.1}..{hi:.1}] {:.2} fingerprints/op",
        med.ops, med.ns, med.bytes, med.allocs, med.fps
    );
}

fn main() {
    let target = Duration::from_millis(300);
    let reps = 5;
    // `cargo bench --bench fingerprints -- NAME` runs the benchmarks whose name holds NAME.
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    let fixed: Option<u64> = std::env::args().find_map(|a| {
        a.strip_prefix("--ops=")
            .map(|n| n.parse().expect("--ops=N: a count"))
    });
    for case in cases().into_iter().filter(|c| wanted(c.name)) {
        let methods = match case.method {
            Some(m) => Methods::NONE.with(m),
            None => Methods::ALL,
        };
        let mut fp = Fingerprinter::new(Config {
            methods,
            ..Config::default()
        });
        let pkts: Vec<RawPacket> = case
            .packets
            .iter()
            .enumerate()
            .map(|(i, d)| RawPacket {
                ts_ns: 1_700_000_000_000_000_000 + i as i64 * 1_500_000,
                caplen: d.len() as u32,
                wirelen: d.len() as u32,
                linktype: 1,
                data: d,
            })
            .collect();
        if let Some(n) = fixed {
            run_fixed(&mut fp, &pkts, n);
            println!("Benchmark{:<44} {n:>10} ops (fixed count)", case.name);
            continue;
        }
        let mut runs: Vec<Run> = (0..reps).map(|_| run(&mut fp, &pkts, target)).collect();
        report(case.name, &mut runs);
    }
    // Each method's function alone, on the message bytes (no decode, no state).
    let ch = frames::sample_client_hello();
    let sh = server_hello_record();
    let cert = certificate();
    let dhcp = dhcp_discover();
    let v6 = dhcpv6_solicit();
    let mut out = Output::new();
    let mut js = ja4::Scratch::new();
    let mut hs = ja4h::Scratch::new();
    let mut t2 = Text::<VALUE_CAP>::new();
    let mut out2 = Output::new();
    let mut out3 = Output::new();
    let mut out4 = Output::new();
    let mut t = Text::<VALUE_CAP>::new();
    let mut td = Text::<VALUE_CAP>::new();
    let mut t6 = Text::<VALUE_CAP>::new();
    type Bench<'a> = (&'static str, Box<dyn FnMut() -> bool + 'a>);
    let mut pure: Vec<Bench> = vec![(
        "JA4FunctionOneClientHello",
        Box::new(|| {
            let h = hello::ClientHello::from_record(black_box(&ch)).unwrap();
            ja4::ja4(&h, ja4::Transport::Tcp, false, &mut js, &mut out)
        }),
    )];
    pure.push((
        "JA4SFunctionOneServerHello",
        Box::new(|| {
            let h = hello::ServerHello::from_record(black_box(&sh)).unwrap();
            ja4s::ja4s(&h, ja4::Transport::Tcp, &mut out2)
        }),
    ));
    pure.push((
        "JA4HFunctionOneHTTPRequest",
        Box::new(|| ja4h::ja4h(black_box(HTTP), &mut hs, &mut out3)),
    ));
    pure.push((
        "JA4XFunctionOneCertificate",
        Box::new(|| ja4x::ja4x(black_box(&cert), &mut out4)),
    ));
    pure.push((
        "JA4TFunctionOneSYNOptions",
        Box::new(|| {
            t.clear();
            ja4t::ja4t(64240, black_box(&LINUX_SYN_OPTIONS), &mut t);
            true
        }),
    ));
    pure.push((
        "JA4DFunctionOneDHCPMessage",
        Box::new(|| ja4d::ja4d(black_box(&dhcp), &mut td)),
    ));
    pure.push((
        "JA4D6FunctionOneDHCPv6Message",
        Box::new(|| ja4d6::ja4d6(black_box(&v6), &mut t6, &mut t2)),
    ));
    for (name, f) in pure.iter_mut() {
        if !wanted(name) {
            continue;
        }
        if let Some(n) = fixed {
            for _ in 0..n {
                black_box(f());
            }
            println!("Benchmark{name:<44} {n:>10} ops (fixed count)");
            continue;
        }
        let mut runs = Vec::new();
        for _ in 0..reps {
            let mut n = 1u64 << 12;
            loop {
                let t = cpu_now();
                for _ in 0..n {
                    assert!(f());
                }
                if (cpu_now() - t) >= target || n > 1 << 30 {
                    break;
                }
                n *= 2;
            }
            let before = thread_counts();
            let t = cpu_now();
            for _ in 0..n {
                black_box(f());
            }
            let el = cpu_now() - t;
            let a = thread_counts().since(before);
            runs.push(Run {
                ns: el.as_nanos() as f64 / n as f64,
                bytes: a.bytes as f64 / n as f64,
                allocs: a.allocs as f64 / n as f64,
                fps: 1.0,
                ops: n,
            });
        }
        report(name, &mut runs);
    }
}
