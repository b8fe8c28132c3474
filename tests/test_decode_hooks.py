"""decode_ext hooks: order, replacement, isolation of failures, and where they apply."""

from __future__ import annotations

import pytest
from _decoder_util import eth, ipv4, udp, write_pcap

import paclo
from paclo import decode_ext

FRAME = eth(0x0800, ipv4(17, udp(1, 2, b"x")))


@pytest.fixture(autouse=True)
def clean_registry():
    for name in decode_ext.installed():
        decode_ext.unregister(name)
    yield
    for name in decode_ext.installed():
        decode_ext.unregister(name)


def test_no_hooks_by_default():
    assert decode_ext.installed() == []
    assert "seen" not in paclo.decode(FRAME)


def test_order_replace_and_move_to_tail():
    calls = []

    def make(tag):
        def hook(m):
            calls.append(tag)
            m.setdefault("seen", []).append(tag)
            return m
        return hook

    assert decode_ext.register("a", make("a")) == "a"
    assert decode_ext.register("b", make("b")) == "b"
    assert decode_ext.installed() == ["a", "b"]
    assert paclo.decode(FRAME)["seen"] == ["a", "b"]
    decode_ext.register("a", make("a2"))
    assert decode_ext.installed() == ["b", "a"]
    assert paclo.decode(FRAME)["seen"] == ["b", "a2"]
    assert decode_ext.unregister("b") is None
    assert decode_ext.installed() == ["a"]
    decode_ext.unregister("missing")
    assert paclo.decode(FRAME)["seen"] == ["a2"]


def test_raising_hook_is_skipped_and_non_dict_ignored():
    def boom(m):
        raise RuntimeError("boom")

    decode_ext.register("boom", boom)
    decode_ext.register("none", lambda m: None)
    decode_ext.register("tag", lambda m: {**m, "tagged": True})
    decode_ext.register("count", lambda m: 42)
    m = paclo.decode(FRAME)
    assert m["tagged"] is True and m["decoded"]["l3"]["src"] == "10.0.0.1"


def test_hooks_skip_maps_with_decode_error():
    decode_ext.register("tag", lambda m: {**m, "tagged": True})
    assert paclo.decode(FRAME)["tagged"] is True
    cut = paclo.decode(FRAME[:30])
    assert "decode_error" in cut and "decoded" in cut and "tagged" not in cut


def test_register_needs_a_callable():
    with pytest.raises(TypeError, match="fn must be callable"):
        decode_ext.register("x", 3)
    assert decode_ext.installed() == []


def test_hooks_apply_to_read(tmp_path):
    path = tmp_path / "h.pcap"
    write_pcap(path, [FRAME, FRAME])
    decode_ext.register("port", lambda m: {**m, "port": m["decoded"]["l3"]["l4"]["dst_port"]})
    assert [m["port"] for m in paclo.read(str(path), decode="full")] == [2, 2]
