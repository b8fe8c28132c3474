//! Frame builders for the flow tests: a corpus over link layers, IP versions, extension
//! headers, fragments and transports.

use crate::decode::fastpath::linktype;

pub fn ethernet(ethertype: u16, tags: &[(u16, u16)], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![
        0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25,
    ];
    let mut types: Vec<u16> = tags.iter().map(|t| t.0).collect();
    types.push(ethertype);
    f.extend_from_slice(&types[0].to_be_bytes());
    for (i, (_, vid)) in tags.iter().enumerate() {
        f.extend_from_slice(&vid.to_be_bytes());
        f.extend_from_slice(&types[i + 1].to_be_bytes());
    }
    f.extend_from_slice(payload);
    f
}

pub fn udp(sport: u16, dport: u16, payload_len: usize) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload_len) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend(std::iter::repeat_n(0xAB, payload_len));
    u
}

pub fn tcp(sport: u16, dport: u16, flags: u8, options: usize) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&sport.to_be_bytes());
    t.extend_from_slice(&dport.to_be_bytes());
    t.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0]);
    t.push((((20 + options) / 4) as u8) << 4);
    t.push(flags);
    t.extend_from_slice(&[0xFF, 0xFF, 0, 0, 0, 0]);
    t.extend(std::iter::repeat_n(1, options));
    t.extend_from_slice(b"data");
    t
}

pub fn icmp() -> Vec<u8> {
    vec![8, 0, 0, 0, 0, 1, 0, 1, 0xAA, 0xBB]
}

pub fn ipv4(
    proto: u8,
    src: [u8; 4],
    dst: [u8; 4],
    frag: u16,
    options: usize,
    payload: &[u8],
) -> Vec<u8> {
    let hl = 20 + options;
    let mut p = vec![0x40 | (hl / 4) as u8, 0];
    p.extend_from_slice(&((hl + payload.len()) as u16).to_be_bytes());
    p.extend_from_slice(&[0x12, 0x34]);
    p.extend_from_slice(&frag.to_be_bytes());
    p.extend_from_slice(&[64, proto, 0, 0]);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend(std::iter::repeat_n(1, options));
    p.extend_from_slice(payload);
    p
}

/// An IPv6 packet; `exts` is a list of (header number, bytes) with the next-header byte
/// of each filled in here.
pub fn ipv6(
    src: [u8; 16],
    dst: [u8; 16],
    exts: &[(u8, Vec<u8>)],
    proto: u8,
    payload: &[u8],
) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, (_, bytes)) in exts.iter().enumerate() {
        let mut b = bytes.clone();
        b[0] = exts.get(i + 1).map_or(proto, |e| e.0);
        body.extend_from_slice(&b);
    }
    body.extend_from_slice(payload);
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&(body.len() as u16).to_be_bytes());
    p.push(exts.first().map_or(proto, |e| e.0));
    p.push(64);
    p.extend_from_slice(&src);
    p.extend_from_slice(&dst);
    p.extend_from_slice(&body);
    p
}

pub fn ext_opts(len8: u8) -> Vec<u8> {
    let mut b = vec![0, len8 - 1, 1, 4];
    b.resize(usize::from(len8) * 8, 0);
    b
}

pub fn ext_frag(offset8: u16, more: bool) -> Vec<u8> {
    let bits = (offset8 << 3) | u16::from(more);
    let mut b = vec![0, 0];
    b.extend_from_slice(&bits.to_be_bytes());
    b.extend_from_slice(&[0, 0, 0, 7]);
    b
}

pub fn ext_ah() -> Vec<u8> {
    let mut b = vec![0, 4, 0, 0];
    b.resize(24, 9);
    b
}

pub const V6A: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
pub const V6B: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// (linktype, frame) pairs covering the cases the flow projection distinguishes.
pub fn corpus() -> Vec<(u32, Vec<u8>)> {
    let a = [10, 0, 0, 1];
    let b = [192, 168, 1, 20];
    let mut l3: Vec<Vec<u8>> = vec![
        ipv4(17, a, b, 0, 0, &udp(12000, 53, 12)),
        ipv4(6, a, b, 0, 0, &tcp(40000, 443, 0x02, 0)),
        ipv4(6, b, a, 0, 8, &tcp(443, 40000, 0x12, 12)),
        ipv4(1, a, b, 0, 0, &icmp()),
        ipv4(47, a, b, 0, 0, &[0; 12]),
        ipv4(17, a, b, 0x2000, 0, &udp(5000, 6000, 40)),
        ipv4(17, a, b, 0x0005, 0, &[0xEE; 16]),
        ipv4(6, a, b, 0x2000 | 0x0003, 0, &tcp(1, 2, 0x10, 0)),
        ipv6(V6A, V6B, &[], 17, &udp(5353, 5353, 10)),
        ipv6(V6A, V6B, &[], 6, &tcp(50000, 80, 0x18, 4)),
        ipv6(V6B, V6A, &[], 58, &icmp()),
        ipv6(
            V6A,
            V6B,
            &[(0, ext_opts(1)), (43, ext_opts(2)), (60, ext_opts(1))],
            17,
            &udp(1, 2, 3),
        ),
        ipv6(
            V6A,
            V6B,
            &[(0, ext_opts(1)), (44, ext_frag(0, true))],
            6,
            &tcp(3, 4, 0x01, 0),
        ),
        ipv6(V6A, V6B, &[(44, ext_frag(100, false))], 17, &[0xCC; 20]),
        ipv6(V6A, V6B, &[(51, ext_ah())], 17, &udp(7, 8, 0)),
        ipv6(V6A, V6B, &[(60, ext_opts(3))], 50, &[0xDD; 24]),
        ipv6(
            V6A,
            V6B,
            &[(43, ext_opts(1)), (0, ext_opts(1))],
            17,
            &udp(1, 2, 3),
        ),
        ipv6(
            V6A,
            V6B,
            &[(44, ext_frag(3, true)), (60, ext_opts(1))],
            17,
            &udp(1, 2, 3),
        ),
        ipv6(V6A, V6B, &vec![(60, ext_opts(1)); 17], 17, &udp(1, 2, 3)),
        ipv6(
            V6A,
            V6B,
            &vec![(43, ext_opts(1)); 16],
            6,
            &tcp(9, 10, 0x02, 0),
        ),
    ];
    // Destination options whose option overruns the header.
    let mut bad_opts = ext_opts(1);
    bad_opts[3] = 5;
    l3.push(ipv6(V6A, V6B, &[(60, bad_opts)], 17, &udp(1, 2, 3)));
    // AH with length 0 (IPv6: protocol unknown; IPv4: kept as 51) and a non-first IPv4
    // fragment whose protocol is AH (not skipped).
    let mut ah0 = ext_ah();
    ah0[1] = 0;
    l3.push(ipv6(V6A, V6B, &[(51, ah0.clone())], 17, &udp(1, 2, 3)));
    ah0[0] = 17;
    l3.push(ipv4(51, a, b, 0, 0, &ah0));
    l3.push(ipv4(51, a, b, 0x0002, 0, &ext_ah()));
    // IPv4 with AH, a short total length and a padded frame, and a bad version nibble.
    let mut ah = ext_ah();
    ah[0] = 17;
    let mut v4ah = ah.clone();
    v4ah.extend_from_slice(&udp(9, 10, 2));
    l3.push(ipv4(51, a, b, 0, 0, &v4ah));
    let mut short_total = ipv4(17, a, b, 0, 0, &udp(11, 12, 8));
    short_total[2..4].copy_from_slice(&24u16.to_be_bytes());
    l3.push(short_total);
    let mut padded = ipv4(17, a, b, 0, 0, &udp(13, 14, 0));
    padded.extend_from_slice(&[0; 18]);
    l3.push(padded);
    let mut jumbo = ipv6(V6A, V6B, &[], 17, &udp(15, 16, 4));
    jumbo[4..6].copy_from_slice(&[0, 0]);
    l3.push(jumbo);
    let mut bad = ipv4(17, a, b, 0, 0, &udp(1, 1, 1));
    bad[0] = 0x55;
    l3.push(bad);

    let mut out = Vec::new();
    let links: [&[(u16, u16)]; 5] = [
        &[],
        &[(0x8100, 100)],
        &[(0x88A8, 200), (0x8100, 7)],
        &[(0x9100, 1), (0x8100, 2), (0x8100, 3)],
        &[(0x8100, 1), (0x8100, 2), (0x8100, 3), (0x8100, 4)],
    ];
    for p in &l3 {
        let et = if p[0] >> 4 == 6 { 0x86DD } else { 0x0800 };
        for tags in links {
            out.push((linktype::ETHERNET, ethernet(et, tags, p)));
        }
        // EtherType and version disagree: the version nibble decides.
        out.push((
            linktype::ETHERNET,
            ethernet(if et == 0x0800 { 0x86DD } else { 0x0800 }, &[], p),
        ));
        out.push((linktype::RAW, p.clone()));
    }
    let arp = [
        0, 1, 8, 0, 6, 4, 0, 1, 1, 2, 3, 4, 5, 6, 10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
    ];
    out.push((linktype::ETHERNET, ethernet(0x0806, &[], &arp)));
    out.push((linktype::ETHERNET, ethernet(0x0806, &[(0x8100, 5)], &arp)));
    out.push((linktype::ETHERNET, ethernet(0x88CC, &[], &[0; 30])));
    out
}

/// Column `i` of every batch, concatenated by hand (rows are few).
pub fn arrow_select_concat(
    batches: &[arrow_array::RecordBatch],
) -> Vec<std::sync::Arc<dyn arrow_array::Array>> {
    let n = batches[0].num_columns();
    (0..n)
        .map(|i| {
            let parts: Vec<&dyn arrow_array::Array> =
                batches.iter().map(|b| b.column(i).as_ref()).collect();
            let data: Vec<arrow_data::ArrayData> = parts.iter().map(|a| a.to_data()).collect();
            let refs: Vec<&arrow_data::ArrayData> = data.iter().collect();
            let mut m = arrow_data::transform::MutableArrayData::new(refs, true, 8);
            for (j, d) in data.iter().enumerate() {
                m.try_extend(j, 0, d.len()).unwrap();
            }
            arrow_array::make_array(m.freeze())
        })
        .collect()
}
