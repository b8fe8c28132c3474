//! The JA4 family as flow columns (`features="fingerprints"` or a method's column name).
//!
//! One [`Fingerprinter`] (the bounded per-connection state machine of
//! [`crate::fingerprint`]) reads the packets of the flows; a fingerprint a packet completes
//! belongs to that packet's flow, and each column holds the **first** value its flow got
//! (the leaf certificate for `ja4x`, the first SYN-ACK for `ja4ts`, the first window for
//! `ja4ssh`). When a flow ends (idle, active, evicted, or the end of the input), the JA4SSH
//! window its connection holds open is closed and given to it, as
//! [`Fingerprinter::finish`] does at the end of a capture.
//!
//! The state machine reads a flow's first [`FEED_PACKETS`] TCP or UDP packets (the
//! handshakes, hellos, certificates and first request are there), then only the packets
//! of SSH connections (port 22 or an `SSH-` banner) still without a `ja4ssh`, and nothing
//! once every asked column has its value: a long flow costs its first packets only. A bare
//! ACK is not read once its flow has its `ja4l_c` (or it is not asked), unless its
//! connection is SSH (in a one-direction table, whenever `ja4ssh` is asked). The packets
//! read reach the state machine with the table's own parse of their headers.

use std::sync::Arc;

use arrow_array::{ArrayRef, StringArray};
use arrow_schema::{DataType, Field};

use super::features::{FeatureGroup, PacketView};
use crate::fingerprint::{ja4ssh, Config, Endpoint, Event, Fingerprinter, Method, Methods};

/// The methods with a flow column, in column order.
pub const COLUMNS: [Method; 9] = [
    Method::Ja4,
    Method::Ja4S,
    Method::Ja4H,
    Method::Ja4T,
    Method::Ja4TS,
    Method::Ja4LC,
    Method::Ja4LS,
    Method::Ja4Ssh,
    Method::Ja4X,
];

/// Every method with a flow column.
pub const ALL: Methods = {
    let mut m = Methods::NONE;
    let mut i = 0;
    while i < COLUMNS.len() {
        m = m.with(COLUMNS[i]);
        i += 1;
    }
    m
};

/// The bit of `ja4ssh` in [`Prints::have`] (its index in [`COLUMNS`]).
const SSH_BIT: u16 = 1 << 7;
/// The bit of `ja4l_c`.
const LC_BIT: u16 = 1 << 5;
/// TCP flags SYN, RST and FIN.
const SYN_RST_FIN: u8 = 0x02 | 0x04 | 0x01;

/// Packets of a flow the state machine reads before it reads only SSH connections.
pub const FEED_PACKETS: u32 = 64;

const TCP: u8 = 6;
const UDP: u8 = 17;

fn column_of(m: Method) -> Option<usize> {
    COLUMNS.iter().position(|c| *c == m)
}

/// One flow's values and what the state machine has read of it.
#[derive(Default)]
struct Prints {
    values: [String; COLUMNS.len()],
    /// Columns with a value (bit `i` for `COLUMNS[i]`).
    have: u16,
    fed: u32,
    /// The endpoints of its first TCP packet, for the JA4SSH window at its end.
    tcp: Option<(Endpoint, Endpoint)>,
    ssh: bool,
    /// Nothing more to read: every asked column has its value, or the flow is past its
    /// first [`FEED_PACKETS`] packets and not an SSH connection still without `ja4ssh`.
    parked: bool,
}

impl Prints {
    fn reset(&mut self) {
        for v in &mut self.values {
            v.clear();
        }
        self.have = 0;
        self.fed = 0;
        self.tcp = None;
        self.ssh = false;
        self.parked = false;
    }

    /// Whether the flow needs no more packets (see [`Prints::parked`]); once true it stays
    /// true: `have` and `fed` only grow, and `ssh` is not read again past the limit.
    fn done(&self, want: u16) -> bool {
        self.have & want == want
            || (self.fed >= FEED_PACKETS && !(self.ssh && self.have & SSH_BIT == 0))
    }

    /// Keep `e` if it is the first value of its column.
    fn take(&mut self, e: &Event) {
        if let Some(i) = column_of(e.method) {
            if self.have & (1 << i) == 0 {
                self.have |= 1 << i;
                self.values[i].push_str(e.value_str());
            }
        }
    }
}

/// The fingerprint columns of the methods asked for.
pub struct FlowFingerprints {
    fp: Fingerprinter,
    /// The asked columns (indices into [`COLUMNS`]).
    columns: Vec<usize>,
    /// Bits of the asked columns.
    want: u16,
    ssh_wanted: bool,
    /// Whether a flow is a whole connection (both directions).
    bidirectional: bool,
    flows: Vec<Prints>,
}

impl FlowFingerprints {
    /// The columns of `methods` (those of [`COLUMNS`]; others are ignored), with the state
    /// machine's default bounds, for a table whose flows are connections (`bidirectional`)
    /// or one direction of them.
    pub fn new(methods: Methods, bidirectional: bool) -> Self {
        let columns: Vec<usize> = (0..COLUMNS.len())
            .filter(|&i| methods.has(COLUMNS[i]))
            .collect();
        let want = columns.iter().fold(0u16, |b, i| b | 1 << i);
        let methods: Methods = columns.iter().map(|&i| COLUMNS[i]).collect();
        FlowFingerprints {
            fp: Fingerprinter::new(Config {
                methods,
                ..Config::default()
            }),
            columns,
            want,
            ssh_wanted: methods.has(Method::Ja4Ssh),
            bidirectional,
            flows: Vec::new(),
        }
    }
}

impl FeatureGroup for FlowFingerprints {
    fn fields(&self) -> Vec<Field> {
        self.columns
            .iter()
            .map(|&i| Field::new(COLUMNS[i].name(), DataType::Utf8, true))
            .collect()
    }

    fn open(&mut self, slot: usize) {
        match self.flows.get_mut(slot) {
            Some(p) => p.reset(),
            None => self.flows.push(Prints::default()),
        }
    }

    /// Most packets of a flow find it parked (one load and compare); the others are read
    /// out of line, so the parked path saves no registers.
    #[inline]
    fn packet(&mut self, slot: usize, p: &PacketView<'_>) {
        if self.flows[slot].parked {
            return;
        }
        self.feed(slot, p);
        let prints = &mut self.flows[slot];
        prints.parked = prints.done(self.want);
    }

    fn close(&mut self, slot: usize) {
        let prints = &mut self.flows[slot];
        if let (true, Some((a, b))) = (prints.ssh, prints.tcp) {
            self.fp
                .finish_connection(a, b, &mut |e: &Event| prints.take(e));
        }
    }

    fn columns(&self, slots: &[u32], out: &mut Vec<ArrayRef>) {
        for &i in &self.columns {
            out.push(Arc::new(StringArray::from_iter(slots.iter().map(|&s| {
                let p = &self.flows[s as usize];
                (p.have & (1 << i) != 0).then_some(p.values[i].as_str())
            }))));
        }
    }
}

impl FlowFingerprints {
    /// A packet of a flow that is not parked.
    #[inline(never)]
    fn feed(&mut self, slot: usize, p: &PacketView<'_>) {
        let f = p.fields;
        if !f.has_ports || f.later_fragment || !(f.protocol == TCP || f.protocol == UDP) {
            return;
        }
        let prints = &mut self.flows[slot];
        if prints.done(self.want) {
            return;
        }
        if f.protocol == TCP && prints.tcp.is_none() {
            let end = |addr, port| Endpoint { addr, port };
            prints.tcp = Some((end(f.src, f.src_port), end(f.dst, f.dst_port)));
            prints.ssh = self.ssh_wanted && (f.src_port == 22 || f.dst_port == 22);
        }
        if f.protocol == TCP && !prints.ssh && self.ssh_wanted {
            prints.ssh = ja4ssh::is_banner(p.payload());
        }
        prints.fed = prints.fed.saturating_add(1);
        // A bare ACK (no payload; no SYN, RST or FIN) can give only JA4L-C or count in a
        // JA4SSH window: once the flow has its JA4L-C (or it is not asked) and its connection
        // is not SSH, the state machine would only mark the connection used. (In a
        // one-direction table the other direction may have seen the SSH banner.)
        if f.protocol == TCP
            && f.payload_len == 0
            && f.tcp_flags & SYN_RST_FIN == 0
            && (prints.have | !self.want) & LC_BIT != 0
            && !(self.ssh_wanted && (prints.ssh || !self.bidirectional))
        {
            return;
        }
        self.fp
            .process_fields(p.pkt, p.fields, &mut |e: &Event| prints.take(e));
    }
}
