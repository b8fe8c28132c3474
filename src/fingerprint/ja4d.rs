//! JA4D: the DHCP fingerprint (FoxIO License 1.1), from one DHCPv4 message.
//!
//! `a_b_c`: a = the message type's five-letter name (option 53; the five-digit code when
//! unknown), the maximum message size (option 57, four digits, at most 9999, `0000` when
//! absent), `i` when a specific address is requested (option 50) else `n`, `d` when a
//! client FQDN with a name is present (option 81 longer than its 3-byte header) else `n`;
//! b = the option codes in wire order, without 0, 50, 53, 81 and 255, joined by `-`;
//! c = the parameter request list (option 55, every occurrence) joined by `-`. An empty b
//! or c is `00`. A message without option 53 gives no fingerprint.

use super::{push_dash_list, Cursor, Text};

/// UDP ports DHCP is read on (server, client, PXE).
pub const PORTS: [u16; 3] = [67, 68, 4011];
/// BOOTP fixed header length, before the magic cookie.
const BOOTP_LEN: usize = 236;
const MAGIC: [u8; 4] = [0x63, 0x82, 0x53, 0x63];

const OPT_PAD: u8 = 0;
const OPT_REQUESTED_IP: u8 = 50;
const OPT_MESSAGE_TYPE: u8 = 53;
const OPT_PARAMETER_LIST: u8 = 55;
const OPT_MAX_SIZE: u8 = 57;
const OPT_CLIENT_FQDN: u8 = 81;
const OPT_END: u8 = 255;
const FQDN_HEADER_LEN: usize = 3;

const TYPES: [&[u8; 5]; 18] = [
    b"disco", b"offer", b"reqst", b"decln", b"dpack", b"dpnak", b"relse", b"infor", b"frenw",
    b"lqery", b"lunas", b"lunkn", b"lactv", b"blklq", b"lqdon", b"actlq", b"lqsta", b"dhtls",
];

/// Write a message-type name (1-based table) or the five-digit code.
pub(crate) fn push_type<const N: usize>(t: &mut Text<N>, table: &[&[u8; 5]], code: u8) {
    match usize::from(code).checked_sub(1).and_then(|i| table.get(i)) {
        Some(name) => t.push_bytes(&name[..]),
        None => t.push_dec_width(u64::from(code), 5),
    }
}

/// The options of a DHCP message: (code, data) until End; `None` items mean malformed.
fn options(b: &[u8]) -> impl Iterator<Item = Option<(u8, &[u8])>> {
    let mut c = Cursor::new(b);
    let mut done = false;
    core::iter::from_fn(move || {
        if done || c.is_empty() {
            return None;
        }
        let code = c.u8()?;
        if code == OPT_PAD {
            return Some(Some((OPT_PAD, &[][..])));
        }
        if code == OPT_END {
            done = true;
            return None;
        }
        match c.vec8() {
            Some(data) => Some(Some((code, data))),
            None => {
                done = true;
                Some(None)
            }
        }
    })
}

/// Compute JA4D of a DHCP message (the UDP payload) into `out`; `false` when it is not a
/// DHCP message with a message type, or the value overflowed.
pub fn ja4d<const N: usize>(msg: &[u8], out: &mut Text<N>) -> bool {
    out.clear();
    let Some(opts) = msg.get(BOOTP_LEN + MAGIC.len()..) else {
        return false;
    };
    if msg[BOOTP_LEN..BOOTP_LEN + MAGIC.len()] != MAGIC {
        return false;
    }
    let mut msg_type = None;
    let mut max_size = None;
    let mut requested_ip = false;
    let mut fqdn = false;
    for o in options(opts) {
        let Some((code, data)) = o else {
            return false;
        };
        match code {
            OPT_MESSAGE_TYPE if msg_type.is_none() => msg_type = data.first().copied(),
            OPT_MAX_SIZE if max_size.is_none() && data.len() >= 2 => {
                max_size = Some(u16::from_be_bytes([data[0], data[1]]));
            }
            OPT_REQUESTED_IP => requested_ip = true,
            OPT_CLIENT_FQDN => fqdn |= data.len() > FQDN_HEADER_LEN,
            _ => {}
        }
    }
    let Some(msg_type) = msg_type else {
        return false;
    };
    push_type(out, &TYPES, msg_type);
    out.push_dec_width(u64::from(max_size.unwrap_or(0).min(9999)), 4);
    out.push(if requested_ip { b'i' } else { b'n' });
    out.push(if fqdn { b'd' } else { b'n' });
    out.push(b'_');
    push_dash_list(
        out,
        options(opts).flatten().filter_map(|(c, _)| {
            (!matches!(
                c,
                OPT_PAD | OPT_REQUESTED_IP | OPT_MESSAGE_TYPE | OPT_CLIENT_FQDN
            ))
            .then_some(u64::from(c))
        }),
    );
    out.push(b'_');
    push_dash_list(
        out,
        options(opts)
            .flatten()
            .filter(|(c, _)| *c == OPT_PARAMETER_LIST)
            .flat_map(|(_, d)| d.iter().map(|&p| u64::from(p))),
    );
    !out.overflowed()
}
