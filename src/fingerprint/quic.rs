//! QUIC Initial packets: removing their protection (RFC 9001 §5, RFC 9369 for version 2)
//! and collecting the TLS handshake bytes their CRYPTO frames carry.
//!
//! Initial keys are derived from the client's first Destination Connection ID and the
//! version's public salt, so any observer can read Initial packets. A datagram may hold
//! several coalesced packets; CRYPTO frames may come in any order and across datagrams,
//! so [`CryptoStream`] places them by offset and reports when a whole handshake message
//! is present. Nothing here allocates: decryption runs in a caller's buffer.

use aes::cipher::{BlockEncrypt, KeyInit};
use aes::Aes128;
use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, Nonce, Tag};
use hkdf::Hkdf;
use sha2::Sha256;

use super::Cursor;

/// QUIC version 1 (RFC 9000).
pub const VERSION_1: u32 = 0x0000_0001;
/// QUIC version 2 (RFC 9369).
pub const VERSION_2: u32 = 0x6b33_43cf;

const SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];
const SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb,
    0xf9, 0xbd, 0x2e, 0xd9,
];

/// The longest connection ID (RFC 9000 §17.2).
pub const MAX_CID_LEN: usize = 20;
/// The largest packet decrypted.
pub const MAX_PACKET: usize = 65535;
/// The largest handshake message collected from CRYPTO frames.
pub const MAX_CRYPTO: usize = 16384;

const AEAD_TAG_LEN: usize = 16;
const HP_SAMPLE_LEN: usize = 16;
const FRAME_PADDING: u8 = 0x00;
const FRAME_PING: u8 = 0x01;
const FRAME_ACK: u8 = 0x02;
const FRAME_ACK_ECN: u8 = 0x03;
const FRAME_CRYPTO: u8 = 0x06;
const FRAME_CONNECTION_CLOSE: u8 = 0x1c;

/// Packet protection keys for one direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Keys {
    /// AEAD key.
    pub key: [u8; 16],
    /// AEAD IV.
    pub iv: [u8; 12],
    /// Header protection key.
    pub hp: [u8; 16],
}

fn expand_label(secret: &Hkdf<Sha256>, label: &[u8], out: &mut [u8]) -> Option<()> {
    // HkdfLabel: length (2), label length (1), "tls13 " + label, context length (1) = 0.
    let mut info = [0u8; 2 + 1 + 6 + 16 + 1];
    let n = 6 + label.len();
    if label.len() > 16 {
        return None;
    }
    info[..2].copy_from_slice(&(out.len() as u16).to_be_bytes());
    info[2] = n as u8;
    info[3..9].copy_from_slice(b"tls13 ");
    info[9..9 + label.len()].copy_from_slice(label);
    secret.expand(&info[..3 + n + 1], out).ok()
}

/// The Initial keys of `version` for the connection whose client chose `dcid`; the
/// server's keys when `server`. `None` for versions other than 1 and 2.
pub fn initial_keys(version: u32, dcid: &[u8], server: bool) -> Option<Keys> {
    let (salt, key_l, iv_l, hp_l): (&[u8], &[u8], &[u8], &[u8]) = match version {
        VERSION_1 => (&SALT_V1, b"quic key", b"quic iv", b"quic hp"),
        VERSION_2 => (&SALT_V2, b"quicv2 key", b"quicv2 iv", b"quicv2 hp"),
        _ => return None,
    };
    let initial = Hkdf::<Sha256>::new(Some(salt), dcid);
    let mut secret = [0u8; 32];
    let label: &[u8] = if server { b"server in" } else { b"client in" };
    expand_label(&initial, label, &mut secret)?;
    let s = Hkdf::<Sha256>::from_prk(&secret).ok()?;
    let mut k = Keys {
        key: [0; 16],
        iv: [0; 12],
        hp: [0; 16],
    };
    expand_label(&s, key_l, &mut k.key)?;
    expand_label(&s, iv_l, &mut k.iv)?;
    expand_label(&s, hp_l, &mut k.hp)?;
    Some(k)
}

/// A variable-length integer (RFC 9000 §16).
pub(crate) fn varint(c: &mut Cursor<'_>) -> Option<u64> {
    let first = c.u8()?;
    let len = 1usize << (first >> 6);
    let mut v = u64::from(first & 0x3f);
    for _ in 1..len {
        v = v << 8 | u64::from(c.u8()?);
    }
    Some(v)
}

/// The unprotected fields of a long-header Initial packet.
#[derive(Clone, Copy, Debug)]
pub struct InitialHeader<'a> {
    /// The QUIC version.
    pub version: u32,
    /// Destination Connection ID.
    pub dcid: &'a [u8],
    /// Source Connection ID.
    pub scid: &'a [u8],
    /// Offset of the (protected) packet number.
    pub pn_offset: usize,
    /// End of this packet within the datagram.
    pub end: usize,
}

/// Whether the first byte and version begin a long-header Initial packet of a supported
/// version.
fn initial_type(first: u8, version: u32) -> bool {
    let ty = (first >> 4) & 0x03;
    first & 0xc0 == 0xc0
        && match version {
            VERSION_1 => ty == 0,
            VERSION_2 => ty == 1,
            _ => false,
        }
}

/// Parse the long header of the Initial packet at the start of `b`; `None` when `b` does
/// not start with an Initial of version 1 or 2.
pub fn parse_initial(b: &[u8]) -> Option<InitialHeader<'_>> {
    let mut c = Cursor::new(b);
    let first = c.u8()?;
    let version = c.u32()?;
    if !initial_type(first, version) {
        return None;
    }
    let dcid = c.vec8()?;
    let scid = c.vec8()?;
    if dcid.len() > MAX_CID_LEN || scid.len() > MAX_CID_LEN {
        return None;
    }
    let token_len = usize::try_from(varint(&mut c)?).ok()?;
    c.skip(token_len)?;
    let len = usize::try_from(varint(&mut c)?).ok()?;
    let pn_offset = c.pos;
    let end = pn_offset.checked_add(len)?;
    if end > b.len() || len < 4 + HP_SAMPLE_LEN {
        return None;
    }
    Some(InitialHeader {
        version,
        dcid,
        scid,
        pn_offset,
        end,
    })
}

/// Remove the protection of the Initial packet at the start of `b` (header `h`) with
/// `keys`, writing the plaintext payload into `out`; its length, or `None` when the packet
/// does not authenticate (other keys, or damaged) or does not fit.
pub fn decrypt(b: &[u8], h: &InitialHeader, keys: &Keys, out: &mut [u8]) -> Option<usize> {
    let sample = b.get(h.pn_offset + 4..h.pn_offset + 4 + HP_SAMPLE_LEN)?;
    let hp = Aes128::new(&keys.hp.into());
    let mut mask = aes::Block::clone_from_slice(sample);
    hp.encrypt_block(&mut mask);
    let first = b[0] ^ (mask[0] & 0x0f);
    let pn_len = usize::from(first & 0x03) + 1;
    let hdr_len = h.pn_offset + pn_len;
    let ct_end = h.end.checked_sub(AEAD_TAG_LEN)?;
    if ct_end < hdr_len || ct_end - hdr_len > out.len() {
        return None;
    }
    // The AAD is the unprotected header; rebuild it on the stack.
    let mut aad = [0u8; 1 + 4 + 2 + 2 * MAX_CID_LEN + 8 + 8 + 4 + 64];
    // A header with a long token does not fit the stack copy.
    let aad = aad.get_mut(..hdr_len)?;
    aad.copy_from_slice(&b[..hdr_len]);
    aad[0] = first;
    let mut pn = 0u64;
    for i in 0..pn_len {
        aad[h.pn_offset + i] ^= mask[1 + i];
        pn = pn << 8 | u64::from(aad[h.pn_offset + i]);
    }
    let mut nonce = keys.iv;
    for (i, b) in pn.to_be_bytes().iter().enumerate() {
        nonce[4 + i] ^= b;
    }
    let n = ct_end - hdr_len;
    out[..n].copy_from_slice(&b[hdr_len..ct_end]);
    let tag = Tag::clone_from_slice(&b[ct_end..h.end]);
    let aead = Aes128Gcm::new(&keys.key.into());
    aead.decrypt_in_place_detached(Nonce::from_slice(&nonce), aad, &mut out[..n], &tag)
        .ok()?;
    Some(n)
}

/// Call `f(offset, data)` for each CRYPTO frame of a decrypted Initial payload; `None` when
/// a frame is malformed or not allowed in an Initial packet.
pub fn crypto_frames<'a>(payload: &'a [u8], mut f: impl FnMut(u64, &'a [u8])) -> Option<()> {
    let mut c = Cursor::new(payload);
    while !c.is_empty() {
        match c.u8()? {
            FRAME_PADDING | FRAME_PING => {}
            t @ (FRAME_ACK | FRAME_ACK_ECN) => {
                varint(&mut c)?; // largest acknowledged
                varint(&mut c)?; // delay
                let ranges = varint(&mut c)?;
                varint(&mut c)?; // first range
                for _ in 0..ranges {
                    varint(&mut c)?;
                    varint(&mut c)?;
                }
                if t == FRAME_ACK_ECN {
                    for _ in 0..3 {
                        varint(&mut c)?;
                    }
                }
            }
            FRAME_CRYPTO => {
                let off = varint(&mut c)?;
                let len = usize::try_from(varint(&mut c)?).ok()?;
                f(off, c.take(len)?);
            }
            FRAME_CONNECTION_CLOSE => {
                varint(&mut c)?; // error code
                varint(&mut c)?; // frame type
                let n = usize::try_from(varint(&mut c)?).ok()?;
                c.skip(n)?;
            }
            _ => return None,
        }
    }
    Some(())
}

/// The CRYPTO stream of one direction's Initial packets, placed by offset, up to
/// [`MAX_CRYPTO`] bytes.
#[derive(Clone)]
pub struct CryptoStream {
    data: [u8; MAX_CRYPTO],
    have: [u64; MAX_CRYPTO / 64],
}

impl Default for CryptoStream {
    fn default() -> Self {
        CryptoStream {
            data: [0; MAX_CRYPTO],
            have: [0; MAX_CRYPTO / 64],
        }
    }
}

impl CryptoStream {
    /// Forget every byte.
    pub fn clear(&mut self) {
        self.have = [0; MAX_CRYPTO / 64];
    }

    /// Place `data` at `offset`; bytes beyond [`MAX_CRYPTO`] are dropped.
    pub fn add(&mut self, offset: u64, data: &[u8]) {
        let Ok(start) = usize::try_from(offset) else {
            return;
        };
        if start >= MAX_CRYPTO {
            return;
        }
        let n = data.len().min(MAX_CRYPTO - start);
        self.data[start..start + n].copy_from_slice(&data[..n]);
        for i in start..start + n {
            self.have[i / 64] |= 1 << (i % 64);
        }
    }

    fn complete(&self, end: usize) -> bool {
        let full = end / 64;
        self.have[..full].iter().all(|w| *w == u64::MAX)
            && (end % 64 == 0
                || self.have[full] & ((1u64 << (end % 64)) - 1) == (1u64 << (end % 64)) - 1)
    }

    /// The first handshake message (header and body) when it is whole.
    pub fn first_message(&self) -> Option<&[u8]> {
        if !self.complete(4) {
            return None;
        }
        let len = 4
            + (usize::from(self.data[1]) << 16
                | usize::from(self.data[2]) << 8
                | usize::from(self.data[3]));
        (len <= MAX_CRYPTO && self.complete(len)).then(|| &self.data[..len])
    }
}
