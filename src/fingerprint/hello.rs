//! TLS handshake messages the fingerprints read: ClientHello (TLS and DTLS), ServerHello,
//! and the certificate list of a Certificate message.
//!
//! The parsers borrow the message bytes and check every length before reading; a cut or
//! malformed message gives `None`.

use super::{is_grease, Cursor};

/// TLS record header length.
pub const RECORD_HEADER_LEN: usize = 5;
/// DTLS record header length (type, version, epoch, sequence number, length).
pub const DTLS_RECORD_HEADER_LEN: usize = 13;
/// TLS handshake header length (type, 24-bit length).
pub const HANDSHAKE_HEADER_LEN: usize = 4;
/// DTLS handshake header length (adds message_seq, fragment_offset, fragment_length).
pub const DTLS_HANDSHAKE_HEADER_LEN: usize = 12;

/// Record content type: change_cipher_spec.
pub const CONTENT_CHANGE_CIPHER_SPEC: u8 = 20;
/// Record content type: alert.
pub const CONTENT_ALERT: u8 = 21;
/// Record content type: handshake.
pub const CONTENT_HANDSHAKE: u8 = 22;
/// Record content type: application data.
pub const CONTENT_APPLICATION_DATA: u8 = 23;

/// Handshake type: ClientHello.
pub const HS_CLIENT_HELLO: u8 = 1;
/// Handshake type: ServerHello.
pub const HS_SERVER_HELLO: u8 = 2;
/// Handshake type: Certificate.
pub const HS_CERTIFICATE: u8 = 11;

/// Extension: server_name.
pub const EXT_SERVER_NAME: u16 = 0x0000;
/// Extension: signature_algorithms.
pub const EXT_SIGNATURE_ALGORITHMS: u16 = 0x000d;
/// Extension: application_layer_protocol_negotiation.
pub const EXT_ALPN: u16 = 0x0010;
/// Extension: supported_versions.
pub const EXT_SUPPORTED_VERSIONS: u16 = 0x002b;

/// TLS 1.3.
pub const TLS13: u16 = 0x0304;

/// client_version (2) + random (32).
const HELLO_FIXED_LEN: usize = 34;

/// Whether a record header starts a TLS record of `content_type` (major version 3).
#[inline]
pub fn is_record(b: &[u8], content_type: u8) -> bool {
    b.len() >= 2 && b[0] == content_type && b[1] == 3
}

/// The fields of a ClientHello the JA4 fingerprint reads.
#[derive(Clone, Copy, Debug)]
pub struct ClientHello<'a> {
    /// legacy_version.
    pub legacy_version: u16,
    /// The cipher_suites vector (pairs of bytes).
    pub ciphers: &'a [u8],
    /// The extensions block (type, length, data repeated), empty when absent.
    pub extensions: &'a [u8],
    /// Whether a server_name extension is present.
    pub has_sni: bool,
    /// The supported_versions list (pairs of bytes), when the extension is present.
    pub supported_versions: Option<&'a [u8]>,
    /// The signature_algorithms list (pairs of bytes), empty when absent.
    pub signature_algorithms: &'a [u8],
    /// The first ALPN protocol name, when an ALPN extension is present and not empty.
    pub alpn_first: Option<&'a [u8]>,
    /// The ALPN protocol_name_list, when an ALPN extension is present.
    pub alpn_list: Option<&'a [u8]>,
    /// The first host_name of the server_name extension.
    pub server_name: Option<&'a [u8]>,
}

/// Iterate the (type, data) of an extensions block; ends early when it is malformed.
pub fn extensions(block: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    let mut c = Cursor::new(block);
    core::iter::from_fn(move || {
        if c.is_empty() {
            return None;
        }
        let ty = c.u16()?;
        let data = c.vec16()?;
        Some((ty, data))
    })
}

/// Whether an extensions block parses to its end.
fn extensions_well_formed(block: &[u8]) -> bool {
    let mut c = Cursor::new(block);
    while !c.is_empty() {
        if c.u16().is_none() || c.vec16().is_none() {
            return false;
        }
    }
    true
}

/// Iterate the u16 values of a list of byte pairs (an odd last byte is ignored).
#[inline]
pub fn u16s(b: &[u8]) -> impl Iterator<Item = u16> + '_ {
    b.chunks_exact(2).map(|p| u16::from_be_bytes([p[0], p[1]]))
}

impl<'a> ClientHello<'a> {
    /// Parse a ClientHello handshake body (after the handshake header). `dtls` reads the
    /// DTLS form, which has a cookie after the session id.
    pub fn parse_body(body: &'a [u8], dtls: bool) -> Option<Self> {
        let mut c = Cursor::new(body);
        let legacy_version = c.u16()?;
        c.skip(HELLO_FIXED_LEN - 2)?;
        c.vec8()?; // session_id
        if dtls {
            c.vec8()?; // cookie
        }
        let ciphers = c.vec16()?;
        if ciphers.len() % 2 != 0 {
            return None;
        }
        c.vec8()?; // compression_methods
        let exts = if c.is_empty() { &[][..] } else { c.vec16()? };
        if !extensions_well_formed(exts) {
            return None;
        }
        let mut h = ClientHello {
            legacy_version,
            ciphers,
            extensions: exts,
            has_sni: false,
            supported_versions: None,
            signature_algorithms: &[],
            alpn_first: None,
            alpn_list: None,
            server_name: None,
        };
        for (ty, data) in extensions(exts) {
            match ty {
                EXT_SERVER_NAME => {
                    h.has_sni = true;
                    if h.server_name.is_none() {
                        h.server_name = first_host_name(data);
                    }
                }
                EXT_SUPPORTED_VERSIONS if h.supported_versions.is_none() => {
                    h.supported_versions = Cursor::new(data).vec8();
                }
                EXT_SIGNATURE_ALGORITHMS if h.signature_algorithms.is_empty() => {
                    h.signature_algorithms = Cursor::new(data).vec16().unwrap_or(&[]);
                }
                EXT_ALPN if h.alpn_list.is_none() => {
                    h.alpn_list = Cursor::new(data).vec16();
                    h.alpn_first = h
                        .alpn_list
                        .and_then(|list| Cursor::new(list).vec8())
                        .filter(|v| !v.is_empty());
                }
                _ => {}
            }
        }
        Some(h)
    }

    /// The ClientHello of a TCP payload that starts with a whole TLS handshake record
    /// carrying a whole ClientHello.
    pub fn from_record(payload: &'a [u8]) -> Option<Self> {
        let body = handshake_in_record(payload, HS_CLIENT_HELLO)?;
        Self::parse_body(body, false)
    }

    /// The ClientHello of a DTLS record (an unfragmented ClientHello in the first record).
    pub fn from_dtls_record(payload: &'a [u8]) -> Option<Self> {
        Self::parse_body(dtls_client_hello_body(payload)?, true)
    }

    /// The negotiated-to-be version: the highest supported_versions entry (GREASE
    /// ignored), else legacy_version. For DTLS the numerically lowest DTLS value is the
    /// highest version.
    pub fn version(&self) -> u16 {
        match self.supported_versions {
            Some(list) => u16s(list)
                .filter(|v| !is_grease(*v))
                .max_by_key(|v| version_rank(*v))
                .unwrap_or(self.legacy_version),
            None => self.legacy_version,
        }
    }
}

/// Order of versions: TLS by value, DTLS 1.0/1.2/1.3 beside TLS 1.1/1.2/1.3.
fn version_rank(v: u16) -> u32 {
    match v {
        0xfeff => 0x0302 * 2 + 1,
        0xfefd => 0x0303 * 2 + 1,
        0xfefc => 0x0304 * 2 + 1,
        _ => u32::from(v) * 2,
    }
}

/// The two-character version code of the JA4 family.
pub fn version_code(v: u16) -> &'static [u8; 2] {
    match v {
        0x0304 => b"13",
        0x0303 => b"12",
        0x0302 => b"11",
        0x0301 => b"10",
        0x0300 => b"s3",
        0x0002 => b"s2",
        0xfeff => b"d1",
        0xfefd => b"d2",
        0xfefc => b"d3",
        _ => b"00",
    }
}

fn first_host_name(data: &[u8]) -> Option<&[u8]> {
    let mut list = Cursor::new(Cursor::new(data).vec16()?);
    while !list.is_empty() {
        let ty = list.u8()?;
        let name = list.vec16()?;
        if ty == 0 {
            return Some(name);
        }
    }
    None
}

/// The body of the first handshake message of `hs_type` in a payload that starts with a
/// whole TLS handshake record holding the whole message.
pub fn handshake_in_record(payload: &[u8], hs_type: u8) -> Option<&[u8]> {
    if !is_record(payload, CONTENT_HANDSHAKE) {
        return None;
    }
    let mut c = Cursor::new(payload);
    c.skip(3)?;
    let rec = c.vec16()?;
    let mut h = Cursor::new(rec);
    if h.u8()? != hs_type {
        return None;
    }
    h.vec24()
}

/// The ClientHello body of a DTLS record that carries an unfragmented ClientHello.
pub fn dtls_client_hello_body(payload: &[u8]) -> Option<&[u8]> {
    let mut c = Cursor::new(payload);
    if c.u8()? != CONTENT_HANDSHAKE || c.u8()? != 0xfe {
        return None;
    }
    c.skip(DTLS_RECORD_HEADER_LEN - 2 - 2)?; // minor version, epoch, sequence
    let mut h = Cursor::new(c.vec16()?);
    if h.u8()? != HS_CLIENT_HELLO {
        return None;
    }
    let len = h.u24()?;
    h.skip(2)?; // message_seq
    let frag_off = h.u24()?;
    let frag_len = h.u24()?;
    if frag_off != 0 || frag_len != len {
        return None;
    }
    h.take(len)
}

/// The fields of a ServerHello the JA4S fingerprint reads.
#[derive(Clone, Copy, Debug)]
pub struct ServerHello<'a> {
    /// legacy_version.
    pub legacy_version: u16,
    /// The chosen cipher suite.
    pub cipher: u16,
    /// The extensions block, empty when absent.
    pub extensions: &'a [u8],
    /// The selected version from supported_versions, when present.
    pub selected_version: Option<u16>,
    /// The chosen ALPN protocol, when present.
    pub alpn: Option<&'a [u8]>,
}

impl<'a> ServerHello<'a> {
    /// Parse a ServerHello handshake body.
    pub fn parse_body(body: &'a [u8]) -> Option<Self> {
        let mut c = Cursor::new(body);
        let legacy_version = c.u16()?;
        c.skip(HELLO_FIXED_LEN - 2)?;
        c.vec8()?; // session_id
        let cipher = c.u16()?;
        c.u8()?; // compression_method
        let exts = if c.is_empty() { &[][..] } else { c.vec16()? };
        let mut s = ServerHello {
            legacy_version,
            cipher,
            extensions: exts,
            selected_version: None,
            alpn: None,
        };
        // One walk checks that the block parses to its end and finds the two read here.
        let mut e = Cursor::new(exts);
        while !e.is_empty() {
            let ty = e.u16()?;
            let data = e.vec16()?;
            match ty {
                EXT_SUPPORTED_VERSIONS if data.len() == 2 => {
                    s.selected_version = Some(u16::from_be_bytes([data[0], data[1]]));
                }
                EXT_ALPN if s.alpn.is_none() => {
                    s.alpn = Cursor::new(data)
                        .vec16()
                        .and_then(|list| Cursor::new(list).vec8())
                        .filter(|v| !v.is_empty());
                }
                _ => {}
            }
        }
        Some(s)
    }

    /// The ServerHello of a payload that starts with a whole handshake record holding it.
    pub fn from_record(payload: &'a [u8]) -> Option<Self> {
        Self::parse_body(handshake_in_record(payload, HS_SERVER_HELLO)?)
    }

    /// The negotiated version.
    pub fn version(&self) -> u16 {
        self.selected_version.unwrap_or(self.legacy_version)
    }
}

/// The DER certificates of a TLS 1.2 Certificate message body; ends early when malformed.
pub fn certificates(body: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut c = Cursor::new(Cursor::new(body).vec24().unwrap_or(&[]));
    core::iter::from_fn(move || {
        if c.is_empty() {
            return None;
        }
        c.vec24()
    })
}

/// The first two bytes of an ALPN value as the JA4 family writes them: the first and last
/// characters when both are ASCII letters or digits, else the first and last hex digits
/// of the value; `00` when there is none.
pub fn alpn_code(v: Option<&[u8]>) -> [u8; 2] {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match v {
        Some(s) if !s.is_empty() => {
            let (f, l) = (s[0], s[s.len() - 1]);
            if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() {
                [f, l]
            } else {
                [HEX[usize::from(f >> 4)], HEX[usize::from(l & 15)]]
            }
        }
        _ => *b"00",
    }
}

/// Build a ClientHello record (for tests, fixtures and benchmarks): the given cipher
/// suites, extensions (type, data) in order, legacy_version 0x0303.
pub fn build_client_hello(ciphers: &[u16], extensions: &[(u16, Vec<u8>)]) -> Vec<u8> {
    let mut ch = vec![3, 3];
    ch.extend_from_slice(&[7; 32]);
    ch.push(32);
    ch.extend_from_slice(&[9; 32]); // session id
    ch.extend_from_slice(&((ciphers.len() * 2) as u16).to_be_bytes());
    for c in ciphers {
        ch.extend_from_slice(&c.to_be_bytes());
    }
    ch.extend_from_slice(&[1, 0]);
    let mut exts = Vec::new();
    for (ty, data) in extensions {
        exts.extend_from_slice(&ty.to_be_bytes());
        exts.extend_from_slice(&(data.len() as u16).to_be_bytes());
        exts.extend_from_slice(data);
    }
    ch.extend_from_slice(&(exts.len() as u16).to_be_bytes());
    ch.extend_from_slice(&exts);
    wrap_handshake(HS_CLIENT_HELLO, &ch)
}

/// Wrap a handshake body in a handshake header and one TLS record.
pub fn wrap_handshake(hs_type: u8, body: &[u8]) -> Vec<u8> {
    let mut hs = vec![
        hs_type,
        (body.len() >> 16) as u8,
        (body.len() >> 8) as u8,
        body.len() as u8,
    ];
    hs.extend_from_slice(body);
    let mut rec = vec![CONTENT_HANDSHAKE, 3, 1];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}
