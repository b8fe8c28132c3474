//! Application hints per flow: the application protocol from payload signatures (not
//! from ports alone), the requested server name (TLS SNI, the first DNS question, the
//! HTTP Host header), the HTTP User-Agent and the TLS ALPN list.
//!
//! Only the first [`MAX_INSPECTED`] packets of a flow that carry a TCP or UDP payload are
//! looked at, each on its own (no TCP reassembly: a ClientHello or an HTTP request split
//! over segments gives the protocol from its first segment, and no name).
//!
//! QUIC (versions 1 and 2): the client's Initial packets are decrypted with the version's
//! public initial salt and the client's first Destination Connection ID (RFC 9001 §5.2),
//! and their CRYPTO frames give the ClientHello's SNI and ALPN. A ClientHello spread over
//! several Initials is collected by offset in one of [`QUIC_PENDING`] buffers shared by the
//! table (the oldest is given up when more flows need one). The client is the sender of
//! the flow's first long-header packet.

use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};
use arrow_schema::{DataType, Field};

use super::features::{FeatureGroup, PacketView};
use crate::decode::dns::{Dns, DNS_HEADER_LEN};
use crate::decode::fastpath::ip_proto;
use crate::decode::tls::ClientHello;
use crate::fingerprint::hello::{ClientHello as Hello, HANDSHAKE_HEADER_LEN, HS_CLIENT_HELLO};
use crate::fingerprint::quic::{self, CryptoStream, Keys};

/// Payload-carrying packets of a flow that are inspected, at most.
pub const MAX_INSPECTED: u8 = 16;

/// QUIC flows whose ClientHello is being collected over several Initial packets, at most.
pub const QUIC_PENDING: usize = 16;

const NO_PENDING: u8 = u8::MAX;

/// An application protocol recognised by its payload.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AppProtocol {
    /// Nothing recognised.
    #[default]
    Unknown,
    /// DNS over UDP or TCP (any port).
    Dns,
    /// TLS records on TCP.
    Tls,
    /// QUIC long-header packets of a known version.
    Quic,
    /// HTTP/1.x requests or responses.
    Http,
    /// An SSH identification string.
    Ssh,
    /// DHCP (BOOTP with the DHCP magic cookie).
    Dhcp,
    /// NTP on UDP port 123.
    Ntp,
}

impl AppProtocol {
    /// The value of the `application_protocol` column.
    pub fn name(self) -> &'static str {
        match self {
            AppProtocol::Unknown => "unknown",
            AppProtocol::Dns => "dns",
            AppProtocol::Tls => "tls",
            AppProtocol::Quic => "quic",
            AppProtocol::Http => "http",
            AppProtocol::Ssh => "ssh",
            AppProtocol::Dhcp => "dhcp",
            AppProtocol::Ntp => "ntp",
        }
    }
}

const NTP_PORT: u16 = 123;
const HTTP_METHODS: [&[u8]; 9] = [
    b"GET ",
    b"POST ",
    b"HEAD ",
    b"PUT ",
    b"DELETE ",
    b"OPTIONS ",
    b"CONNECT ",
    b"PATCH ",
    b"TRACE ",
];

#[inline]
fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_be_bytes([s[0], s[1]]))
}

/// The protocol a TCP (`protocol` 6) or UDP (17) payload looks like.
pub fn classify(protocol: u8, payload: &[u8], ports: (u16, u16)) -> AppProtocol {
    match protocol {
        ip_proto::TCP => {
            if tls_like(payload) {
                AppProtocol::Tls
            } else if http_request(payload).is_some() || http_response(payload) {
                AppProtocol::Http
            } else if ssh_like(payload) {
                AppProtocol::Ssh
            } else if dns_over_tcp(payload).is_some() {
                AppProtocol::Dns
            } else {
                AppProtocol::Unknown
            }
        }
        ip_proto::UDP => {
            if dhcp_like(payload) {
                AppProtocol::Dhcp
            } else if quic_like(payload) {
                AppProtocol::Quic
            } else if dns_like(payload) {
                AppProtocol::Dns
            } else if ntp_like(payload, ports) {
                AppProtocol::Ntp
            } else {
                AppProtocol::Unknown
            }
        }
        _ => AppProtocol::Unknown,
    }
}

/// A TLS record header: content type 20-23, version 3.0-3.4, a plausible length; a
/// handshake record must hold a known first message.
fn tls_like(p: &[u8]) -> bool {
    let (Some(&ty), Some(&major), Some(&minor), Some(len)) =
        (p.first(), p.get(1), p.get(2), be16(p, 3))
    else {
        return false;
    };
    if !(20..=23).contains(&ty) || major != 3 || minor > 4 || len == 0 || len > 16384 + 2048 {
        return false;
    }
    // ClientHello, ServerHello (also when the record goes on in the next segment).
    ty != 22 || matches!(p.get(5), Some(1 | 2))
}

/// An HTTP/1 request line (a method, then `HTTP/1.` on the first line when the line
/// ends in this payload): the header block.
fn http_request(p: &[u8]) -> Option<&[u8]> {
    let m = HTTP_METHODS.iter().find(|m| p.starts_with(m))?;
    let rest = &p[m.len()..];
    match rest.windows(2).position(|w| w == b"\r\n") {
        Some(end) => {
            let line = &rest[..end];
            (line.windows(8).any(|w| w == b" HTTP/1.")).then_some(&rest[end + 2..])
        }
        None => {
            (rest.first().is_some_and(|b| *b == b'/') || rest.starts_with(b"http")).then_some(&[])
        }
    }
}

fn http_response(p: &[u8]) -> bool {
    (p.starts_with(b"HTTP/1.0 ") || p.starts_with(b"HTTP/1.1 "))
        && p.get(9..12)
            .is_some_and(|c| c.iter().all(u8::is_ascii_digit))
}

/// `SSH-<digits>.<digits>-` (RFC 4253 §4.2).
fn ssh_like(p: &[u8]) -> bool {
    let Some(v) = p.strip_prefix(b"SSH-") else {
        return false;
    };
    let major = v.iter().take_while(|b| b.is_ascii_digit()).count();
    let Some(rest) = v.get(major..).and_then(|r| r.strip_prefix(b".")) else {
        return false;
    };
    let minor = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    major > 0 && minor > 0 && rest.get(minor) == Some(&b'-')
}

/// A DNS message with one readable question and sane counts.
fn dns_like(m: &[u8]) -> bool {
    dns_question(m).is_some()
}

/// The first question of a plausible DNS message.
fn dns_question(m: &[u8]) -> Option<crate::decode::dns::Question> {
    let d = Dns::new(m)?;
    let flags = d.flags();
    let query = flags & 0x8000 == 0;
    if d.qdcount() != 1
        || d.ancount() > 100
        || d.nscount() > 100
        || d.arcount() > 100
        || !matches!(d.opcode(), 0 | 1 | 2 | 4 | 5)
        || flags & 0x0040 != 0
        || (query && (d.ancount() != 0 || d.rcode() != 0))
        || m.len() < DNS_HEADER_LEN + 5
    {
        return None;
    }
    let q = d.question()?;
    (q.qtype != 0 && matches!(q.qclass & 0x7FFF, 1 | 3 | 4 | 254 | 255)).then_some(q)
}

/// DNS over TCP: a two-byte length, then a message.
fn dns_over_tcp(p: &[u8]) -> Option<&[u8]> {
    let len = usize::from(be16(p, 0)?);
    let m = p.get(2..)?;
    let m = &m[..len.min(m.len())];
    dns_like(m).then_some(m)
}

/// A QUIC long-header packet of version 1, 2, a draft (29-34), or a version negotiation.
fn quic_like(p: &[u8]) -> bool {
    let (Some(&b0), Some(v)) = (p.first(), p.get(1..5)) else {
        return false;
    };
    let version = u32::from_be_bytes([v[0], v[1], v[2], v[3]]);
    let known = matches!(
        version,
        0x0000_0001 | 0x6b33_43cf | 0xff00_001d..=0xff00_0022
    );
    if b0 & 0x80 == 0 || !(known && b0 & 0x40 != 0 || version == 0) {
        return false;
    }
    let Some(&dcid) = p.get(5) else { return false };
    let dcid = usize::from(dcid);
    let Some(&scid) = p.get(6 + dcid) else {
        return false;
    };
    dcid <= 20 && usize::from(scid) <= 20 && p.len() >= 7 + dcid + usize::from(scid)
}

/// BOOTP with the DHCP magic cookie (RFC 2131 §3).
fn dhcp_like(p: &[u8]) -> bool {
    p.len() >= 240 && matches!(p[0], 1 | 2) && p[2] <= 16 && p[236..240] == [0x63, 0x82, 0x53, 0x63]
}

/// An NTP header (version 1-4, mode 1-5, stratum <= 16) on port 123.
fn ntp_like(p: &[u8], ports: (u16, u16)) -> bool {
    if p.len() < 48 || (ports.0 != NTP_PORT && ports.1 != NTP_PORT) {
        return false;
    }
    let version = (p[0] >> 3) & 7;
    let mode = p[0] & 7;
    (1..=4).contains(&version) && (1..=5).contains(&mode) && p[1] <= 16
}

/// The value of header `name` (lowercase, with the colon) in an HTTP header block.
fn header<'a>(block: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    for line in block.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            return None;
        }
        if line.len() > name.len() && line[..name.len()].eq_ignore_ascii_case(name) {
            return Some(line[name.len()..].trim_ascii());
        }
    }
    None
}

/// Replace `s` with `v` when `v` is UTF-8 (the capacity of `s` is reused).
fn set(s: &mut Option<String>, v: &[u8]) {
    if let Ok(v) = std::str::from_utf8(v) {
        let t = s.get_or_insert_with(String::new);
        t.clear();
        t.push_str(v);
    }
}

/// One flow's hints.
#[derive(Clone, Debug)]
struct Hints {
    protocol: AppProtocol,
    inspected: u8,
    done: bool,
    server_name: Option<String>,
    user_agent: Option<String>,
    alpn: Option<String>,
    /// QUIC: whether the client sends in the flow key's direction.
    quic_client_forward: bool,
    /// QUIC: the index of the flow's [`Pending`] ClientHello, or [`NO_PENDING`].
    quic_pending: u8,
}

impl Default for Hints {
    fn default() -> Self {
        Hints {
            protocol: AppProtocol::Unknown,
            inspected: 0,
            done: false,
            server_name: None,
            user_agent: None,
            alpn: None,
            quic_client_forward: true,
            quic_pending: NO_PENDING,
        }
    }
}

/// A QUIC ClientHello being collected: the owner's slot, the client's Initial keys and
/// the CRYPTO bytes so far.
struct Pending {
    owner: usize,
    since: u64,
    keys: Keys,
    crypto: Box<CryptoStream>,
}

/// What QUIC decryption needs, shared by the flows of a table: allocated on the first
/// QUIC flow, then reused.
#[derive(Default)]
struct Quic {
    /// Decrypted payload of one packet ([`quic::MAX_PACKET`] bytes once used).
    plain: Vec<u8>,
    /// The CRYPTO stream of a flow's first Initial datagram.
    crypto: Box<CryptoStream>,
    pending: Vec<Pending>,
    started: u64,
}

const FREE: usize = usize::MAX;

impl Quic {
    /// Give up the pending ClientHello `i` when the flow in `slot` still owns it.
    fn release(&mut self, i: u8, slot: usize) {
        if let Some(p) = self.pending.get_mut(usize::from(i)) {
            if p.owner == slot {
                p.owner = FREE;
            }
        }
    }

    /// A buffer for the flow in `slot`, which takes over the bytes of [`Self::crypto`]: a
    /// free one, a new one while fewer than [`QUIC_PENDING`] exist, else the oldest.
    fn take(&mut self, slot: usize, keys: Keys) -> u8 {
        self.started += 1;
        let i = match self.pending.iter().position(|p| p.owner == FREE) {
            Some(i) => i,
            None if self.pending.len() < QUIC_PENDING => {
                self.pending.push(Pending {
                    owner: FREE,
                    since: 0,
                    keys,
                    crypto: Box::default(),
                });
                self.pending.len() - 1
            }
            None => (0..self.pending.len())
                .min_by_key(|&i| self.pending[i].since)
                .unwrap_or(0),
        };
        let p = &mut self.pending[i];
        p.owner = slot;
        p.since = self.started;
        p.keys = keys;
        std::mem::swap(&mut p.crypto, &mut self.crypto);
        i as u8
    }
}

impl Hints {
    fn reset(&mut self) {
        self.protocol = AppProtocol::Unknown;
        self.inspected = 0;
        self.done = false;
        self.quic_client_forward = true;
        self.quic_pending = NO_PENDING;
        // Keep the strings' buffers: a reused slot fills them without allocating.
        for t in [&mut self.server_name, &mut self.user_agent, &mut self.alpn]
            .into_iter()
            .flatten()
        {
            t.clear();
        }
    }

    fn text(s: &Option<String>) -> Option<&str> {
        s.as_deref().filter(|t| !t.is_empty())
    }

    /// The SNI and ALPN of a ClientHello.
    fn client_hello(&mut self, ch: &ClientHello<'_>) {
        if let Some(sni) = ch.sni {
            set(&mut self.server_name, sni.as_bytes());
        }
        if ch.has_alpn() {
            let a = self.alpn.get_or_insert_with(String::new);
            a.clear();
            for (i, name) in ch.alpn().enumerate() {
                if i > 0 {
                    a.push(',');
                }
                a.push_str(name);
            }
        }
    }

    /// Look at one payload of the flow in `slot`; `forward` is its direction.
    fn inspect(
        &mut self,
        protocol: u8,
        p: &[u8],
        ports: (u16, u16),
        at: (usize, bool),
        q: &mut Quic,
    ) {
        if self.protocol == AppProtocol::Unknown {
            self.protocol = classify(protocol, p, ports);
            self.quic_client_forward = at.1;
        }
        match self.protocol {
            AppProtocol::Unknown => {}
            AppProtocol::Tls => {
                if let Some(ch) = ClientHello::parse(p) {
                    self.client_hello(&ch);
                    self.done = true;
                }
            }
            AppProtocol::Http => {
                if let Some(block) = http_request(p) {
                    if let Some(host) = header(block, b"host:") {
                        set(&mut self.server_name, host);
                    }
                    if let Some(ua) = header(block, b"user-agent:") {
                        set(&mut self.user_agent, ua);
                    }
                    self.done = true;
                }
            }
            AppProtocol::Dns => {
                let m = if protocol == ip_proto::TCP {
                    dns_over_tcp(p)
                } else {
                    Some(p)
                };
                if let Some(q) = m.and_then(dns_question) {
                    set(&mut self.server_name, q.qname().as_bytes());
                    self.done = true;
                }
            }
            AppProtocol::Quic => {
                if at.1 == self.quic_client_forward {
                    self.quic_datagram(p, at.0, q);
                }
            }
            AppProtocol::Ssh | AppProtocol::Dhcp | AppProtocol::Ntp => {
                self.done = true;
            }
        }
    }

    /// A datagram from the client of a QUIC flow: its (coalesced) Initial packets.
    fn quic_datagram(&mut self, datagram: &[u8], slot: usize, q: &mut Quic) {
        let mut off = 0;
        while off < datagram.len() && !self.done {
            let pkt = &datagram[off..];
            let Some(h) = quic::parse_initial(pkt) else {
                if off == 0 {
                    // Not an Initial: the client is past them (or it is not one we read).
                    self.quic_stop(slot, q);
                }
                return;
            };
            off += h.end;
            self.quic_initial(pkt, &h, slot, q);
        }
    }

    /// Give up the flow's QUIC ClientHello.
    fn quic_stop(&mut self, slot: usize, q: &mut Quic) {
        q.release(self.quic_pending, slot);
        self.quic_pending = NO_PENDING;
        self.done = true;
    }

    /// One client Initial packet `pkt` (header `h`).
    fn quic_initial(&mut self, pkt: &[u8], h: &quic::InitialHeader<'_>, slot: usize, q: &mut Quic) {
        if q.plain.is_empty() {
            q.plain.resize(quic::MAX_PACKET, 0);
        }
        if self.quic_pending != NO_PENDING {
            let i = usize::from(self.quic_pending);
            let Quic { plain, pending, .. } = &mut *q;
            let Some(p) = pending.get_mut(i).filter(|p| p.owner == slot) else {
                // Another flow took the buffer over.
                self.quic_pending = NO_PENDING;
                self.done = true;
                return;
            };
            let n = quic::decrypt(pkt, h, &p.keys, plain).or_else(|| {
                // After a Retry the client's Initials use the server's connection ID.
                let keys = quic::initial_keys(h.version, h.dcid, false)?;
                let n = quic::decrypt(pkt, h, &keys, plain)?;
                p.keys = keys;
                Some(n)
            });
            let Some(n) = n else {
                return;
            };
            if quic::crypto_frames(&plain[..n], |o, d| p.crypto.add(o, d)).is_none() {
                return self.quic_stop(slot, q);
            }
            if let Some(msg) = p.crypto.first_message() {
                self.quic_client_hello(msg);
                self.quic_stop(slot, q);
            }
            return;
        }
        let Some(keys) = quic::initial_keys(h.version, h.dcid, false) else {
            return self.quic_stop(slot, q);
        };
        let Quic { plain, crypto, .. } = &mut *q;
        let Some(n) = quic::decrypt(pkt, h, &keys, plain) else {
            return self.quic_stop(slot, q);
        };
        crypto.clear();
        if quic::crypto_frames(&plain[..n], |o, d| crypto.add(o, d)).is_none() {
            return self.quic_stop(slot, q);
        }
        if let Some(msg) = crypto.first_message() {
            self.quic_client_hello(msg);
            return self.quic_stop(slot, q);
        }
        // The rest of the ClientHello comes in later Initials.
        self.quic_pending = q.take(slot, keys);
    }

    /// The SNI and ALPN of the first handshake message of a QUIC client's CRYPTO stream.
    fn quic_client_hello(&mut self, msg: &[u8]) {
        if msg.first() != Some(&HS_CLIENT_HELLO) {
            return;
        }
        let ch = msg
            .get(HANDSHAKE_HEADER_LEN..)
            .and_then(|body| Hello::parse_body(body, false))
            .and_then(ClientHello::from_hello);
        if let Some(ch) = ch {
            self.client_hello(&ch);
        }
    }
}

/// The application-hint columns: `application_protocol`, `requested_server_name`,
/// `user_agent`, `alpn`.
#[derive(Default)]
pub struct AppHints {
    flows: Vec<Hints>,
    quic: Quic,
}

impl FeatureGroup for AppHints {
    fn fields(&self) -> Vec<Field> {
        vec![
            Field::new("application_protocol", DataType::Utf8, false),
            Field::new("requested_server_name", DataType::Utf8, true),
            Field::new("user_agent", DataType::Utf8, true),
            Field::new("alpn", DataType::Utf8, true),
        ]
    }

    fn open(&mut self, slot: usize) {
        match self.flows.get_mut(slot) {
            Some(h) => {
                self.quic.release(h.quic_pending, slot);
                h.reset();
            }
            None => self.flows.push(Hints::default()),
        }
    }

    #[inline]
    fn packet(&mut self, slot: usize, p: &PacketView<'_>) {
        let h = &mut self.flows[slot];
        if h.done || h.inspected == MAX_INSPECTED {
            return;
        }
        let payload = p.payload();
        if payload.is_empty() || p.fields.later_fragment {
            return;
        }
        h.inspected += 1;
        let f = p.fields;
        let ports = (f.src_port, f.dst_port);
        h.inspect(
            f.protocol,
            payload,
            ports,
            (slot, p.forward),
            &mut self.quic,
        );
        if h.inspected == MAX_INSPECTED {
            h.quic_stop(slot, &mut self.quic);
        }
    }

    fn close(&mut self, slot: usize) {
        if let Some(h) = self.flows.get_mut(slot) {
            self.quic.release(h.quic_pending, slot);
            h.quic_pending = NO_PENDING;
        }
    }

    fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        let rows = || slots.iter().map(|&s| &self.flows[s as usize]);
        out.push(Arc::new(StringArray::from_iter_values(
            rows().map(|h| h.protocol.name()),
        )));
        out.push(Arc::new(StringArray::from_iter(
            rows().map(|h| Hints::text(&h.server_name)),
        )));
        out.push(Arc::new(StringArray::from_iter(
            rows().map(|h| Hints::text(&h.user_agent)),
        )));
        out.push(Arc::new(StringArray::from_iter(
            rows().map(|h| Hints::text(&h.alpn)),
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::tls::build_client_hello;

    fn dns_query(name: &str, id: u16) -> Vec<u8> {
        let mut m = id.to_be_bytes().to_vec();
        m.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
        for label in name.split('.') {
            m.push(label.len() as u8);
            m.extend_from_slice(label.as_bytes());
        }
        m.extend_from_slice(&[0, 0, 1, 0, 1]);
        m
    }

    fn hints(protocol: u8, payloads: &[&[u8]], ports: (u16, u16)) -> Hints {
        let mut h = Hints::default();
        let mut q = Quic::default();
        for p in payloads {
            if !h.done {
                h.inspect(protocol, p, ports, (0, true), &mut q);
            }
        }
        h
    }

    #[test]
    fn dns_on_any_port_with_its_first_question() {
        let q = dns_query("example.org", 7);
        let h = hints(17, &[&q], (40000, 5353));
        assert_eq!(
            (h.protocol, h.server_name.as_deref()),
            (AppProtocol::Dns, Some("example.org"))
        );
        let mut tcp = (q.len() as u16).to_be_bytes().to_vec();
        tcp.extend_from_slice(&q);
        let h = hints(6, &[&tcp], (40000, 53));
        assert_eq!(
            (h.protocol, h.server_name.as_deref()),
            (AppProtocol::Dns, Some("example.org"))
        );
        // Two questions, a query with answers, a bad class: not DNS.
        let mut two = q.clone();
        two[5] = 2;
        let mut answers = q.clone();
        answers[7] = 1;
        let mut class = q.clone();
        *class.last_mut().unwrap() = 9;
        for m in [two, answers, class, vec![0xAB; 64]] {
            assert_eq!(classify(17, &m, (1, 2)), AppProtocol::Unknown);
        }
    }

    #[test]
    fn tls_client_hello_gives_sni_and_alpn() {
        let ch = build_client_hello(Some("tls.example"), &["h2", "http/1.1"]);
        let h = hints(6, &[&ch], (40000, 8443));
        assert_eq!(h.protocol, AppProtocol::Tls);
        assert_eq!(h.server_name.as_deref(), Some("tls.example"));
        assert_eq!(h.alpn.as_deref(), Some("h2,http/1.1"));
        // The first segment of a split hello: TLS, no name yet.
        let h = hints(6, &[&ch[..40]], (40000, 8443));
        assert_eq!(
            (h.protocol, h.server_name.as_deref(), h.done),
            (AppProtocol::Tls, None, false)
        );
        // Application data picked up mid-flow.
        assert_eq!(
            classify(6, &[23, 3, 3, 0, 40, 1, 2, 3], (1, 2)),
            AppProtocol::Tls
        );
        assert_eq!(
            classify(6, &[22, 3, 3, 0, 40, 9], (1, 2)),
            AppProtocol::Unknown
        );
    }

    #[test]
    fn http_request_host_and_user_agent() {
        let req =
            b"GET /index.html HTTP/1.1\r\nhost: web.example:8080\r\nUser-Agent:  curl/8.0 \r\n\r\n";
        let h = hints(6, &[b"HTTP/1.1 200 OK\r\n\r\n", req], (40000, 8080));
        assert_eq!(h.protocol, AppProtocol::Http);
        assert_eq!(h.server_name.as_deref(), Some("web.example:8080"));
        assert_eq!(h.user_agent.as_deref(), Some("curl/8.0"));
        assert_eq!(
            classify(6, b"GET nothing\r\n", (1, 2)),
            AppProtocol::Unknown
        );
        assert_eq!(classify(6, b"POST /a", (1, 2)), AppProtocol::Http);
    }

    #[test]
    fn ssh_quic_dhcp_ntp_signatures() {
        assert_eq!(
            classify(6, b"SSH-2.0-OpenSSH_9.2\r\n", (1, 2)),
            AppProtocol::Ssh
        );
        assert_eq!(classify(6, b"SSH-2-x", (1, 2)), AppProtocol::Unknown);
        let mut quic = vec![0xC3, 0, 0, 0, 1, 8];
        quic.extend_from_slice(&[1; 8]);
        quic.push(0);
        quic.extend_from_slice(&[0; 1200]);
        assert_eq!(classify(17, &quic, (1, 443)), AppProtocol::Quic);
        quic[4] = 7; // unknown version
        assert_eq!(classify(17, &quic, (1, 443)), AppProtocol::Unknown);
        let mut dhcp = vec![0; 300];
        dhcp[0] = 1;
        dhcp[2] = 6;
        dhcp[236..240].copy_from_slice(&[0x63, 0x82, 0x53, 0x63]);
        assert_eq!(classify(17, &dhcp, (68, 67)), AppProtocol::Dhcp);
        let mut ntp = vec![0; 48];
        ntp[0] = 0x23; // version 4, client
        assert_eq!(classify(17, &ntp, (40000, 123)), AppProtocol::Ntp);
        assert_eq!(classify(17, &ntp, (40000, 124)), AppProtocol::Unknown);
        assert_eq!(classify(1, &ntp, (0, 0)), AppProtocol::Unknown);
    }

    #[test]
    fn every_prefix_is_safe() {
        let payloads: Vec<Vec<u8>> = vec![
            build_client_hello(Some("a.example"), &["h2"]),
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            dns_query("a.b.c", 1),
            b"SSH-2.0-x\r\n".to_vec(),
        ];
        for p in &payloads {
            for n in 0..=p.len() {
                for proto in [6, 17] {
                    let _ = hints(proto, &[&p[..n]], (123, 123));
                }
            }
        }
    }
}
