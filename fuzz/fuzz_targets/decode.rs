//! Fuzz the decoder: the first byte picks the link type, the rest is the frame. Every
//! accessor the packet map uses is exercised.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paclo::decode::{addr, decode, App, L3, L4};

/// Seeds name a link type by its index here: new link types go at the end.
const LINKTYPES: [u32; 11] = [0, 1, 12, 14, 101, 108, 113, 276, 147, 228, 229];

fuzz_target!(|input: &[u8]| {
    let Some((&first, frame)) = input.split_first() else {
        return;
    };
    let d = decode(LINKTYPES[usize::from(first) % LINKTYPES.len()], frame);
    let mut sink = 0usize;
    if let Some(e) = d.error {
        sink += e.to_string().len();
    }
    if let Some(link) = &d.link {
        sink += link.src.map_or(0, |s| addr::hw(s).as_str().len());
        sink += link.vlan.as_slice().len();
    }
    let Some(l3) = &d.l3 else { return };
    sink += l3.flow_key().map_or(0, |k| usize::from(k.ports.is_some()));
    let l4 = match l3 {
        L3::Ipv4(v4) => {
            sink +=
                addr::ipv4(&v4.header.source()).as_str().len() + usize::from(v4.frag_offset_raw());
            &v4.l4
        }
        L3::Ipv6(v6) => {
            sink += addr::ipv6_compact(&v6.header.source()).as_str().len();
            sink += addr::ipv6_full(&v6.header.destination()).as_str().len();
            &v6.l4
        }
        L3::Arp(Some(a)) => {
            sink += a.spa_ipv4().map_or(0, |ip| addr::ipv4(&ip).as_str().len())
                + addr::hw(a.tha).as_str().len();
            std::hint::black_box(sink);
            return;
        }
        _ => return,
    };
    match l4 {
        L4::Tcp(t, app) => {
            sink += t.payload().len() + usize::from(t.data_offset());
            if let Some(App::Tls(ch)) = app {
                sink += ch.sni.map_or(0, str::len) + ch.alpn().map(str::len).sum::<usize>();
            }
        }
        L4::Udp(u, Some(App::Dns(Some(dns)))) => {
            sink += u.payload().len() + usize::from(dns.rcode());
            if let Some(q) = dns.question() {
                sink += q.qname().len() + q.qtype_name().to_string().len();
            }
        }
        L4::Icmp(i) => {
            sink +=
                i.type_name().to_string().len() + i.code_name().map_or(0, |c| c.to_string().len());
        }
        _ => {}
    }
    std::hint::black_box(sink);
});
