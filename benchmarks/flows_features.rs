//! What each flow feature group costs per packet, over a capture file, in one process.
//!
//! `cargo bench --bench flows_features -- FILE.pcap [ROUNDS]` reads the file once into
//! the page cache, then runs every variant once per round, interleaved (walk, basic,
//! bidirectional, statistical, splt=10, mac, app, all, fingerprints, and the streaming meter with
//! timeouts), and prints per variant the median ns/packet with the spread (min-max) over
//! the rounds, and the difference of the median to the basic table: in wall-clock time and
//! in the thread's CPU time (the steadier one on a shared machine).
//!
//! `--only NAME` (or `--only=NAME`) runs only the variants whose name contains NAME (not the
//! walk, no differences printed), for an instruction count of one variant: `valgrind
//! --tool=callgrind --toggle-collect='*flows_features::table*' target/release/deps/flows_features-*
//! --only '+ mac' FILE.pcap 1` counts the instructions spent in the table alone.

use std::hint::black_box;
use std::time::Instant;

use paclo::flow::{FeatureSpec, FlowOptions, FlowTable};
use paclo::pcap::FileReader;

/// The calling thread's CPU time, ns.
fn cpu_ns() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through the valid pointer it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64
}

#[inline(never)]
fn walk(path: &str) -> u64 {
    let mut r = FileReader::open(path).unwrap();
    let mut n = 0u64;
    while let Some(pkt) = r.next_packet().unwrap() {
        n += u64::from(pkt.caplen);
    }
    n
}

#[inline(never)]
fn table(path: &str, opts: FlowOptions, stream: bool) -> u64 {
    let mut r = FileReader::open(path).unwrap();
    let mut t = FlowTable::new(opts);
    let mut rows = 0u64;
    while let Some(pkt) = r.next_packet().unwrap() {
        t.push(&pkt);
        if stream && t.pending() >= 4096 {
            rows += t.take_expired(4096).map_or(0, |b| b.num_rows() as u64);
        }
    }
    if stream {
        t.finish();
        while let Some(b) = t.take_expired(4096) {
            rows += b.num_rows() as u64;
        }
        rows
    } else {
        t.to_batch().num_rows() as u64
    }
}

fn main() {
    let mut only: Option<String> = None;
    let mut args: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        if a == "--only" {
            only = it.next();
        } else if let Some(name) = a.strip_prefix("--only=") {
            only = Some(name.to_string());
        } else if !a.starts_with('-') {
            args.push(a);
        }
    }
    let Some(path) = args.first() else {
        eprintln!("usage: cargo bench --bench flows_features -- FILE.pcap [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(7);
    let count = {
        let mut r = FileReader::open(path).unwrap();
        let mut n = 0usize;
        while r.next_packet().unwrap().is_some() {
            n += 1;
        }
        n
    };
    let base = FlowOptions {
        key_vlan: true,
        ..Default::default()
    };
    let bi = FlowOptions {
        bidirectional: true,
        ..base
    };
    let with = |features: FeatureSpec| FlowOptions { features, ..bi };
    let stat = FeatureSpec {
        statistical: true,
        ..Default::default()
    };
    let all = FeatureSpec {
        statistical: true,
        splt: 10,
        mac: true,
        app: true,
        ..Default::default()
    };
    type Variant = (&'static str, Box<dyn Fn() -> u64>);
    let p = path.clone();
    let mut variants: Vec<Variant> = Vec::new();
    if only.is_none() {
        variants.push(("walk", Box::new(move || walk(&p))));
    }
    let cases: [(&'static str, FlowOptions, bool); 10] = [
        ("flows basic", base, false),
        ("flows bidirectional", bi, false),
        ("+ statistical", with(stat), false),
        (
            "+ splt=10",
            with(FeatureSpec {
                splt: 10,
                ..Default::default()
            }),
            false,
        ),
        (
            "+ mac",
            with(FeatureSpec {
                mac: true,
                ..Default::default()
            }),
            false,
        ),
        (
            "+ app",
            with(FeatureSpec {
                app: true,
                ..Default::default()
            }),
            false,
        ),
        ("+ all", with(all), false),
        (
            "+ fingerprints",
            with(FeatureSpec {
                fingerprints: paclo::flow::fingerprints::ALL,
                ..Default::default()
            }),
            false,
        ),
        (
            "meter: timeouts, basic",
            FlowOptions {
                idle_timeout_ns: Some(120_000_000_000),
                active_timeout_ns: Some(1_800_000_000_000),
                ..bi
            },
            true,
        ),
        (
            "meter: timeouts, statistical",
            FlowOptions {
                idle_timeout_ns: Some(120_000_000_000),
                active_timeout_ns: Some(1_800_000_000_000),
                features: stat,
                ..bi
            },
            true,
        ),
    ];
    for (name, opts, stream) in cases {
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let p = path.clone();
        variants.push((name, Box::new(move || table(&p, opts, stream))));
    }
    if let Some(o) = &only {
        variants.retain(|(name, _)| name.contains(o.as_str()));
        for (name, f) in &variants {
            for _ in 0..rounds {
                black_box(f());
            }
            println!("{path}: {count} packets, {name}: {rounds} rounds (--only)");
        }
        return;
    }
    black_box(walk(path));
    let mut wall: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        for (i, (_, f)) in variants.iter().enumerate() {
            let (t, c) = (Instant::now(), cpu_ns());
            black_box(f());
            cpu[i].push((cpu_ns() - c) / count as f64);
            wall[i].push(t.elapsed().as_nanos() as f64 / count as f64);
        }
    }
    println!(
        "{path}: {count} packets, {rounds} interleaved rounds; median ns/packet (min-max), wall | CPU"
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mw: Vec<f64> = wall.iter_mut().map(median).collect();
    let mc: Vec<f64> = cpu.iter_mut().map(median).collect();
    let b = variants
        .iter()
        .position(|v| v.0 == "flows basic")
        .unwrap_or(0);
    for (i, (name, _)) in variants.iter().enumerate() {
        let (w, c) = (&wall[i], &cpu[i]);
        println!(
            "  {name:<30} {:7.1} ({:.1}-{:.1}) {:+7.1} | {:7.1} ({:.1}-{:.1}) {:+7.1} vs basic",
            mw[i],
            w[0],
            w[w.len() - 1],
            mw[i] - mw[b],
            mc[i],
            c[0],
            c[c.len() - 1],
            mc[i] - mc[b],
        );
    }
}
