//! The layers of the packet map: L3 (IPv4, IPv6, ARP, the flow key), L4 (TCP, UDP, ICMP,
//! fragments) and the application hints (DNS, TLS ClientHello).

use core::fmt::Write as _;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::cache;
use super::keys::{tcp_flags_map, Strings, Templates};
use super::{hw_text, name_text, Map, StackText};
use crate::decode::addr;
use crate::decode::arp::{Arp, ArpOp};
use crate::decode::dns::{self, Dns};
use crate::decode::icmp::Icmp;
use crate::decode::tls::ClientHello;
use crate::decode::{App, FlowProto, Ipv4, Ipv6, L3, L4};
use crate::fingerprint::ja4;

pub(super) fn l3_map<'py>(
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
    // `type`, `version` 4 and `frag` False come with the template.
    if h.version() != 4 {
        m.int(&k.version, h.version().into())?;
    }
    m.int(&k.ihl, u64::from(h.ihl()) * 4)?;
    m.int(&k.tos, v4.tos().into())?;
    m.int(&k.total_length, h.total_len().into())?;
    m.int(&k.id, h.identification().into())?;
    m.int(&k.flags_frag, v4.flags_frag().into())?;
    m.int(&k.ttl, h.ttl().into())?;
    m.int(&k.protocol, h.protocol().0.into())?;
    m.int(&k.header_checksum, h.header_checksum().into())?;
    let src = cache::ipv4(m.py, h.source());
    let dst = cache::ipv4(m.py, h.destination());
    m.set(&k.src, &src)?;
    m.set(&k.dst, &dst)?;
    if v4.frag() {
        m.set(&k.frag, true)?;
        m.int(&k.frag_offset, v4.frag_offset_raw().into())?;
    }
    flow_key(m, k, t, l3, &src, &dst)?;
    m.set(&k.l4, l4_map(m.py, k, t, &v4.l4)?)?;
    if let Some(n) = v4.presumed_total_length {
        m.set(&k.presumed_total_length, n)?;
    }
    Ok(())
}

fn ipv6_fields(
    m: &Map<'_>,
    k: &Strings,
    t: &Templates,
    v6: &Ipv6<'_>,
    l3: &L3<'_>,
) -> PyResult<()> {
    let h = &v6.header;
    // `type` and `version` 6 come with the template.
    if h.version() != 6 {
        m.int(&k.version, h.version().into())?;
    }
    m.int(&k.traffic_class, h.traffic_class().into())?;
    m.int(&k.flow_label, h.flow_label().value().into())?;
    m.int(&k.payload_length, h.payload_length().into())?;
    m.opt_int(&k.next_header, v6.next_header.map(u64::from))?;
    m.int(&k.hop_limit, h.hop_limit().into())?;
    let (s, d) = (h.source(), h.destination());
    let (src, src_compact) = cache::ipv6(m.py, &s);
    let (dst, dst_compact) = cache::ipv6(m.py, &d);
    m.set(&k.src, &src)?;
    m.set(&k.dst, &dst)?;
    m.set(&k.src_compact, src_compact)?;
    m.set(&k.dst_compact, dst_compact)?;
    m.set(&k.frag, v6.frag)?;
    m.set(&k.frag_offset, v6.frag_offset)?;
    flow_key(m, k, t, l3, &src, &dst)?;
    m.set(&k.l4, l4_map(m.py, k, t, &v6.l4)?)?;
    if let Some(n) = v6.presumed_payload_length {
        m.set(&k.presumed_payload_length, n)?;
    }
    Ok(())
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
    // TCP's and UDP's `proto` come with their template.
    let f = match key.proto {
        FlowProto::Tcp => Map::like(m.py, &t.flow_tcp)?,
        FlowProto::Udp => Map::like(m.py, &t.flow_udp)?,
        _ => Map::new(m.py),
    };
    match key.proto {
        FlowProto::Tcp | FlowProto::Udp => {}
        FlowProto::Icmp => f.s(&k.proto, &k.v_icmp)?,
        FlowProto::Icmp6 => f.s(&k.proto, &k.v_icmp6)?,
        FlowProto::Other(n) => f.set(&k.proto, n)?,
    }
    f.set(&k.src_ip, src)?;
    if key.proto.has_ports() {
        f.set(&k.src_port, key.ports.map(|p| cache::int(m.py, p.0.into())))?;
    }
    f.set(&k.dst_ip, dst)?;
    if key.proto.has_ports() {
        f.set(&k.dst_port, key.ports.map(|p| cache::int(m.py, p.1.into())))?;
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
        // TCP's and UDP's `type` come with their template.
        L4::Tcp(t, app) => {
            m.int(&k.src_port, t.source_port().into())?;
            m.int(&k.dst_port, t.destination_port().into())?;
            m.int(&k.seq, t.sequence_number().into())?;
            m.int(&k.ack, t.acknowledgment_number().into())?;
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
            // Header byte 13, CWR (bit 7) down to FIN (bit 0).
            let byte = bits.iter().fold(0u8, |acc, &on| (acc << 1) | u8::from(on));
            m.set(&k.flags, tcp_flags_map(py, k, tpl, byte)?)?;
            m.set(&k.flags_str, cache::tcp_flags(py, byte))?;
            m.int(&k.window, t.window_size().into())?;
            m.int(&k.checksum, t.checksum().into())?;
            m.int(&k.urgent_pointer, t.urgent_pointer().into())?;
            m.int(&k.header_len, u64::from(t.data_offset()) * 4)?;
            let p = t.payload();
            m.int(&k.data_len, p.len() as u64)?;
            m.bytes(&k.payload, p)?;
            if let Some(a) = app {
                m.set(&k.app, app_obj(py, k, a)?)?;
            }
        }
        L4::Udp(u, app) => {
            m.int(&k.src_port, u.source_port().into())?;
            m.int(&k.dst_port, u.destination_port().into())?;
            m.int(&k.length, u.length().into())?;
            m.int(&k.checksum, u.checksum().into())?;
            let p = u.payload();
            m.int(&k.data_len, p.len() as u64)?;
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
            m.int(&k.offset, u64::from(*offset))?;
            m.int(&k.proto, u64::from(*proto))?;
            m.int(&k.data_len, payload.len() as u64)?;
            m.bytes(&k.payload, payload)?;
        }
        L4::Unknown {
            proto,
            truncated,
            payload,
        } => {
            m.s(&k.type_, &k.v_unknown_l4)?;
            m.opt_int(&k.proto, proto.map(u64::from))?;
            if *truncated {
                m.s(&k.reason, &k.v_truncated)?;
            }
            m.int(&k.data_len, payload.len() as u64)?;
            m.bytes(&k.payload, payload)?;
        }
    }
    Ok(m.d)
}

fn icmp_fields(m: &Map<'_>, k: &Strings, i: &Icmp<'_>) -> PyResult<()> {
    m.s(&k.type_, if i.v6 { &k.v_icmpv6 } else { &k.v_icmpv4 })?;
    m.int(&k.icmp_type, i.icmp_type.into())?;
    m.int(&k.code, i.code.into())?;
    m.int(&k.checksum, i.checksum.into())?;
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
    m.int(&k.data_len, i.payload.len() as u64)?;
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
    ja4::with_ja4(&ch.hello, ja4::Transport::Tcp, |v| match v {
        Some(v) => m.text(&k.ja4, v),
        None => Ok(()),
    })?;
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
