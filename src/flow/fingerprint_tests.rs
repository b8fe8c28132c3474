//! The fingerprint columns of flow tables against the fingerprint state machine run alone
//! over the same packets: each flow's column is the first value the machine gives for its
//! connection; SSH windows close with their flow; no allocation per packet once warm.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{UInt16Type, UInt8Type};
use arrow_array::{Array, RecordBatch};

use super::fingerprints::{COLUMNS, FEED_PACKETS};
use super::meter_tests::run;
use super::*;
use crate::alloc::thread_counts;
use crate::fingerprint::frames::{self, Tcp, LINUX_SYN_OPTIONS};
use crate::fingerprint::hello::wrap_handshake;
use crate::fingerprint::{Config, Endpoint, Event, Fingerprinter, Method, Methods};

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];
const MS: i64 = 1_000_000;
const SYN: u8 = 0x02;
const ACK: u8 = 0x10;
const PSH: u8 = 0x08;
const FIN: u8 = 0x01;

/// Packets as (time, frame).
type Trace = Vec<(i64, Vec<u8>)>;

/// One TCP connection from `C:cport` to `S:sport`, seen from the capture point: each
/// segment is sent with the next sequence number of its side.
struct Conn {
    cport: u16,
    sport: u16,
    seq: [u32; 2],
    pkts: Trace,
}

impl Conn {
    fn new(cport: u16, sport: u16) -> Self {
        Conn {
            cport,
            sport,
            seq: [999, 4999],
            pkts: Vec::new(),
        }
    }

    fn send(&mut self, ts: i64, from_client: bool, flags: u8, payload: &[u8]) -> &mut Self {
        let (me, peer) = (usize::from(!from_client), usize::from(from_client));
        let t = Tcp {
            src: if from_client { C } else { S },
            dst: if from_client { S } else { C },
            sport: if from_client { self.cport } else { self.sport },
            dport: if from_client { self.sport } else { self.cport },
            flags,
            seq: self.seq[me],
            ack: if flags & ACK != 0 { self.seq[peer] } else { 0 },
            window: if from_client { 64240 } else { 65160 },
            options: if flags & SYN != 0 {
                &LINUX_SYN_OPTIONS
            } else {
                &[]
            },
            ttl: if from_client { 64 } else { 57 },
        };
        self.pkts.push((ts, frames::tcp(&t, payload)));
        let used = payload.len() as u32 + u32::from(flags & (SYN | FIN) != 0);
        self.seq[me] = self.seq[me].wrapping_add(used);
        self
    }

    fn handshake(&mut self, t0: i64) -> &mut Self {
        self.send(t0, true, SYN, &[])
            .send(t0 + 2 * MS, false, SYN | ACK, &[])
            .send(t0 + 3 * MS, true, ACK, &[])
    }
}

/// A TLS 1.2 connection: the ClientHello in two segments, a ServerHello and a
/// two-certificate chain over three segments.
fn tls(cport: u16, t0: i64) -> Trace {
    let ch = frames::sample_client_hello();
    let mut sh = vec![3, 3];
    sh.extend_from_slice(&[5; 32]);
    sh.push(0);
    sh.extend_from_slice(&[0xc0, 0x2f, 0, 0, 4, 0xff, 0x01, 0, 0]);
    let rdn = ["550406", "55040a", "550403"];
    let leaf = frames::certificate(&rdn, &["550403"], &["551d11", "551d25"]);
    let ca = frames::certificate(&rdn, &rdn, &["551d13"]);
    let mut list = Vec::new();
    for c in [&leaf, &ca] {
        list.extend_from_slice(&(c.len() as u32).to_be_bytes()[1..]);
        list.extend_from_slice(c);
    }
    let mut body = (list.len() as u32).to_be_bytes()[1..].to_vec();
    body.extend_from_slice(&list);
    let server = [
        wrap_handshake(2, &sh),
        wrap_handshake(11, &body),
        wrap_handshake(14, &[]),
    ]
    .concat();
    let third = server.len() / 3;
    let mut c = Conn::new(cport, 443);
    c.handshake(t0)
        .send(t0 + 4 * MS, true, ACK | PSH, &ch[..ch.len() / 2])
        .send(t0 + 5 * MS, true, ACK | PSH, &ch[ch.len() / 2..])
        .send(t0 + 6 * MS, false, ACK | PSH, &server[..third])
        .send(t0 + 7 * MS, false, ACK | PSH, &server[third..2 * third])
        .send(t0 + 8 * MS, false, ACK | PSH, &server[2 * third..])
        .send(t0 + 9 * MS, true, ACK, &[]);
    c.pkts
}

/// An HTTP/1.1 request after the handshake, its head in two segments.
fn http(cport: u16, t0: i64) -> Trace {
    let req = b"GET /x HTTP/1.1\r\nHost: a.example\r\nUser-Agent: t/1\r\nAccept: */*\r\n\
                Cookie: b=2; a=1\r\n\r\n";
    let mut c = Conn::new(cport, 8080);
    c.handshake(t0)
        .send(t0 + 4 * MS, true, ACK | PSH, &req[..30])
        .send(t0 + 5 * MS, true, ACK | PSH, &req[30..])
        .send(
            t0 + 6 * MS,
            false,
            ACK | PSH,
            b"HTTP/1.1 204 No Content\r\n\r\n",
        );
    c.pkts
}

/// An SSH session of `n` request/response pairs with bare ACKs, starting at `t0`; `fin`
/// ends it with a FIN+ACK.
fn ssh(c: &mut Conn, t0: i64, n: usize, fin: bool) {
    if c.pkts.is_empty() {
        c.handshake(t0);
        c.send(t0 + 4 * MS, false, ACK | PSH, b"SSH-2.0-OpenSSH_9.2\r\n");
    }
    for i in 0..n {
        let ts = t0 + (5 + i as i64) * MS;
        c.send(ts, true, ACK | PSH, &[0; 36])
            .send(ts, false, ACK | PSH, &[0; 52])
            .send(ts, true, ACK, &[]);
    }
    if fin {
        c.send(t0 + (6 + n as i64) * MS, true, FIN | ACK, &[]);
    }
}

pub(super) fn quic_packet(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/src/fingerprint/testdata/{name}.hex",
        env!("CARGO_MANIFEST_DIR")
    );
    frames::hex(&std::fs::read_to_string(path).unwrap())
}

/// TLS, HTTP, SSH (one closed, one left open), a QUIC handshake, DHCP, and UDP and TCP
/// flows with nothing to fingerprint, interleaved in time.
fn mixed_trace() -> Vec<(i64, u32, Vec<u8>)> {
    let t0 = 1_700_000_000 * 1_000 * MS;
    let mut all: Trace = Vec::new();
    for i in 0..4 {
        all.extend(tls(41000 + i, t0 + i64::from(i) * 3 * MS));
        all.extend(http(42000 + i, t0 + i64::from(i) * 5 * MS));
    }
    let mut closed = Conn::new(43000, 22);
    ssh(&mut closed, t0, 30, true);
    let mut open = Conn::new(43001, 22);
    ssh(&mut open, t0 + MS, 80, false);
    all.extend(closed.pkts);
    all.extend(open.pkts);
    let client = quic_packet("rfc9001_a2_client_initial");
    let server = quic_packet("rfc9001_a3_server_initial");
    all.push((t0 + 2 * MS, frames::udp(C, S, 50000, 443, &client)));
    all.push((t0 + 4 * MS, frames::udp(S, C, 443, 50000, &server)));
    let dhcp = frames::dhcp(&[(53, &[1]), (55, &[1, 3, 6])]);
    all.push((t0 + 7 * MS, frames::udp(C, [255; 4], 68, 67, &dhcp)));
    for i in 0..300 {
        let ts = t0 + i * MS / 2;
        all.push((ts, frames::udp(C, S, 5000, 6000, &[0xAB; 64])));
    }
    let mut bulk = Conn::new(44000, 9000);
    bulk.handshake(t0);
    for i in 0..100 {
        bulk.send(t0 + (4 + i) * MS, true, ACK, &[0x55; 100]);
    }
    all.extend(bulk.pkts);
    all.sort_by_key(|p| p.0);
    all.into_iter()
        .map(|(ts, d)| (ts, d.len() as u32, d))
        .collect()
}

/// A connection, the same in both directions.
type Conv = ((Endpoint, Endpoint), u8);

fn conv(a: Endpoint, b: Endpoint, proto: u8) -> Conv {
    ((a.min(b), a.max(b)), proto)
}

/// The first value of each method for each connection, from the state machine alone
/// (with its end-of-input JA4SSH windows).
fn reference(list: &[(i64, u32, Vec<u8>)]) -> BTreeMap<(Conv, &'static str), String> {
    let mut fp = Fingerprinter::new(Config {
        methods: fingerprints::ALL,
        ..Config::default()
    });
    let mut first = BTreeMap::new();
    let mut keep = |e: &Event| {
        first
            .entry((conv(e.src, e.dst, e.protocol), e.method.name()))
            .or_insert_with(|| e.value_str().to_owned());
    };
    feed(&mut fp, list, &mut keep);
    fp.finish(&mut keep);
    first
}

/// Every packet of `list` through the state machine alone.
fn feed(fp: &mut Fingerprinter, list: &[(i64, u32, Vec<u8>)], keep: &mut impl FnMut(&Event)) {
    for (ts, wirelen, d) in list {
        let p = crate::RawPacket {
            ts_ns: *ts,
            caplen: d.len() as u32,
            wirelen: *wirelen,
            linktype: 1,
            data: d,
        };
        fp.process(&p, keep);
    }
}

/// The endpoint in columns `addr` and `port` of row `i`.
fn endpoint(b: &RecordBatch, addr: &str, port: &str, i: usize) -> Endpoint {
    Endpoint {
        addr: b
            .column_by_name(addr)
            .unwrap()
            .as_fixed_size_binary()
            .value(i)
            .try_into()
            .unwrap(),
        port: b
            .column_by_name(port)
            .unwrap()
            .as_primitive::<UInt16Type>()
            .value(i),
    }
}

/// The fingerprint cells of a bidirectional table, by connection.
fn cells(b: &RecordBatch) -> BTreeMap<(Conv, &'static str), String> {
    let ends = |addr: &str, port: &str, i: usize| endpoint(b, addr, port, i);
    let proto = b
        .column_by_name("protocol")
        .unwrap()
        .as_primitive::<UInt8Type>();
    let mut out = BTreeMap::new();
    for m in COLUMNS {
        let Some(col) = b.column_by_name(m.name()) else {
            continue;
        };
        let col = col.as_string::<i32>();
        for i in (0..b.num_rows()).filter(|&i| col.is_valid(i)) {
            let c = conv(
                ends("src_ip", "src_port", i),
                ends("dst_ip", "dst_port", i),
                proto.value(i),
            );
            let old = out.insert((c, m.name()), col.value(i).to_owned());
            assert!(old.is_none(), "one row per connection");
        }
    }
    out
}

fn fingerprint_options(methods: Methods) -> FlowOptions {
    FlowOptions {
        bidirectional: true,
        features: FeatureSpec {
            fingerprints: methods,
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn the_columns_are_the_first_value_of_each_connection() {
    let list = mixed_trace();
    let truth = reference(&list);
    // Every method of a column has a value somewhere in the trace.
    for m in COLUMNS {
        assert!(
            truth.keys().any(|(_, n)| *n == m.name()),
            "{} missing from the reference",
            m.name()
        );
    }
    let b = run(&list, fingerprint_options(fingerprints::ALL));
    let schema = b.schema();
    let names: Vec<&str> = schema.fields()[b.num_columns() - COLUMNS.len()..]
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, COLUMNS.map(|m| m.name()));
    assert_eq!(cells(&b), truth);
    // Flows without a fingerprint have nulls: the plain UDP and bulk TCP flows.
    let ja4t = b.column_by_name("ja4t").unwrap();
    assert_eq!(b.num_rows() - ja4t.null_count(), 4 + 4 + 2 + 1);

    // The same in a meter with timeouts (no flow splits) and in its stream.
    let meter = FlowOptions {
        flow_id: true,
        idle_timeout_ns: Some(60_000 * MS),
        active_timeout_ns: Some(600_000 * MS),
        max_flows: Some(1000),
        ..fingerprint_options(fingerprints::ALL)
    };
    assert_eq!(cells(&run(&list, meter)), truth);

    // One method alone: its column only, the same values.
    let ja4 = run(&list, fingerprint_options(Methods::NONE.with(Method::Ja4)));
    let only: BTreeMap<_, _> = truth.into_iter().filter(|k| k.0 .1 == "ja4").collect();
    assert_eq!(only.len(), 5, "four TLS connections and a QUIC one");
    assert_eq!(cells(&ja4), only);
    assert!(ja4.column_by_name("ja4s").is_none());
}

#[test]
fn an_ssh_window_closes_with_its_flow() {
    // A session, idle for 10 s, then more: with a 5 s idle timeout it is two flows, and
    // each gets the window of its own packets.
    let mut c = Conn::new(43002, 22);
    ssh(&mut c, 0, 20, false);
    let first_part = c.pkts.len();
    ssh(&mut c, 10_000 * MS, 7, true);
    let list: Vec<(i64, u32, Vec<u8>)> = c
        .pkts
        .iter()
        .map(|(ts, d)| (*ts, d.len() as u32, d.clone()))
        .collect();
    let alone = |part: &[(i64, u32, Vec<u8>)]| {
        reference(part)
            .into_iter()
            .find(|k| k.0 .1 == "ja4ssh")
            .map(|k| k.1)
            .unwrap()
    };
    let opts = FlowOptions {
        flow_id: true,
        idle_timeout_ns: Some(5_000 * MS),
        ..fingerprint_options(Methods::NONE.with(Method::Ja4Ssh))
    };
    let b = run(&list, opts);
    let col = b.column_by_name("ja4ssh").unwrap().as_string::<i32>();
    assert_eq!(b.num_rows(), 2);
    let (early, late) = (alone(&list[..first_part]), alone(&list[first_part..]));
    assert_eq!(
        (col.value(0), col.value(1)),
        (early.as_str(), late.as_str())
    );
    assert_ne!(early, late);
    assert_ne!(early, alone(&list), "the whole session is one window");
}

#[test]
fn a_long_flow_feeds_the_state_machine_its_first_packets_only() {
    // An HTTP request after the flow's first FEED_PACKETS packets is not read; within
    // them it is.
    for (before, expect) in [
        (FEED_PACKETS as usize - 6, true),
        (FEED_PACKETS as usize, false),
    ] {
        let mut c = Conn::new(45000, 80);
        c.handshake(0);
        for i in 0..before - 3 {
            c.send((4 + i as i64) * MS, true, ACK, &[]);
        }
        c.send(
            500 * MS,
            true,
            ACK | PSH,
            b"GET / HTTP/1.1\r\nHost: h\r\n\r\n",
        );
        let list: Vec<(i64, u32, Vec<u8>)> = c
            .pkts
            .into_iter()
            .map(|(ts, d)| (ts, d.len() as u32, d))
            .collect();
        let b = run(&list, fingerprint_options(fingerprints::ALL));
        let ja4h = b.column_by_name("ja4h").unwrap();
        assert_eq!(ja4h.is_valid(0), expect, "request after {before} packets");
        assert!(b.column_by_name("ja4t").unwrap().is_valid(0));
    }
}

/// Rounds `from..from + rounds` of `round` (Ethernet frames at their times), one second
/// apart, the expired rows discarded after each.
pub(super) fn replay(t: &mut FlowTable, round: &[(i64, Vec<u8>)], from: usize, rounds: usize) {
    for r in from..from + rounds {
        for (ts, d) in round {
            let p = crate::RawPacket {
                ts_ns: r as i64 * 1_000 * MS + ts,
                caplen: d.len() as u32,
                wirelen: d.len() as u32,
                linktype: 1,
                data: d,
            };
            t.push(&p);
        }
        t.discard_expired();
    }
}

#[test]
fn fingerprint_columns_allocate_nothing_per_packet_once_warm() {
    // Connections that end and start again (100 ms idle timeout, 1 s between rounds), so
    // every round opens new flows, feeds the state machine their handshakes and closes
    // the SSH windows.
    let mut round: Trace = Vec::new();
    for i in 0..8 {
        round.extend(tls(46000 + i, i64::from(i) * MS));
        round.extend(http(47000 + i, i64::from(i) * MS));
    }
    let mut s = Conn::new(48000, 22);
    ssh(&mut s, 0, 10, false);
    round.extend(s.pkts);
    round.sort_by_key(|p| p.0);
    let opts = FlowOptions {
        idle_timeout_ns: Some(100 * MS),
        max_flows: Some(100),
        ..fingerprint_options(fingerprints::ALL)
    };
    let mut t = FlowTable::new(opts);
    let play = |t: &mut FlowTable, from: usize, rounds: usize| replay(t, &round, from, rounds);
    play(&mut t, 0, 5);
    let before = thread_counts();
    play(&mut t, 5, 200);
    let spent = thread_counts().since(before);
    assert_eq!(spent.allocs, 0, "{} packets", 200 * round.len());
    // The last round's flows have their fingerprints.
    play(&mut t, 205, 1);
    t.advance(i64::MAX);
    let b = t.take_expired(usize::MAX).unwrap();
    let ja4 = b.column_by_name("ja4").unwrap();
    assert_eq!(b.num_rows() - ja4.null_count(), 8);
    assert_eq!(
        b.column_by_name("ja4ssh").unwrap().null_count(),
        b.num_rows() - 1
    );
}

/// A one-direction table without `ja4ssh` (where bare ACKs past JA4L-C are not read): each
/// direction's flow holds the first value its own packets complete, as the state machine
/// alone gives them.
#[test]
fn one_direction_flows_hold_the_values_of_their_own_packets() {
    let list = mixed_trace();
    let methods: Methods = COLUMNS
        .into_iter()
        .filter(|m| *m != Method::Ja4Ssh)
        .collect();
    let mut fp = Fingerprinter::new(Config {
        methods,
        ..Config::default()
    });
    let mut truth = BTreeMap::new();
    feed(&mut fp, &list, &mut |e: &Event| {
        truth
            .entry((((e.src, e.dst), e.protocol), e.method.name()))
            .or_insert_with(|| e.value_str().to_owned());
    });
    let b = run(
        &list,
        FlowOptions {
            bidirectional: false,
            ..fingerprint_options(methods)
        },
    );
    let end = |addr: &str, port: &str, i: usize| endpoint(&b, addr, port, i);
    let proto = b
        .column_by_name("protocol")
        .unwrap()
        .as_primitive::<UInt8Type>();
    let mut got = BTreeMap::new();
    for m in methods.iter() {
        let col = b.column_by_name(m.name()).unwrap().as_string::<i32>();
        for i in (0..b.num_rows()).filter(|&i| col.is_valid(i)) {
            let key = (
                (end("src_ip", "src_port", i), end("dst_ip", "dst_port", i)),
                proto.value(i),
            );
            got.insert((key, m.name()), col.value(i).to_owned());
        }
    }
    assert!(truth.keys().any(|k| k.1 == "ja4l_c"));
    assert_eq!(got, truth);
}
