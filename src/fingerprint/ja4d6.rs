//! JA4D6: the DHCPv6 fingerprint (FoxIO License 1.1), from one DHCPv6 message.
//!
//! `a_b_c`: a = the message type's five-letter name (the five-digit code when unknown),
//! the client DUID length (option 1, four digits, at most 9999, `0000` when absent), `i`
//! when an IA_TA (option 4) is present else `n`, `d` when a client FQDN (option 39) is
//! present else `n`; b = every option code in wire order, the options nested in IA_NA,
//! IA_TA, IA_PD, IA address, IA prefix and relay-message options included (depth first),
//! joined by `-`; c = the option request list (option 6, every occurrence) joined by `-`.
//! An empty b or c is `00`.

use super::ja4d::{fill_part_a, start_value};
use super::{end_dash_list, push_dash_item, Cursor, Text};

/// UDP ports DHCPv6 is read on (client, server).
pub const PORTS: [u16; 2] = [546, 547];

const OPT_CLIENT_ID: u16 = 1;
const OPT_IA_TA: u16 = 4;
const OPT_ORO: u16 = 6;
const OPT_RELAY_MSG: u16 = 9;
const OPT_CLIENT_FQDN: u16 = 39;
const MAX_DEPTH: usize = 8;
const RELAY_FORW: u8 = 12;
const RELAY_REPL: u8 = 13;
const RELAY_HEADER_LEN: usize = 34;
const MESSAGE_HEADER_LEN: usize = 4;

const TYPES: [&[u8; 5]; 37] = [
    b"solct", b"advrt", b"reqst", b"confm", b"renew", b"rebnd", b"reply", b"relse", b"decln",
    b"recon", b"inreq", b"rlayf", b"rlayr", b"query", b"qrply", b"qdone", b"qdata", b"rereq",
    b"rrply", b"v4qry", b"v4res", b"acqry", b"sttls", b"bdudp", b"brply", b"poreq", b"pores",
    b"urqst", b"ureqa", b"udone", b"conne", b"connr", b"dconn", b"state", b"conta", b"arinf",
    b"arrep",
];

/// The header length before the nested options of a container option.
fn nested_header(code: u16) -> Option<usize> {
    match code {
        3 | 25 => Some(12), // IA_NA, IA_PD: IAID, T1, T2
        4 => Some(4),       // IA_TA: IAID
        5 => Some(24),      // IA address: address, preferred and valid lifetimes
        26 => Some(25),     // IA prefix: lifetimes, prefix length, prefix
        _ => None,
    }
}

/// What a walk over a message collects.
#[derive(Default)]
struct Found {
    duid_len: Option<usize>,
    ia_ta: bool,
    fqdn: bool,
}

/// The options of a DHCPv6 message (after its type byte's header).
fn options_of(msg: &[u8]) -> Option<&[u8]> {
    let ty = *msg.first()?;
    let hdr = if ty == RELAY_FORW || ty == RELAY_REPL {
        RELAY_HEADER_LEN
    } else {
        MESSAGE_HEADER_LEN
    };
    msg.get(hdr..)
}

/// Walk `opts` depth first, writing codes (when `codes` is given) and collecting fields.
fn walk<const N: usize>(
    opts: &[u8],
    depth: usize,
    found: &mut Found,
    codes: &mut Text<N>,
    oro: &mut Text<N>,
) -> Option<()> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut c = Cursor::new(opts);
    while !c.is_empty() {
        let code = c.u16()?;
        let data = c.vec16()?;
        push_dash_item(codes, u64::from(code));
        match code {
            OPT_CLIENT_ID if found.duid_len.is_none() => found.duid_len = Some(data.len()),
            OPT_IA_TA => found.ia_ta = true,
            OPT_CLIENT_FQDN => found.fqdn = true,
            OPT_ORO => {
                for p in data.chunks_exact(2) {
                    push_dash_item(oro, u64::from(u16::from_be_bytes([p[0], p[1]])));
                }
            }
            _ => {}
        }
        if code == OPT_RELAY_MSG {
            walk(options_of(data)?, depth + 1, found, codes, oro)?;
        } else if let Some(h) = nested_header(code) {
            walk(data.get(h..)?, depth + 1, found, codes, oro)?;
        }
    }
    Some(())
}

/// Compute JA4D6 of a DHCPv6 message (the UDP payload) into `out`, using `oro` as scratch;
/// `false` when it is malformed or a value overflowed.
pub fn ja4d6<const N: usize>(msg: &[u8], out: &mut Text<N>, oro: &mut Text<N>) -> bool {
    oro.clear();
    let Some(opts) = options_of(msg) else {
        out.clear();
        return false;
    };
    start_value(out);
    let b_start = out.len();
    let mut found = Found::default();
    if walk(opts, 0, &mut found, out, oro).is_none() {
        return false;
    }
    end_dash_list(out, b_start);
    out.push(b'_');
    end_dash_list(oro, 0);
    out.push_bytes(oro.as_bytes());
    fill_part_a(
        out,
        &TYPES,
        msg[0],
        found.duid_len.unwrap_or(0),
        found.ia_ta,
        found.fqdn,
    );
    !out.overflowed() && !oro.overflowed()
}
