//! QUIC application hints: the SNI and ALPN of the client's Initial packets, decrypted
//! with the version's initial salt (RFC 9001 Appendix A packets, and ClientHellos spread
//! over several Initials sealed here), bounded collection, no allocation once warm.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, Nonce};
use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};

use super::app::QUIC_PENDING;
use super::fingerprint_tests::{quic_packet, replay};
use super::meter_tests::run;
use super::*;
use crate::alloc::thread_counts;
use crate::fingerprint::frames::{self, hex};
use crate::fingerprint::hello::{build_client_hello, EXT_ALPN, EXT_SERVER_NAME};
use crate::fingerprint::quic::{self, VERSION_1, VERSION_2};

const C: [u8; 4] = [10, 0, 0, 1];
const S: [u8; 4] = [10, 0, 0, 2];
const MS: i64 = 1_000_000;
const T0: i64 = 1_700_000_000_000_000_000;

fn app_options(bidirectional: bool) -> FlowOptions {
    FlowOptions {
        bidirectional,
        features: FeatureSpec {
            app: true,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// (src_port, application_protocol, requested_server_name, alpn) of each row, by source
/// port (a bidirectional flow's source is its smaller endpoint, here the client).
fn hints(b: &RecordBatch) -> Vec<(u16, String, Option<String>, Option<String>)> {
    let col = |n: &str| b.column_by_name(n).unwrap().as_string::<i32>().clone();
    let (proto, name, alpn) = (
        col("application_protocol"),
        col("requested_server_name"),
        col("alpn"),
    );
    let sport = b
        .column_by_name("src_port")
        .unwrap()
        .as_primitive::<arrow_array::types::UInt16Type>()
        .clone();
    let opt = |a: &arrow_array::StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_owned());
    let mut v: Vec<_> = (0..b.num_rows())
        .map(|i| {
            (
                sport.value(i),
                proto.value(i).to_owned(),
                opt(&name, i),
                opt(&alpn, i),
            )
        })
        .collect();
    v.sort();
    v
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

fn list(pkts: Vec<(i64, Vec<u8>)>) -> Vec<(i64, u32, Vec<u8>)> {
    pkts.into_iter()
        .map(|(ts, d)| (ts, d.len() as u32, d))
        .collect()
}

#[test]
fn rfc_client_initials_give_sni_and_alpn() {
    // RFC 9001 A.2 (version 1) and RFC 9369 A.2 (version 2): a ClientHello with
    // server_name example.com and ALPN "alpn"; A.3 is the server's Initial in reply.
    let v1 = quic_packet("rfc9001_a2_client_initial");
    let v2 = quic_packet("rfc9369_a2_client_initial");
    let server = quic_packet("rfc9001_a3_server_initial");
    let mut bad = v1.clone();
    bad[600] ^= 1;
    let pkts = list(vec![
        (T0, frames::udp(C, S, 50000, 443, &v1)),
        (T0 + MS, frames::udp(S, C, 443, 50000, &server)),
        (T0 + 2 * MS, frames::udp(C, S, 50001, 443, &v2)),
        (T0 + 3 * MS, frames::udp(C, S, 50002, 443, &bad)),
        // A server Initial first: its sender is taken for the client, and nothing reads.
        (T0 + 4 * MS, frames::udp(S, C, 443, 50003, &server)),
    ]);
    let rfc = (some("example.com"), some("alpn"));
    let b = run(&pkts, app_options(true));
    assert_eq!(
        hints(&b),
        vec![
            (50000, "quic".into(), rfc.0.clone(), rfc.1.clone()),
            (50001, "quic".into(), rfc.0.clone(), rfc.1.clone()),
            (50002, "quic".into(), None, None),
            (50003, "quic".into(), None, None),
        ]
    );
    // Unidirectional: the client's flow has the names, the server's flow none.
    let b = run(&pkts, app_options(false));
    let h = hints(&b);
    assert_eq!(h.len(), 5);
    assert!(h.contains(&(50000, "quic".into(), rfc.0.clone(), rfc.1.clone())));
    assert!(h.contains(&(50001, "quic".into(), rfc.0, rfc.1)));
    assert_eq!(h.iter().filter(|r| r.2.is_some()).count(), 2);
}

/// Protect an Initial packet of `version` (RFC 9001 §5): a 4-byte packet number `pn`,
/// the client's keys for `dcid` (the server's when `server`), `plain` as its payload.
fn seal(version: u32, dcid: &[u8], scid: &[u8], pn: u32, plain: &[u8], server: bool) -> Vec<u8> {
    let keys = quic::initial_keys(version, dcid, server).unwrap();
    let ty = if version == VERSION_2 { 1 } else { 0 };
    let mut p = vec![0xc0 | ty << 4 | 3];
    p.extend_from_slice(&version.to_be_bytes());
    p.push(dcid.len() as u8);
    p.extend_from_slice(dcid);
    p.push(scid.len() as u8);
    p.extend_from_slice(scid);
    p.push(0); // no token
    let len = 4 + plain.len() + 16;
    p.extend_from_slice(&(0x4000 | len as u16).to_be_bytes());
    let pn_offset = p.len();
    p.extend_from_slice(&pn.to_be_bytes());
    let mut nonce = keys.iv;
    for (i, b) in u64::from(pn).to_be_bytes().iter().enumerate() {
        nonce[4 + i] ^= b;
    }
    let mut body = plain.to_vec();
    let tag = Aes128Gcm::new(&keys.key.into())
        .encrypt_in_place_detached(Nonce::from_slice(&nonce), &p, &mut body)
        .unwrap();
    p.extend_from_slice(&body);
    p.extend_from_slice(&tag);
    let mut mask = aes::Block::clone_from_slice(&p[pn_offset + 4..pn_offset + 20]);
    Aes128::new(&keys.hp.into()).encrypt_block(&mut mask);
    p[0] ^= mask[0] & 0x0f;
    for i in 0..4 {
        p[pn_offset + i] ^= mask[1 + i];
    }
    p
}

#[test]
fn seal_reproduces_the_rfc_packet() {
    let rfc = quic_packet("rfc9001_a2_client_initial");
    let dcid = hex("8394c8f03e515708");
    let h = quic::parse_initial(&rfc).unwrap();
    let keys = quic::initial_keys(VERSION_1, &dcid, false).unwrap();
    let mut plain = vec![0u8; quic::MAX_PACKET];
    let n = quic::decrypt(&rfc, &h, &keys, &mut plain).unwrap();
    assert_eq!(seal(VERSION_1, &dcid, &[], 2, &plain[..n], false), rfc);
}

fn varint(v: usize) -> Vec<u8> {
    if v < 64 {
        vec![v as u8]
    } else {
        (0x4000 | v as u16).to_be_bytes().to_vec()
    }
}

/// CRYPTO frames of `hello[range]` for each range, padded to a 1,200-byte datagram.
fn crypto_payload(hello: &[u8], ranges: &[std::ops::Range<usize>]) -> Vec<u8> {
    let mut f = Vec::new();
    for r in ranges {
        f.push(0x06);
        f.extend(varint(r.start));
        f.extend(varint(r.len()));
        f.extend_from_slice(&hello[r.clone()]);
    }
    f.resize(f.len().max(1150), 0);
    f
}

/// A ClientHello handshake message of about 1,800 bytes (a post-quantum key share, say)
/// whose server_name and ALPN come after byte 1,100.
fn long_hello(sni: &str) -> Vec<u8> {
    let mut name = vec![0];
    name.extend_from_slice(&(sni.len() as u16).to_be_bytes());
    name.extend_from_slice(sni.as_bytes());
    let mut sn = ((name.len()) as u16).to_be_bytes().to_vec();
    sn.extend_from_slice(&name);
    let record = build_client_hello(
        &[0x1301, 0x1302],
        &[
            (0x0033, vec![0x5a; 1200]),
            (EXT_SERVER_NAME, sn),
            (EXT_ALPN, vec![0, 3, 2, b'h', b'3']),
        ],
    );
    record[5..].to_vec() // without the TLS record header
}

/// A QUIC connection from `C:port`: the ClientHello split over two client Initials in
/// `order` (0: first part, 1: second part), then a short-header packet each way.
fn split_connection(port: u16, t0: i64, version: u32, order: [usize; 2]) -> Vec<(i64, Vec<u8>)> {
    let dcid = [port as u8, (port >> 8) as u8, 3, 4, 5, 6, 7, 8];
    let hello = long_hello(&format!("q{port}.example"));
    let parts = [0..1000, 1000..hello.len()];
    let mut out = Vec::new();
    for (k, &part) in order.iter().enumerate() {
        let payload = crypto_payload(&hello, &[parts[part].clone()]);
        let pkt = seal(version, &dcid, &[9; 8], k as u32, &payload, false);
        out.push((t0 + k as i64 * MS, frames::udp(C, S, port, 443, &pkt)));
    }
    let mut short = vec![0x40];
    short.extend_from_slice(&[9; 8]);
    short.extend_from_slice(&[0x77; 60]);
    out.push((t0 + 3 * MS, frames::udp(S, C, 443, port, &short)));
    out.push((t0 + 4 * MS, frames::udp(C, S, port, 443, &short)));
    out
}

#[test]
fn a_client_hello_over_two_initials_is_collected() {
    let mut pkts = Vec::new();
    pkts.extend(split_connection(51000, T0, VERSION_1, [0, 1]));
    pkts.extend(split_connection(51001, T0, VERSION_2, [1, 0]));
    // The second part alone, then nothing: no name.
    pkts.extend(split_connection(51002, T0, VERSION_1, [1, 1]));
    pkts.sort_by_key(|p| p.0);
    let b = run(&list(pkts), app_options(true));
    let h3 = some("h3");
    assert_eq!(
        hints(&b),
        vec![
            (51000, "quic".into(), some("q51000.example"), h3.clone()),
            (51001, "quic".into(), some("q51001.example"), h3),
            (51002, "quic".into(), None, None),
        ]
    );
    // One Initial that holds the whole long hello in two frames, the later part first.
    let hello = long_hello("one.example");
    let n = hello.len();
    let payload = crypto_payload(&hello, &[900..n, 0..900]);
    let pkt = seal(VERSION_1, &[1; 8], &[], 0, &payload, false);
    let b = run(
        &list(vec![(T0, frames::udp(C, S, 52000, 443, &pkt))]),
        app_options(true),
    );
    assert_eq!(
        hints(&b),
        vec![(52000, "quic".into(), some("one.example"), some("h3"))]
    );
}

#[test]
fn pending_hellos_are_bounded_and_the_oldest_give_way() {
    // QUIC_PENDING + 3 connections send their first part, then all send the rest: the
    // first three started lost their buffers to the last three and have no name.
    let extra = 3;
    let n = QUIC_PENDING + extra;
    let hello = long_hello("x.example");
    let mut pkts = Vec::new();
    for (round, part) in [(0usize, 0..1000), (1, 1000..hello.len())] {
        for i in 0..n {
            let port = 53000 + i as u16;
            let dcid = [i as u8; 8];
            let payload = crypto_payload(&hello, std::slice::from_ref(&part));
            let pkt = seal(VERSION_1, &dcid, &[], round as u32, &payload, false);
            let ts = T0 + (round * n + i) as i64 * MS;
            pkts.push((ts, frames::udp(C, S, port, 443, &pkt)));
        }
    }
    let b = run(&list(pkts), app_options(true));
    let h = hints(&b);
    assert_eq!(h.len(), n);
    for (i, row) in h.iter().enumerate() {
        let named = row.2.as_deref() == Some("x.example");
        assert_eq!(named, i >= extra, "flow {i}: {row:?}");
    }
}

#[test]
fn quic_hints_allocate_nothing_per_packet_once_warm() {
    // Split hellos of flows that end and start again (100 ms idle timeout, 1 s between
    // rounds): every round decrypts, collects in the shared buffers and parses.
    let mut round = Vec::new();
    for i in 0..8u16 {
        round.extend(split_connection(
            54000 + i,
            i64::from(i) * MS,
            VERSION_1,
            [0, 1],
        ));
        round.extend(split_connection(
            55000 + i,
            i64::from(i) * MS,
            VERSION_2,
            [1, 0],
        ));
    }
    round.sort_by_key(|p| p.0);
    let opts = FlowOptions {
        idle_timeout_ns: Some(100 * MS),
        max_flows: Some(100),
        ..app_options(true)
    };
    let mut t = FlowTable::new(opts);
    let play = |t: &mut FlowTable, from: usize, rounds: usize| replay(t, &round, from, rounds);
    play(&mut t, 0, 5);
    let before = thread_counts();
    play(&mut t, 5, 100);
    let spent = thread_counts().since(before);
    assert_eq!(spent.allocs, 0, "{} packets", 100 * round.len());
    play(&mut t, 105, 1);
    t.advance(i64::MAX);
    let b = t.take_expired(usize::MAX).unwrap();
    let h = hints(&b);
    assert_eq!(h.len(), 16);
    assert!(h
        .iter()
        .all(|r| r.2.as_deref() == Some(&format!("q{}.example", r.0)) && r.3 == some("h3")));
}
