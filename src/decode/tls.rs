//! TLS ClientHello within one TCP segment (no reassembly): SNI and ALPN, read by the
//! fingerprints' ClientHello parser (which the map's `ja4` also comes from).

use crate::fingerprint::hello::{ClientHello as Hello, HS_CLIENT_HELLO};
use crate::fingerprint::Cursor;

/// TLS record header length.
pub use crate::fingerprint::hello::RECORD_HEADER_LEN;
use crate::fingerprint::hello::{
    CONTENT_HANDSHAKE as RECORD_TYPE_HANDSHAKE, EXT_ALPN, EXT_SERVER_NAME,
};
const SNI_HOST_NAME: u8 = 0;

/// The SNI and ALPN of a ClientHello; at least one is present.
#[derive(Clone, Copy, Debug)]
pub struct ClientHello<'a> {
    /// The first host_name of the server_name extension (valid UTF-8).
    pub sni: Option<&'a str>,
    /// The raw protocol_name_list of the ALPN extension.
    alpn: Option<&'a [u8]>,
    /// The whole ClientHello, as the fingerprints read it.
    pub hello: Hello<'a>,
}

impl<'a> ClientHello<'a> {
    /// Parse a ClientHello from a TCP payload; `None` unless the whole record is present
    /// and it carries an SNI or an ALPN list.
    pub fn parse(payload: &'a [u8]) -> Option<Self> {
        Self::from_hello(Hello::from_record(payload)?)
    }

    /// The SNI and ALPN of a parsed ClientHello (from a QUIC CRYPTO stream, say); `None`
    /// unless it carries one of them.
    pub fn from_hello(hello: Hello<'a>) -> Option<Self> {
        let sni = hello.server_name.and_then(|n| core::str::from_utf8(n).ok());
        let alpn = hello.alpn_list;
        (sni.is_some() || alpn.is_some()).then_some(ClientHello { sni, alpn, hello })
    }

    /// Whether an ALPN extension was present.
    pub fn has_alpn(&self) -> bool {
        self.alpn.is_some()
    }

    /// The ALPN protocol names (entries that are not UTF-8 or overrun the list are skipped
    /// or end the list).
    pub fn alpn(&self) -> impl Iterator<Item = &'a str> + 'a {
        let mut r = Cursor::new(self.alpn.unwrap_or(&[]));
        core::iter::from_fn(move || loop {
            if r.is_empty() {
                return None;
            }
            let name = r.vec8()?;
            if let Ok(s) = core::str::from_utf8(name) {
                return Some(s);
            }
        })
    }
}

/// Build a minimal ClientHello record (for tests and fixtures).
pub fn build_client_hello(sni: Option<&str>, alpn: &[&str]) -> Vec<u8> {
    let mut exts = Vec::new();
    if let Some(host) = sni {
        let mut entry = vec![SNI_HOST_NAME];
        entry.extend_from_slice(&(host.len() as u16).to_be_bytes());
        entry.extend_from_slice(host.as_bytes());
        exts.extend_from_slice(&EXT_SERVER_NAME.to_be_bytes());
        exts.extend_from_slice(&((entry.len() + 2) as u16).to_be_bytes());
        exts.extend_from_slice(&(entry.len() as u16).to_be_bytes());
        exts.extend_from_slice(&entry);
    }
    if !alpn.is_empty() {
        let mut list = Vec::new();
        for p in alpn {
            list.push(p.len() as u8);
            list.extend_from_slice(p.as_bytes());
        }
        exts.extend_from_slice(&EXT_ALPN.to_be_bytes());
        exts.extend_from_slice(&((list.len() + 2) as u16).to_be_bytes());
        exts.extend_from_slice(&(list.len() as u16).to_be_bytes());
        exts.extend_from_slice(&list);
    }
    let mut ch = vec![3, 3];
    ch.extend_from_slice(&[7; 32]);
    ch.push(0); // session id
    ch.extend_from_slice(&[0, 2, 0x13, 0x01]); // one cipher suite
    ch.extend_from_slice(&[1, 0]); // null compression
    ch.extend_from_slice(&(exts.len() as u16).to_be_bytes());
    ch.extend_from_slice(&exts);
    let mut hs = vec![HS_CLIENT_HELLO, 0, (ch.len() >> 8) as u8, ch.len() as u8];
    hs.extend_from_slice(&ch);
    let mut rec = vec![RECORD_TYPE_HANDSHAKE, 3, 1];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend_from_slice(&hs);
    rec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sni_and_alpn() {
        let rec = build_client_hello(Some("example.org"), &["h2", "http/1.1"]);
        let ch = ClientHello::parse(&rec).unwrap();
        assert_eq!(ch.sni, Some("example.org"));
        assert_eq!(ch.alpn().collect::<Vec<_>>(), ["h2", "http/1.1"]);
        let only_alpn = build_client_hello(None, &["h2"]);
        assert_eq!(ClientHello::parse(&only_alpn).unwrap().sni, None);
        assert!(ClientHello::parse(&build_client_hello(None, &[])).is_none());
    }

    #[test]
    fn every_cut_is_none() {
        let rec = build_client_hello(Some("example.org"), &["h2"]);
        for cut in 0..rec.len() {
            assert!(ClientHello::parse(&rec[..cut]).is_none(), "cut {cut}");
        }
    }
}
