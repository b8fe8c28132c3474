//! JA4L: client and server latency from the TCP handshake (FoxIO License 1.1).
//!
//! With A the SYN, B the SYN-ACK and C the client's ACK: JA4L-S = `(B - A) / 2` and the
//! server's TTL (hop limit), JA4L-C = `(C - B) / 2` and the client's TTL, in microseconds
//! (timestamps rounded to whole microseconds, the half-difference truncated).
//!
//! As in FoxIO's reference implementation, C moves to each later client packet that
//! still has relative sequence and acknowledgment numbers 1 (it starts the client's data
//! and acknowledges none of the server's), unless it holds a whole HTTP request: a TLS
//! client gives JA4L-C at its ACK and again at its ClientHello, the last being the value.

use super::Text;

/// What one connection's JA4L keeps between packets.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ja4lState {
    /// SYN time (ns) and the client's TTL.
    pub syn: Option<(i64, u8)>,
    /// SYN-ACK time (ns) and the server's TTL.
    pub synack: Option<(i64, u8)>,
    /// The client's and the server's initial sequence numbers.
    pub isn: (u32, u32),
}

/// Nanoseconds to whole microseconds, rounded half away from zero.
fn micros(ns: i64) -> i64 {
    if ns >= 0 {
        (ns + 500) / 1000
    } else {
        -((-ns + 500) / 1000)
    }
}

/// Write `latency_ttl` for the half-time between `start_ns` and `end_ns`.
pub fn write<const N: usize>(start_ns: i64, end_ns: i64, ttl: u8, out: &mut Text<N>) {
    let half = (micros(end_ns) - micros(start_ns)) / 2;
    if half < 0 {
        out.push(b'-');
    }
    out.push_dec(half.unsigned_abs());
    out.push(b'_');
    out.push_dec(u64::from(ttl));
}
