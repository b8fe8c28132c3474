//! JA4SSH: the SSH traffic fingerprint (FoxIO License 1.1), one value per window of SSH
//! packets of a connection.
//!
//! `c<mode>s<mode>_c<packets>s<packets>_c<acks>s<acks>`: the most frequent TCP payload
//! length of the client's and the server's SSH packets (the smaller one on a tie, 0 when a
//! side sent none), how many SSH packets (TCP segments with payload) each side sent, and how
//! many bare ACKs (flags exactly ACK, no payload) each side sent. A window closes after
//! [`DEFAULT_WINDOW`] SSH packets of both sides together, when the connection ends
//! (FIN+ACK), and at the end of the capture ([`super::Fingerprinter::finish`]); a window
//! without SSH packets gives no value.

use super::Text;

/// SSH packets per window (FoxIO's default).
pub const DEFAULT_WINDOW: usize = 200;

/// One window of one SSH connection.
#[derive(Clone, Copy, Debug)]
pub struct Ja4sshWindow {
    lens: [u16; DEFAULT_WINDOW],
    from_server: [u8; DEFAULT_WINDOW.div_ceil(8)],
    n: u16,
    acks: [u32; 2],
}

impl Default for Ja4sshWindow {
    fn default() -> Self {
        Ja4sshWindow {
            lens: [0; DEFAULT_WINDOW],
            from_server: [0; DEFAULT_WINDOW.div_ceil(8)],
            n: 0,
            acks: [0; 2],
        }
    }
}

/// The smallest most frequent value of a sorted slice (0 when empty).
fn mode_of_sorted(v: &[u16]) -> u16 {
    let (mut best, mut best_n) = (0u16, 0usize);
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j < v.len() && v[j] == v[i] {
            j += 1;
        }
        if j - i > best_n {
            best = v[i];
            best_n = j - i;
        }
        i = j;
    }
    best
}

impl Ja4sshWindow {
    /// Count one segment: `payload_len > 0` is an SSH packet, else `bare_ack` counts an ACK.
    /// `true` when the window is full (write it with [`Ja4sshWindow::finish`]).
    pub fn add(&mut self, from_server: bool, payload_len: usize, bare_ack: bool) -> bool {
        if payload_len > 0 {
            let i = usize::from(self.n);
            if i < DEFAULT_WINDOW {
                self.lens[i] = payload_len.min(usize::from(u16::MAX)) as u16;
                if from_server {
                    self.from_server[i / 8] |= 1 << (i % 8);
                }
                self.n += 1;
            }
        } else if bare_ack {
            let a = &mut self.acks[usize::from(from_server)];
            *a = a.saturating_add(1);
        }
        usize::from(self.n) >= DEFAULT_WINDOW
    }

    /// Whether the window holds no SSH packet (such a window gives no value).
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Write the window's value and start a new window. The lengths are sorted in place.
    pub fn finish<const N: usize>(&mut self, out: &mut Text<N>) {
        let n = usize::from(self.n);
        // Partition in place: client lengths first, then server lengths.
        let mut client = [0u16; DEFAULT_WINDOW];
        let mut server = [0u16; DEFAULT_WINDOW];
        let (mut nc, mut ns) = (0, 0);
        for i in 0..n {
            if self.from_server[i / 8] & (1 << (i % 8)) != 0 {
                server[ns] = self.lens[i];
                ns += 1;
            } else {
                client[nc] = self.lens[i];
                nc += 1;
            }
        }
        client[..nc].sort_unstable();
        server[..ns].sort_unstable();
        out.push(b'c');
        out.push_dec(u64::from(mode_of_sorted(&client[..nc])));
        out.push(b's');
        out.push_dec(u64::from(mode_of_sorted(&server[..ns])));
        out.push_str("_c");
        out.push_dec(nc as u64);
        out.push(b's');
        out.push_dec(ns as u64);
        out.push_str("_c");
        out.push_dec(u64::from(self.acks[0]));
        out.push(b's');
        out.push_dec(u64::from(self.acks[1]));
        *self = Ja4sshWindow::default();
    }
}

/// Whether a payload is an SSH identification string (`SSH-2.0-` or `SSH-1.99-`).
pub fn is_banner(payload: &[u8]) -> bool {
    payload.starts_with(b"SSH-2.0-") || payload.starts_with(b"SSH-1.99-")
}
