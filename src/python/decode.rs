//! The full packet map as Python dicts, built directly from the core decoder's result.
//!
//! Every key and every constant string value is interned once ([`Strings`]); addresses are
//! formatted into stack buffers. Hooks registered through `paclo.decode_ext` run here, so
//! every source (file reader, reduce, live capture, `paclo.decode`) applies them.

use core::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::decode::addr;
use crate::decode::arp::{Arp, ArpOp};
use crate::decode::dns::{self, Dns};
use crate::decode::icmp::{Icmp, Name};
use crate::decode::tls::ClientHello;
use crate::decode::{decode, App, Decoded, FlowProto, Ipv4, Ipv6, Link, L3, L4};
use crate::source::RawPacket;

macro_rules! strings {
    ($($field:ident = $text:literal),* $(,)?) => {
        /// Interned keys and constant values of the packet map.
        struct Strings { $($field: Py<PyString>),* }
        impl Strings {
            fn new(py: Python<'_>) -> Self {
                Strings { $($field: PyString::intern(py, $text).unbind()),* }
            }
        }
    };
}

strings! {
    ts_sec = "ts_sec", ts_usec = "ts_usec", ts_ns = "ts_ns", caplen = "caplen", len = "len",
    data = "data", decoded = "decoded", decode_error = "decode_error",
    type_ = "type", src = "src", dst = "dst", eth = "eth", vlan_tags = "vlan_tags", l3 = "l3",
    pkttype = "pkttype", hatype = "hatype", ifindex = "ifindex", family = "family",
    tpid = "tpid", pcp = "pcp", dei = "dei", vid = "vid",
    version = "version", ihl = "ihl", tos = "tos", total_length = "total_length", id = "id",
    flags_frag = "flags_frag", ttl = "ttl", protocol = "protocol",
    header_checksum = "header_checksum", frag = "frag", frag_offset = "frag_offset",
    flow_key = "flow_key", l4 = "l4",
    traffic_class = "traffic_class", flow_label = "flow_label", payload_length = "payload_length",
    next_header = "next_header", hop_limit = "hop_limit", src_compact = "src_compact",
    dst_compact = "dst_compact",
    htype = "htype", ptype = "ptype", op = "op", sha = "sha", spa = "spa", tha = "tha", tpa = "tpa",
    proto = "proto", src_ip = "src_ip", dst_ip = "dst_ip", src_port = "src_port",
    dst_port = "dst_port",
    seq = "seq", ack = "ack", flags = "flags", flags_str = "flags_str", window = "window",
    checksum = "checksum", urgent_pointer = "urgent_pointer", header_len = "header_len",
    data_len = "data_len", payload = "payload", app = "app", length = "length",
    urg = "urg", psh = "psh", rst = "rst", syn = "syn", fin = "fin", ece = "ece", cwr = "cwr",
    icmp_type = "icmp_type", code = "code", type_name = "type_name", code_name = "code_name",
    summary = "summary", offset = "offset", reason = "reason",
    qdcount = "qdcount", ancount = "ancount", nscount = "nscount", arcount = "arcount",
    flags_raw = "flags_raw", qr = "qr", opcode = "opcode", opcode_name = "opcode_name",
    aa = "aa", tc = "tc", rd = "rd", ra = "ra", rcode = "rcode", rcode_name = "rcode_name",
    raw = "raw", qname = "qname", qtype = "qtype", qclass = "qclass", qtype_name = "qtype_name",
    sni = "sni", alpn = "alpn",
    v_ethernet = "ethernet", v_raw = "raw", v_linux_sll = "linux_sll", v_linux_sll2 = "linux_sll2",
    v_null = "null", v_loop = "loop",
    v_ipv4 = "ipv4", v_ipv6 = "ipv6", v_arp = "arp", v_unknown_l3 = "unknown_l3",
    v_tcp = "tcp", v_udp = "udp", v_icmpv4 = "icmpv4", v_icmpv6 = "icmpv6", v_icmp = "icmp",
    v_icmp6 = "icmp6", v_ipv4_fragment = "ipv4_fragment", v_ipv6_fragment = "ipv6_fragment",
    v_unknown_l4 = "unknown_l4", v_truncated = "truncated", v_request = "request", v_reply = "reply",
    v_dns = "dns", v_tls = "tls",
}

static STRINGS: PyOnceLock<Strings> = PyOnceLock::new();
static TEMPLATES: PyOnceLock<Templates> = PyOnceLock::new();

/// Dicts with the keys of the common fixed-shape maps (values None). Copying one
/// (`PyDict_Copy` clones the key table) and replacing its values is cheaper than inserting
/// every key into a fresh dict, which rebuilds the table as it grows.
struct Templates {
    top: Py<PyDict>,
    ethernet: Py<PyDict>,
    ipv4: Py<PyDict>,
    ipv6: Py<PyDict>,
    flow_ports: Py<PyDict>,
    udp: Py<PyDict>,
    tcp: Py<PyDict>,
    tcp_flags: Py<PyDict>,
}

impl Templates {
    fn new(py: Python<'_>, k: &Strings) -> PyResult<Self> {
        let t = |keys: &[&Py<PyString>]| -> PyResult<Py<PyDict>> {
            let d = PyDict::new(py);
            for key in keys {
                d.set_item(key.bind(py), py.None())?;
            }
            Ok(d.unbind())
        };
        Ok(Templates {
            top: t(&[
                &k.ts_sec, &k.ts_usec, &k.ts_ns, &k.caplen, &k.len, &k.data, &k.decoded,
            ])?,
            ethernet: t(&[&k.type_, &k.src, &k.dst, &k.eth, &k.l3])?,
            ipv4: t(&[
                &k.type_,
                &k.version,
                &k.ihl,
                &k.tos,
                &k.total_length,
                &k.id,
                &k.flags_frag,
                &k.ttl,
                &k.protocol,
                &k.header_checksum,
                &k.src,
                &k.dst,
                &k.frag,
                &k.frag_offset,
                &k.flow_key,
                &k.l4,
            ])?,
            ipv6: t(&[
                &k.type_,
                &k.version,
                &k.traffic_class,
                &k.flow_label,
                &k.payload_length,
                &k.next_header,
                &k.hop_limit,
                &k.src,
                &k.dst,
                &k.src_compact,
                &k.dst_compact,
                &k.frag,
                &k.frag_offset,
                &k.flow_key,
                &k.l4,
            ])?,
            flow_ports: t(&[&k.proto, &k.src_ip, &k.src_port, &k.dst_ip, &k.dst_port])?,
            udp: t(&[
                &k.type_,
                &k.src_port,
                &k.dst_port,
                &k.length,
                &k.checksum,
                &k.data_len,
                &k.payload,
            ])?,
            tcp: t(&[
                &k.type_,
                &k.src_port,
                &k.dst_port,
                &k.seq,
                &k.ack,
                &k.flags,
                &k.flags_str,
                &k.window,
                &k.checksum,
                &k.urgent_pointer,
                &k.header_len,
                &k.data_len,
                &k.payload,
            ])?,
            tcp_flags: t(&[
                &k.urg, &k.ack, &k.psh, &k.rst, &k.syn, &k.fin, &k.ece, &k.cwr,
            ])?,
        })
    }
}

fn templates(py: Python<'_>, k: &Strings) -> PyResult<&'static Templates> {
    TEMPLATES.get_or_try_init(py, || Templates::new(py, k))
}

/// Registered hooks as a tuple of callables; `HOOK_COUNT` lets the no-hook case skip the lock.
static HOOKS: Mutex<Option<Py<PyTuple>>> = Mutex::new(None);
static HOOK_COUNT: AtomicUsize = AtomicUsize::new(0);

/// A small stack buffer for names like `type-42` and summaries.
struct StackText<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackText<N> {
    fn new() -> Self {
        StackText {
            buf: [0; N],
            len: 0,
        }
    }
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> core::fmt::Write for StackText<N> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end > N {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// A dict under construction with interned keys.
struct Map<'py> {
    py: Python<'py>,
    d: Bound<'py, PyDict>,
}

impl<'py> Map<'py> {
    #[inline]
    fn new(py: Python<'py>) -> Self {
        Map {
            py,
            d: PyDict::new(py),
        }
    }
    /// A copy of `template`; every key of it must then be set.
    #[inline]
    fn like(py: Python<'py>, template: &Py<PyDict>) -> PyResult<Self> {
        Ok(Map {
            py,
            d: template.bind(py).copy()?,
        })
    }
    #[inline]
    fn set<V: IntoPyObject<'py>>(&self, k: &Py<PyString>, v: V) -> PyResult<()>
    where
        PyErr: From<V::Error>,
    {
        self.d.set_item(k.bind(self.py), v)
    }
    #[inline]
    fn s(&self, k: &Py<PyString>, v: &Py<PyString>) -> PyResult<()> {
        self.d.set_item(k.bind(self.py), v.bind(self.py))
    }
    #[inline]
    fn none(&self, k: &Py<PyString>) -> PyResult<()> {
        self.d.set_item(k.bind(self.py), self.py.None())
    }
    #[inline]
    fn bytes(&self, k: &Py<PyString>, v: &[u8]) -> PyResult<()> {
        self.d.set_item(k.bind(self.py), PyBytes::new(self.py, v))
    }
    #[inline]
    fn text(&self, k: &Py<PyString>, v: &str) -> PyResult<()> {
        self.d.set_item(k.bind(self.py), PyString::new(self.py, v))
    }
}

fn hw_text<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyString> {
    match <&[u8; 6]>::try_from(b) {
        Ok(mac) => PyString::new(py, addr::mac(mac).as_str()),
        Err(_) => PyString::new(py, addr::hw(b).as_str()),
    }
}

fn name_text<'py>(py: Python<'py>, n: Name) -> Bound<'py, PyString> {
    match n {
        Name::Known(s) => PyString::new(py, s),
        other => {
            let mut t = StackText::<16>::new();
            let _ = write!(t, "{other}");
            PyString::new(py, t.as_str())
        }
    }
}

/// The full packet map for `pkt`, and whether it carries a `decode_error`.
///
/// Registered hooks run on maps without a `decode_error`.
///
/// # Errors
/// Only Python errors (memory); malformed bytes never raise.
pub fn full_map<'py>(py: Python<'py>, pkt: &RawPacket<'_>) -> PyResult<(Bound<'py, PyDict>, bool)> {
    full_map_with(py, pkt, None)
}

/// [`full_map`], reusing `data` (a `bytes` object holding `pkt.data`) for the `data` key.
///
/// # Errors
/// Only Python errors (memory); malformed bytes never raise.
pub fn full_map_with<'py>(
    py: Python<'py>,
    pkt: &RawPacket<'_>,
    data: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyDict>, bool)> {
    let k = STRINGS.get_or_init(py, || Strings::new(py));
    let t = templates(py, k)?;
    let d = decode(pkt.linktype, pkt.data);
    let top = if d.link.is_some() {
        Map::like(py, &t.top)?
    } else {
        Map::new(py)
    };
    top.set(&k.ts_sec, pkt.ts_sec())?;
    top.set(&k.ts_usec, pkt.ts_usec())?;
    top.set(&k.ts_ns, pkt.ts_ns)?;
    top.set(&k.caplen, pkt.caplen)?;
    top.set(&k.len, pkt.wirelen)?;
    match data {
        Some(obj) => top.set(&k.data, obj)?,
        None => top.bytes(&k.data, pkt.data)?,
    }
    if d.link.is_some() {
        top.set(&k.decoded, decoded_map(py, k, t, &d)?)?;
    }
    let has_error = match d.error {
        Some(e) => {
            let mut t = StackText::<160>::new();
            let _ = write!(t, "{e}");
            top.text(&k.decode_error, t.as_str())?;
            true
        }
        None => false,
    };
    let mut map = top.d;
    if !has_error && HOOK_COUNT.load(Ordering::Relaxed) != 0 {
        map = run_hooks(py, map)?;
    }
    Ok((map, has_error))
}

fn run_hooks<'py>(py: Python<'py>, mut map: Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let hooks = {
        let guard = HOOKS.lock().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(t) => t.clone_ref(py),
            None => return Ok(map),
        }
    };
    for hook in hooks.bind(py).iter() {
        // A hook that raises is skipped; a non-dict result is ignored.
        if let Ok(out) = hook.call1((&map,)) {
            if let Ok(d) = out.cast_into::<PyDict>() {
                map = d;
            }
        }
    }
    Ok(map)
}

fn decoded_map<'py>(
    py: Python<'py>,
    k: &Strings,
    t: &Templates,
    d: &Decoded<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let Some(link) = d.link.as_ref() else {
        return Ok(PyDict::new(py));
    };
    let plain_ethernet =
        link.kind == crate::decode::LinkKind::Ethernet && link.vlan.as_slice().is_empty();
    let m = if plain_ethernet && d.l3.is_some() {
        Map::like(py, &t.ethernet)?
    } else {
        Map::new(py)
    };
    link_fields(&m, k, link)?;
    if let Some(l3) = &d.l3 {
        m.set(&k.l3, l3_map(py, k, t, l3)?)?;
    }
    Ok(m.d)
}

fn link_fields(m: &Map<'_>, k: &Strings, link: &Link<'_>) -> PyResult<()> {
    use crate::decode::LinkKind as K;
    let ty = match link.kind {
        K::Ethernet => &k.v_ethernet,
        K::Raw => &k.v_raw,
        K::LinuxSll => &k.v_linux_sll,
        K::LinuxSll2 => &k.v_linux_sll2,
        K::Null => &k.v_null,
        K::Loop => &k.v_loop,
    };
    m.s(&k.type_, ty)?;
    match link.src {
        Some(b) => m.set(&k.src, hw_text(m.py, b))?,
        None => m.none(&k.src)?,
    }
    match link.dst {
        Some(b) => m.set(&k.dst, hw_text(m.py, b))?,
        None => m.none(&k.dst)?,
    }
    m.set(&k.eth, link.eth)?;
    if let Some(v) = link.pkttype {
        m.set(&k.pkttype, v)?;
    }
    if let Some(v) = link.hatype {
        m.set(&k.hatype, v)?;
    }
    if let Some(v) = link.ifindex {
        m.set(&k.ifindex, v)?;
    }
    if let Some(v) = link.family {
        m.set(&k.family, v)?;
    }
    let tags = link.vlan.as_slice();
    if !tags.is_empty() {
        let list = PyList::empty(m.py);
        for t in tags {
            let tm = Map::new(m.py);
            tm.set(&k.tpid, t.tpid)?;
            tm.set(&k.pcp, t.pcp)?;
            tm.set(&k.dei, t.dei)?;
            tm.set(&k.vid, t.vid)?;
            list.append(tm.d)?;
        }
        m.set(&k.vlan_tags, list)?;
    }
    Ok(())
}

fn l3_map<'py>(
    py: Python<'py>,
    k: &Strings,
    t: &Templates,
    l3: &L3<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let m = match l3 {
        L3::Ipv4(_) => Map::like(py, &t.ipv4)?,
        L3::Ipv6(_) => Map::like(py, &t.ipv6)?,
        _ => Map::new(py),
    };
    match l3 {
        L3::Ipv4(v4) => ipv4_fields(&m, k, t, v4, l3)?,
        L3::Ipv6(v6) => ipv6_fields(&m, k, t, v6, l3)?,
        L3::Arp(arp) => {
            m.s(&k.type_, &k.v_arp)?;
            if let Some(a) = arp {
                arp_fields(&m, k, a)?;
            }
        }
        L3::Unknown(eth) => {
            m.s(&k.type_, &k.v_unknown_l3)?;
            m.set(&k.eth, *eth)?;
        }
    }
    Ok(m.d)
}

fn ipv4_fields(
    m: &Map<'_>,
    k: &Strings,
    t: &Templates,
    v4: &Ipv4<'_>,
    l3: &L3<'_>,
) -> PyResult<()> {
    let h = &v4.header;
    m.s(&k.type_, &k.v_ipv4)?;
    m.set(&k.version, h.version())?;
    m.set(&k.ihl, usize::from(h.ihl()) * 4)?;
    m.set(&k.tos, v4.tos())?;
    m.set(&k.total_length, h.total_len())?;
    m.set(&k.id, h.identification())?;
    m.set(&k.flags_frag, v4.flags_frag())?;
    m.set(&k.ttl, h.ttl())?;
    m.set(&k.protocol, h.protocol().0)?;
    m.set(&k.header_checksum, h.header_checksum())?;
    let src = PyString::new(m.py, addr::ipv4(&h.source()).as_str());
    let dst = PyString::new(m.py, addr::ipv4(&h.destination()).as_str());
    m.set(&k.src, &src)?;
    m.set(&k.dst, &dst)?;
    let frag = v4.frag();
    m.set(&k.frag, frag)?;
    if frag {
        m.set(&k.frag_offset, v4.frag_offset_raw())?;
    } else {
        m.none(&k.frag_offset)?;
    }
    flow_key(m, k, t, l3, &src, &dst)?;
    m.set(&k.l4, l4_map(m.py, k, t, &v4.l4)?)
}

fn ipv6_fields(
    m: &Map<'_>,
    k: &Strings,
    t: &Templates,
    v6: &Ipv6<'_>,
    l3: &L3<'_>,
) -> PyResult<()> {
    let h = &v6.header;
    m.s(&k.type_, &k.v_ipv6)?;
    m.set(&k.version, h.version())?;
    m.set(&k.traffic_class, h.traffic_class())?;
    m.set(&k.flow_label, h.flow_label().value())?;
    m.set(&k.payload_length, h.payload_length())?;
    m.set(&k.next_header, v6.next_header)?;
    m.set(&k.hop_limit, h.hop_limit())?;
    let (s, d) = (h.source(), h.destination());
    let src = PyString::new(m.py, addr::ipv6_full(&s).as_str());
    let dst = PyString::new(m.py, addr::ipv6_full(&d).as_str());
    m.set(&k.src, &src)?;
    m.set(&k.dst, &dst)?;
    m.text(&k.src_compact, addr::ipv6_compact(&s).as_str())?;
    m.text(&k.dst_compact, addr::ipv6_compact(&d).as_str())?;
    m.set(&k.frag, v6.frag)?;
    m.set(&k.frag_offset, v6.frag_offset)?;
    flow_key(m, k, t, l3, &src, &dst)?;
    m.set(&k.l4, l4_map(m.py, k, t, &v6.l4)?)
}

fn flow_key<'py>(
    m: &Map<'py>,
    k: &Strings,
    t: &Templates,
    l3: &L3<'_>,
    src: &Bound<'py, PyString>,
    dst: &Bound<'py, PyString>,
) -> PyResult<()> {
    let Some(key) = l3.flow_key() else {
        return m.none(&k.flow_key);
    };
    let f = if key.proto.has_ports() {
        Map::like(m.py, &t.flow_ports)?
    } else {
        Map::new(m.py)
    };
    match key.proto {
        FlowProto::Tcp => f.s(&k.proto, &k.v_tcp)?,
        FlowProto::Udp => f.s(&k.proto, &k.v_udp)?,
        FlowProto::Icmp => f.s(&k.proto, &k.v_icmp)?,
        FlowProto::Icmp6 => f.s(&k.proto, &k.v_icmp6)?,
        FlowProto::Other(n) => f.set(&k.proto, n)?,
    }
    f.set(&k.src_ip, src)?;
    if key.proto.has_ports() {
        f.set(&k.src_port, key.ports.map(|p| p.0))?;
    }
    f.set(&k.dst_ip, dst)?;
    if key.proto.has_ports() {
        f.set(&k.dst_port, key.ports.map(|p| p.1))?;
    }
    m.set(&k.flow_key, f.d)
}

fn arp_fields(m: &Map<'_>, k: &Strings, a: &Arp<'_>) -> PyResult<()> {
    m.set(&k.htype, a.htype)?;
    m.set(&k.ptype, a.ptype)?;
    match a.op {
        ArpOp::Request => m.s(&k.op, &k.v_request)?,
        ArpOp::Reply => m.s(&k.op, &k.v_reply)?,
        ArpOp::Unknown(n) => m.set(&k.op, n)?,
    }
    m.set(&k.sha, hw_text(m.py, a.sha))?;
    match a.spa_ipv4() {
        Some(ip) => m.text(&k.spa, addr::ipv4(&ip).as_str())?,
        None => m.none(&k.spa)?,
    }
    m.set(&k.tha, hw_text(m.py, a.tha))?;
    match a.tpa_ipv4() {
        Some(ip) => m.text(&k.tpa, addr::ipv4(&ip).as_str())?,
        None => m.none(&k.tpa)?,
    }
    Ok(())
}

/// TCP flag letters from bit 7 (CWR) down to bit 0 (FIN).
const TCP_FLAG_LETTERS: [u8; 8] = *b"CEUAPRSF";

fn l4_map<'py>(
    py: Python<'py>,
    k: &Strings,
    tpl: &Templates,
    l4: &L4<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let m = match l4 {
        L4::Tcp(..) => Map::like(py, &tpl.tcp)?,
        L4::Udp(..) => Map::like(py, &tpl.udp)?,
        _ => Map::new(py),
    };
    match l4 {
        L4::Tcp(t, app) => {
            m.s(&k.type_, &k.v_tcp)?;
            m.set(&k.src_port, t.source_port())?;
            m.set(&k.dst_port, t.destination_port())?;
            m.set(&k.seq, t.sequence_number())?;
            m.set(&k.ack, t.acknowledgment_number())?;
            let bits = [
                t.cwr(),
                t.ece(),
                t.urg(),
                t.ack(),
                t.psh(),
                t.rst(),
                t.syn(),
                t.fin(),
            ];
            let f = Map::like(py, &tpl.tcp_flags)?;
            f.set(&k.urg, t.urg())?;
            f.set(&k.ack, t.ack())?;
            f.set(&k.psh, t.psh())?;
            f.set(&k.rst, t.rst())?;
            f.set(&k.syn, t.syn())?;
            f.set(&k.fin, t.fin())?;
            f.set(&k.ece, t.ece())?;
            f.set(&k.cwr, t.cwr())?;
            m.set(&k.flags, f.d)?;
            let mut letters = StackText::<8>::new();
            for (on, letter) in bits.iter().zip(TCP_FLAG_LETTERS) {
                if *on {
                    let _ = letters.write_char(char::from(letter));
                }
            }
            m.text(&k.flags_str, letters.as_str())?;
            m.set(&k.window, t.window_size())?;
            m.set(&k.checksum, t.checksum())?;
            m.set(&k.urgent_pointer, t.urgent_pointer())?;
            m.set(&k.header_len, usize::from(t.data_offset()) * 4)?;
            let p = t.payload();
            m.set(&k.data_len, p.len())?;
            m.bytes(&k.payload, p)?;
            if let Some(a) = app {
                m.set(&k.app, app_obj(py, k, a)?)?;
            }
        }
        L4::Udp(u, app) => {
            m.s(&k.type_, &k.v_udp)?;
            m.set(&k.src_port, u.source_port())?;
            m.set(&k.dst_port, u.destination_port())?;
            m.set(&k.length, u.length())?;
            m.set(&k.checksum, u.checksum())?;
            let p = u.payload();
            m.set(&k.data_len, p.len())?;
            m.bytes(&k.payload, p)?;
            if let Some(a) = app {
                m.set(&k.app, app_obj(py, k, a)?)?;
            }
        }
        L4::Icmp(i) => icmp_fields(&m, k, i)?,
        L4::Fragment {
            v6,
            proto,
            offset,
            payload,
        } => {
            m.s(
                &k.type_,
                if *v6 {
                    &k.v_ipv6_fragment
                } else {
                    &k.v_ipv4_fragment
                },
            )?;
            m.set(&k.offset, *offset)?;
            m.set(&k.proto, *proto)?;
            m.set(&k.data_len, payload.len())?;
            m.bytes(&k.payload, payload)?;
        }
        L4::Unknown {
            proto,
            truncated,
            payload,
        } => {
            m.s(&k.type_, &k.v_unknown_l4)?;
            m.set(&k.proto, *proto)?;
            if *truncated {
                m.s(&k.reason, &k.v_truncated)?;
            }
            m.set(&k.data_len, payload.len())?;
            m.bytes(&k.payload, payload)?;
        }
    }
    Ok(m.d)
}

fn icmp_fields(m: &Map<'_>, k: &Strings, i: &Icmp<'_>) -> PyResult<()> {
    m.s(&k.type_, if i.v6 { &k.v_icmpv6 } else { &k.v_icmpv4 })?;
    m.set(&k.icmp_type, i.icmp_type)?;
    m.set(&k.code, i.code)?;
    m.set(&k.checksum, i.checksum)?;
    let tn = i.type_name();
    let cn = i.code_name();
    m.set(&k.type_name, name_text(m.py, tn))?;
    match cn {
        Some(c) => m.set(&k.code_name, name_text(m.py, c))?,
        None => m.none(&k.code_name)?,
    }
    let mut s = StackText::<64>::new();
    let _ = match cn {
        Some(c) => write!(s, "{tn}/{c}"),
        None => write!(s, "{tn}"),
    };
    m.text(&k.summary, s.as_str())?;
    m.set(&k.data_len, i.payload.len())?;
    m.bytes(&k.payload, i.payload)
}

fn app_obj<'py>(py: Python<'py>, k: &Strings, app: &App<'_>) -> PyResult<Bound<'py, PyAny>> {
    match app {
        App::Dns(None) => Ok(py.None().into_bound(py)),
        App::Dns(Some(dns)) => Ok(dns_map(py, k, dns)?.into_any()),
        App::Tls(ch) => Ok(tls_map(py, k, ch)?.into_any()),
    }
}

fn dns_map<'py>(py: Python<'py>, k: &Strings, d: &Dns<'_>) -> PyResult<Bound<'py, PyDict>> {
    let m = Map::new(py);
    let mut opcode_name = StackText::<16>::new();
    let _ = match dns::opcode_name(d.opcode()) {
        Some(s) => opcode_name.write_str(s),
        None => write!(opcode_name, "opcode-{}", d.opcode()),
    };
    let mut rcode_name = StackText::<16>::new();
    let _ = match dns::rcode_name(d.rcode()) {
        Some(s) => rcode_name.write_str(s),
        None => write!(rcode_name, "rcode-{}", d.rcode()),
    };
    let opcode_name = PyString::new(py, opcode_name.as_str());
    let rcode_name = PyString::new(py, rcode_name.as_str());
    m.s(&k.type_, &k.v_dns)?;
    m.set(&k.id, d.id())?;
    m.set(&k.qdcount, d.qdcount())?;
    m.set(&k.ancount, d.ancount())?;
    m.set(&k.nscount, d.nscount())?;
    m.set(&k.arcount, d.arcount())?;
    m.set(&k.flags_raw, d.flags())?;
    m.set(&k.qr, d.qr())?;
    m.set(&k.opcode, d.opcode())?;
    m.set(&k.opcode_name, &opcode_name)?;
    m.set(&k.aa, d.aa())?;
    m.set(&k.tc, d.tc())?;
    m.set(&k.rd, d.rd())?;
    m.set(&k.ra, d.ra())?;
    m.set(&k.rcode, d.rcode())?;
    m.set(&k.rcode_name, &rcode_name)?;
    let mut summary = StackText::<48>::new();
    let _ = if d.qr() {
        write!(
            summary,
            "response/{}/{}",
            opcode_name.to_str()?,
            rcode_name.to_str()?
        )
    } else {
        write!(summary, "query/{}", opcode_name.to_str()?)
    };
    m.text(&k.summary, summary.as_str())?;
    let f = Map::new(py);
    f.set(&k.raw, d.flags())?;
    f.set(&k.qr, d.qr())?;
    f.set(&k.opcode, d.opcode())?;
    f.set(&k.aa, d.aa())?;
    f.set(&k.tc, d.tc())?;
    f.set(&k.rd, d.rd())?;
    f.set(&k.ra, d.ra())?;
    f.set(&k.rcode, d.rcode())?;
    f.set(&k.rcode_name, &rcode_name)?;
    m.set(&k.flags, f.d)?;
    if d.qdcount() >= 1 {
        match d.question() {
            Some(q) => {
                m.text(&k.qname, q.qname())?;
                m.set(&k.qtype, q.qtype)?;
                m.set(&k.qclass, q.qclass)?;
                let mut t = StackText::<16>::new();
                let _ = write!(t, "{}", q.qtype_name());
                m.text(&k.qtype_name, t.as_str())?;
            }
            None => {
                m.none(&k.qname)?;
                m.none(&k.qtype)?;
                m.none(&k.qclass)?;
                m.none(&k.qtype_name)?;
            }
        }
    }
    Ok(m.d)
}

fn tls_map<'py>(
    py: Python<'py>,
    k: &Strings,
    ch: &ClientHello<'_>,
) -> PyResult<Bound<'py, PyDict>> {
    let m = Map::new(py);
    m.s(&k.type_, &k.v_tls)?;
    if let Some(sni) = ch.sni {
        m.text(&k.sni, sni)?;
    }
    if ch.has_alpn() {
        let list = PyList::empty(py);
        for p in ch.alpn() {
            list.append(p)?;
        }
        m.set(&k.alpn, list)?;
    }
    // The summary fits a stack buffer unless the names are unusually long.
    let mut small = StackText::<512>::new();
    if tls_summary(&mut small, ch).is_ok() {
        m.text(&k.summary, small.as_str())?;
    } else {
        let mut long = String::new();
        let _ = tls_summary(&mut long, ch);
        m.text(&k.summary, &long)?;
    }
    Ok(m.d)
}

/// `TLS ClientHello SNI=<host>`, else `TLS ClientHello ALPN=<a>,<b>`.
fn tls_summary(out: &mut impl core::fmt::Write, ch: &ClientHello<'_>) -> core::fmt::Result {
    out.write_str("TLS ClientHello")?;
    match ch.sni {
        Some(sni) => write!(out, " SNI={sni}"),
        None => {
            out.write_str(" ALPN=")?;
            for (i, p) in ch.alpn().enumerate() {
                if i > 0 {
                    out.write_char(',')?;
                }
                out.write_str(p)?;
            }
            Ok(())
        }
    }
}

/// The packet map of raw bytes (timestamps 0, caplen = len = `len(data)`).
#[pyfunction]
#[pyo3(signature = (data, linktype))]
pub fn decode_bytes<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    linktype: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let b = data.as_bytes();
    let n = u32::try_from(b.len()).unwrap_or(u32::MAX);
    let pkt = RawPacket {
        ts_ns: 0,
        caplen: n,
        wirelen: n,
        linktype,
        data: b,
    };
    Ok(full_map_with(py, &pkt, Some(data.as_any()))?.0)
}

/// Replace the hooks applied to full maps (a tuple of callables, in order).
#[pyfunction]
pub fn set_decode_hooks(hooks: Bound<'_, PyTuple>) {
    let n = hooks.len();
    let mut guard = HOOKS.lock().unwrap_or_else(|p| p.into_inner());
    *guard = (n > 0).then(|| hooks.unbind());
    HOOK_COUNT.store(n, Ordering::Relaxed);
}
