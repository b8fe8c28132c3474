//! BPF on buffers: compile an expression once with libpcap for a link type, then run the
//! program on packet bytes (`pcap_offline_filter`), as libpcap does for a savefile.
//!
//! The program sees the packet's caplen and wirelen, so `len`/`greater`/`less` filters
//! test the length on the wire, as they do in libpcap.

use std::ffi::{c_int, CStr, CString};
use std::ptr::NonNull;

use crate::error::{Error, Result};
use crate::libpcap::{
    pcap_close, pcap_compile, pcap_freecode, pcap_geterr, pcap_offline_filter, pcap_open_dead,
    BpfProgram, PktHdr,
};
use crate::source::RawPacket;

/// The DLT value libpcap's `pcap_open_dead` expects for a file's LINKTYPE value.
///
/// The two numbering spaces agree except for a few LINKTYPEs below 104 whose DLT values
/// differ between platforms; libpcap maps them the same way when it opens a file.
pub fn linktype_to_dlt(linktype: u32) -> u32 {
    match linktype {
        100 => 11,      // ATM_RFC1483
        101 => RAW_DLT, // RAW
        102 => 15,      // SLIP_BSDOS
        103 => 16,      // PPP_BSDOS
        _ => linktype,
    }
}

#[cfg(target_os = "openbsd")]
const RAW_DLT: u32 = 14;
#[cfg(not(target_os = "openbsd"))]
const RAW_DLT: u32 = 12;

/// An expression compiled for one link type.
pub struct BpfFilter {
    expr: String,
    linktype: u32,
    program: BpfProgram,
}

// SAFETY: the program is plain memory owned by this value; `pcap_offline_filter` only
// reads it and keeps no state, so it may be used from any thread and shared.
unsafe impl Send for BpfFilter {}
unsafe impl Sync for BpfFilter {}

impl BpfFilter {
    /// Compile `expr` (optimised, netmask 0) for `linktype` (a LINKTYPE or DLT value,
    /// see [`linktype_to_dlt`]) and `snaplen`.
    ///
    /// # Errors
    /// [`Error::Filter`] with libpcap's message when the expression does not compile for
    /// this link type (or contains a NUL byte); [`Error::InvalidArgument`] for a link type
    /// libpcap does not know.
    pub fn compile(expr: &str, linktype: u32, snaplen: u32) -> Result<BpfFilter> {
        let c_expr = CString::new(expr).map_err(|_| Error::Filter {
            expr: expr.to_string(),
            message: "the expression contains a NUL byte".into(),
        })?;
        let snaplen = c_int::try_from(snaplen).unwrap_or(c_int::MAX);
        let dlt = c_int::try_from(linktype_to_dlt(linktype))
            .map_err(|_| Error::InvalidArgument(format!("link type {linktype} is out of range")))?;
        // SAFETY: pcap_open_dead returns an owned handle or NULL; it is closed below.
        let handle = NonNull::new(unsafe { pcap_open_dead(dlt, snaplen) }).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "libpcap cannot open a handle for link type {linktype}"
            ))
        })?;
        let mut program = BpfProgram {
            bf_len: 0,
            bf_insns: std::ptr::null_mut(),
        };
        // SAFETY: handle is valid; c_expr is NUL-terminated; program is writable.
        let rc = unsafe { pcap_compile(handle.as_ptr(), &mut program, c_expr.as_ptr(), 1, 0) };
        let result = if rc == 0 {
            Ok(BpfFilter {
                expr: expr.to_string(),
                linktype,
                program,
            })
        } else {
            // SAFETY: pcap_geterr returns the handle's NUL-terminated error buffer.
            let message = unsafe { CStr::from_ptr(pcap_geterr(handle.as_ptr())) }
                .to_string_lossy()
                .into_owned();
            Err(Error::Filter {
                expr: expr.to_string(),
                message,
            })
        };
        // SAFETY: the handle came from pcap_open_dead and is not used after this.
        unsafe { pcap_close(handle.as_ptr()) };
        result
    }

    /// True when the packet passes the filter. The packet's link type is not checked: use
    /// [`FileFilter`] for sources with several link types.
    #[inline]
    pub fn matches(&self, pkt: &RawPacket<'_>) -> bool {
        let hdr = PktHdr {
            ts: libc::timeval {
                tv_sec: 0,
                tv_usec: 0,
            },
            caplen: pkt.data.len() as u32,
            len: pkt.wirelen.max(pkt.data.len() as u32),
        };
        // SAFETY: the program is valid for the life of self; libpcap reads at most caplen
        // bytes of `data` (the BPF interpreter bounds-checks every load against caplen).
        unsafe { pcap_offline_filter(&self.program, &hdr, pkt.data.as_ptr()) != 0 }
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        &self.expr
    }

    /// The link type the program was compiled for.
    pub fn linktype(&self) -> u32 {
        self.linktype
    }
}

impl Drop for BpfFilter {
    fn drop(&mut self) {
        // SAFETY: the program was filled by pcap_compile and is freed once.
        unsafe { pcap_freecode(&mut self.program) }
    }
}

impl std::fmt::Debug for BpfFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfFilter")
            .field("expr", &self.expr)
            .field("linktype", &self.linktype)
            .finish()
    }
}

/// One expression for a source that may hold several link types (pcapng interfaces):
/// compiled eagerly for the first link type, lazily for each other one met.
#[derive(Debug)]
pub struct FileFilter {
    snaplen: u32,
    first: BpfFilter,
    others: Vec<BpfFilter>,
}

impl FileFilter {
    /// Compile `expr` for `linktype` now, so an invalid expression fails before any packet.
    ///
    /// # Errors
    /// See [`BpfFilter::compile`].
    pub fn new(expr: &str, linktype: u32, snaplen: u32) -> Result<FileFilter> {
        Ok(FileFilter {
            snaplen,
            first: BpfFilter::compile(expr, linktype, snaplen)?,
            others: Vec::new(),
        })
    }

    /// Compile `expr` for the file `reader` reads: its link type (pcapng: its first
    /// interface's, Ethernet when none is described before the first packet).
    ///
    /// # Errors
    /// See [`BpfFilter::compile`].
    pub fn for_reader(expr: &str, reader: &super::FileReader) -> Result<FileFilter> {
        FileFilter::new(expr, reader.linktype().unwrap_or(1), reader.snaplen())
    }

    /// The expression as given.
    pub fn expr(&self) -> &str {
        self.first.expr()
    }

    /// True when the packet passes the filter compiled for its link type.
    ///
    /// # Errors
    /// [`Error::Filter`] when the expression does not compile for a link type first met
    /// here (e.g. `ether host ...` on a raw-IP interface of a pcapng file).
    #[inline]
    pub fn matches(&mut self, pkt: &RawPacket<'_>) -> Result<bool> {
        if pkt.linktype == self.first.linktype {
            return Ok(self.first.matches(pkt));
        }
        self.matches_other(pkt)
    }

    #[cold]
    fn matches_other(&mut self, pkt: &RawPacket<'_>) -> Result<bool> {
        if let Some(f) = self.others.iter().find(|f| f.linktype == pkt.linktype) {
            return Ok(f.matches(pkt));
        }
        let f =
            BpfFilter::compile(self.first.expr(), pkt.linktype, self.snaplen).map_err(
                |e| match e {
                    Error::Filter { expr, message } => Error::Filter {
                        expr,
                        message: format!("{message} (for link type {})", pkt.linktype),
                    },
                    other => other,
                },
            )?;
        let hit = f.matches(pkt);
        self.others.push(f);
        Ok(hit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp_frame(dport: u16, extra: usize) -> Vec<u8> {
        let mut f = vec![
            0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x08, 0x00,
        ];
        let total = (28 + extra) as u16;
        f.extend([
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0,
            1,
            0x40,
            0,
            64,
            17,
            0,
            0,
            10,
            0,
            0,
            1,
            10,
            0,
            0,
            2,
        ]);
        f.extend(12000u16.to_be_bytes());
        f.extend(dport.to_be_bytes());
        f.extend(((8 + extra) as u16).to_be_bytes());
        f.extend([0, 0]);
        f.extend(vec![0; extra]);
        f
    }

    fn raw(data: &[u8], linktype: u32, wirelen: u32) -> RawPacket<'_> {
        RawPacket {
            ts_ns: 0,
            caplen: data.len() as u32,
            wirelen,
            linktype,
            data,
        }
    }

    #[test]
    fn matches_ethernet() {
        let f = BpfFilter::compile("udp port 53", 1, 65535).unwrap();
        let a = udp_frame(53, 4);
        let b = udp_frame(54, 4);
        assert!(f.matches(&raw(&a, 1, a.len() as u32)));
        assert!(!f.matches(&raw(&b, 1, b.len() as u32)));
        assert!(!f.matches(&raw(&a[..10], 1, a.len() as u32)));
    }

    #[test]
    fn length_filters_use_wirelen() {
        let f = BpfFilter::compile("greater 1000", 1, 65535).unwrap();
        let a = udp_frame(53, 4);
        assert!(f.matches(&raw(&a, 1, 1500)));
        assert!(!f.matches(&raw(&a, 1, a.len() as u32)));
    }

    #[test]
    fn invalid_expression_has_libpcap_message() {
        let err = BpfFilter::compile("udp port", 1, 65535).unwrap_err();
        assert!(
            matches!(&err, Error::Filter { message, .. } if message.contains("syntax error")),
            "{err}"
        );
        let err = BpfFilter::compile("a\0b", 1, 65535).unwrap_err();
        assert!(matches!(err, Error::Filter { .. }));
    }

    #[test]
    fn file_filter_compiles_per_linktype() {
        let mut f = FileFilter::new("udp", 1, 65535).unwrap();
        let eth = udp_frame(53, 0);
        let ip = &eth[14..];
        assert!(f.matches(&raw(&eth, 1, eth.len() as u32)).unwrap());
        assert!(f.matches(&raw(ip, 101, ip.len() as u32)).unwrap());
        assert!(!f.matches(&raw(&ip[..5], 101, ip.len() as u32)).unwrap());
        let mut g = FileFilter::new("ether host 10:11:12:13:14:15", 1, 65535).unwrap();
        assert!(g.matches(&raw(&eth, 1, eth.len() as u32)).unwrap());
        let err = g.matches(&raw(ip, 101, ip.len() as u32)).unwrap_err();
        assert!(err.to_string().contains("link type 101"), "{err}");
    }
}
