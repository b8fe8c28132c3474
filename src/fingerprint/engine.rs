//! The fingerprinting state machine: [`Fingerprinter::process`] reads one
//! [`RawPacket`] and reports every fingerprint it completes as an [`Event`].
//!
//! Single-packet methods (JA4 of a whole ClientHello, JA4S, JA4T, JA4H, JA4D, JA4D6, JA4
//! of a QUIC Initial holding the whole ClientHello) keep no state. The others keep bounded
//! tables ([`Config`] sets the bounds; the defaults are those of the JA4 library's
//! reference implementation) whose evictions and expiries are counted in [`Counters`]:
//!
//! | state | bound | idle limit |
//! |---|---|---|
//! | TCP handshakes (JA4L, the client side for JA4SSH) | 10,000 connections | 600 s |
//! | JA4SSH windows | 10,000 connections | 600 s |
//! | JA4TS SYN-ACK retransmissions | 1,000 connections | 120 s |
//! | TLS handshake reassembly (JA4, JA4S, JA4X across TCP segments) | 50 streams | 30 s |
//! | HTTP request heads across segments (JA4H) | 100 streams | 600 s |
//! | QUIC Initial packets (JA4 across datagrams, JA4S of the server's Initial) | 1,000 connections | 30 s |
//!
//! Times are capture times, so a file and a live capture age state the same way.
//! Reassembly follows TCP sequence numbers in order: a retransmitted segment is skipped,
//! a gap ends the stream (counted). Buffers of ended streams are reused.

use super::hello::{
    certificates, ClientHello, ServerHello, CONTENT_HANDSHAKE, HANDSHAKE_HEADER_LEN,
    HS_CERTIFICATE, HS_CLIENT_HELLO, HS_SERVER_HELLO, RECORD_HEADER_LEN, TLS13,
};
use super::ja4::{self, Transport};
use super::ja4l::{self, Ja4lState};
use super::ja4ssh::{self, Ja4sshWindow};
use super::ja4t::{self, flags};
use super::ja4ts::Ja4tsState;
use super::quic::{self, CryptoStream};
use super::table::{Table, TableCounts, TableKey};
use super::{ja4d, ja4d6, ja4h, ja4s, ja4x, Method, Methods, Output, Text, VALUE_CAP};
use crate::decode::fastpath::{self, FlowFields};
use crate::RawPacket;
use foldhash::fast::FixedState;
use std::hash::{BuildHasher, Hasher};

const SECOND: i64 = 1_000_000_000;
const PROTO_TCP: u8 = 6;
const PROTO_UDP: u8 = 17;
const TCP_DATA_OFFSET: usize = 12;
const TCP_MIN_HEADER_LEN: usize = 20;
const HS_SERVER_HELLO_DONE: u8 = 14;
/// The most bytes one reassembled TLS or HTTP stream holds.
pub const STREAM_CAP: usize = 65536;
const TCP_ORIENTED_PORTS_SSH: u16 = 22;
/// The methods that read TCP through per-connection state or reassembly (all but JA4T).
const TCP_KEYED: Methods = Methods::NONE
    .with(Method::Ja4)
    .with(Method::Ja4O)
    .with(Method::Ja4S)
    .with(Method::Ja4H)
    .with(Method::Ja4TS)
    .with(Method::Ja4LC)
    .with(Method::Ja4LS)
    .with(Method::Ja4Ssh)
    .with(Method::Ja4X);
/// The methods a TCP packet without payload and without SYN, RST or FIN can feed: JA4L-C
/// (the client's ACK of the handshake) and JA4SSH (its ACK counts).
const TCP_BARE: Methods = Methods::NONE.with(Method::Ja4LC).with(Method::Ja4Ssh);

/// Bounds of the per-connection state (the reference implementation's defaults).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Which fingerprints to give.
    pub methods: Methods,
    /// TCP handshakes kept for JA4L and JA4SSH's client side.
    pub tcp_connections: usize,
    /// Their idle limit, ns.
    pub tcp_idle_ns: i64,
    /// JA4SSH connections.
    pub ssh_connections: usize,
    /// Their idle limit, ns.
    pub ssh_idle_ns: i64,
    /// JA4TS connections.
    pub ja4ts_connections: usize,
    /// Their idle limit, ns.
    pub ja4ts_idle_ns: i64,
    /// TLS handshakes reassembled across segments.
    pub tls_streams: usize,
    /// Their idle limit, ns.
    pub tls_idle_ns: i64,
    /// HTTP request heads reassembled across segments.
    pub http_streams: usize,
    /// Their idle limit, ns.
    pub http_idle_ns: i64,
    /// QUIC connections whose Initial packets are followed.
    pub quic_connections: usize,
    /// Their idle limit, ns.
    pub quic_idle_ns: i64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            methods: Methods::ALL,
            tcp_connections: 10_000,
            tcp_idle_ns: 600 * SECOND,
            ssh_connections: 10_000,
            ssh_idle_ns: 600 * SECOND,
            ja4ts_connections: 1_000,
            ja4ts_idle_ns: 120 * SECOND,
            tls_streams: 50,
            tls_idle_ns: 30 * SECOND,
            http_streams: 100,
            http_idle_ns: 600 * SECOND,
            quic_connections: 1_000,
            quic_idle_ns: 30 * SECOND,
        }
    }
}

/// What the state machine counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets read.
    pub packets: u64,
    /// Fingerprints given.
    pub fingerprints: u64,
    /// TCP handshake table.
    pub tcp: TableCounts,
    /// JA4SSH table.
    pub ssh: TableCounts,
    /// JA4TS table.
    pub ja4ts: TableCounts,
    /// TLS reassembly table.
    pub tls: TableCounts,
    /// HTTP reassembly table.
    pub http: TableCounts,
    /// QUIC table.
    pub quic: TableCounts,
    /// Streams ended by a sequence gap (a lost or out-of-order segment).
    pub stream_gaps: u64,
    /// Streams ended because they outgrew [`STREAM_CAP`].
    pub stream_overflows: u64,
    /// Messages that looked like a method's input but gave no fingerprint (malformed,
    /// truncated at the end of a stream, or longer than a fixed buffer).
    pub unparsed: u64,
}

impl Counters {
    /// Count a stream that could not go on: a sequence gap, or a full buffer.
    fn stream_ended(&mut self, gap: bool) {
        if gap {
            self.stream_gaps += 1;
        } else {
            self.stream_overflows += 1;
        }
    }
}

/// One end of a packet: an address (IPv4 as IPv4-mapped IPv6) and a port (0 without one).
/// Ordered by address bytes, then port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// 16-byte address.
    pub addr: [u8; 16],
    /// Port.
    pub port: u16,
}

impl Ord for Endpoint {
    /// The bytes' lexicographic order, read as one big-endian number (no `memcmp` call).
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (u128::from_be_bytes(self.addr), self.port)
            .cmp(&(u128::from_be_bytes(other.addr), other.port))
    }
}

impl PartialOrd for Endpoint {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

/// One fingerprint, borrowed from the state machine until its next call.
///
/// `value` and `raw` are the ASCII bytes written; a consumer that wants text reads them
/// through [`value_str`](Self::value_str) and [`raw_str`](Self::raw_str), which validate
/// (so one that only compares or stores bytes pays nothing for it).
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    /// Capture time of the packet that completed it.
    pub ts_ns: i64,
    /// The method.
    pub method: Method,
    /// The fingerprint (ASCII bytes).
    pub value: &'a [u8],
    /// The raw form (ASCII bytes; empty for methods without one).
    pub raw: &'a [u8],
    /// IP version of the packet (4 or 6).
    pub ip_version: u8,
    /// IP protocol (6 TCP, 17 UDP).
    pub protocol: u8,
    /// The packet's source.
    pub src: Endpoint,
    /// The packet's destination.
    pub dst: Endpoint,
}

impl Event<'_> {
    /// The fingerprint as text (only ASCII is ever written; anything else reads as empty).
    #[inline]
    pub fn value_str(&self) -> &str {
        std::str::from_utf8(self.value).unwrap_or("")
    }
    /// The raw form as text (empty for methods without one).
    #[inline]
    pub fn raw_str(&self) -> &str {
        std::str::from_utf8(self.raw).unwrap_or("")
    }
}

/// A connection, the same for both directions, with its hash (computed once per packet
/// for every table lookup the packet makes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ConnKey {
    lo: Endpoint,
    hi: Endpoint,
    proto: u8,
    hash: u64,
}

/// The hasher of connection keys (fixed: a table's order never shows).
const KEY_HASH: FixedState = FixedState::with_seed(0x6a61_3421);

impl ConnKey {
    #[inline]
    fn new(lo: Endpoint, hi: Endpoint, proto: u8) -> Self {
        let mut h = KEY_HASH.build_hasher();
        h.write_u128(u128::from_ne_bytes(lo.addr));
        h.write_u128(u128::from_ne_bytes(hi.addr));
        h.write_u64(u64::from(lo.port) | u64::from(hi.port) << 16 | u64::from(proto) << 32);
        ConnKey {
            lo,
            hi,
            proto,
            hash: h.finish(),
        }
    }
}

impl TableKey for ConnKey {
    #[inline]
    fn table_hash(&self) -> u64 {
        self.hash
    }
}

/// The connection key of a TCP packet and whether its source is `lo`, made on first use
/// (a packet that touches no table needs none).
#[inline]
fn tcp_key(key: &mut Option<(ConnKey, bool)>, ctx: &Ctx) -> (ConnKey, bool) {
    *key.get_or_insert_with(|| conn_key(ctx.src, ctx.dst, PROTO_TCP))
}

fn conn_key(src: Endpoint, dst: Endpoint, proto: u8) -> (ConnKey, bool) {
    if src <= dst {
        (ConnKey::new(src, dst, proto), true)
    } else {
        (ConnKey::new(dst, src, proto), false)
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct TcpConn {
    /// Whether the `lo` endpoint sent the SYN.
    client_is_lo: bool,
    ja4l: Ja4lState,
}

#[derive(Clone, Copy, Debug, Default)]
struct SshConn {
    client_is_lo: bool,
    /// The last packet's addresses and time, for the value given at the end.
    last: Ctx,
    next_seq: [Option<u32>; 2],
    window: Ja4sshWindow,
}

#[derive(Clone, Copy, Debug, Default)]
struct TsConn {
    server_is_lo: bool,
    state: Option<Ja4tsState>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum StreamKind {
    #[default]
    TlsClient,
    TlsServer,
    Http,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct StreamKey {
    conn: ConnKey,
    from_lo: bool,
    kind: StreamKind,
}

impl TableKey for StreamKey {
    /// The connection's hash moved by a constant per direction and kind: the streams of
    /// one connection fall in different buckets, and no byte is hashed again.
    #[inline]
    fn table_hash(&self) -> u64 {
        const SALT: [u64; 6] = [
            0x243f_6a88_85a3_08d3,
            0x1319_8a2e_0370_7344,
            0xa409_3822_299f_31d0,
            0x082e_fa98_ec4e_6c89,
            0x4528_21e6_38d0_1377,
            0xbe54_66cf_34e9_0c6c,
        ];
        self.conn.hash ^ SALT[usize::from(self.from_lo) * 3 + self.kind as usize]
    }
}

/// A reassembled TCP byte stream. For TLS the buffer holds, in place, the handshake bytes
/// taken out of complete records (`..hs_end`, read from `hs_pos`) followed by the raw bytes
/// not yet split into records (`rec_pos..`).
#[derive(Debug, Default)]
struct Stream {
    next_seq: u32,
    buf: Vec<u8>,
    hs_pos: usize,
    hs_end: usize,
    rec_pos: usize,
    /// The ServerHello was already fingerprinted from its own segment.
    skip_server_hello: bool,
    tls13: bool,
}

impl Stream {
    fn reset(&mut self, next_seq: u32) {
        self.next_seq = next_seq;
        self.buf.clear();
        self.hs_pos = 0;
        self.hs_end = 0;
        self.rec_pos = 0;
        self.skip_server_hello = false;
        self.tls13 = false;
    }

    /// Append a segment; `Err(gap)` when it cannot follow (a gap, or the buffer is full).
    fn feed(&mut self, seq: u32, payload: &[u8]) -> Result<(), bool> {
        let ahead = seq.wrapping_sub(self.next_seq) as i32;
        let data = if ahead == 0 {
            payload
        } else if ahead < 0 {
            let skip = ahead.unsigned_abs() as usize;
            payload.get(skip..).unwrap_or(&[])
        } else {
            return Err(true);
        };
        if self.buf.len() + data.len() > STREAM_CAP {
            return Err(false);
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(STREAM_CAP);
        }
        self.buf.extend_from_slice(data);
        self.next_seq = self.next_seq.wrapping_add(data.len() as u32);
        Ok(())
    }
}

/// The fields of the packet an event names.
#[derive(Clone, Copy, Debug, Default)]
struct Ctx {
    ts_ns: i64,
    ip_version: u8,
    protocol: u8,
    src: Endpoint,
    dst: Endpoint,
}

/// Buffers the methods write into.
struct Scratch {
    out: Box<Output>,
    ja4: Box<ja4::Scratch>,
    ja4h: Box<ja4h::Scratch>,
    text: Box<Text<VALUE_CAP>>,
    quic_plain: Box<[u8]>,
    quic_crypto: Box<CryptoStream>,
}

/// What handling a run of TLS handshake messages concluded.
enum TlsStep {
    /// More bytes are needed.
    More,
    /// The handshake part this stream follows is over.
    Done,
}

/// The state machine. See the module documentation.
pub struct Fingerprinter {
    cfg: Config,
    counters: Counters,
    tcp: Table<ConnKey, TcpConn>,
    ssh: Table<ConnKey, SshConn>,
    ja4ts: Table<ConnKey, TsConn>,
    tls: Table<StreamKey, Stream>,
    http: Table<StreamKey, Stream>,
    quic: Table<ConnKey, QuicConn>,
    s: Scratch,
}

/// What a QUIC connection keeps: the client's original Destination Connection ID (the
/// server's Initial keys derive from it) and the client's CRYPTO bytes until the
/// ClientHello is whole.
#[derive(Default)]
struct QuicConn {
    version: u32,
    dcid: [u8; quic::MAX_CID_LEN],
    dcid_len: u8,
    client_is_lo: bool,
    client_done: bool,
    server_done: bool,
    crypto: Option<Box<CryptoStream>>,
}

fn emit<F: FnMut(&Event)>(
    ctx: &Ctx,
    method: Method,
    value: &[u8],
    raw: &[u8],
    counters: &mut Counters,
    f: &mut F,
) {
    counters.fingerprints += 1;
    f(&Event {
        ts_ns: ctx.ts_ns,
        method,
        value,
        raw,
        ip_version: ctx.ip_version,
        protocol: ctx.protocol,
        src: ctx.src,
        dst: ctx.dst,
    });
}

/// Emit a fingerprint when its function gave one (`ok`); count the input as unparsed
/// when it did not.
#[inline]
fn emit_if<F: FnMut(&Event)>(
    ok: bool,
    ctx: &Ctx,
    method: Method,
    value: &[u8],
    raw: &[u8],
    counters: &mut Counters,
    f: &mut F,
) {
    if ok {
        emit(ctx, method, value, raw, counters, f);
    } else {
        counters.unparsed += 1;
    }
}

/// JA4 (and JA4_o) of a ClientHello body.
#[allow(clippy::too_many_arguments)]
fn client_hello<F: FnMut(&Event)>(
    body: &[u8],
    transport: Transport,
    dtls: bool,
    cfg: &Config,
    scratch: &mut ja4::Scratch,
    out: &mut Output,
    counters: &mut Counters,
    ctx: &Ctx,
    f: &mut F,
) {
    let Some(h) = ClientHello::parse_body(body, dtls) else {
        counters.unparsed += 1;
        return;
    };
    for (m, original) in [(Method::Ja4, false), (Method::Ja4O, true)] {
        if cfg.methods.has(m) {
            let ok = ja4::ja4(&h, transport, original, scratch, out);
            emit_if(
                ok,
                ctx,
                m,
                out.value.as_bytes(),
                out.raw.as_bytes(),
                counters,
                f,
            );
        }
    }
}

/// JA4S of a ServerHello body; the negotiated version, when it parsed.
fn server_hello<F: FnMut(&Event)>(
    body: &[u8],
    transport: Transport,
    cfg: &Config,
    out: &mut Output,
    counters: &mut Counters,
    ctx: &Ctx,
    f: &mut F,
) -> Option<u16> {
    let Some(h) = ServerHello::parse_body(body) else {
        counters.unparsed += 1;
        return None;
    };
    if cfg.methods.has(Method::Ja4S) {
        let ok = ja4s::ja4s(&h, transport, out);
        emit_if(
            ok,
            ctx,
            Method::Ja4S,
            out.value.as_bytes(),
            out.raw.as_bytes(),
            counters,
            f,
        );
    }
    Some(h.version())
}

/// JA4 of the first handshake message of a QUIC client's CRYPTO frames, when it is a
/// ClientHello.
fn quic_client_hello<F: FnMut(&Event)>(
    msg: &[u8],
    cfg: &Config,
    scratch: &mut ja4::Scratch,
    out: &mut Output,
    counters: &mut Counters,
    ctx: &Ctx,
    f: &mut F,
) {
    if let (Some(&HS_CLIENT_HELLO), Some(body)) = (msg.first(), msg.get(HANDSHAKE_HEADER_LEN..)) {
        client_hello(
            body,
            Transport::Quic,
            false,
            cfg,
            scratch,
            out,
            counters,
            ctx,
            f,
        );
    }
}

/// JA4H of a complete HTTP request head.
fn request_head<F: FnMut(&Event)>(
    head: &[u8],
    s: &mut Scratch,
    counters: &mut Counters,
    ctx: &Ctx,
    f: &mut F,
) {
    let ok = ja4h::ja4h(head, &mut s.ja4h, &mut s.out);
    emit_if(
        ok,
        ctx,
        Method::Ja4H,
        s.out.value.as_bytes(),
        s.out.raw.as_bytes(),
        counters,
        f,
    );
}

fn certificate<F: FnMut(&Event)>(
    body: &[u8],
    out: &mut Output,
    counters: &mut Counters,
    ctx: &Ctx,
    f: &mut F,
) {
    for der in certificates(body) {
        let ok = ja4x::ja4x(der, out);
        emit_if(
            ok,
            ctx,
            Method::Ja4X,
            out.value.as_bytes(),
            out.raw.as_bytes(),
            counters,
            f,
        );
    }
}

/// Split complete records into handshake bytes and handle complete messages.
fn tls_progress<F: FnMut(&Event)>(
    st: &mut Stream,
    kind: StreamKind,
    cfg: &Config,
    s: &mut Scratch,
    counters: &mut Counters,
    ctx: &Ctx,
    f: &mut F,
) -> TlsStep {
    loop {
        // Records into handshake bytes.
        while let Some(hdr) = st.buf.get(st.rec_pos..st.rec_pos + RECORD_HEADER_LEN) {
            let len = usize::from(u16::from_be_bytes([hdr[3], hdr[4]]));
            if hdr[0] != CONTENT_HANDSHAKE || hdr[1] != 3 {
                return TlsStep::Done;
            }
            let start = st.rec_pos + RECORD_HEADER_LEN;
            if st.buf.len() < start + len {
                break;
            }
            st.buf.copy_within(start..start + len, st.hs_end);
            st.hs_end += len;
            st.rec_pos = start + len;
        }
        // Handshake messages.
        let Some(h) = st.buf.get(st.hs_pos..st.hs_pos + HANDSHAKE_HEADER_LEN) else {
            return TlsStep::More;
        };
        if st.hs_pos + HANDSHAKE_HEADER_LEN > st.hs_end {
            return TlsStep::More;
        }
        let ty = h[0];
        let len = usize::from(h[1]) << 16 | usize::from(h[2]) << 8 | usize::from(h[3]);
        let body_start = st.hs_pos + HANDSHAKE_HEADER_LEN;
        if body_start + len > st.hs_end {
            if body_start + len > STREAM_CAP {
                counters.stream_overflows += 1;
                return TlsStep::Done;
            }
            return TlsStep::More;
        }
        let body = &st.buf[body_start..body_start + len];
        st.hs_pos = body_start + len;
        match (kind, ty) {
            (StreamKind::TlsClient, HS_CLIENT_HELLO) => {
                client_hello(
                    body,
                    Transport::Tcp,
                    false,
                    cfg,
                    &mut s.ja4,
                    &mut s.out,
                    counters,
                    ctx,
                    f,
                );
                return TlsStep::Done;
            }
            (StreamKind::TlsServer, HS_SERVER_HELLO) => {
                let v = if st.skip_server_hello {
                    ServerHello::parse_body(body).map(|h| h.version())
                } else {
                    server_hello(body, Transport::Tcp, cfg, &mut s.out, counters, ctx, f)
                };
                if v.is_none_or(|v| v == TLS13) || !cfg.methods.has(Method::Ja4X) {
                    st.tls13 = true;
                    return TlsStep::Done;
                }
            }
            (StreamKind::TlsServer, HS_CERTIFICATE) => {
                if cfg.methods.has(Method::Ja4X) {
                    certificate(body, &mut s.out, counters, ctx, f);
                }
                return TlsStep::Done;
            }
            (StreamKind::TlsServer, HS_SERVER_HELLO_DONE) => return TlsStep::Done,
            (StreamKind::TlsClient, _) => return TlsStep::Done,
            _ => {}
        }
        if st.hs_pos == st.hs_end {
            // Everything split so far is handled: move the raw rest to the front.
            st.buf.copy_within(st.rec_pos.., 0);
            st.buf.truncate(st.buf.len() - st.rec_pos);
            st.rec_pos = 0;
            st.hs_pos = 0;
            st.hs_end = 0;
        }
    }
}

#[inline(always)]
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

#[inline(always)]
fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}

impl Fingerprinter {
    /// A state machine with the given bounds.
    pub fn new(cfg: Config) -> Self {
        Fingerprinter {
            tcp: Table::new(cfg.tcp_connections, cfg.tcp_idle_ns),
            ssh: Table::new(cfg.ssh_connections, cfg.ssh_idle_ns),
            ja4ts: Table::new(cfg.ja4ts_connections, cfg.ja4ts_idle_ns),
            tls: Table::new(cfg.tls_streams, cfg.tls_idle_ns),
            http: Table::new(cfg.http_streams, cfg.http_idle_ns),
            quic: Table::new(cfg.quic_connections, cfg.quic_idle_ns),
            cfg,
            counters: Counters::default(),
            s: Scratch {
                out: Output::new(),
                ja4: ja4::Scratch::new(),
                ja4h: ja4h::Scratch::new(),
                text: Box::new(Text::new()),
                quic_plain: vec![0u8; quic::MAX_PACKET].into_boxed_slice(),
                quic_crypto: Box::default(),
            },
        }
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Counters so far (table sizes as of now).
    pub fn counters(&self) -> Counters {
        Counters {
            tcp: self.tcp.counts(),
            ssh: self.ssh.counts(),
            ja4ts: self.ja4ts.counts(),
            tls: self.tls.counts(),
            http: self.http.counts(),
            quic: self.quic.counts(),
            ..self.counters
        }
    }

    /// The end of the packets: give the JA4SSH window every connection holds open (in
    /// the order the connections were last used, oldest first), as the reference
    /// implementations do when their input ends.
    pub fn finish<F: FnMut(&Event)>(&mut self, f: &mut F) {
        let out = &mut self.s.out.value;
        let counters = &mut self.counters;
        self.ssh.drain_oldest_first(|c| {
            if !c.window.is_empty() {
                out.clear();
                c.window.finish(out);
                emit(&c.last, Method::Ja4Ssh, out.as_bytes(), b"", counters, f);
            }
        });
    }

    /// The end of one TCP connection between `a` and `b` (either order), as
    /// [`finish`](Self::finish) is for all of them: give the JA4SSH window it holds open and
    /// forget that window (a flow meter calls this when the connection's flow ends).
    pub fn finish_connection<F: FnMut(&Event)>(&mut self, a: Endpoint, b: Endpoint, f: &mut F) {
        let (key, _) = conn_key(a, b, 6);
        // `i64::MIN` leaves the entry's last-use time as it is.
        if let Some(c) = self.ssh.get_mut(&key, i64::MIN) {
            if !c.window.is_empty() {
                let out = &mut self.s.out.value;
                out.clear();
                c.window.finish(out);
                emit(
                    &c.last,
                    Method::Ja4Ssh,
                    out.as_bytes(),
                    b"",
                    &mut self.counters,
                    f,
                );
            }
        }
        self.ssh.remove(&key);
    }

    /// Forget every connection (buffers are kept; counters are not reset).
    pub fn clear(&mut self) {
        self.tcp.clear();
        self.ssh.clear();
        self.ja4ts.clear();
        self.tls.clear();
        self.http.clear();
        self.quic.clear();
    }

    /// Read one packet and call `f` for each fingerprint it completes.
    pub fn process<F: FnMut(&Event)>(&mut self, pkt: &RawPacket, f: &mut F) {
        // The flow fast path reads the headers (the full decoder's validity rules, without
        // building its result): addresses, ports, TTL and where the segment lies.
        let mut ff = FlowFields::default();
        fastpath::parse(pkt.linktype, pkt.data, &mut ff);
        self.process_fields(pkt, &ff, f);
    }

    /// [`process`](Self::process) of a packet whose flow fast-path fields `ff` are parsed
    /// already (a flow table has them): the same events, without parsing the headers again.
    #[inline]
    pub fn process_fields<F: FnMut(&Event)>(
        &mut self,
        pkt: &RawPacket,
        ff: &FlowFields,
        f: &mut F,
    ) {
        self.counters.packets += 1;
        if ff.ip_version == 0 || !ff.has_ports {
            return;
        }
        let Some(seg) = pkt.data.get(ff.l4_start as usize..ff.l4_end as usize) else {
            return;
        };
        let ctx = Ctx {
            ts_ns: pkt.ts_ns,
            ip_version: ff.ip_version,
            protocol: ff.protocol,
            src: Endpoint {
                addr: ff.src,
                port: ff.src_port,
            },
            dst: Endpoint {
                addr: ff.dst,
                port: ff.dst_port,
            },
        };
        match ff.protocol {
            PROTO_TCP => {
                // Fields from the fast path's own parse hold a whole header; checked reads
                // keep any other `ff` from panicking.
                let Some(hdr) = seg.get(..TCP_MIN_HEADER_LEN) else {
                    return;
                };
                let hl = usize::from(hdr[TCP_DATA_OFFSET] >> 4) * 4;
                let Some(options) = seg.get(TCP_MIN_HEADER_LEN..hl) else {
                    return;
                };
                self.tcp_packet(
                    &ctx,
                    ff.tcp_flags,
                    be32(hdr, 4),
                    be32(hdr, 8),
                    be16(hdr, 14),
                    options,
                    ff.payload(pkt.data),
                    ff.ttl,
                    f,
                );
            }
            PROTO_UDP => self.udp_packet(&ctx, ff.payload(pkt.data), f),
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn tcp_packet<F: FnMut(&Event)>(
        &mut self,
        ctx: &Ctx,
        fl: u8,
        seq: u32,
        ack_no: u32,
        window: u16,
        options: &[u8],
        payload: &[u8],
        ttl: u8,
        f: &mut F,
    ) {
        let m = self.cfg.methods;
        let syn = fl & flags::SYN != 0;
        let ack = fl & flags::ACK != 0;
        let now = ctx.ts_ns;
        // JA4T needs no state: decided from the flags before any connection key is made.
        if syn && !ack && m.has(Method::Ja4T) {
            let t = &mut self.s.out.value;
            t.clear();
            ja4t::ja4t(window, options, t);
            emit(ctx, Method::Ja4T, t.as_bytes(), b"", &mut self.counters, f);
        }
        if !m.intersects(TCP_KEYED) {
            return;
        }
        if payload.is_empty()
            && fl & (flags::SYN | flags::RST | flags::FIN) == 0
            && !m.intersects(TCP_BARE)
        {
            return;
        }
        let mut lazy_key = None;

        if syn && !ack {
            let restart = |old: Option<TcpConn>, same: bool, from_lo: bool| match old {
                // A SYN again after the SYN-ACK changes nothing; before it, it restarts the
                // timing.
                Some(c) if same && c.ja4l.synack.is_some() => c,
                _ => TcpConn {
                    client_is_lo: from_lo,
                    ja4l: Ja4lState {
                        syn: Some((now, ttl)),
                        synack: None,
                        isn: (seq, 0),
                    },
                },
            };
            if m.has(Method::Ja4LC) || m.has(Method::Ja4LS) || m.has(Method::Ja4Ssh) {
                let (key, from_lo) = tcp_key(&mut lazy_key, ctx);
                self.tcp
                    .insert_with(key, now, |old, same| restart(old, same, from_lo));
            }
        } else if syn && ack {
            if m.has(Method::Ja4TS) {
                let (key, from_lo) = tcp_key(&mut lazy_key, ctx);
                let t = &mut self.s.out.value;
                t.clear();
                let written = match self.ja4ts.get_mut(&key, now) {
                    Some(TsConn {
                        state: Some(st), ..
                    }) => st.retransmission(now, t),
                    _ => {
                        let st = Ja4tsState::first(now, window, options, t);
                        self.ja4ts.insert_with(key, now, |_, _| TsConn {
                            server_is_lo: from_lo,
                            state: Some(st),
                        });
                        true
                    }
                };
                if written {
                    emit(ctx, Method::Ja4TS, t.as_bytes(), b"", &mut self.counters, f);
                }
            }
            if m.has(Method::Ja4LS) || m.has(Method::Ja4LC) {
                let (key, from_lo) = tcp_key(&mut lazy_key, ctx);
                if let Some(c) = self.tcp.get_mut(&key, now) {
                    if c.client_is_lo != from_lo && c.ja4l.synack.is_none() {
                        if let Some((a, _)) = c.ja4l.syn {
                            c.ja4l.synack = Some((now, ttl));
                            c.ja4l.isn.1 = seq;
                            if m.has(Method::Ja4LS) {
                                let t = &mut self.s.out.value;
                                t.clear();
                                ja4l::write(a, now, ttl, t);
                                emit(ctx, Method::Ja4LS, t.as_bytes(), b"", &mut self.counters, f);
                            }
                        }
                    }
                }
            }
        } else {
            if fl & flags::RST != 0 && m.has(Method::Ja4TS) {
                let (key, from_lo) = tcp_key(&mut lazy_key, ctx);
                if let Some(TsConn {
                    server_is_lo,
                    state: Some(st),
                }) = self.ja4ts.get_mut(&key, now)
                {
                    let t = &mut self.s.out.value;
                    t.clear();
                    if *server_is_lo == from_lo && st.reset(now, t) {
                        emit(ctx, Method::Ja4TS, t.as_bytes(), b"", &mut self.counters, f);
                    }
                }
            }
            if ack && m.has(Method::Ja4LC) {
                let (key, from_lo) = tcp_key(&mut lazy_key, ctx);
                if let Some(c) = self.tcp.get_mut(&key, now) {
                    let rel = (
                        seq.wrapping_sub(c.ja4l.isn.0),
                        ack_no.wrapping_sub(c.ja4l.isn.1),
                    );
                    let http_request = ja4h::looks_like_request(payload) && head_complete(payload);
                    if c.client_is_lo == from_lo && rel == (1, 1) && !http_request {
                        if let (Some(_), Some((b, _))) = (c.ja4l.syn, c.ja4l.synack) {
                            let client_ttl = c.ja4l.syn.map_or(0, |s| s.1);
                            let t = &mut self.s.out.value;
                            t.clear();
                            ja4l::write(b, now, client_ttl, t);
                            emit(ctx, Method::Ja4LC, t.as_bytes(), b"", &mut self.counters, f);
                        }
                    }
                }
            }
        }

        if m.has(Method::Ja4Ssh) {
            let (key, from_lo) = tcp_key(&mut lazy_key, ctx);
            self.ssh_packet(ctx, &key, from_lo, fl, seq, payload, f);
        }
        if payload.is_empty() {
            return;
        }
        self.tls_segment(ctx, &mut lazy_key, seq, payload, f);
        if m.has(Method::Ja4H) {
            self.http_segment(ctx, &mut lazy_key, seq, payload, f);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn ssh_packet<F: FnMut(&Event)>(
        &mut self,
        ctx: &Ctx,
        key: &ConnKey,
        from_lo: bool,
        fl: u8,
        seq: u32,
        payload: &[u8],
        f: &mut F,
    ) {
        let now = ctx.ts_ns;
        if fl & flags::SYN != 0 {
            return;
        }
        if !self.ssh.contains(key) {
            let port22 =
                ctx.src.port == TCP_ORIENTED_PORTS_SSH || ctx.dst.port == TCP_ORIENTED_PORTS_SSH;
            if !(port22 || ja4ssh::is_banner(payload)) {
                return;
            }
            let client_is_lo = match self.tcp.get_mut(key, now) {
                Some(c) => c.client_is_lo,
                None if port22 => {
                    // The port-22 side is the server.
                    let lo_is_server = if from_lo {
                        ctx.src.port == TCP_ORIENTED_PORTS_SSH
                    } else {
                        ctx.dst.port == TCP_ORIENTED_PORTS_SSH
                    };
                    !lo_is_server
                }
                // Without a handshake or port 22, the first banner seen is the server's.
                None => !from_lo,
            };
            self.ssh.insert_with(*key, now, |_, _| SshConn {
                client_is_lo,
                ..SshConn::default()
            });
        }
        let Some(c) = self.ssh.get_mut(key, now) else {
            return;
        };
        let from_server = c.client_is_lo != from_lo;
        let dir = usize::from(from_server);
        c.last = *ctx;
        let mut counted_len = payload.len();
        if !payload.is_empty() {
            // A segment wholly before the next expected byte is a retransmission.
            let end = seq.wrapping_add(payload.len() as u32);
            match c.next_seq[dir] {
                Some(next) if (end.wrapping_sub(next) as i32) <= 0 => counted_len = 0,
                _ => c.next_seq[dir] = Some(end),
            }
            if counted_len == 0 {
                return;
            }
        }
        let bare_ack = fl == flags::ACK && payload.is_empty();
        let full = c.window.add(from_server, counted_len, bare_ack);
        let fin = fl & flags::FIN != 0 && fl & flags::ACK != 0;
        if full || (fin && !c.window.is_empty()) {
            let t = &mut self.s.out.value;
            t.clear();
            c.window.finish(t);
            emit(
                ctx,
                Method::Ja4Ssh,
                t.as_bytes(),
                b"",
                &mut self.counters,
                f,
            );
        }
    }

    fn tls_segment<F: FnMut(&Event)>(
        &mut self,
        ctx: &Ctx,
        key: &mut Option<(ConnKey, bool)>,
        seq: u32,
        payload: &[u8],
        f: &mut F,
    ) {
        let m = self.cfg.methods;
        let now = ctx.ts_ns;
        let want_client = m.has(Method::Ja4) || m.has(Method::Ja4O);
        let want_server = m.has(Method::Ja4S) || m.has(Method::Ja4X);
        for kind in [StreamKind::TlsClient, StreamKind::TlsServer] {
            if self.tls.is_empty() {
                break;
            }
            let (conn, from_lo) = tcp_key(key, ctx);
            let sk = StreamKey {
                conn,
                from_lo,
                kind,
            };
            if let Some(st) = self.tls.get_mut(&sk, now) {
                let done = match st.feed(seq, payload) {
                    Ok(()) => matches!(
                        tls_progress(st, kind, &self.cfg, &mut self.s, &mut self.counters, ctx, f),
                        TlsStep::Done
                    ),
                    Err(gap) => {
                        self.counters.stream_ended(gap);
                        true
                    }
                };
                if done {
                    self.tls.remove(&sk);
                }
                return;
            }
        }
        if !super::hello::is_record(payload, CONTENT_HANDSHAKE) || payload.len() < 6 {
            return;
        }
        let hs_type = payload[RECORD_HEADER_LEN];
        let kind = match hs_type {
            HS_CLIENT_HELLO if want_client => StreamKind::TlsClient,
            HS_SERVER_HELLO if want_server => StreamKind::TlsServer,
            _ => return,
        };
        // The whole message in its own record: no state unless JA4X needs what follows.
        let whole = super::hello::handshake_in_record(payload, hs_type);
        let mut skip_server_hello = false;
        if let Some(body) = whole {
            if kind == StreamKind::TlsClient {
                client_hello(
                    body,
                    Transport::Tcp,
                    false,
                    &self.cfg,
                    &mut self.s.ja4,
                    &mut self.s.out,
                    &mut self.counters,
                    ctx,
                    f,
                );
                return;
            }
            let v = server_hello(
                body,
                Transport::Tcp,
                &self.cfg,
                &mut self.s.out,
                &mut self.counters,
                ctx,
                f,
            );
            if v.is_none_or(|v| v == TLS13) || !m.has(Method::Ja4X) {
                return;
            }
            skip_server_hello = true;
        }
        let (conn, from_lo) = tcp_key(key, ctx);
        let sk = StreamKey {
            conn,
            from_lo,
            kind,
        };
        let Some(st) = self.tls.insert_with(sk, now, |old, _| {
            let mut st = old.unwrap_or_default();
            st.reset(seq);
            st
        }) else {
            return;
        };
        st.skip_server_hello = skip_server_hello;
        let done = match st.feed(seq, payload) {
            Ok(()) => matches!(
                tls_progress(st, kind, &self.cfg, &mut self.s, &mut self.counters, ctx, f),
                TlsStep::Done
            ),
            Err(_) => {
                self.counters.stream_overflows += 1;
                true
            }
        };
        if done {
            self.tls.remove(&sk);
        }
    }

    fn http_segment<F: FnMut(&Event)>(
        &mut self,
        ctx: &Ctx,
        key: &mut Option<(ConnKey, bool)>,
        seq: u32,
        payload: &[u8],
        f: &mut F,
    ) {
        let now = ctx.ts_ns;
        let stream_key = |key: &mut Option<(ConnKey, bool)>| {
            let (conn, from_lo) = tcp_key(key, ctx);
            StreamKey {
                conn,
                from_lo,
                kind: StreamKind::Http,
            }
        };
        if !self.http.is_empty() {
            let sk = stream_key(key);
            if let Some(st) = self.http.get_mut(&sk, now) {
                let done = match st.feed(seq, payload) {
                    Ok(()) => {
                        if head_complete(&st.buf) {
                            request_head(&st.buf, &mut self.s, &mut self.counters, ctx, f);
                            true
                        } else {
                            false
                        }
                    }
                    Err(gap) => {
                        self.counters.stream_ended(gap);
                        true
                    }
                };
                if done {
                    self.http.remove(&sk);
                }
                return;
            }
        }
        if !ja4h::looks_like_request(payload) {
            return;
        }
        if head_complete(payload) {
            request_head(payload, &mut self.s, &mut self.counters, ctx, f);
            return;
        }
        let sk = stream_key(key);
        if let Some(st) = self.http.insert_with(sk, now, |old, _| {
            let mut st = old.unwrap_or_default();
            st.reset(seq);
            st
        }) {
            if st.feed(seq, payload).is_err() {
                self.counters.stream_overflows += 1;
                self.http.remove(&sk);
            }
        }
    }

    fn udp_packet<F: FnMut(&Event)>(&mut self, ctx: &Ctx, payload: &[u8], f: &mut F) {
        let m = self.cfg.methods;
        let ports = [ctx.src.port, ctx.dst.port];
        if m.has(Method::Ja4D) && ports.iter().any(|p| ja4d::PORTS.contains(p)) {
            let t = &mut self.s.out.value;
            let ok = ja4d::ja4d(payload, t);
            emit_if(
                ok,
                ctx,
                Method::Ja4D,
                t.as_bytes(),
                b"",
                &mut self.counters,
                f,
            );
            return;
        }
        if m.has(Method::Ja4D6) && ports.iter().any(|p| ja4d6::PORTS.contains(p)) {
            let t = &mut self.s.out.value;
            let ok = ja4d6::ja4d6(payload, t, &mut self.s.text);
            emit_if(
                ok,
                ctx,
                Method::Ja4D6,
                t.as_bytes(),
                b"",
                &mut self.counters,
                f,
            );
            return;
        }
        let want_client = m.has(Method::Ja4) || m.has(Method::Ja4O);
        if payload.len() >= 2 && payload[0] == CONTENT_HANDSHAKE && payload[1] == 0xfe {
            if want_client {
                if let Some(body) = super::hello::dtls_client_hello_body(payload) {
                    let s = &mut self.s;
                    client_hello(
                        body,
                        Transport::Dtls,
                        true,
                        &self.cfg,
                        &mut s.ja4,
                        &mut s.out,
                        &mut self.counters,
                        ctx,
                        f,
                    );
                }
            }
            return;
        }
        if payload.first().is_some_and(|b| b & 0xc0 == 0xc0) && (want_client || m.has(Method::Ja4S))
        {
            self.quic_datagram(ctx, payload, f);
        }
    }

    fn quic_datagram<F: FnMut(&Event)>(&mut self, ctx: &Ctx, datagram: &[u8], f: &mut F) {
        let now = ctx.ts_ns;
        let (key, from_lo) = conn_key(ctx.src, ctx.dst, 17);
        let mut off = 0;
        while off < datagram.len() {
            let pkt = &datagram[off..];
            let Some(h) = quic::parse_initial(pkt) else {
                return;
            };
            off += h.end;
            let known = self.quic.get_mut(&key, now).map(|c| {
                (
                    c.client_is_lo == from_lo,
                    c.version,
                    c.dcid,
                    usize::from(c.dcid_len),
                    c.client_done,
                    c.server_done,
                )
            });
            match known {
                Some((false, version, dcid, len, _, server_done)) => {
                    if !server_done {
                        self.quic_server(ctx, &key, pkt, &h, version, &dcid[..len], f);
                    }
                }
                Some((true, version, dcid, len, client_done, _)) => {
                    if !client_done {
                        self.quic_client(ctx, key, from_lo, pkt, &h, version, (dcid, len), true, f);
                    }
                }
                None => {
                    let mut d = [0u8; quic::MAX_CID_LEN];
                    d[..h.dcid.len()].copy_from_slice(h.dcid);
                    let len = h.dcid.len();
                    self.quic_client(ctx, key, from_lo, pkt, &h, h.version, (d, len), false, f);
                }
            }
        }
    }

    /// A client Initial: decrypt with the keys of the connection's first DCID, add its
    /// CRYPTO frames, fingerprint the ClientHello once whole.
    #[allow(clippy::too_many_arguments)]
    fn quic_client<F: FnMut(&Event)>(
        &mut self,
        ctx: &Ctx,
        key: ConnKey,
        from_lo: bool,
        pkt: &[u8],
        h: &quic::InitialHeader,
        version: u32,
        (dcid, dcid_len): ([u8; quic::MAX_CID_LEN], usize),
        known: bool,
        f: &mut F,
    ) {
        let now = ctx.ts_ns;
        let Some(keys) = quic::initial_keys(version, &dcid[..dcid_len], false) else {
            return;
        };
        let Scratch {
            out,
            ja4,
            quic_plain,
            quic_crypto,
            ..
        } = &mut self.s;
        let Some(n) = quic::decrypt(pkt, h, &keys, quic_plain) else {
            return;
        };
        let plain = &quic_plain[..n];
        if known {
            let Some(c) = self.quic.get_mut(&key, now) else {
                return;
            };
            let cs = c.crypto.get_or_insert_with(Box::default);
            if quic::crypto_frames(plain, |o, d| cs.add(o, d)).is_none() {
                self.counters.unparsed += 1;
                return;
            }
            if let Some(msg) = cs.first_message() {
                c.client_done = true;
                quic_client_hello(msg, &self.cfg, ja4, out, &mut self.counters, ctx, f);
            }
            return;
        }
        quic_crypto.clear();
        if quic::crypto_frames(plain, |o, d| quic_crypto.add(o, d)).is_none() {
            self.counters.unparsed += 1;
            return;
        }
        let whole = match quic_crypto.first_message() {
            Some(msg) => {
                quic_client_hello(msg, &self.cfg, ja4, out, &mut self.counters, ctx, f);
                true
            }
            None => false,
        };
        // Remember the connection: for the server's Initial, and for the rest of a
        // ClientHello that did not fit this datagram.
        let entry = self.quic.insert_with(key, now, |old, _| {
            let mut c = old.unwrap_or_default();
            c.version = version;
            c.dcid = dcid;
            c.dcid_len = dcid_len as u8;
            c.client_is_lo = from_lo;
            c.client_done = whole;
            c.server_done = false;
            c
        });
        if let (Some(c), false) = (entry, whole) {
            c.crypto
                .get_or_insert_with(Box::default)
                .clone_from(quic_crypto);
        }
    }

    /// A server Initial: decrypt with the server keys of the client's first DCID and
    /// fingerprint the ServerHello.
    #[allow(clippy::too_many_arguments)]
    fn quic_server<F: FnMut(&Event)>(
        &mut self,
        ctx: &Ctx,
        key: &ConnKey,
        pkt: &[u8],
        h: &quic::InitialHeader,
        version: u32,
        dcid: &[u8],
        f: &mut F,
    ) {
        let Some(keys) = quic::initial_keys(version, dcid, true) else {
            return;
        };
        let Scratch {
            out,
            quic_plain,
            quic_crypto,
            ..
        } = &mut self.s;
        let Some(n) = quic::decrypt(pkt, h, &keys, quic_plain) else {
            return;
        };
        quic_crypto.clear();
        if quic::crypto_frames(&quic_plain[..n], |o, d| quic_crypto.add(o, d)).is_none() {
            self.counters.unparsed += 1;
            return;
        }
        let Some(msg) = quic_crypto.first_message() else {
            return;
        };
        if let Some(c) = self.quic.get_mut(key, ctx.ts_ns) {
            c.server_done = true;
        }
        if msg[0] != HS_SERVER_HELLO || !self.cfg.methods.has(Method::Ja4S) {
            return;
        }
        let ok = ServerHello::parse_body(&msg[HANDSHAKE_HEADER_LEN..])
            .is_some_and(|sh| ja4s::ja4s(&sh, Transport::Quic, out));
        let (value, raw) = (out.value.as_bytes(), out.raw.as_bytes());
        emit_if(ok, ctx, Method::Ja4S, value, raw, &mut self.counters, f);
    }
}

/// Whether a buffer holds a whole HTTP request head (up to the blank line): `\r\n\r\n`
/// or `\n\n` somewhere, found from each line end.
fn head_complete(b: &[u8]) -> bool {
    let mut from = 0;
    while let Some(i) = super::find_byte(&b[from..], b'\n') {
        let nl = from + i;
        match b.get(nl + 1..) {
            Some([b'\n', ..]) => return true,
            Some([b'\r', b'\n', ..]) if nl > 0 && b[nl - 1] == b'\r' => return true,
            _ => {}
        }
        from = nl + 1;
    }
    false
}

#[cfg(test)]
mod head_tests {
    use super::{head_complete, Endpoint};

    /// Endpoints order as their (address bytes, port) tuples do.
    #[test]
    fn endpoint_order_is_the_bytes_order() {
        let mut x = 0x1234_5678_u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for _ in 0..5000 {
            let mut e = [Endpoint::default(); 2];
            for p in &mut e {
                // Few distinct bytes, so ties in leading bytes and ports are common.
                p.addr = std::array::from_fn(|_| (next() % 3) as u8 * 0x7f);
                p.port = (next() % 3) as u16 * 0x7fff;
            }
            let want = (e[0].addr, e[0].port).cmp(&(e[1].addr, e[1].port));
            assert_eq!(e[0].cmp(&e[1]), want, "{e:?}");
        }
    }

    /// The line-end search gives what a scan of every window gives.
    #[test]
    fn head_complete_equals_the_window_scan() {
        let by_windows =
            |b: &[u8]| b.windows(4).any(|w| w == b"\r\n\r\n") || b.windows(2).any(|w| w == b"\n\n");
        let alphabet = [b'\r', b'\n', b'a', b':'];
        let mut x = 0x9e37_79b9_u32;
        for len in 0..40 {
            for _ in 0..300 {
                let b: Vec<u8> = (0..len)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        alphabet[(x % 4) as usize]
                    })
                    .collect();
                assert_eq!(head_complete(&b), by_windows(&b), "{b:?}");
            }
        }
        assert!(head_complete(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"));
        assert!(!head_complete(b"GET / HTTP/1.1\r\nHost: a\r\n\r"));
        assert!(head_complete(b"GET / HTTP/1.0\n\n"));
    }
}
