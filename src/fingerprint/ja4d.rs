//! JA4D: the DHCP fingerprint (FoxIO License 1.1), from one DHCPv4 message.
//!
//! `a_b_c`: a = the message type's five-letter name (option 53; the five-digit code when
//! unknown), the maximum message size (option 57, four digits, at most 9999, `0000` when
//! absent), `i` when a specific address is requested (option 50) else `n`, `d` when a
//! client FQDN with a name is present (option 81 longer than its 3-byte header) else `n`;
//! b = the option codes in wire order, without 0, 50, 53, 81 and 255, joined by `-`;
//! c = the parameter request list (option 55, every occurrence) joined by `-`. An empty b
//! or c is `00`. A message without option 53 gives no fingerprint.

use super::{digits5, end_dash_list, push_dash_item_u8, Cursor, Text};

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

/// Width of part a of JA4D and JA4D6: the type (5), the size (4) and the two flags.
pub(crate) const A_LEN: usize = 11;

/// Start a JA4D or JA4D6 value: a placeholder for part a (its fields are known only once
/// every option is read) and the `_` after it.
pub(crate) fn start_value<const N: usize>(out: &mut Text<N>) {
    out.clear();
    out.push_bytes(&[b'0'; A_LEN]);
    out.push(b'_');
}

/// Fill in part a of a value begun with [`start_value`]: the message type's name in
/// `table` (1-based; its five-digit code when unknown), `size` in four digits (at most
/// 9999), `i` when `flag_i` else `n`, `d` when `flag_d` else `n`.
pub(crate) fn fill_part_a<const N: usize>(
    out: &mut Text<N>,
    table: &[&[u8; 5]],
    ty: u8,
    size: usize,
    flag_i: bool,
    flag_d: bool,
) {
    let mut a = [0u8; A_LEN];
    match usize::from(ty).checked_sub(1).and_then(|i| table.get(i)) {
        Some(name) => a[..5].copy_from_slice(&name[..]),
        None => a[..5].copy_from_slice(&digits5(u32::from(ty))),
    }
    let size = size.min(9999) as u32;
    a[5..9].copy_from_slice(&digits5(size)[1..]);
    a[9] = if flag_i { b'i' } else { b'n' };
    a[10] = if flag_d { b'd' } else { b'n' };
    out.overwrite(0, &a);
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

/// Parameter request lists (option 55) kept from the pass over the options; a message
/// with more reads its options once more for part c.
const KEPT_PARAMETER_LISTS: usize = 4;

/// Compute JA4D of a DHCP message (the UDP payload) into `out`; `false` when it is not a
/// DHCP message with a message type, or the value overflowed. One pass over the options
/// writes part b and collects part a's fields and the parameter request lists.
pub fn ja4d<const N: usize>(msg: &[u8], out: &mut Text<N>) -> bool {
    out.clear();
    let Some(opts) = msg.get(BOOTP_LEN + MAGIC.len()..) else {
        return false;
    };
    if msg[BOOTP_LEN..BOOTP_LEN + MAGIC.len()] != MAGIC {
        return false;
    }
    start_value(out);
    let b_start = out.len();
    let mut msg_type = None;
    let mut max_size = None;
    let mut requested_ip = false;
    let mut fqdn = false;
    let mut params: [&[u8]; KEPT_PARAMETER_LISTS] = [&[]; KEPT_PARAMETER_LISTS];
    let mut n_params = 0;
    for o in options(opts) {
        let Some((code, data)) = o else {
            return false;
        };
        match code {
            OPT_PAD => continue,
            OPT_MESSAGE_TYPE => {
                msg_type = msg_type.or(data.first().copied());
                continue;
            }
            OPT_REQUESTED_IP => {
                requested_ip = true;
                continue;
            }
            OPT_CLIENT_FQDN => {
                fqdn |= data.len() > FQDN_HEADER_LEN;
                continue;
            }
            OPT_MAX_SIZE if max_size.is_none() && data.len() >= 2 => {
                max_size = Some(u16::from_be_bytes([data[0], data[1]]));
            }
            OPT_PARAMETER_LIST => {
                if let Some(slot) = params.get_mut(n_params) {
                    *slot = data;
                }
                n_params += 1;
            }
            _ => {}
        }
        push_dash_item_u8(out, code);
    }
    let Some(msg_type) = msg_type else {
        return false;
    };
    end_dash_list(out, b_start);
    out.push(b'_');
    let c_start = out.len();
    if n_params <= KEPT_PARAMETER_LISTS {
        for &p in &params[..n_params] {
            for &x in p {
                push_dash_item_u8(out, x);
            }
        }
    } else {
        for (_, p) in options(opts)
            .flatten()
            .filter(|(c, _)| *c == OPT_PARAMETER_LIST)
        {
            for &x in p {
                push_dash_item_u8(out, x);
            }
        }
    }
    end_dash_list(out, c_start);
    fill_part_a(
        out,
        &TYPES,
        msg_type,
        usize::from(max_size.unwrap_or(0)),
        requested_ip,
        fqdn,
    );
    !out.overflowed()
}
