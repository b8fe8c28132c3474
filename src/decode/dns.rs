//! DNS (RFC 1035): the 12-byte header and the first question.
//!
//! The question name follows compression pointers (at most [`MAX_POINTER_JUMPS`]); a loop,
//! an out-of-bounds pointer, a reserved label type or a name over 255 bytes gives `None`.

/// DNS header length.
pub const DNS_HEADER_LEN: usize = 12;
/// DNS port: UDP packets from or to it are decoded as DNS.
pub const DNS_PORT: u16 = 53;
/// Most compression pointers followed in one name.
pub const MAX_POINTER_JUMPS: usize = 20;
/// Longest name on the wire (RFC 1035 §2.3.4).
pub const MAX_NAME_WIRE_LEN: usize = 255;
/// Longest rendered name: every byte escaped as `\DDD`.
pub const MAX_NAME_TEXT_LEN: usize = MAX_NAME_WIRE_LEN * 4;

const DNS_ID: usize = 0;
const DNS_FLAGS: usize = 2;
const DNS_QDCOUNT: usize = 4;
const DNS_ANCOUNT: usize = 6;
const DNS_NSCOUNT: usize = 8;
const DNS_ARCOUNT: usize = 10;
const POINTER_MASK: u8 = 0xC0;

/// A DNS message whose header is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dns<'a> {
    msg: &'a [u8],
}

#[inline]
fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

impl<'a> Dns<'a> {
    /// A DNS view of `msg`, `None` when it is shorter than the header.
    pub fn new(msg: &'a [u8]) -> Option<Self> {
        (msg.len() >= DNS_HEADER_LEN).then_some(Dns { msg })
    }

    /// Message id.
    pub fn id(&self) -> u16 {
        be16(self.msg, DNS_ID)
    }
    /// The raw 16-bit flags.
    pub fn flags(&self) -> u16 {
        be16(self.msg, DNS_FLAGS)
    }
    /// Question count.
    pub fn qdcount(&self) -> u16 {
        be16(self.msg, DNS_QDCOUNT)
    }
    /// Answer count.
    pub fn ancount(&self) -> u16 {
        be16(self.msg, DNS_ANCOUNT)
    }
    /// Authority count.
    pub fn nscount(&self) -> u16 {
        be16(self.msg, DNS_NSCOUNT)
    }
    /// Additional count.
    pub fn arcount(&self) -> u16 {
        be16(self.msg, DNS_ARCOUNT)
    }
    /// Response bit.
    pub fn qr(&self) -> bool {
        self.flags() & 0x8000 != 0
    }
    /// Opcode (4 bits).
    pub fn opcode(&self) -> u8 {
        ((self.flags() >> 11) & 0xF) as u8
    }
    /// Authoritative answer.
    pub fn aa(&self) -> bool {
        self.flags() & 0x0400 != 0
    }
    /// Truncated.
    pub fn tc(&self) -> bool {
        self.flags() & 0x0200 != 0
    }
    /// Recursion desired.
    pub fn rd(&self) -> bool {
        self.flags() & 0x0100 != 0
    }
    /// Recursion available.
    pub fn ra(&self) -> bool {
        self.flags() & 0x0080 != 0
    }
    /// Response code (4 bits).
    pub fn rcode(&self) -> u8 {
        (self.flags() & 0xF) as u8
    }

    /// The first question, `None` when there is none or it cannot be read.
    pub fn question(&self) -> Option<Question> {
        if self.qdcount() == 0 {
            return None;
        }
        let mut q = Question {
            name: [0; MAX_NAME_TEXT_LEN],
            name_len: 0,
            qtype: 0,
            qclass: 0,
        };
        let end = read_name(self.msg, DNS_HEADER_LEN, &mut q)?;
        let fixed = self.msg.get(end..end + 4)?;
        q.qtype = be16(fixed, 0);
        q.qclass = be16(fixed, 2);
        Some(q)
    }
}

/// The first question of a message.
#[derive(Clone, Copy)]
pub struct Question {
    name: [u8; MAX_NAME_TEXT_LEN],
    name_len: usize,
    /// QTYPE.
    pub qtype: u16,
    /// QCLASS.
    pub qclass: u16,
}

impl core::fmt::Debug for Question {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Question")
            .field("qname", &self.qname())
            .field("qtype", &self.qtype)
            .field("qclass", &self.qclass)
            .finish()
    }
}

impl Question {
    /// Labels joined with `.` (the root is `""`); bytes outside printable ASCII, `.` and
    /// `\` inside a label are escaped as in zone files (`\.`, `\\`, `\DDD`).
    pub fn qname(&self) -> &str {
        core::str::from_utf8(&self.name[..self.name_len]).unwrap_or("")
    }

    /// The QTYPE mnemonic, `TYPE<n>` for others (see [`qtype_name`]).
    pub fn qtype_name(&self) -> QtypeName {
        qtype_name(self.qtype)
    }

    fn push(&mut self, b: u8) {
        if self.name_len < MAX_NAME_TEXT_LEN {
            self.name[self.name_len] = b;
            self.name_len += 1;
        }
    }

    fn push_label_byte(&mut self, b: u8) {
        match b {
            b'.' | b'\\' => {
                self.push(b'\\');
                self.push(b);
            }
            0x21..=0x7E => self.push(b),
            _ => {
                self.push(b'\\');
                self.push(b'0' + b / 100);
                self.push(b'0' + (b / 10) % 10);
                self.push(b'0' + b % 10);
            }
        }
    }
}

/// Read a possibly compressed name at `start`; the offset just after it in the original
/// position (after the first pointer, if any).
fn read_name(msg: &[u8], start: usize, q: &mut Question) -> Option<usize> {
    let mut pos = start;
    let mut after: Option<usize> = None;
    let mut jumps = 0;
    let mut wire_len = 0usize;
    loop {
        let len = *msg.get(pos)?;
        match len & POINTER_MASK {
            0x00 => {
                if len == 0 {
                    return Some(after.unwrap_or(pos + 1));
                }
                let label = msg.get(pos + 1..pos + 1 + usize::from(len))?;
                wire_len += 1 + label.len();
                if wire_len + 1 > MAX_NAME_WIRE_LEN {
                    return None;
                }
                if q.name_len > 0 {
                    q.push(b'.');
                }
                for &b in label {
                    q.push_label_byte(b);
                }
                pos += 1 + label.len();
            }
            POINTER_MASK => {
                let low = *msg.get(pos + 1)?;
                jumps += 1;
                if jumps > MAX_POINTER_JUMPS {
                    return None;
                }
                after.get_or_insert(pos + 2);
                pos = usize::from(u16::from_be_bytes([len & !POINTER_MASK, low]));
            }
            _ => return None,
        }
    }
}

/// A QTYPE mnemonic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QtypeName {
    /// A known mnemonic.
    Known(&'static str),
    /// `TYPE<n>`.
    Other(u16),
}

impl core::fmt::Display for QtypeName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            QtypeName::Known(s) => f.write_str(s),
            QtypeName::Other(n) => write!(f, "TYPE{n}"),
        }
    }
}

/// The mnemonic of a QTYPE: A NS CNAME SOA PTR MX TXT AAAA SRV SVCB HTTPS, else `TYPE<n>`.
pub fn qtype_name(qtype: u16) -> QtypeName {
    QtypeName::Known(match qtype {
        1 => "A",
        2 => "NS",
        5 => "CNAME",
        6 => "SOA",
        12 => "PTR",
        15 => "MX",
        16 => "TXT",
        28 => "AAAA",
        33 => "SRV",
        64 => "SVCB",
        65 => "HTTPS",
        n => return QtypeName::Other(n),
    })
}

/// Opcode name: query iquery status notify update, else `None` (render `opcode-N`).
pub fn opcode_name(opcode: u8) -> Option<&'static str> {
    Some(match opcode {
        0 => "query",
        1 => "iquery",
        2 => "status",
        4 => "notify",
        5 => "update",
        _ => return None,
    })
}

/// Rcode name per the reference table, else `None` (render `rcode-N`).
pub fn rcode_name(rcode: u8) -> Option<&'static str> {
    Some(match rcode {
        0 => "noerror",
        1 => "formerr",
        2 => "servfail",
        3 => "nxdomain",
        4 => "notimp",
        5 => "refused",
        6 => "yxdomain",
        7 => "yxrrset",
        8 => "nxrrset",
        9 => "notauth",
        10 => "notzone",
        16 => "badvers",
        22 => "badcookie",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(flags: u16, qd: u16, body: &[u8]) -> Vec<u8> {
        let mut m = vec![0x12, 0x34];
        m.extend_from_slice(&flags.to_be_bytes());
        m.extend_from_slice(&qd.to_be_bytes());
        m.extend_from_slice(&[0, 1, 0, 0, 0, 0]);
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn header_and_question() {
        let m = msg(0x8180, 1, b"\x03www\x07example\x03com\x00\x00\x1c\x00\x01");
        let d = Dns::new(&m).unwrap();
        assert_eq!(
            (d.id(), d.qr(), d.opcode(), d.rd(), d.ra(), d.rcode()),
            (0x1234, true, 0, true, true, 0)
        );
        let q = d.question().unwrap();
        assert_eq!((q.qname(), q.qtype, q.qclass), ("www.example.com", 28, 1));
        assert_eq!(q.qtype_name().to_string(), "AAAA");
        assert_eq!(qtype_name(99).to_string(), "TYPE99");
    }

    #[test]
    fn compression_pointer() {
        // question name: "a" + pointer to offset 12+2+2+4 = "b.c"
        let m = msg(0, 1, b"\x01a\xc0\x14\x00\x01\x00\x01\x01b\x01c\x00");
        let q = Dns::new(&m).unwrap().question().unwrap();
        assert_eq!((q.qname(), q.qtype, q.qclass), ("a.b.c", 1, 1));
    }

    #[test]
    fn loops_and_bad_pointers_are_none() {
        let looped = msg(0, 1, b"\xc0\x0c\x00\x01\x00\x01");
        assert!(Dns::new(&looped).unwrap().question().is_none());
        let out = msg(0, 1, b"\xc0\xff\x00\x01\x00\x01");
        assert!(Dns::new(&out).unwrap().question().is_none());
        let reserved = msg(0, 1, b"\x40a\x00\x00\x01\x00\x01");
        assert!(Dns::new(&reserved).unwrap().question().is_none());
        let no_fixed = msg(0, 1, b"\x01a\x00\x00");
        assert!(Dns::new(&no_fixed).unwrap().question().is_none());
        assert!(Dns::new(&msg(0, 0, b"")).unwrap().question().is_none());
        assert!(Dns::new(&[0; 11]).is_none());
    }

    #[test]
    fn escapes_and_length_limit() {
        let m = msg(0, 1, b"\x03a.\xff\x00\x00\x01\x00\x01");
        assert_eq!(
            Dns::new(&m).unwrap().question().unwrap().qname(),
            "a\\.\\255"
        );
        let mut long = Vec::new();
        for _ in 0..5 {
            long.push(63);
            long.extend_from_slice(&[b'x'; 63]);
        }
        long.extend_from_slice(&[0, 0, 1, 0, 1]);
        assert!(Dns::new(&msg(0, 1, &long)).unwrap().question().is_none());
    }
}
