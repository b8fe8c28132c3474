//! Golden values from the JA4 family's published examples and the RFCs' QUIC vectors,
//! cut and malformed inputs, and the state machine's bounds.

use super::frames::{
    certificate, dhcp, hex, sample_client_hello as spec_client_hello, u16s_be, vec16,
};
use super::hello::{build_client_hello, wrap_handshake, ClientHello, ServerHello};
use super::ja4::{ja4, Scratch, Transport};
use super::*;

fn ja4_of(rec: &[u8], original: bool) -> (String, String) {
    let h = ClientHello::from_record(rec).unwrap();
    let mut s = Scratch::new();
    let mut out = Output::new();
    assert!(ja4(&h, Transport::Tcp, original, &mut s, &mut out));
    (out.value.as_str().to_owned(), out.raw.as_str().to_owned())
}

#[test]
fn ja4_specification_example() {
    let rec = spec_client_hello();
    let (v, r) = ja4_of(&rec, false);
    assert_eq!(v, "t13d1516h2_8daaf6152771_e5627efa2ab1");
    assert_eq!(
        r,
        "t13d1516h2_002f,0035,009c,009d,1301,1302,1303,c013,c014,c02b,c02c,c02f,c030,cca8,cca9_0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01_0403,0804,0401,0503,0805,0501,0806,0601"
    );
    let (vo, ro) = ja4_of(&rec, true);
    assert_eq!(vo, "t13d1516h2_acb858a92679_18f69afefd3d");
    assert_eq!(
        ro,
        "t13d1516h2_1301,1302,1303,c02b,c02f,c02c,c030,cca9,cca8,c013,c014,009c,009d,002f,0035_001b,0000,0033,0010,4469,0017,002d,000d,0005,0023,0012,002b,ff01,000b,000a,0015_0403,0804,0401,0503,0805,0501,0806,0601"
    );
    // The specification's hash of the list without signature algorithms.
    assert_eq!(
        &sha12(b"0005,000a,000b,000d,0012,0015,0017,001b,0023,002b,002d,0033,4469,ff01"),
        b"6d807ffa2a79"
    );
}

#[test]
fn ja4_edge_cases() {
    // No extensions at all, no ciphers: zeros, version from legacy_version, no SNI.
    let rec = build_client_hello(&[], &[]);
    assert_eq!(
        ja4_of(&rec, false).0,
        "t12i000000_000000000000_000000000000"
    );
    // ALPN codes of the specification.
    use super::hello::alpn_code;
    assert_eq!(&alpn_code(Some(b"h2")), b"h2");
    assert_eq!(&alpn_code(Some(b"http/1.1")), b"h1");
    assert_eq!(&alpn_code(Some(&[0xab])), b"ab");
    assert_eq!(&alpn_code(Some(&[0xab, 0xcd])), b"ad");
    assert_eq!(&alpn_code(Some(&[0x30, 0xab])), b"3b");
    assert_eq!(&alpn_code(Some(&[0x30, 0x31, 0xab, 0xcd])), b"3d");
    assert_eq!(&alpn_code(Some(&[0x30, 0xab, 0xcd, 0x31])), b"01");
    assert_eq!(&alpn_code(Some(b"x")), b"xx");
    assert_eq!(&alpn_code(None), b"00");
    assert!(is_grease(0x0a0a) && is_grease(0xfafa) && !is_grease(0x0a1a));
    // DTLS versions: the lowest DTLS value is the highest version.
    let sv = {
        let mut v = vec![4];
        v.extend_from_slice(&u16s_be(&[0xfefd, 0xfefc]));
        v
    };
    let rec = build_client_hello(&[0x1301], &[(0x002b, sv)]);
    assert!(ja4_of(&rec, false).0.starts_with("td3i0101"));
}

#[test]
fn ja4_every_cut_is_none() {
    let rec = spec_client_hello();
    for cut in 0..rec.len() {
        assert!(ClientHello::from_record(&rec[..cut]).is_none(), "cut {cut}");
    }
}

#[test]
fn ja4s_specification_example() {
    let mut body = vec![3, 3];
    body.extend_from_slice(&[1; 32]);
    body.push(0);
    body.extend_from_slice(&[0xc0, 0x30, 0]);
    let mut exts = Vec::new();
    for e in [0x0005u16, 0x0017, 0xff01, 0x0000] {
        exts.extend_from_slice(&e.to_be_bytes());
        exts.extend_from_slice(&[0, 0]);
    }
    body.extend_from_slice(&vec16(&exts));
    let rec = wrap_handshake(2, &body);
    let sh = ServerHello::from_record(&rec).unwrap();
    let mut out = Output::new();
    assert!(ja4s::ja4s(&sh, Transport::Tcp, &mut out));
    assert_eq!(out.value, "t120400_c030_4e8089b08790");
    assert_eq!(out.raw, "t120400_c030_0005,0017,ff01,0000");
    for cut in 0..rec.len() {
        assert!(ServerHello::from_record(&rec[..cut]).is_none(), "cut {cut}");
    }
    // GREASE is not counted or listed; no extensions hash to zeros.
    let mut grease = body.clone();
    grease.truncate(body.len() - exts.len() - 2);
    grease.extend_from_slice(&vec16(&[0x1a, 0x1a, 0, 0, 0, 0x17, 0, 0]));
    let rec = wrap_handshake(2, &grease);
    assert!(ja4s::ja4s(
        &ServerHello::from_record(&rec).unwrap(),
        Transport::Tcp,
        &mut out
    ));
    assert_eq!(out.raw, "t120100_c030_0017");
    let mut none = body.clone();
    none.truncate(body.len() - exts.len() - 2);
    none.extend_from_slice(&vec16(&[]));
    let rec = wrap_handshake(2, &none);
    assert!(ja4s::ja4s(
        &ServerHello::from_record(&rec).unwrap(),
        Transport::Tcp,
        &mut out
    ));
    assert_eq!(out.value, "t120000_c030_000000000000");
    assert_eq!(out.raw, "t120000_c030_");
}

#[test]
fn ja4h_reference_values() {
    // FoxIO's test data: http1-with-cookies and https-connect.
    let req = b"GET /cookies HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/7.81\r\nAccept: */*\r\nAccept-Language: da, en-GB;q=0.8, en;q=0.7\r\nCookie: yummy_cookie=choco; tasty_cookie=strawberry\r\nReferer: http://example.com/\r\n\r\n";
    let mut s = ja4h::Scratch::new();
    let mut out = Output::new();
    assert!(ja4h::ja4h(req, &mut s, &mut out));
    assert_eq!(
        out.value,
        "ge11cr04da00_8ddaef5d77af_280f366eaa04_c2fb0fe53442"
    );
    assert_eq!(
        out.raw,
        "ge11cr04da00_Host,User-Agent,Accept,Accept-Language_tasty_cookie,yummy_cookie_tasty_cookie=strawberry,yummy_cookie=choco"
    );
    let req = b"CONNECT example.com:443 HTTP/1.0\r\nUser-Agent: x\r\n\r\n";
    assert!(ja4h::ja4h(req, &mut s, &mut out));
    assert_eq!(
        out.value,
        "co10nn010000_b8bcd45ac095_000000000000_000000000000"
    );
    let req = b"GET / HTTP/1.1\r\nAccept-Language: en-US,en;q=0.9\r\n\r\n";
    assert!(ja4h::ja4h(req, &mut s, &mut out));
    assert!(out.value.as_str().starts_with("ge11nn01enus_"));
    // An unfinished head, or something else, gives nothing.
    assert!(!ja4h::ja4h(
        b"GET / HTTP/1.1\r\nHost: a\r\n",
        &mut s,
        &mut out
    ));
    assert!(!ja4h::ja4h(b"HTTP/1.1 200 OK\r\n\r\n", &mut s, &mut out));
}

#[test]
fn ja4t_specification_examples() {
    let mut t = Text::<256>::new();
    let mut check = |window: u16, opts: &[u8], want: &str| {
        t.clear();
        ja4t::ja4t(window, opts, &mut t);
        assert_eq!(t, want);
    };
    // Windows 10: MSS 1460, NOP, WS 8, NOP, NOP, SACK permitted.
    check(
        64240,
        &[2, 4, 5, 180, 1, 3, 3, 8, 1, 1, 4, 2],
        "64240_2-1-3-1-1-4_1460_8",
    );
    // Ubuntu: MSS, SACK permitted, timestamps, NOP, WS 8.
    let mut ts = vec![2, 4, 5, 180, 4, 2, 8, 10];
    ts.extend_from_slice(&[0; 8]);
    ts.extend_from_slice(&[1, 3, 3, 8]);
    check(65535, &ts, "65535_2-4-8-1-3_1460_8");
    // macOS: ... timestamps, SACK permitted, EOL, EOL.
    let mut mac = vec![2, 4, 5, 180, 1, 3, 3, 6, 1, 1, 8, 10];
    mac.extend_from_slice(&[0; 8]);
    mac.extend_from_slice(&[4, 2, 0, 0]);
    check(65535, &mac, "65535_2-1-3-1-1-8-4-0-0_1460_6");
    check(1024, &[2, 4, 5, 180], "1024_2_1460_00");
    check(1024, &[], "1024_00_00_00");
    // A length running past the options stops the walk.
    check(1, &[2, 9, 5], "1_00_00_00");
}

#[test]
fn ja4ts_specification_examples() {
    use super::ja4ts::Ja4tsState;
    let t = |s: f64| (s * 1e9) as i64;
    let mut out = Text::<256>::new();
    let mut st = Ja4tsState::first(t(15.621983), 62727, &[2, 4, 0x23, 0x01], &mut out);
    assert_eq!(out, "62727_2_8961_00");
    let mut seen = Vec::new();
    for ts in [16.626151, 18.642179, 22.738154, 30.930163, 47.058146] {
        out.clear();
        assert!(st.retransmission(t(ts), &mut out));
        seen.push(out.as_str().to_owned());
    }
    assert_eq!(seen[0], "62727_2_8961_00_1");
    assert_eq!(seen[4], "62727_2_8961_00_1-2-4-8-16");

    let opts = [2, 4, 0xff, 0xd7, 1, 3, 3, 8, 1, 1, 4, 2];
    out.clear();
    let mut st = Ja4tsState::first(t(16.681435), 65535, &opts, &mut out);
    assert_eq!(out, "65535_2-1-3-1-1-4_65495_8");
    for ts in [17.683799, 19.691548, 23.703045, 31.714762] {
        out.clear();
        assert!(st.retransmission(t(ts), &mut out));
    }
    out.clear();
    assert!(st.reset(t(37.723966), &mut out));
    assert_eq!(out, "65535_2-1-3-1-1-4_65495_8_1-2-4-8-R6");
    out.clear();
    assert!(!st.retransmission(t(39.0), &mut out));
    // Without retransmissions a RST repeats the SYN-ACK's value.
    let mut st = Ja4tsState::first(0, 1024, &[], &mut out);
    out.clear();
    assert!(st.reset(t(0.5), &mut out));
    assert_eq!(out, "1024_00_00_00");
}

#[test]
fn ja4l_examples() {
    let mut out = Text::<64>::new();
    ja4l::write(1_000_000, 1_000_000 + 3_518_000, 42, &mut out);
    assert_eq!(out, "1759_42");
    out.clear();
    ja4l::write(5_000, 5_000 + 22_999, 128, &mut out);
    assert_eq!(out, "11_128");
}

#[test]
fn ja4ssh_window() {
    use super::ja4ssh::Ja4sshWindow;
    let mut w = Ja4sshWindow::default();
    for i in 0..55 {
        w.add(false, if i < 30 { 36 } else { 100 + i }, false);
    }
    for i in 0..75 {
        w.add(true, if i % 2 == 0 { 36 } else { 52 }, false);
    }
    for _ in 0..70 {
        w.add(false, 0, true);
    }
    let mut out = Text::<64>::new();
    w.finish(&mut out);
    assert_eq!(out, "c36s36_c55s75_c70s0");
    assert!(w.is_empty());
    // A tie takes the smaller length; the window closes at 200 SSH packets.
    for len in [80, 64, 80, 64] {
        assert!(!w.add(false, len, false));
    }
    for _ in 0..195 {
        assert!(!w.add(true, 1448, false));
    }
    assert!(w.add(true, 1448, false));
    out.clear();
    w.finish(&mut out);
    assert_eq!(out, "c64s1448_c4s196_c0s0");
}

#[test]
fn ja4x_specification_example() {
    let rdn = ["550403", "550406", "550408", "55040a"];
    let cert = certificate(&rdn, &rdn, &["551d0f", "551d25", "551d11"]);
    let mut out = Output::new();
    assert!(ja4x::ja4x(&cert, &mut out));
    assert_eq!(out.value, "96a6439c8f5c_96a6439c8f5c_aae71e8db6d7");
    assert_eq!(
        out.raw,
        "550403,550406,550408,55040a_550403,550406,550408,55040a_551d0f,551d25,551d11"
    );
    // Without extensions, the empty list is hashed.
    let v1 = certificate(&rdn, &rdn, &[]);
    assert!(ja4x::ja4x(&v1, &mut out));
    assert_eq!(out.value, "96a6439c8f5c_96a6439c8f5c_e3b0c44298fc");
    for cut in 0..cert.len() {
        assert!(!ja4x::ja4x(&cert[..cut], &mut out), "cut {cut}");
    }
}

#[test]
fn ja4d_specification_examples() {
    let mut out = Text::<256>::new();
    // The iPhone example of the specification's image.
    let m = dhcp(&[
        (53, &[3]),
        (55, &[1, 121, 3, 6, 15, 108, 114, 119, 252]),
        (57, &[0x05, 0xdc]),
        (61, &[1, 2, 3, 4, 5, 6, 7]),
        (50, &[192, 168, 1, 2]),
        (51, &[0, 0, 1, 0]),
        (12, b"iPhone"),
    ]);
    assert!(ja4d::ja4d(&m, &mut out));
    assert_eq!(
        out,
        "reqst1500in_55-57-61-51-12_1-121-3-6-15-108-114-119-252"
    );
    // The reference's Wireshark vector: an ACK without a request list.
    let m = dhcp(&[
        (53, &[5]),
        (58, &[0, 0, 1, 0]),
        (59, &[0, 0, 2, 0]),
        (51, &[0, 0, 3, 0]),
        (54, &[10, 0, 0, 1]),
        (1, &[255, 255, 255, 0]),
    ]);
    assert!(ja4d::ja4d(&m, &mut out));
    assert_eq!(out, "dpack0000nn_58-59-51-54-1_00");
    // A client FQDN with a name gives `d`; option 53 missing gives nothing.
    let m = dhcp(&[(53, &[1]), (81, &[0, 0, 0, b'h', b'o'])]);
    assert!(ja4d::ja4d(&m, &mut out));
    assert_eq!(out, "disco0000nd_00_00");
    assert!(!ja4d::ja4d(&dhcp(&[(12, b"x")]), &mut out));
    let m = dhcp(&[(53, &[3]), (55, &[1, 3])]);
    for cut in 0..m.len() - 1 {
        let _ = ja4d::ja4d(&m[..cut], &mut out);
    }
}

#[test]
fn ja4d_reads_every_parameter_request_list_in_order() {
    let mut out = Text::<256>::new();
    // Twice (kept from the one pass) and six times (more than are kept: read again).
    let m = dhcp(&[(53, &[1]), (55, &[1, 3]), (12, b"x"), (55, &[200])]);
    assert!(ja4d::ja4d(&m, &mut out));
    assert_eq!(out, "disco0000nn_55-12-55_1-3-200");
    let lists: Vec<(u8, Vec<u8>)> = (0..6u8).map(|i| (55, vec![i * 50, 7])).collect();
    let mut opts: Vec<(u8, &[u8])> = vec![(53, &[8])];
    opts.extend(lists.iter().map(|(c, d)| (*c, &d[..])));
    assert!(ja4d::ja4d(&dhcp(&opts), &mut out));
    assert_eq!(
        out,
        "infor0000nn_55-55-55-55-55-55_0-7-50-7-100-7-150-7-200-7-250-7"
    );
    // An unknown message type is its five-digit code; the size is capped at 9999.
    let m = dhcp(&[(57, &[0xff, 0xff]), (53, &[250]), (55, &[])]);
    assert!(ja4d::ja4d(&m, &mut out));
    assert_eq!(out, "002509999nn_57-55_00");
}

#[test]
fn hex_writes_and_comma_lists_match_the_standard_formatting() {
    use super::push_hex_list;
    let mut x = 0x2545_f491_u32;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for n in 0..40 {
        let values: Vec<u16> = (0..n).map(|_| next() as u16).collect();
        let want: Vec<String> = values.iter().map(|v| format!("{v:04x}")).collect();
        let want = want.join(",");
        // After other text, and ending exactly at the buffer's end or past it.
        let mut t = Text::<VALUE_CAP>::new();
        t.push_str("ab_");
        push_hex_list(&mut t, &values);
        assert_eq!(t.as_str(), format!("ab_{want}"));
        let exact = 3 + want.len();
        let mut fits = Text::<256>::new();
        if exact <= 256 {
            fits.push_bytes(&vec![b'x'; 256 - exact]);
            fits.push_str("ab_");
            push_hex_list(&mut fits, &values);
            assert!(!fits.overflowed(), "{n} values");
            assert!(fits.as_str().ends_with(&format!("ab_{want}")));
            assert_eq!(fits.len(), 256);
        }
        if n > 0 {
            let mut over = Text::<256>::new();
            over.push_bytes(&vec![b'x'; 256 - exact + 1]);
            over.push_str("ab_");
            push_hex_list(&mut over, &values);
            assert!(over.overflowed(), "{n} values past the end");
        }
        let mut h = Text::<64>::new();
        for v in &values {
            h.clear();
            h.push_hex4(*v);
            assert_eq!(h.as_str(), format!("{v:04x}"));
        }
    }
    let bytes: Vec<u8> = (0..=255).collect();
    let mut t = Text::<VALUE_CAP>::new();
    t.push_hex(&bytes);
    let want: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(t.as_str(), want);
    // sha12: the first 12 hex digits of SHA-256, against the streaming hasher.
    use sha2::Digest;
    for len in [0usize, 1, 14, 55, 56, 63, 64, 65, 119, 120, 128, 200] {
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        let full: String = sha2::Sha256::digest(&data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            &super::sha12(&data)[..],
            &full.as_bytes()[..12],
            "{len} bytes"
        );
    }
}

#[test]
fn decimals_below_and_past_100000_and_dash_lists_match_the_standard_formatting() {
    use super::{end_dash_list, push_dash_item, push_dash_item_u8};
    // Every five-digit-or-shorter value, after text and at the end of a buffer.
    for v in (0..=100_010u64).chain([u64::from(u32::MAX), u64::MAX]) {
        let mut t = Text::<32>::new();
        t.push(b'x');
        t.push_dec(v);
        assert_eq!(t.as_str(), format!("x{v}"));
        let want = format!("{v}-");
        let mut t = Text::<32>::new();
        t.push_bytes(&[b'y'; 32][..32 - want.len()]);
        push_dash_item(&mut t, v);
        assert!(!t.overflowed(), "{v}");
        assert_eq!(&t.as_str()[32 - want.len()..], want);
    }
    // Lists of every length 0-40 (byte items and wide items), against a join.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for len in 0..=40usize {
        let items: Vec<u64> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 70_000
            })
            .collect();
        let bytes: Vec<u8> = items.iter().map(|&v| v as u8).collect();
        let join = |v: Vec<String>| {
            if v.is_empty() {
                "00".to_owned()
            } else {
                v.join("-")
            }
        };
        let mut t = Text::<512>::new();
        t.push(b'_');
        for &b in &bytes {
            push_dash_item_u8(&mut t, b);
        }
        end_dash_list(&mut t, 1);
        assert_eq!(
            t.as_str()[1..],
            join(bytes.iter().map(|b| b.to_string()).collect())
        );
        let mut t = Text::<512>::new();
        for &v in &items {
            push_dash_item(&mut t, v);
        }
        end_dash_list(&mut t, 0);
        assert_eq!(
            t.as_str(),
            join(items.iter().map(|v| v.to_string()).collect())
        );
    }
    // A list item that does not fit is not written, and says so.
    let mut t = Text::<3>::new();
    push_dash_item_u8(&mut t, 7);
    push_dash_item_u8(&mut t, 200);
    assert_eq!((t.as_str(), t.overflowed()), ("7-", true));
    let mut t = Text::<6>::new();
    push_dash_item(&mut t, 65535);
    assert_eq!((t.as_str(), t.overflowed()), ("65535-", false));
    push_dash_item(&mut t, 1);
    assert!(t.overflowed());
}

#[test]
fn decimal_texts_match_the_standard_formatting() {
    for v in 0..=255u8 {
        let mut t = Text::<8>::new();
        t.push(b'x');
        t.push_dec_u8(v);
        t.push_dec(u64::from(v));
        assert_eq!(t.as_str(), format!("x{v}{v}"));
    }
    for v in [
        9,
        10,
        99,
        100,
        999,
        1000,
        65535,
        1 << 32,
        u64::MAX / 7,
        u64::MAX,
    ] {
        let mut t = Text::<24>::new();
        t.push_dec(v);
        assert_eq!(t.as_str(), v.to_string());
        t.clear();
        t.push_dec_width(v, 6);
        assert_eq!(t.as_str(), format!("{v:06}"));
    }
    // What does not fit is not written, and says so.
    let mut t = Text::<4>::new();
    t.push_dec(123);
    t.push_dec(45);
    assert!(t.overflowed());
    assert_eq!(t.as_str(), "123");
    let mut t = Text::<4>::new();
    t.push_dec_u8(7);
    t.push_dec_u8(255);
    t.push_dec_u8(25);
    assert_eq!((t.as_str(), t.overflowed()), ("7255", true));
}

#[test]
fn ja4d6_reference_shape() {
    let opt = |c: u16, d: &[u8]| {
        [
            c.to_be_bytes().to_vec(),
            (d.len() as u16).to_be_bytes().to_vec(),
            d.to_vec(),
        ]
        .concat()
    };
    // Solicit: client id (14-byte DUID), ORO (23, 24), elapsed time, IA_PD.
    let mut m = vec![1, 0xaa, 0xbb, 0xcc];
    m.extend(opt(1, &[0; 14]));
    m.extend(opt(6, &[0, 23, 0, 24]));
    m.extend(opt(8, &[0, 0]));
    m.extend(opt(25, &[0; 12]));
    let mut out = Text::<256>::new();
    let mut oro = Text::<256>::new();
    assert!(ja4d6::ja4d6(&m, &mut out, &mut oro));
    assert_eq!(out, "solct0014nn_1-6-8-25_23-24");
    // Advertise: IA_PD holding an IA prefix, then client and server ids.
    let mut m = vec![2, 0, 0, 1];
    let prefix = opt(26, &[0; 25]);
    m.extend(opt(25, &[vec![0; 12], prefix].concat()));
    m.extend(opt(1, &[0; 14]));
    m.extend(opt(2, &[0; 10]));
    assert!(ja4d6::ja4d6(&m, &mut out, &mut oro));
    assert_eq!(out, "advrt0014nn_25-26-1-2_00");
    for cut in 0..m.len() {
        let _ = ja4d6::ja4d6(&m[..cut], &mut out, &mut oro);
    }
}

#[test]
fn quic_initial_keys_match_the_rfcs() {
    let dcid = hex("8394c8f03e515708");
    let k = quic::initial_keys(quic::VERSION_1, &dcid, false).unwrap();
    assert_eq!(k.key.to_vec(), hex("1f369613dd76d5467730efcbe3b1a22d"));
    assert_eq!(k.iv.to_vec(), hex("fa044b2f42a3fd3b46fb255c"));
    assert_eq!(k.hp.to_vec(), hex("9f50449e04a0e810283a1e9933adedd2"));
    let k = quic::initial_keys(quic::VERSION_1, &dcid, true).unwrap();
    assert_eq!(k.key.to_vec(), hex("cf3a5331653c364c88f0f379b6067e37"));
    assert_eq!(k.iv.to_vec(), hex("0ac1493ca1905853b0bba03e"));
    assert_eq!(k.hp.to_vec(), hex("c206b8d9b9f0f37644430b490eeaa314"));
    let k = quic::initial_keys(quic::VERSION_2, &dcid, false).unwrap();
    assert_eq!(k.key.to_vec(), hex("8b1a0bc121284290a29e0971b5cd045d"));
    assert_eq!(k.iv.to_vec(), hex("91f73e2351d8fa91660e909f"));
    assert_eq!(k.hp.to_vec(), hex("45b95e15235d6f45a6b19cbcb0294ba9"));
    let k = quic::initial_keys(quic::VERSION_2, &dcid, true).unwrap();
    assert_eq!(k.key.to_vec(), hex("82db637861d55e1d011f19ea71d5d2a7"));
    assert_eq!(k.hp.to_vec(), hex("edf6d05c83121201b436e16877593c3a"));
    assert!(quic::initial_keys(0xff00_001d, &dcid, false).is_none());
}

pub(crate) fn rfc_packet(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/src/fingerprint/testdata/{name}.hex",
        env!("CARGO_MANIFEST_DIR")
    );
    hex(&std::fs::read_to_string(path).unwrap())
}

/// The RFC's client Initial, decrypted, fingerprinted from its CRYPTO frame.
fn quic_ja4(pkt: &[u8], server: bool) -> String {
    let h = quic::parse_initial(pkt).unwrap();
    let dcid = hex("8394c8f03e515708");
    let keys = quic::initial_keys(h.version, &dcid, server).unwrap();
    let mut plain = vec![0u8; quic::MAX_PACKET];
    let n = quic::decrypt(pkt, &h, &keys, &mut plain).unwrap();
    let mut cs = Box::<quic::CryptoStream>::default();
    quic::crypto_frames(&plain[..n], |o, d| cs.add(o, d)).unwrap();
    let msg = cs.first_message().unwrap();
    let mut out = Output::new();
    if server {
        let sh = ServerHello::parse_body(&msg[4..]).unwrap();
        assert!(ja4s::ja4s(&sh, Transport::Quic, &mut out));
    } else {
        let ch = ClientHello::parse_body(&msg[4..], false).unwrap();
        assert_eq!(ch.server_name, Some(&b"example.com"[..]));
        assert!(ja4(
            &ch,
            Transport::Quic,
            false,
            &mut Scratch::new(),
            &mut out
        ));
    }
    out.value.as_str().to_owned()
}

#[test]
fn quic_rfc_packets_decrypt_and_fingerprint() {
    // Values computed with a separate SHA-256 over the lists the RFC's ClientHello holds:
    // ciphers 1301,1302; extensions 0000,ff01,000a,0010,0005,0033,002b,000d,002d,001c,0039.
    let want = "q13d0211an_62ed6f6ca7ad_4d634acda6c0";
    assert_eq!(
        quic_ja4(&rfc_packet("rfc9001_a2_client_initial"), false),
        want
    );
    assert_eq!(
        quic_ja4(&rfc_packet("rfc9369_a2_client_initial"), false),
        want
    );
    assert_eq!(
        quic_ja4(&rfc_packet("rfc9001_a3_server_initial"), true),
        "q130200_1301_234ea6891581"
    );
    // A damaged byte fails authentication; a cut packet does not parse.
    let mut bad = rfc_packet("rfc9001_a2_client_initial");
    bad[600] ^= 1;
    let h = quic::parse_initial(&bad).unwrap();
    let keys = quic::initial_keys(1, &hex("8394c8f03e515708"), false).unwrap();
    let mut plain = vec![0u8; quic::MAX_PACKET];
    assert!(quic::decrypt(&bad, &h, &keys, &mut plain).is_none());
    assert!(quic::parse_initial(&bad[..1000]).is_none());
}

#[test]
fn crypto_stream_places_frames_by_offset() {
    let msg = spec_client_hello()[5..].to_vec();
    let mut cs = Box::<quic::CryptoStream>::default();
    let mid = msg.len() / 2;
    cs.add(mid as u64, &msg[mid..]);
    assert!(cs.first_message().is_none());
    cs.add(0, &msg[..10]);
    assert!(cs.first_message().is_none());
    cs.add(5, &msg[5..mid]);
    assert_eq!(cs.first_message().unwrap(), &msg[..]);
}

mod prop {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn hello_parsers_never_panic(b in proptest::collection::vec(any::<u8>(), 0..600)) {
            let mut s = ja4::Scratch::new();
            let mut out = Output::new();
            if let Some(h) = hello::ClientHello::from_record(&b) {
                let _ = ja4::ja4(&h, ja4::Transport::Tcp, false, &mut s, &mut out);
            }
            if let Some(h) = hello::ClientHello::parse_body(&b, true) {
                let _ = ja4::ja4(&h, ja4::Transport::Dtls, true, &mut s, &mut out);
            }
            if let Some(h) = hello::ServerHello::parse_body(&b) {
                let _ = ja4s::ja4s(&h, ja4::Transport::Tcp, &mut out);
            }
            for c in hello::certificates(&b) {
                let _ = ja4x::ja4x(c, &mut out);
            }
        }

        #[test]
        fn mutated_client_hello_never_panics(i in 0usize..400, x in any::<u8>()) {
            let mut rec = super::super::frames::sample_client_hello();
            let i = i % rec.len();
            rec[i] ^= x;
            let mut s = ja4::Scratch::new();
            let mut out = Output::new();
            if let Some(h) = hello::ClientHello::from_record(&rec) {
                let _ = ja4::ja4(&h, ja4::Transport::Tcp, false, &mut s, &mut out);
            }
        }

        #[test]
        fn ja4x_never_panics(b in proptest::collection::vec(any::<u8>(), 0..400), i in 0usize..400, x in any::<u8>()) {
            let mut out = Output::new();
            let _ = ja4x::ja4x(&b, &mut out);
            let mut cert = super::super::frames::certificate(&["550403"], &["550406"], &["551d0f"]);
            let i = i % cert.len();
            cert[i] ^= x;
            let _ = ja4x::ja4x(&cert, &mut out);
        }

        #[test]
        fn ja4h_never_panics(b in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut s = ja4h::Scratch::new();
            let mut out = Output::new();
            let mut req = b"GET / HTTP/1.1\r\n".to_vec();
            req.extend_from_slice(&b);
            req.extend_from_slice(b"\r\n\r\n");
            let _ = ja4h::ja4h(&req, &mut s, &mut out);
            let _ = ja4h::ja4h(&b, &mut s, &mut out);
        }

        #[test]
        fn tcp_dhcp_parsers_never_panic(b in proptest::collection::vec(any::<u8>(), 0..400), w in any::<u16>()) {
            let mut t = Text::<VALUE_CAP>::new();
            let mut t2 = Text::<VALUE_CAP>::new();
            ja4t::ja4t(w, &b[..b.len().min(40)], &mut t);
            let _ = ja4d::ja4d(&b, &mut t);
            let _ = ja4d6::ja4d6(&b, &mut t, &mut t2);
            let mut m = super::super::frames::dhcp(&[(53, &[1])]);
            m.truncate(240);
            m.extend_from_slice(&b);
            let _ = ja4d::ja4d(&m, &mut t);
        }

        #[test]
        fn quic_parsers_never_panic(b in proptest::collection::vec(any::<u8>(), 0..1400), i in 0usize..1200, x in any::<u8>()) {
            let mut plain = vec![0u8; quic::MAX_PACKET];
            let keys = quic::initial_keys(1, &[1, 2, 3, 4, 5, 6, 7, 8], false).unwrap();
            if let Some(h) = quic::parse_initial(&b) {
                let _ = quic::decrypt(&b, &h, &keys, &mut plain);
            }
            let mut cs = Box::<quic::CryptoStream>::default();
            let _ = quic::crypto_frames(&b, |o, d| cs.add(o, d));
            let _ = cs.first_message();
            let mut pkt = super::rfc_packet("rfc9001_a2_client_initial");
            let i = i % pkt.len();
            pkt[i] ^= x;
            if let Some(h) = quic::parse_initial(&pkt) {
                let _ = quic::decrypt(&pkt, &h, &keys, &mut plain);
            }
        }
    }
}

mod engine_tests {
    use super::super::frames::{self, Tcp, LINUX_SYN_OPTIONS};
    use super::super::frames::{certificate, dhcp, sample_client_hello as spec_client_hello};
    use super::super::*;
    use super::rfc_packet;
    use crate::RawPacket;

    const C: [u8; 4] = [10, 0, 0, 1];
    const S: [u8; 4] = [10, 0, 0, 2];
    const MS: i64 = 1_000_000;

    fn seg(
        from_client: bool,
        port: u16,
        sport: u16,
        flags: u8,
        seq: u32,
        payload: &[u8],
    ) -> Vec<u8> {
        // Initial sequence numbers 999 (client) and 4999 (server), as tls12_connection uses.
        let (src, dst, sp, dp, ttl, ack) = if from_client {
            (C, S, port, sport, 64, 5000)
        } else {
            (S, C, sport, port, 57, 1000)
        };
        let syn = flags & ja4t::flags::SYN != 0;
        let opts: &[u8] = if syn { &LINUX_SYN_OPTIONS } else { &[] };
        frames::tcp(
            &Tcp {
                src,
                dst,
                sport: sp,
                dport: dp,
                flags,
                seq,
                ack,
                window: if from_client { 64240 } else { 65160 },
                options: opts,
                ttl,
            },
            payload,
        )
    }

    /// A TLS 1.2 connection: handshake, a ClientHello in two segments, a ServerHello and a
    /// two-certificate chain over three segments with a retransmission, client port `port`.
    fn tls12_connection(port: u16, t0: i64) -> Vec<(i64, Vec<u8>)> {
        use ja4t::flags::{ACK, PSH, SYN};
        let ch = spec_client_hello();
        let mut sh_body = vec![3, 3];
        sh_body.extend_from_slice(&[5; 32]);
        sh_body.push(0);
        sh_body.extend_from_slice(&[0xc0, 0x2f, 0, 0, 4, 0xff, 0x01, 0, 0]);
        let sh = hello::wrap_handshake(2, &sh_body);
        let rdn = ["550406", "55040a", "550403"];
        let c1 = certificate(&rdn, &["550403"], &["551d11", "551d25"]);
        let c2 = certificate(&rdn, &rdn, &["551d13"]);
        let mut list = Vec::new();
        for c in [&c1, &c2] {
            list.extend_from_slice(&(c.len() as u32).to_be_bytes()[1..]);
            list.extend_from_slice(c);
        }
        let mut body = (list.len() as u32).to_be_bytes()[1..].to_vec();
        body.extend_from_slice(&list);
        let cert = hello::wrap_handshake(11, &body);
        let done = hello::wrap_handshake(14, &[]);
        let server: Vec<u8> = [sh, cert, done].concat();
        let (a, b) = server.split_at(70);
        let (b, c) = b.split_at(b.len() / 2);
        let cs = 1000u32;
        let ss = 5000u32;
        let mid = ch.len() / 2;
        vec![
            (t0, seg(true, port, 443, SYN, cs - 1, &[])),
            (t0 + 2 * MS, seg(false, port, 443, SYN | ACK, ss - 1, &[])),
            (t0 + 3 * MS, seg(true, port, 443, ACK, cs, &[])),
            (t0 + 4 * MS, seg(true, port, 443, ACK | PSH, cs, &ch[..mid])),
            (
                t0 + 5 * MS,
                seg(true, port, 443, ACK | PSH, cs + mid as u32, &ch[mid..]),
            ),
            (t0 + 6 * MS, seg(false, port, 443, ACK | PSH, ss, a)),
            (t0 + 7 * MS, seg(false, port, 443, ACK | PSH, ss, a)), // retransmission
            (
                t0 + 8 * MS,
                seg(false, port, 443, ACK | PSH, ss + a.len() as u32, b),
            ),
            (
                t0 + 9 * MS,
                seg(
                    false,
                    port,
                    443,
                    ACK | PSH,
                    ss + (a.len() + b.len()) as u32,
                    c,
                ),
            ),
        ]
    }

    fn run(fp: &mut Fingerprinter, pkts: &[(i64, Vec<u8>)]) -> Vec<(String, String)> {
        let mut got = Vec::new();
        for (ts, data) in pkts {
            let p = RawPacket {
                ts_ns: *ts,
                caplen: data.len() as u32,
                wirelen: data.len() as u32,
                linktype: 1,
                data,
            };
            fp.process(&p, &mut |e: &Event| {
                got.push((e.method.name().to_owned(), e.value_str().to_owned()))
            });
        }
        got
    }

    fn values<'a>(got: &'a [(String, String)], m: &str) -> Vec<&'a str> {
        got.iter()
            .filter(|(n, _)| n == m)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    #[test]
    fn tls12_connection_gives_every_tcp_fingerprint() {
        let mut fp = Fingerprinter::new(Config::default());
        let got = run(&mut fp, &tls12_connection(40000, 0));
        assert_eq!(values(&got, "ja4t"), ["64240_2-4-8-1-3_65495_7"]);
        assert_eq!(values(&got, "ja4ts"), ["65160_2-4-8-1-3_65495_7"]);
        assert_eq!(values(&got, "ja4l_s"), ["1000_57"]);
        // At the ACK, then again at the ClientHello (the client's first data).
        assert_eq!(values(&got, "ja4l_c"), ["500_64", "1000_64"]);
        assert_eq!(
            values(&got, "ja4"),
            ["t13d1516h2_8daaf6152771_e5627efa2ab1"]
        );
        assert_eq!(
            values(&got, "ja4_o"),
            ["t13d1516h2_acb858a92679_18f69afefd3d"]
        );
        assert_eq!(
            values(&got, "ja4s"),
            ["t120100_c02f_".to_owned() + std::str::from_utf8(&sha12(b"ff01")).unwrap()]
        );
        let x = values(&got, "ja4x");
        assert_eq!(x.len(), 2);
        let h = |s: &str| String::from_utf8(sha12(s.as_bytes()).to_vec()).unwrap();
        assert_eq!(
            x[0],
            format!(
                "{}_{}_{}",
                h("550406,55040a,550403"),
                h("550403"),
                h("551d11,551d25")
            )
        );
        let c = fp.counters();
        assert_eq!(c.tls.len, 0, "streams end once the certificate is read");
        assert_eq!((c.stream_gaps, c.unparsed), (0, 0));
    }

    #[test]
    fn single_segment_hellos_keep_no_stream() {
        use ja4t::flags::{ACK, PSH};
        let mut fp = Fingerprinter::new(Config::default());
        let ch = spec_client_hello();
        let got = run(&mut fp, &[(0, seg(true, 40001, 443, ACK | PSH, 1, &ch))]);
        assert_eq!(values(&got, "ja4").len(), 1);
        assert_eq!(fp.counters().tls.len, 0);
        // A gap ends a stream and is counted; no fingerprint comes from a damaged stream.
        let mid = ch.len() / 2;
        let got = run(
            &mut fp,
            &[
                (1, seg(true, 40002, 443, ACK | PSH, 1, &ch[..mid])),
                (
                    2,
                    seg(
                        true,
                        40002,
                        443,
                        ACK | PSH,
                        1 + mid as u32 + 5,
                        &ch[mid + 5..],
                    ),
                ),
            ],
        );
        assert!(values(&got, "ja4").is_empty());
        assert_eq!(fp.counters().stream_gaps, 1);
    }

    #[test]
    fn http_head_across_segments() {
        use ja4t::flags::{ACK, PSH};
        let req = b"GET /x HTTP/1.1\r\nHost: a\r\nUser-Agent: t\r\nCookie: b=2; a=1\r\n\r\n";
        let mut fp = Fingerprinter::new(Config::default());
        let got = run(
            &mut fp,
            &[
                (0, seg(true, 40003, 80, ACK | PSH, 1, &req[..20])),
                (1, seg(true, 40003, 80, ACK | PSH, 21, &req[20..])),
                (2, seg(true, 40004, 80, ACK | PSH, 1, req)),
            ],
        );
        let v = values(&got, "ja4h");
        assert_eq!(v.len(), 2);
        assert_eq!(v[0], v[1]);
        assert!(v[0].starts_with("ge11cn020000_"));
    }

    #[test]
    fn ssh_windows() {
        use ja4t::flags::{ACK, FIN, PSH};
        let mut pkts = Vec::new();
        let (mut cs, mut ss) = (1u32, 1u32);
        pkts.push((
            0,
            seg(false, 40005, 22, ACK | PSH, ss, b"SSH-2.0-OpenSSH_9.2\r\n"),
        ));
        ss += 21;
        for i in 0..250 {
            let ts = (i + 1) as i64 * MS;
            if i % 2 == 0 {
                pkts.push((ts, seg(true, 40005, 22, ACK | PSH, cs, &[0; 36])));
                cs += 36;
            } else {
                pkts.push((ts, seg(false, 40005, 22, ACK | PSH, ss, &[0; 36])));
                ss += 36;
                pkts.push((ts, seg(true, 40005, 22, ACK, cs, &[])));
            }
        }
        // A retransmission is not counted.
        pkts.push((300 * MS, seg(true, 40005, 22, ACK | PSH, cs - 36, &[0; 36])));
        pkts.push((301 * MS, seg(true, 40005, 22, FIN | ACK, cs, &[])));
        let mut fp = Fingerprinter::new(Config::default());
        let got = run(&mut fp, &pkts);
        assert_eq!(
            values(&got, "ja4ssh"),
            ["c36s36_c100s100_c99s0", "c36s36_c25s26_c26s0"]
        );
        // A connection that never closes gives its open window at the end, once.
        let got = run(
            &mut fp,
            &[(302 * MS, seg(false, 40006, 22, ACK | PSH, 1, &[0; 52]))],
        );
        assert!(values(&got, "ja4ssh").is_empty());
        let mut at_end = Vec::new();
        fp.finish(&mut |e: &Event| at_end.push(e.value_str().to_owned()));
        fp.finish(&mut |e: &Event| at_end.push(e.value_str().to_owned()));
        assert_eq!(at_end, ["c0s52_c0s1_c0s0"]);
    }

    #[test]
    fn dhcp_and_quic_datagrams() {
        let mut fp = Fingerprinter::new(Config::default());
        let d = dhcp(&[(53, &[1]), (55, &[1, 3, 6])]);
        let client = rfc_packet("rfc9001_a2_client_initial");
        let server = rfc_packet("rfc9001_a3_server_initial");
        let got = run(
            &mut fp,
            &[
                (0, frames::udp(C, [255; 4], 68, 67, &d)),
                (1, frames::udp(C, S, 50000, 443, &client)),
                (2, frames::udp(S, C, 443, 50000, &server)),
            ],
        );
        assert_eq!(values(&got, "ja4d"), ["disco0000nn_55_1-3-6"]);
        assert_eq!(
            values(&got, "ja4"),
            ["q13d0211an_62ed6f6ca7ad_4d634acda6c0"]
        );
        assert_eq!(values(&got, "ja4s"), ["q130200_1301_234ea6891581"]);
    }

    #[test]
    fn methods_select_what_is_given() {
        let mut fp = Fingerprinter::new(Config {
            methods: Methods::JA4_ONLY,
            ..Config::default()
        });
        let got = run(&mut fp, &tls12_connection(40006, 0));
        let names: std::collections::BTreeSet<_> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["ja4", "ja4_o"]);
    }

    #[test]
    fn bounded_state_evicts_and_expires() {
        use ja4t::flags::{ACK, SYN};
        let mut fp = Fingerprinter::new(Config {
            ja4ts_connections: 2,
            tcp_connections: 2,
            ..Config::default()
        });
        let mut pkts = Vec::new();
        for i in 0..3u16 {
            pkts.push((i as i64, seg(true, 41000 + i, 443, SYN, 1, &[])));
            pkts.push((i as i64, seg(false, 41000 + i, 443, SYN | ACK, 1, &[])));
        }
        run(&mut fp, &pkts);
        let c = fp.counters();
        assert_eq!((c.ja4ts.evicted, c.ja4ts.len), (1, 2));
        assert_eq!((c.tcp.evicted, c.tcp.len), (1, 2));
        // After the idle limit (120 s for JA4TS) a new connection expires both.
        run(
            &mut fp,
            &[(
                121 * 1_000_000_000,
                seg(false, 41009, 443, SYN | ACK, 1, &[]),
            )],
        );
        let c = fp.counters();
        assert_eq!((c.ja4ts.expired, c.ja4ts.len), (2, 1));
        // The first SYN-ACK of an evicted connection, seen again, starts a new value.
        let got = run(
            &mut fp,
            &[(
                121 * 1_000_000_000 + 1,
                seg(false, 41009, 443, SYN | ACK, 1, &[]),
            )],
        );
        assert_eq!(values(&got, "ja4ts"), ["65160_2-4-8-1-3_65495_7_0"]);
    }

    #[test]
    fn a_capture_file_into_an_arrow_table() {
        use super::super::columns::{fingerprint_source, FingerprintColumns};
        use arrow_array::{Array, StringArray, UInt16Array};
        let dir = std::env::temp_dir().join(format!("paclo-fp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tls12.pcap");
        let mut w = crate::pcap::writer::PcapWriter::create(&path, 1, 65535, true).unwrap();
        for (ts, data) in tls12_connection(40100, 1_700_000_000_000_000_000) {
            w.write_packet(ts, &data, data.len() as u32).unwrap();
        }
        w.finish().unwrap();
        let r = crate::pcap::FileReader::open(&path).unwrap();
        let mut lp =
            crate::source::SourceLoop::new(r, None, crate::source::Limits::default()).unwrap();
        let mut fp = Fingerprinter::new(Config::default());
        let mut cols = FingerprintColumns::default();
        assert!(fingerprint_source(&mut lp, &crate::flow::never, &mut fp, &mut cols).unwrap());
        let b = cols.finish();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(b.num_rows(), 10);
        let method = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
        let value = b.column(2).as_any().downcast_ref::<StringArray>().unwrap();
        let raw = b.column(3).as_any().downcast_ref::<StringArray>().unwrap();
        let sport = b.column(8).as_any().downcast_ref::<UInt16Array>().unwrap();
        let i = (0..b.num_rows())
            .find(|&i| method.value(i) == "ja4")
            .unwrap();
        assert_eq!(value.value(i), "t13d1516h2_8daaf6152771_e5627efa2ab1");
        assert!(raw.value(i).starts_with("t13d1516h2_002f,0035,"));
        assert_eq!(sport.value(i), 40100);
        let t = (0..b.num_rows())
            .find(|&i| method.value(i) == "ja4t")
            .unwrap();
        assert!(raw.is_null(t));
    }

    #[test]
    fn no_allocation_per_fingerprint_once_warm() {
        use crate::alloc::thread_counts;
        let mut fp = Fingerprinter::new(Config::default());
        let mut warm = tls12_connection(42000, 0);
        let client = rfc_packet("rfc9001_a2_client_initial");
        let server = rfc_packet("rfc9001_a3_server_initial");
        let req = b"GET / HTTP/1.1\r\nHost: a\r\nCookie: a=1\r\n\r\n";
        let with_rest = |port: u16, t: i64, mut v: Vec<(i64, Vec<u8>)>| {
            use ja4t::flags::{ACK, PSH};
            v.push((t + 10 * MS, seg(true, port + 1, 80, ACK | PSH, 1, req)));
            v.push((t + 11 * MS, frames::udp(C, S, port, 443, &client)));
            v.push((t + 12 * MS, frames::udp(S, C, 443, port, &server)));
            v.push((
                t + 13 * MS,
                frames::udp(C, [255; 4], 68, 67, &dhcp(&[(53, &[1])])),
            ));
            v
        };
        warm = with_rest(42000, 0, warm);
        let t1 = 1_000 * 1_000_000_000;
        let pass = with_rest(43000, t1, tls12_connection(43000, t1));
        let n_warm = run(&mut fp, &warm).len();
        let mut n = 0;
        let before = thread_counts();
        for (ts, data) in &pass {
            let p = RawPacket {
                ts_ns: *ts,
                caplen: data.len() as u32,
                wirelen: data.len() as u32,
                linktype: 1,
                data,
            };
            fp.process(&p, &mut |_e: &Event| n += 1);
        }
        let spent = thread_counts().since(before);
        assert_eq!(n, n_warm);
        assert!(n >= 13, "{n} fingerprints");
        assert_eq!(spent.allocs, 0, "{spent:?} for {n} fingerprints");
    }
}

#[test]
fn sha12_is_the_start_of_sha256() {
    use sha2::{Digest, Sha256};
    // Every length around the one- and two-block padding boundaries, and several blocks.
    let data: Vec<u8> = (0..300u32).map(|i| (i * 7 + 3) as u8).collect();
    for n in 0..data.len() {
        let want: String = Sha256::digest(&data[..n])[..6]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            std::str::from_utf8(&super::sha12(&data[..n])).unwrap(),
            want,
            "length {n}"
        );
    }
}

/// The eight-bytes-at-a-time search finds what a byte loop finds, at every length and
/// position, with the needle's neighbours in every byte value.
#[test]
fn find_byte_equals_a_byte_loop() {
    use super::find_byte;
    let mut x = 0x2545_f491_u32;
    for len in 0..70 {
        for _ in 0..200 {
            let b: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 17;
                    x ^= x << 5;
                    // Bytes near the needle and high bytes, where a borrow could mislead.
                    [b'\n', b'\x0b', b'\x09', 0x8a, 0xff, 0, b':', b'a'][(x % 8) as usize]
                })
                .collect();
            for needle in [b'\n', b':', 0, 0xff] {
                let want = b.iter().position(|&c| c == needle);
                assert_eq!(find_byte(&b, needle), want, "{needle} in {b:?}");
            }
        }
    }
}
