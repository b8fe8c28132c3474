//! Ethernet frames for tests, fixtures and benchmarks: IPv4 with TCP or UDP, checksums
//! left at zero (nothing here verifies them), and the messages the fingerprints read: the
//! JA4 specification's ClientHello, X.509 certificates and DHCP messages.

use super::hello::build_client_hello;

/// One TCP segment's header fields.
#[derive(Clone, Copy, Debug)]
pub struct Tcp<'a> {
    /// Source address.
    pub src: [u8; 4],
    /// Destination address.
    pub dst: [u8; 4],
    /// Source port.
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// Flags byte (CWR ECE URG ACK PSH RST SYN FIN).
    pub flags: u8,
    /// Sequence number.
    pub seq: u32,
    /// Acknowledgment number.
    pub ack: u32,
    /// Window.
    pub window: u16,
    /// Options, padded here to a multiple of 4 with end-of-options bytes.
    pub options: &'a [u8],
    /// IP TTL.
    pub ttl: u8,
}

fn ipv4(src: [u8; 4], dst: [u8; 4], proto: u8, ttl: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00];
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x40, 0, ttl, proto, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(l4);
    f
}

/// An Ethernet/IPv4/TCP frame.
pub fn tcp(t: &Tcp, payload: &[u8]) -> Vec<u8> {
    let mut opts = t.options.to_vec();
    while opts.len() % 4 != 0 {
        opts.push(0);
    }
    let mut h = Vec::with_capacity(20 + opts.len() + payload.len());
    h.extend_from_slice(&t.sport.to_be_bytes());
    h.extend_from_slice(&t.dport.to_be_bytes());
    h.extend_from_slice(&t.seq.to_be_bytes());
    h.extend_from_slice(&t.ack.to_be_bytes());
    h.push((((20 + opts.len()) / 4) as u8) << 4);
    h.push(t.flags);
    h.extend_from_slice(&t.window.to_be_bytes());
    h.extend_from_slice(&[0, 0, 0, 0]);
    h.extend_from_slice(&opts);
    h.extend_from_slice(payload);
    ipv4(t.src, t.dst, 6, t.ttl, &h)
}

/// An Ethernet/IPv4/UDP frame.
pub fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::with_capacity(8 + payload.len());
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(payload);
    ipv4(src, dst, 17, 64, &h)
}

/// Linux's SYN options: MSS 65495, SACK permitted, timestamps, NOP, window scale 7.
pub const LINUX_SYN_OPTIONS: [u8; 20] = [
    2, 4, 0xff, 0xd7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
];

/// Bytes from hex digits (other characters are skipped).
pub fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn u16s_be(v: &[u16]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_be_bytes()).collect()
}

pub(crate) fn vec16(b: &[u8]) -> Vec<u8> {
    let mut v = (b.len() as u16).to_be_bytes().to_vec();
    v.extend_from_slice(b);
    v
}

/// The ClientHello of the JA4 specification's example (as a TLS record).
pub fn sample_client_hello() -> Vec<u8> {
    let ciphers = [
        0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014,
        0x009c, 0x009d, 0x002f, 0x0035,
    ];
    let order = [
        0x001b, 0x0000, 0x0033, 0x0010, 0x4469, 0x0017, 0x002d, 0x000d, 0x0005, 0x0023, 0x0012,
        0x002b, 0xff01, 0x000b, 0x000a, 0x0015,
    ];
    let sigs = [
        0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601,
    ];
    let mut exts = vec![(0x1a1a, vec![])]; // GREASE, ignored
    for e in order {
        let data = match e {
            0x0000 => {
                let mut entry = vec![0];
                entry.extend_from_slice(&vec16(b"example.org"));
                vec16(&entry)
            }
            0x0010 => vec16(&[
                2, b'h', b'2', 8, b'h', b't', b't', b'p', b'/', b'1', b'.', b'1',
            ]),
            0x000d => vec16(&u16s_be(&sigs)),
            0x002b => {
                let mut v = vec![6];
                v.extend_from_slice(&u16s_be(&[0x7a7a, 0x0304, 0x0303]));
                v
            }
            _ => vec![],
        };
        exts.push((e, data));
    }
    let mut all = vec![0x2a2a];
    all.extend_from_slice(&ciphers);
    build_client_hello(&all, &exts)
}

/// A DER element.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    let n = content.len();
    if n < 0x80 {
        v.push(n as u8);
    } else if n < 0x100 {
        v.extend_from_slice(&[0x81, n as u8]);
    } else {
        v.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
    }
    v.extend_from_slice(content);
    v
}

fn name(oids: &[&str]) -> Vec<u8> {
    let mut rdns = Vec::new();
    for o in oids {
        let atv = [der(0x06, &hex(o)), der(0x0c, b"value")].concat();
        rdns.extend(der(0x31, &der(0x30, &atv)));
    }
    der(0x30, &rdns)
}

/// A certificate with the given issuer, subject and extension OIDs.
pub fn certificate(issuer: &[&str], subject: &[&str], exts: &[&str]) -> Vec<u8> {
    let alg = der(0x30, &der(0x06, &hex("2a864886f70d01010b")));
    let mut tbs = [
        der(0xa0, &der(0x02, &[2])),
        der(0x02, &[0x01, 0x23]),
        alg.clone(),
        name(issuer),
        der(
            0x30,
            &[der(0x17, b"250101000000Z"), der(0x17, b"350101000000Z")].concat(),
        ),
        name(subject),
        der(0x30, &[alg.clone(), der(0x03, &[0, 1, 2, 3])].concat()),
    ]
    .concat();
    if !exts.is_empty() {
        let list: Vec<u8> = exts
            .iter()
            .flat_map(|o| {
                der(
                    0x30,
                    &[der(0x06, &hex(o)), der(0x04, &der(0x30, &[]))].concat(),
                )
            })
            .collect();
        tbs.extend(der(0xa3, &der(0x30, &list)));
    }
    der(0x30, &[der(0x30, &tbs), alg, der(0x03, &[0; 9])].concat())
}

/// A DHCPv4 message with the given options (code, data), ending with End.
pub fn dhcp(options: &[(u8, &[u8])]) -> Vec<u8> {
    let mut m = vec![1, 1, 6, 0];
    m.resize(236, 0);
    m.extend_from_slice(&[0x63, 0x82, 0x53, 0x63]);
    for (c, d) in options {
        m.push(*c);
        m.push(d.len() as u8);
        m.extend_from_slice(d);
    }
    m.push(255);
    m
}
