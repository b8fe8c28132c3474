"""Golden tests of the packet map, field by field (reference §2, DESIGN §4)."""

from __future__ import annotations

import pytest
from _decoder_util import (
    ah,
    arp,
    client_hello,
    dns,
    dns_name,
    eth,
    ext,
    frag6,
    icmp,
    ipv4,
    ipv6,
    tag,
    tcp,
    udp,
    vlan,
)

import paclo


def d(frame: bytes, **kw) -> dict:
    m = paclo.decode(frame, **kw)
    assert "decode_error" not in m, m.get("decode_error")
    return m["decoded"]


def test_top_level_and_ethernet_ipv4_udp():
    frame = eth(0x0800, ipv4(17, udp(12000, 5300, b"abcd")))
    m = paclo.decode(frame)
    assert list(m) == ["ts_sec", "ts_usec", "ts_ns", "caplen", "len", "data", "decoded"]
    assert (m["ts_sec"], m["ts_usec"], m["ts_ns"], m["caplen"], m["len"]) == (0, 0, 0, 46, 46)
    assert m["data"] == frame
    dec = m["decoded"]
    assert dec["type"] == "ethernet"
    assert dec["src"] == "20:21:22:23:24:25" and dec["dst"] == "10:11:12:13:14:15"
    assert dec["eth"] == 0x0800
    assert "vlan_tags" not in dec
    l3 = dec["l3"]
    assert l3 == {
        "type": "ipv4", "version": 4, "ihl": 20, "tos": 0x10, "total_length": 32, "id": 0xABCD,
        "flags_frag": 0, "ttl": 64, "protocol": 17, "header_checksum": 0x1111,
        "src": "10.0.0.1", "dst": "10.0.0.2", "frag": False, "frag_offset": None,
        "flow_key": {"proto": "udp", "src_ip": "10.0.0.1", "src_port": 12000, "dst_ip": "10.0.0.2",
                     "dst_port": 5300},
        "l4": {"type": "udp", "src_port": 12000, "dst_port": 5300, "length": 12, "checksum": 0x1234,
               "data_len": 4, "payload": b"abcd"},
    }


def test_ipv4_options_skipped_and_padding_trimmed():
    frame = eth(0x0800, ipv4(17, udp(1, 2, b"x"), options=b"\x01\x01\x01\x00")) + bytes(10)
    l3 = d(frame)["l3"]
    assert l3["ihl"] == 24
    assert l3["l4"]["payload"] == b"x" and l3["l4"]["data_len"] == 1


def test_ipv4_total_length_beyond_capture_uses_the_rest():
    frame = eth(0x0800, ipv4(17, udp(1, 2, b"xyz"), total_length=200))
    assert d(frame)["l3"]["l4"]["payload"] == b"xyz"


def test_ipv4_first_and_non_first_fragments():
    first = d(eth(0x0800, ipv4(6, tcp(1, 2, 0x02), flags_frag=0x2000)))["l3"]
    assert (first["frag"], first["frag_offset"], first["l4"]["type"]) == (True, 0, "tcp")
    assert first["flow_key"]["src_port"] == 1
    later = d(eth(0x0800, ipv4(17, b"fragdata", flags_frag=0x2000 | 185)))["l3"]
    assert (later["frag"], later["frag_offset"], later["flags_frag"]) == (True, 185, 0x2000 | 185)
    assert later["l4"] == {"type": "ipv4_fragment", "offset": 185, "proto": 17, "data_len": 8,
                           "payload": b"fragdata"}
    assert later["flow_key"] == {"proto": "udp", "src_ip": "10.0.0.1", "src_port": None,
                                 "dst_ip": "10.0.0.2", "dst_port": None}


def test_vlan_and_qinq_tags():
    for tpid in (0x8100, 0x88A8, 0x9100, 0x9200):
        inner = tag(1, 1, 7, 0x0800) + ipv4(17, udp(1, 2, b""))
        dec = d(vlan(tpid, 5, 0, 100, 0x8100, inner))
        assert dec["vlan_tags"] == [{"tpid": tpid, "pcp": 5, "dei": False, "vid": 100},
                                    {"tpid": 0x8100, "pcp": 1, "dei": True, "vid": 7}]
        assert dec["eth"] == 0x0800 and dec["l3"]["type"] == "ipv4"


def test_truncated_vlan_keeps_ethernet_and_names_the_cut():
    m = paclo.decode(eth(0x8100, b"\x00\x01"))
    assert m["decode_error"] == "truncated VLAN header: need 4 bytes, have 2 at offset 14"
    assert m["decoded"]["eth"] == 0x8100
    assert m["decoded"]["l3"] == {"type": "unknown_l3", "eth": 0x8100}
    assert "vlan_tags" not in m["decoded"]


def test_ipv4_authentication_header_and_version_nibble():
    auth = bytes([6, 4, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1]) + bytes(12)
    l3 = d(eth(0x0800, ipv4(51, auth + tcp(5, 6, 0x02))))["l3"]
    assert (l3["protocol"], l3["l4"]["type"], l3["flow_key"]["proto"], l3["flow_key"]["dst_port"]) == \
        (51, "tcp", "tcp", 6)
    dec = d(eth(0x0800, ipv6(17, udp(1, 2, b""))))
    assert (dec["eth"], dec["l3"]["type"]) == (0x0800, "ipv6")


def test_unknown_l3():
    dec = d(eth(0x88CC, b"lldp"))
    assert dec["l3"] == {"type": "unknown_l3", "eth": 0x88CC}


def test_ipv6_fields_and_compact_forms():
    l3 = d(eth(0x86DD, ipv6(17, udp(5353, 53, b""))))["l3"]
    assert l3["type"] == "ipv6"
    assert (l3["version"], l3["traffic_class"], l3["flow_label"], l3["payload_length"]) == (6, 0x12, 0x34567, 8)
    assert (l3["next_header"], l3["hop_limit"]) == (17, 64)
    assert l3["src"] == "2001:db8:0:0:0:0:0:1" and l3["src_compact"] == "2001:db8::1"
    assert l3["dst"] == "fe80:0:0:0:0:0:0:abc" and l3["dst_compact"] == "fe80::abc"
    assert (l3["frag"], l3["frag_offset"]) == (False, None)
    assert l3["flow_key"] == {"proto": "udp", "src_ip": "2001:db8:0:0:0:0:0:1", "src_port": 5353,
                              "dst_ip": "fe80:0:0:0:0:0:0:abc", "dst_port": 53}
    assert "app" not in l3["l4"]  # port 53 but no payload: no DNS


def test_ipv6_extension_chain_each_header():
    chain = (ext(43, b"\x01\x02\x00\x00")             # HBH with PadN, then Routing
             + ext(60, bytes(6))                        # Routing, then DestOpts
             + ext(44, b"\x00\x04")                     # DestOpts with PadN(0)... then Fragment
             + frag6(51, 0, True)                       # first fragment, then AH
             + ah(6)
             + tcp(40000, 80, 0x18, b"GET"))
    l3 = d(eth(0x86DD, ipv6(0, chain)))["l3"]
    assert (l3["next_header"], l3["frag"], l3["frag_offset"]) == (6, True, 0)
    assert l3["l4"]["type"] == "tcp" and l3["l4"]["payload"] == b"GET"
    assert l3["flow_key"]["proto"] == "tcp"


def test_ipv6_invalid_tlv_esp_and_non_first_fragment():
    bad = d(eth(0x86DD, ipv6(0, bytes([17, 0, 1, 9]) + bytes(4) + udp(1, 2, b""))))["l3"]
    assert bad["next_header"] is None and bad["flow_key"] is None
    assert bad["l4"]["type"] == "unknown_l4" and bad["l4"]["proto"] is None
    esp = d(eth(0x86DD, ipv6(50, bytes(16))))["l3"]
    assert esp["l4"]["type"] == "unknown_l4" and esp["l4"]["proto"] == 50
    assert esp["flow_key"] == {"proto": 50, "src_ip": "2001:db8:0:0:0:0:0:1",
                               "dst_ip": "fe80:0:0:0:0:0:0:abc"}
    nf = d(eth(0x86DD, ipv6(44, frag6(17, 100, False) + b"rest")))["l3"]
    assert (nf["frag"], nf["frag_offset"], nf["next_header"]) == (True, 100, 17)
    assert nf["l4"] == {"type": "ipv6_fragment", "offset": 100, "proto": 17, "data_len": 4, "payload": b"rest"}
    assert nf["flow_key"]["src_port"] is None


def test_tcp_fields_flags_and_options():
    seg = tcp(443, 50000, 0x18 | 0x40 | 0x80, b"hi", options=b"\x02\x04\x05\xb4\x01\x01\x04\x02", seq=7,
              ack=9, window=512, checksum=0xAAAA, urgent=3)
    l4 = d(eth(0x0800, ipv4(6, seg)))["l3"]["l4"]
    assert l4 == {
        "type": "tcp", "src_port": 443, "dst_port": 50000, "seq": 7, "ack": 9,
        "flags": {"urg": False, "ack": True, "psh": True, "rst": False, "syn": False, "fin": False,
                  "ece": True, "cwr": True},
        "flags_str": "CEAP", "window": 512, "checksum": 0xAAAA, "urgent_pointer": 3,
        "header_len": 28, "data_len": 2, "payload": b"hi",
    }


@pytest.mark.parametrize("flags,text", [(0x02, "S"), (0x12, "AS"), (0x11, "AF"), (0x3F, "UAPRSF"), (0, "")])
def test_tcp_flags_str_order(flags, text):
    assert d(eth(0x0800, ipv4(6, tcp(1, 2, flags))))["l3"]["l4"]["flags_str"] == text


@pytest.mark.parametrize("t,c,tn,cn,summary", [
    (8, 0, "echo-request", None, "echo-request"),
    (0, 0, "echo-reply", None, "echo-reply"),
    (3, 3, "dest-unreachable", "port-unreachable", "dest-unreachable/port-unreachable"),
    (3, 4, "dest-unreachable", "frag-needed", "dest-unreachable/frag-needed"),
    (3, 13, "dest-unreachable", "comm-admin-prohibited", "dest-unreachable/comm-admin-prohibited"),
    (3, 7, "dest-unreachable", "code-7", "dest-unreachable/code-7"),
    (5, 1, "redirect", "redirect-host", "redirect/redirect-host"),
    (11, 0, "time-exceeded", "ttl-exceeded", "time-exceeded/ttl-exceeded"),
    (12, 2, "parameter-problem", "bad-length", "parameter-problem/bad-length"),
    (13, 0, "timestamp", None, "timestamp"),
    (17, 0, "address-mask-request", None, "address-mask-request"),
    (8, 5, "echo-request", "code-5", "echo-request/code-5"),
    (42, 0, "type-42", None, "type-42"),
])
def test_icmpv4_names(t, c, tn, cn, summary):
    l4 = d(eth(0x0800, ipv4(1, icmp(t, c, b"\x00\x01\x00\x02data"))))["l3"]["l4"]
    assert l4 == {"type": "icmpv4", "icmp_type": t, "code": c, "checksum": 0xF00D, "type_name": tn,
                  "code_name": cn, "summary": summary, "data_len": 8, "payload": b"\x00\x01\x00\x02data"}


@pytest.mark.parametrize("t,c,tn,cn", [
    (1, 0, "dest-unreachable", "no-route"), (1, 4, "dest-unreachable", "port-unreachable"),
    (1, 2, "dest-unreachable", "code-2"), (2, 0, "packet-too-big", None),
    (3, 0, "time-exceeded", "hop-limit-exceeded"), (4, 1, "parameter-problem", "unknown-next-header"),
    (128, 0, "echo-request", None), (129, 0, "echo-reply", None), (133, 0, "router-solicitation", None),
    (134, 0, "router-advertisement", None), (135, 0, "neighbor-solicitation", None),
    (136, 0, "neighbor-advertisement", None), (137, 0, "redirect", None), (200, 1, "type-200", "code-1"),
])
def test_icmpv6_names(t, c, tn, cn):
    l3 = d(eth(0x86DD, ipv6(58, icmp(t, c))))["l3"]
    l4 = l3["l4"]
    assert (l4["type"], l4["icmp_type"], l4["code"], l4["type_name"], l4["code_name"]) == ("icmpv6", t, c, tn, cn)
    assert l4["summary"] == (f"{tn}/{cn}" if cn else tn)
    assert l3["flow_key"]["proto"] == "icmp6"


def test_arp_request_reply_and_other_ptype():
    body = arp(1, bytes.fromhex("0a0b0c0d0e0f"), bytes([192, 168, 1, 1]), bytes(6), bytes([192, 168, 1, 2]))
    l3 = d(eth(0x0806, body))["l3"]
    assert l3 == {"type": "arp", "htype": 1, "ptype": 0x0800, "op": "request", "sha": "0a:0b:0c:0d:0e:0f",
                  "spa": "192.168.1.1", "tha": "00:00:00:00:00:00", "tpa": "192.168.1.2"}
    assert d(eth(0x0806, arp(2, bytes(6), bytes(4), bytes(6), bytes(4))))["l3"]["op"] == "reply"
    other = d(eth(0x0806, arp(9, bytes(6), bytes(4), bytes(6), bytes(4), ptype=0x86DD)))["l3"]
    assert (other["op"], other["spa"], other["tpa"]) == (9, None, None)
    assert "flow_key" not in other


def test_dns_query_fields():
    q = dns(0xBEEF, 0x0100, [(dns_name("www.example.com"), 28, 1)])
    l4 = d(eth(0x0800, ipv4(17, udp(40000, 53, q))))["l3"]["l4"]
    assert l4["app"] == {
        "type": "dns", "id": 0xBEEF, "qdcount": 1, "ancount": 0, "nscount": 0, "arcount": 0,
        "flags_raw": 0x0100, "qr": False, "opcode": 0, "opcode_name": "query", "aa": False, "tc": False,
        "rd": True, "ra": False, "rcode": 0, "rcode_name": "noerror", "summary": "query/query",
        "flags": {"raw": 0x0100, "qr": False, "opcode": 0, "aa": False, "tc": False, "rd": True, "ra": False,
                  "rcode": 0, "rcode_name": "noerror"},
        "qname": "www.example.com", "qtype": 28, "qclass": 1, "qtype_name": "AAAA",
    }


def test_dns_response_names_and_compression():
    # response, opcode notify(4), aa, rcode nxdomain(3); question name "a" + pointer to "b.c"
    name = b"\x01a\xc0\x14"
    msg = dns(7, 0x8000 | (4 << 11) | 0x0400 | 3, [(name, 65, 1)], an=1, tail=b"\x01b\x01c\x00")
    app = d(eth(0x0800, ipv4(17, udp(53, 40000, msg))))["l3"]["l4"]["app"]
    assert (app["qr"], app["opcode_name"], app["aa"], app["rcode_name"]) == (True, "notify", True, "nxdomain")
    assert app["summary"] == "response/notify/nxdomain"
    assert (app["qname"], app["qtype_name"], app["ancount"]) == ("a.b.c", "HTTPS", 1)


@pytest.mark.parametrize("opcode,name", [(1, "iquery"), (2, "status"), (5, "update"), (3, "opcode-3")])
def test_dns_opcode_names(opcode, name):
    app = d(eth(0x0800, ipv4(17, udp(1, 53, dns(1, opcode << 11, [])))))["l3"]["l4"]["app"]
    assert app["opcode_name"] == name and app["summary"] == f"query/{name}"
    assert "qname" not in app


@pytest.mark.parametrize("rcode,name", [(1, "formerr"), (2, "servfail"), (4, "notimp"), (5, "refused"),
                                        (6, "yxdomain"), (7, "yxrrset"), (8, "nxrrset"), (9, "notauth"),
                                        (10, "notzone"), (11, "rcode-11")])
def test_dns_rcode_names(rcode, name):
    app = d(eth(0x0800, ipv4(17, udp(53, 1, dns(1, 0x8000 | rcode, [])))))["l3"]["l4"]["app"]
    assert app["rcode_name"] == name and app["flags"]["rcode_name"] == name


@pytest.mark.parametrize("qtype,name", [(1, "A"), (2, "NS"), (5, "CNAME"), (6, "SOA"), (12, "PTR"), (15, "MX"),
                                        (16, "TXT"), (28, "AAAA"), (33, "SRV"), (64, "SVCB"), (65, "HTTPS"),
                                        (255, "TYPE255")])
def test_dns_qtype_names(qtype, name):
    msg = dns(1, 0, [(dns_name("x.org"), qtype, 1)])
    assert d(eth(0x0800, ipv4(17, udp(1, 53, msg))))["l3"]["l4"]["app"]["qtype_name"] == name


def test_dns_garbage_never_raises():
    loop = dns(1, 0, [(b"\xc0\x0c", 1, 1)])
    app = d(eth(0x0800, ipv4(17, udp(1, 53, loop))))["l3"]["l4"]["app"]
    assert (app["qname"], app["qtype"], app["qclass"], app["qtype_name"]) == (None, None, None, None)
    short = d(eth(0x0800, ipv4(17, udp(1, 53, b"\x00" * 11))))["l3"]["l4"]
    assert "app" in short and short["app"] is None
    empty = d(eth(0x0800, ipv4(17, udp(1, 53, b""))))["l3"]["l4"]
    assert "app" not in empty
    other = d(eth(0x0800, ipv4(17, udp(1, 54, b"\x00" * 20))))["l3"]["l4"]
    assert "app" not in other


def test_tls_client_hello_sni_alpn():
    hello = client_hello("example.org", ["h2", "http/1.1"])
    l4 = d(eth(0x0800, ipv4(6, tcp(50000, 443, 0x18, hello))))["l3"]["l4"]
    assert l4["app"] == {"type": "tls", "sni": "example.org", "alpn": ["h2", "http/1.1"],
                         "summary": "TLS ClientHello SNI=example.org"}
    only_alpn = d(eth(0x0800, ipv4(6, tcp(1, 443, 0x18, client_hello(None, ["h2", "http/1.1"])))))
    assert only_alpn["l3"]["l4"]["app"] == {"type": "tls", "alpn": ["h2", "http/1.1"],
                                            "summary": "TLS ClientHello ALPN=h2,http/1.1"}
    nothing = d(eth(0x0800, ipv4(6, tcp(1, 443, 0x18, client_hello(None, [])))))
    assert "app" not in nothing["l3"]["l4"]
    cut = d(eth(0x0800, ipv4(6, tcp(1, 443, 0x18, hello[:-1]))))
    assert "app" not in cut["l3"]["l4"]


def test_key_order_is_stable():
    v4 = d(eth(0x0800, ipv4(6, tcp(1, 2, 0x02))))
    assert list(v4) == ["type", "src", "dst", "eth", "l3"]
    assert list(v4["l3"]) == ["type", "version", "ihl", "tos", "total_length", "id", "flags_frag", "ttl",
                              "protocol", "header_checksum", "src", "dst", "frag", "frag_offset", "flow_key", "l4"]
    assert list(v4["l3"]["flow_key"]) == ["proto", "src_ip", "src_port", "dst_ip", "dst_port"]
    assert list(v4["l3"]["l4"]) == ["type", "src_port", "dst_port", "seq", "ack", "flags", "flags_str", "window",
                                    "checksum", "urgent_pointer", "header_len", "data_len", "payload"]
    assert list(v4["l3"]["l4"]["flags"]) == ["urg", "ack", "psh", "rst", "syn", "fin", "ece", "cwr"]
    v6 = d(eth(0x86DD, ipv6(17, udp(1, 2, b""))))["l3"]
    assert list(v6) == ["type", "version", "traffic_class", "flow_label", "payload_length", "next_header",
                        "hop_limit", "src", "dst", "src_compact", "dst_compact", "frag", "frag_offset", "flow_key", "l4"]
    assert list(v6["l4"]) == ["type", "src_port", "dst_port", "length", "checksum", "data_len", "payload"]
    tagged = d(vlan(0x8100, 0, 0, 1, 0x0800, ipv4(1, icmp(8, 0))))
    assert list(tagged) == ["type", "src", "dst", "eth", "vlan_tags", "l3"]
    assert list(tagged["l3"]["flow_key"]) == ["proto", "src_ip", "dst_ip"]


def test_tls_long_sni_summary():
    host = "a" * 60 + "." + "b" * 600 + ".example"
    app = d(eth(0x0800, ipv4(6, tcp(1, 443, 0x18, client_hello(host, [])))))["l3"]["l4"]["app"]
    assert app == {"type": "tls", "sni": host, "summary": f"TLS ClientHello SNI={host}"}
