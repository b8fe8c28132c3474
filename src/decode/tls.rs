//! TLS ClientHello within one TCP segment (no reassembly): SNI and ALPN.

/// TLS record header length.
pub const RECORD_HEADER_LEN: usize = 5;
const RECORD_TYPE_HANDSHAKE: u8 = 22;
const RECORD_MAJOR_VERSION: u8 = 3;
const HANDSHAKE_HEADER_LEN: usize = 4;
const HANDSHAKE_CLIENT_HELLO: u8 = 1;
/// client_version (2) + random (32).
const CLIENT_HELLO_FIXED_LEN: usize = 34;
const EXT_SERVER_NAME: u16 = 0;
const EXT_ALPN: u16 = 16;
const SNI_HOST_NAME: u8 = 0;

/// The SNI and ALPN of a ClientHello; at least one is present.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientHello<'a> {
    /// The first host_name of the server_name extension (valid UTF-8).
    pub sni: Option<&'a str>,
    /// The raw protocol_name_list of the ALPN extension.
    alpn: Option<&'a [u8]>,
}

impl<'a> ClientHello<'a> {
    /// Parse a ClientHello from a TCP payload; `None` unless the whole record is present
    /// and it carries an SNI or an ALPN list.
    pub fn parse(payload: &'a [u8]) -> Option<Self> {
        let rec = payload.get(..RECORD_HEADER_LEN)?;
        if rec[0] != RECORD_TYPE_HANDSHAKE || rec[1] != RECORD_MAJOR_VERSION {
            return None;
        }
        let rec_len = usize::from(u16::from_be_bytes([rec[3], rec[4]]));
        let body = payload.get(RECORD_HEADER_LEN..RECORD_HEADER_LEN + rec_len)?;
        let hs = body.get(..HANDSHAKE_HEADER_LEN)?;
        if hs[0] != HANDSHAKE_CLIENT_HELLO {
            return None;
        }
        let hs_len = usize::from(hs[1]) << 16 | usize::from(hs[2]) << 8 | usize::from(hs[3]);
        let ch = body.get(HANDSHAKE_HEADER_LEN..HANDSHAKE_HEADER_LEN + hs_len)?;
        let mut r = Reader {
            b: ch,
            pos: CLIENT_HELLO_FIXED_LEN,
        };
        r.skip_vec8()?; // session_id
        r.skip_vec16()?; // cipher_suites
        r.skip_vec8()?; // compression_methods
        let mut exts = Reader {
            b: r.vec16()?,
            pos: 0,
        };
        let mut hello = ClientHello {
            sni: None,
            alpn: None,
        };
        while exts.pos < exts.b.len() {
            let ty = exts.u16()?;
            let data = exts.vec16()?;
            match ty {
                EXT_SERVER_NAME if hello.sni.is_none() => hello.sni = first_host_name(data),
                EXT_ALPN if hello.alpn.is_none() => {
                    hello.alpn = Reader { b: data, pos: 0 }.vec16();
                }
                _ => {}
            }
        }
        (hello.sni.is_some() || hello.alpn.is_some()).then_some(hello)
    }

    /// Whether an ALPN extension was present.
    pub fn has_alpn(&self) -> bool {
        self.alpn.is_some()
    }

    /// The ALPN protocol names (entries that are not UTF-8 or overrun the list are skipped
    /// or end the list).
    pub fn alpn(&self) -> impl Iterator<Item = &'a str> + 'a {
        let mut r = Reader {
            b: self.alpn.unwrap_or(&[]),
            pos: 0,
        };
        core::iter::from_fn(move || loop {
            if r.pos >= r.b.len() {
                return None;
            }
            let name = r.vec8()?;
            if let Ok(s) = core::str::from_utf8(name) {
                return Some(s);
            }
        })
    }
}

fn first_host_name(data: &[u8]) -> Option<&str> {
    let mut list = Reader {
        b: Reader { b: data, pos: 0 }.vec16()?,
        pos: 0,
    };
    while list.pos < list.b.len() {
        let ty = list.u8()?;
        let name = list.vec16()?;
        if ty == SNI_HOST_NAME {
            return core::str::from_utf8(name).ok();
        }
    }
    None
}

/// A bounds-checked cursor.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u16(&mut self) -> Option<u16> {
        let s = self.take(2)?;
        Some(u16::from_be_bytes([s[0], s[1]]))
    }
    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = usize::from(self.u8()?);
        self.take(n)
    }
    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = usize::from(self.u16()?);
        self.take(n)
    }
    fn skip_vec8(&mut self) -> Option<()> {
        self.vec8().map(|_| ())
    }
    fn skip_vec16(&mut self) -> Option<()> {
        self.vec16().map(|_| ())
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
    let mut hs = vec![
        HANDSHAKE_CLIENT_HELLO,
        0,
        (ch.len() >> 8) as u8,
        ch.len() as u8,
    ];
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
