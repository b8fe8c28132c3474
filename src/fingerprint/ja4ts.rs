//! JA4TS: the TCP server response fingerprint (FoxIO License 1.1).
//!
//! The JA4T form of the SYN-ACK, and once the server retransmits it, `_` and the delays
//! between successive SYN-ACKs in whole seconds (rounded half away from zero) joined by
//! `-`; a RST after them adds `-R<delay>`. One value is given per SYN-ACK and per server
//! RST, each extending the one before; at most [`MAX_RETRANSMISSIONS`] delays are kept.

use super::ja4t::ja4t;
use super::Text;

/// The most SYN-ACK retransmissions counted.
pub const MAX_RETRANSMISSIONS: usize = 10;
/// The most TCP option bytes (a 60-byte header holds 40).
pub const MAX_OPTIONS: usize = 40;

/// What one connection's JA4TS keeps between packets.
#[derive(Clone, Copy, Debug)]
pub struct Ja4tsState {
    window: u16,
    options: [u8; MAX_OPTIONS],
    options_len: u8,
    last_ns: i64,
    delays: [u32; MAX_RETRANSMISSIONS],
    n: u8,
    done: bool,
}

/// Whole seconds between two times, rounded half away from zero.
fn delay_seconds(later_ns: i64, earlier_ns: i64) -> i64 {
    let d = later_ns.saturating_sub(earlier_ns);
    let half = 500_000_000;
    if d >= 0 {
        (d + half) / 1_000_000_000
    } else {
        -((-d + half) / 1_000_000_000)
    }
}

impl Ja4tsState {
    /// State after the first SYN-ACK, whose value is written into `out`.
    pub fn first<const N: usize>(
        ts_ns: i64,
        window: u16,
        options: &[u8],
        out: &mut Text<N>,
    ) -> Self {
        let mut s = Ja4tsState {
            window,
            options: [0; MAX_OPTIONS],
            options_len: 0,
            last_ns: ts_ns,
            delays: [0; MAX_RETRANSMISSIONS],
            n: 0,
            done: false,
        };
        let n = options.len().min(MAX_OPTIONS);
        s.options[..n].copy_from_slice(&options[..n]);
        s.options_len = n as u8;
        ja4t(window, &options[..n], out);
        s
    }

    fn write_base<const N: usize>(&self, out: &mut Text<N>) {
        ja4t(
            self.window,
            &self.options[..usize::from(self.options_len)],
            out,
        );
        for (i, d) in self.delays[..usize::from(self.n)].iter().enumerate() {
            out.push(if i == 0 { b'_' } else { b'-' });
            out.push_dec(u64::from(*d));
        }
    }

    /// A retransmitted SYN-ACK; `false` (nothing written) once the count is reached or
    /// after a RST.
    pub fn retransmission<const N: usize>(&mut self, ts_ns: i64, out: &mut Text<N>) -> bool {
        if self.done || usize::from(self.n) >= MAX_RETRANSMISSIONS {
            return false;
        }
        let d = delay_seconds(ts_ns, self.last_ns).clamp(0, i64::from(u32::MAX));
        self.delays[usize::from(self.n)] = d as u32;
        self.n += 1;
        self.last_ns = ts_ns;
        self.write_base(out);
        true
    }

    /// A RST from the server: the value so far, with `-R<delay>` when the server had
    /// retransmitted (the value of the reference's Wireshark dissector and of `ja4plus`,
    /// which repeat the SYN-ACK's value on a RST). Retransmissions after it are not counted.
    pub fn reset<const N: usize>(&mut self, ts_ns: i64, out: &mut Text<N>) -> bool {
        self.done = true;
        self.write_base(out);
        if self.n == 0 {
            return true;
        }
        out.push_str("-R");
        let d = delay_seconds(ts_ns, self.last_ns);
        if d < 0 {
            out.push(b'-');
        }
        out.push_dec(d.unsigned_abs());
        true
    }
}
