"""The packet map through every reading entry point: read, reduce, Packet.decode, stats."""

from __future__ import annotations

from _decoder_util import eth, ipv4, ipv6, tcp, udp, write_pcap

import paclo
from paclo import decode_ext

FRAMES = [
    eth(0x0800, ipv4(17, udp(12000, 5300, b"abc"))),
    eth(0x86DD, ipv6(6, tcp(1, 443, 0x12))),
    (eth(0x0800, ipv4(6, tcp(1, 2, 0x02)))[:40], 54),  # cut by snaplen
    eth(0x0806, b"\x00\x01"),  # cut ARP
]


def _file(tmp_path):
    path = tmp_path / "d.pcap"
    write_pcap(path, FRAMES)
    return str(path)


def _data(i):
    f = FRAMES[i]
    return f[0] if isinstance(f, tuple) else f


def test_read_full_counts_decode_errors(tmp_path):
    with paclo.read(_file(tmp_path), decode="full") as r:
        maps = list(r)
        stats = r.stats()
    assert [m["decoded"]["l3"]["type"] for m in maps] == ["ipv4", "ipv6", "ipv4", "arp"]
    assert ["decode_error" in m for m in maps] == [False, False, True, True]
    assert stats["packets"]["decode_errors"] == 2
    assert maps[2]["len"] == 54 and maps[2]["caplen"] == 40


def test_packet_decode_equals_read_full(tmp_path):
    path = _file(tmp_path)
    packets = list(paclo.read(path))
    maps = list(paclo.read(path, decode="full"))
    for i, (p, m) in enumerate(zip(packets, maps, strict=True)):
        assert p.decode() == m
        ref = paclo.decode(_data(i))
        assert m["decoded"] == ref["decoded"] and m.get("decode_error") == ref.get("decode_error")


def test_reduce_full(tmp_path):
    def fold(acc, m):
        key = m["decoded"]["l3"].get("flow_key")
        return acc + ([key["proto"]] if key else [])

    assert paclo.reduce(fold, [], path=_file(tmp_path), decode="full") == ["udp", "tcp", "tcp"]


def test_hooks_apply_to_reduce_and_packet_decode(tmp_path):
    path = _file(tmp_path)
    decode_ext.register("mark", lambda m: {**m, "mark": m["caplen"]})
    try:
        marks = paclo.reduce(lambda acc, m: [*acc, m.get("mark")], [], path=path, decode="full")
        assert marks == [len(_data(0)), len(_data(1)), None, None]
        assert next(iter(paclo.read(path))).decode()["mark"] == len(_data(0))
    finally:
        decode_ext.unregister("mark")
