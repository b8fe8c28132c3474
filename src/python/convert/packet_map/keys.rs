//! The packet map's interned keys and constant values, and the dict templates of its
//! fixed-shape maps.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString};

macro_rules! strings {
    ($($field:ident = $text:literal),* $(,)?) => {
        /// Interned keys and constant values of the packet map.
        pub(super) struct Strings { $(pub(super) $field: Py<PyString>),* }
        impl Strings {
            pub(super) fn new(py: Python<'_>) -> Self {
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
    sni = "sni", alpn = "alpn", ja4 = "ja4",
    presumed_total_length = "presumed_total_length",
    presumed_payload_length = "presumed_payload_length",
    v_ethernet = "ethernet", v_raw = "raw", v_linux_sll = "linux_sll", v_linux_sll2 = "linux_sll2",
    v_null = "null", v_loop = "loop", v_raw_ipv4 = "raw_ipv4", v_raw_ipv6 = "raw_ipv6",
    v_ipv4 = "ipv4", v_ipv6 = "ipv6", v_arp = "arp", v_unknown_l3 = "unknown_l3",
    v_tcp = "tcp", v_udp = "udp", v_icmpv4 = "icmpv4", v_icmpv6 = "icmpv6", v_icmp = "icmp",
    v_icmp6 = "icmp6", v_ipv4_fragment = "ipv4_fragment", v_ipv6_fragment = "ipv6_fragment",
    v_unknown_l4 = "unknown_l4", v_truncated = "truncated", v_request = "request", v_reply = "reply",
    v_dns = "dns", v_tls = "tls",
}

pub(super) static STRINGS: PyOnceLock<Strings> = PyOnceLock::new();
static TEMPLATES: PyOnceLock<Templates> = PyOnceLock::new();

/// Dicts with the keys of the common fixed-shape maps. Copying one (`PyDict_Copy` clones
/// the key table) and replacing its values is cheaper than inserting every key into a fresh
/// dict, which rebuilds the table as it grows. Values are None, except where a map of that
/// shape mostly holds one value (its `type`, the IP version, an unfragmented IPv4 packet's
/// `frag`): the builder leaves those as they are when the packet agrees.
pub(super) struct Templates {
    pub(super) top: Py<PyDict>,
    pub(super) ethernet: Py<PyDict>,
    pub(super) ipv4: Py<PyDict>,
    pub(super) ipv6: Py<PyDict>,
    pub(super) flow_tcp: Py<PyDict>,
    pub(super) flow_udp: Py<PyDict>,
    pub(super) udp: Py<PyDict>,
    pub(super) tcp: Py<PyDict>,
    pub(super) tcp_flags: Py<PyDict>,
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
        // The template `keys` with `type` (its first key) set to `ty`.
        let typed = |ty: &Py<PyString>, keys: &[&Py<PyString>]| -> PyResult<Py<PyDict>> {
            let d = t(keys)?;
            d.bind(py).set_item(k.type_.bind(py), ty.bind(py))?;
            Ok(d)
        };
        let flow = |proto: &Py<PyString>| -> PyResult<Py<PyDict>> {
            let d = t(&[&k.proto, &k.src_ip, &k.src_port, &k.dst_ip, &k.dst_port])?;
            d.bind(py).set_item(k.proto.bind(py), proto.bind(py))?;
            Ok(d)
        };
        let tpl = Templates {
            top: t(&[
                &k.ts_sec, &k.ts_usec, &k.ts_ns, &k.caplen, &k.len, &k.data, &k.decoded,
            ])?,
            ethernet: typed(&k.v_ethernet, &[&k.type_, &k.src, &k.dst, &k.eth, &k.l3])?,
            ipv4: typed(
                &k.v_ipv4,
                &[
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
                ],
            )?,
            ipv6: typed(
                &k.v_ipv6,
                &[
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
                ],
            )?,
            flow_tcp: flow(&k.v_tcp)?,
            flow_udp: flow(&k.v_udp)?,
            udp: typed(
                &k.v_udp,
                &[
                    &k.type_,
                    &k.src_port,
                    &k.dst_port,
                    &k.length,
                    &k.checksum,
                    &k.data_len,
                    &k.payload,
                ],
            )?,
            tcp: typed(
                &k.v_tcp,
                &[
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
                ],
            )?,
            tcp_flags: t(&[
                &k.urg, &k.ack, &k.psh, &k.rst, &k.syn, &k.fin, &k.ece, &k.cwr,
            ])?,
        };
        let (ipv4, ipv6) = (tpl.ipv4.bind(py), tpl.ipv6.bind(py));
        ipv4.set_item(k.version.bind(py), 4)?;
        ipv4.set_item(k.frag.bind(py), false)?;
        ipv6.set_item(k.version.bind(py), 6)?;
        Ok(tpl)
    }
}

/// The `flags` map of each TCP flags byte (CWR in bit 7 down to FIN in bit 0), built on
/// first use from the `tcp_flags` template.
static TCP_FLAGS: PyOnceLock<Box<[PyOnceLock<Py<PyDict>>]>> = PyOnceLock::new();

/// A new `flags` map for the TCP flags byte `b`.
pub(super) fn tcp_flags_map<'py>(
    py: Python<'py>,
    k: &Strings,
    t: &Templates,
    b: u8,
) -> PyResult<Bound<'py, PyDict>> {
    let table = TCP_FLAGS.get_or_init(py, || (0..256).map(|_| PyOnceLock::new()).collect());
    let d = table[usize::from(b)].get_or_try_init(py, || -> PyResult<Py<PyDict>> {
        let d = t.tcp_flags.bind(py).copy()?;
        let bits = [
            (&k.cwr, 0x80),
            (&k.ece, 0x40),
            (&k.urg, 0x20),
            (&k.ack, 0x10),
            (&k.psh, 0x08),
            (&k.rst, 0x04),
            (&k.syn, 0x02),
            (&k.fin, 0x01),
        ];
        for (key, bit) in bits {
            d.set_item(key.bind(py), b & bit != 0)?;
        }
        Ok(d.unbind())
    })?;
    d.bind(py).copy()
}

pub(super) fn templates(py: Python<'_>, k: &Strings) -> PyResult<&'static Templates> {
    TEMPLATES.get_or_try_init(py, || Templates::new(py, k))
}
