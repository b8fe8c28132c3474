//! libpcap's C API, declared once for the crate: the structs paclo reads and the documented
//! entry points it calls. Callers own the safety argument of each call.

use std::ffi::{c_char, c_int, c_uchar, c_uint, c_void};

/// An opaque `pcap_t`.
#[repr(C)]
pub(crate) struct PcapT {
    _opaque: [u8; 0],
}

/// `struct pcap_pkthdr`.
#[repr(C)]
pub(crate) struct PktHdr {
    pub ts: libc::timeval,
    pub caplen: u32,
    pub len: u32,
}

/// `struct bpf_program`.
#[repr(C)]
pub(crate) struct BpfProgram {
    pub bf_len: c_uint,
    pub bf_insns: *mut c_void,
}

/// `struct pcap_if` (`pcap_if_t`): one device of `pcap_findalldevs`.
#[repr(C)]
pub(crate) struct PcapIf {
    pub next: *mut PcapIf,
    pub name: *mut c_char,
    pub description: *mut c_char,
    pub addresses: *mut PcapAddr,
    pub flags: c_uint,
}

/// `struct pcap_addr`: one address of a device.
#[repr(C)]
pub(crate) struct PcapAddr {
    pub next: *mut PcapAddr,
    pub addr: *mut libc::sockaddr,
    pub netmask: *mut libc::sockaddr,
    pub broadaddr: *mut libc::sockaddr,
    pub dstaddr: *mut libc::sockaddr,
}

/// `PCAP_IF_*` flags of [`PcapIf::flags`].
pub(crate) const PCAP_IF_LOOPBACK: c_uint = 0x1;
pub(crate) const PCAP_IF_UP: c_uint = 0x2;
pub(crate) const PCAP_IF_RUNNING: c_uint = 0x4;
pub(crate) const PCAP_IF_WIRELESS: c_uint = 0x8;

/// The portable prefix of `struct pcap_stat`.
#[repr(C)]
pub(crate) struct PcapStat {
    pub ps_recv: c_uint,
    pub ps_drop: c_uint,
    pub ps_ifdrop: c_uint,
}

#[link(name = "pcap")]
extern "C" {
    pub(crate) fn pcap_create(source: *const c_char, errbuf: *mut c_char) -> *mut PcapT;
    pub(crate) fn pcap_set_snaplen(p: *mut PcapT, snaplen: c_int) -> c_int;
    pub(crate) fn pcap_set_promisc(p: *mut PcapT, promisc: c_int) -> c_int;
    pub(crate) fn pcap_set_timeout(p: *mut PcapT, to_ms: c_int) -> c_int;
    pub(crate) fn pcap_set_buffer_size(p: *mut PcapT, size: c_int) -> c_int;
    pub(crate) fn pcap_set_immediate_mode(p: *mut PcapT, on: c_int) -> c_int;
    pub(crate) fn pcap_set_tstamp_precision(p: *mut PcapT, precision: c_int) -> c_int;
    pub(crate) fn pcap_get_tstamp_precision(p: *mut PcapT) -> c_int;
    pub(crate) fn pcap_activate(p: *mut PcapT) -> c_int;
    pub(crate) fn pcap_open_dead(linktype: c_int, snaplen: c_int) -> *mut PcapT;
    pub(crate) fn pcap_close(p: *mut PcapT);
    pub(crate) fn pcap_geterr(p: *mut PcapT) -> *mut c_char;
    pub(crate) fn pcap_statustostr(status: c_int) -> *const c_char;
    pub(crate) fn pcap_lookupnet(
        device: *const c_char,
        net: *mut u32,
        mask: *mut u32,
        errbuf: *mut c_char,
    ) -> c_int;
    pub(crate) fn pcap_compile(
        p: *mut PcapT,
        fp: *mut BpfProgram,
        s: *const c_char,
        optimize: c_int,
        netmask: u32,
    ) -> c_int;
    pub(crate) fn pcap_setfilter(p: *mut PcapT, fp: *mut BpfProgram) -> c_int;
    pub(crate) fn pcap_freecode(fp: *mut BpfProgram);
    pub(crate) fn pcap_offline_filter(
        fp: *const BpfProgram,
        h: *const PktHdr,
        pkt: *const u8,
    ) -> c_int;
    pub(crate) fn pcap_setnonblock(p: *mut PcapT, nonblock: c_int, errbuf: *mut c_char) -> c_int;
    pub(crate) fn pcap_get_selectable_fd(p: *mut PcapT) -> c_int;
    pub(crate) fn pcap_next_ex(
        p: *mut PcapT,
        hdr: *mut *mut PktHdr,
        data: *mut *const c_uchar,
    ) -> c_int;
    pub(crate) fn pcap_stats(p: *mut PcapT, ps: *mut PcapStat) -> c_int;
    pub(crate) fn pcap_datalink(p: *mut PcapT) -> c_int;
    pub(crate) fn pcap_lib_version() -> *const c_char;
    pub(crate) fn pcap_findalldevs(alldevs: *mut *mut PcapIf, errbuf: *mut c_char) -> c_int;
    pub(crate) fn pcap_freealldevs(alldevs: *mut PcapIf);
}
