//! JA4T (TCP SYN) and the base of JA4TS (SYN-ACK), FoxIO License 1.1.
//!
//! `window_options_mss_wscale`: the TCP window in decimal, the option kinds in wire order
//! joined by `-`, the MSS value and the window-scale shift; `00` for each one absent. NOP
//! (1) and end-of-options (0) are one byte each and are listed, as are the padding bytes
//! after an end-of-options. The walk stops at an option whose length is invalid.

use super::{end_dash_list, push_dash_item_u8, Text};

/// TCP option kind: end of option list.
pub const OPT_EOL: u8 = 0;
/// TCP option kind: no-operation.
pub const OPT_NOP: u8 = 1;
/// TCP option kind: maximum segment size.
pub const OPT_MSS: u8 = 2;
/// TCP option kind: window scale.
pub const OPT_WSCALE: u8 = 3;

/// TCP flag bits.
pub mod flags {
    /// FIN.
    pub const FIN: u8 = 0x01;
    /// SYN.
    pub const SYN: u8 = 0x02;
    /// RST.
    pub const RST: u8 = 0x04;
    /// PSH.
    pub const PSH: u8 = 0x08;
    /// ACK.
    pub const ACK: u8 = 0x10;
}

/// Write the JA4T form of a TCP header's `window` and `options` bytes into `out`.
pub fn ja4t<const N: usize>(window: u16, options: &[u8], out: &mut Text<N>) {
    out.push_dec(u64::from(window));
    out.push(b'_');
    let start = out.len();
    let mut mss = None;
    let mut wscale = None;
    let mut i = 0;
    while let Some(&kind) = options.get(i) {
        if kind == OPT_EOL || kind == OPT_NOP {
            push_dash_item_u8(out, kind);
            i += 1;
            continue;
        }
        let Some(&len) = options.get(i + 1) else {
            break;
        };
        let len = usize::from(len);
        let Some(data) = options.get(i + 2..i + len.max(2)).filter(|_| len >= 2) else {
            break;
        };
        push_dash_item_u8(out, kind);
        match (kind, data) {
            (OPT_MSS, [a, b]) => mss = Some(u16::from_be_bytes([*a, *b])),
            (OPT_WSCALE, [s]) => wscale = Some(*s),
            _ => {}
        }
        i += len;
    }
    end_dash_list(out, start);
    out.push(b'_');
    match mss {
        Some(m) => out.push_dec(u64::from(m)),
        None => out.push_str("00"),
    }
    out.push(b'_');
    match wscale {
        Some(s) => out.push_dec_u8(s),
        None => out.push_str("00"),
    }
}
