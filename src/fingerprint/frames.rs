//! Ethernet frames for tests, fixtures and benchmarks: IPv4 with TCP or UDP, checksums
//! left at zero (nothing here verifies them).

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
