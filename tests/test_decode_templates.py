"""Maps built from shared template dicts (copied, their values written in place): each map
is its own, whatever a caller does to an earlier one; the shared values' reference counts
balance; GC tracking is what storing each value with `PyDict_SetItem` gives."""

from __future__ import annotations

import gc
import sys

from _decoder_util import (
    client_hello,
    eth,
    frag6,
    ipv4,
    ipv6,
    tcp,
    udp,
    write_pcap,
)

import paclo

FRAMES = [
    eth(0x0800, ipv4(17, udp(12000, 5300, bytes(22)))),
    eth(0x0800, ipv4(6, tcp(50000, 443, 0x18, b"hello"))),
    eth(0x86DD, ipv6(17, udp(1000, 2000, b"v6"))),
    eth(0x86DD, ipv6(6, tcp(3, 4, 0x02))),
    eth(0x86DD, ipv6(44, frag6(17, 9, False) + b"frag")),
    eth(0x0800, ipv4(17, udp(7, 8, b"x"), flags_frag=0x2001)),
    eth(0x0800, ipv4(6, tcp(50000, 443, 0x18, client_hello("example.org", ["h2"])))),
    eth(0x0800, ipv4(6, tcp(1, 2, 0x02)))[:40],
]


def _dicts(obj, out):
    if isinstance(obj, dict):
        out.append(obj)
        for v in obj.values():
            _dicts(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _dicts(v, out)
    return out


def _vandalise(m):
    """Change every dict of a map: replace each value, drop a key, add one."""
    for d in _dicts(m, []):
        for k in list(d):
            d[k] = ("changed", k)
        if d:
            del d[next(iter(d))]
        d["added"] = object()


def test_changing_a_map_does_not_reach_later_maps():
    expected = [repr(paclo.decode(f)) for f in FRAMES]
    for _ in range(3):
        for f, want in zip(FRAMES, expected, strict=True):
            m = paclo.decode(f)
            assert repr(m) == want
            _vandalise(m)


def test_changing_maps_of_a_reader_does_not_reach_later_maps(tmp_path):
    path = tmp_path / "t.pcap"
    write_pcap(path, FRAMES * 4)
    expected = [repr(m) for m in paclo.read(str(path), decode="full")]
    kept = []
    for m, want in zip(paclo.read(str(path), decode="full"), expected, strict=True):
        assert repr(m) == want
        _vandalise(m)
        kept.append(m)
    # A kept map stays as the caller left it.
    assert all("added" in m for m in kept)


def test_shared_values_keep_their_reference_counts():
    # Strings and ints the maps share (not None, bools or small ints, which all code shares).
    first = paclo.decode(FRAMES[1])
    l4 = first["decoded"]["l3"]["l4"]
    shared = [
        first["decoded"]["type"],
        first["decoded"]["l3"]["type"],
        first["decoded"]["src"],
        first["decoded"]["l3"]["src"],
        first["decoded"]["l3"]["id"],
        first["decoded"]["l3"]["flow_key"]["proto"],
        l4["type"],
        l4["src_port"],
        l4["dst_port"],
        l4["flags_str"],
    ]
    del first, l4

    def counts():
        gc.collect()
        return [sys.getrefcount(v) for v in shared]


    for f in FRAMES:
        paclo.decode(f)
    before = counts()
    # The templates' None values, replaced in each copy: a reference kept per replaced
    # value would add thousands here (the maps are freed as they go, no collection needed).
    none_before = sys.getrefcount(None)
    for _ in range(50):
        for f in FRAMES:
            paclo.decode(f)
    assert abs(sys.getrefcount(None) - none_before) < 500
    after = counts()
    assert after == before, [(v, a, b) for v, a, b in zip(shared, before, after, strict=True) if a != b]


def test_gc_tracking_is_that_of_plain_stores():
    # A dict holding a dict is tracked; one holding only ints, strings and bytes is not.
    m = paclo.decode(FRAMES[0])
    d = m["decoded"]
    l3 = d["l3"]
    assert [gc.is_tracked(x) for x in (m, d, l3, l3["flow_key"], l3["l4"])] == [True, True, True, False, False]
    t = paclo.decode(FRAMES[1])["decoded"]["l3"]["l4"]
    assert gc.is_tracked(t) and not gc.is_tracked(t["flags"])
    for f in FRAMES:
        for x in _dicts(paclo.decode(f), []):
            plain = {k: v for k, v in x.items()}  # noqa: C416 (stores each value in turn)
            assert gc.is_tracked(x) == gc.is_tracked(plain), x


def test_maps_are_the_same_with_every_store_through_pydict_setitem(tmp_path):
    """`PACLO_DICT_IN_PLACE=0` sends every store through `PyDict_SetItem` (the path of
    interpreters other than 3.11): the maps, their order and GC tracking are the same."""
    import os
    import subprocess
    import textwrap

    path = tmp_path / "t.pcap"
    write_pcap(path, FRAMES * 3)
    script = textwrap.dedent(
        """
        import gc, sys
        sys.path.insert(0, sys.argv[2])
        import paclo
        from test_decode_templates import _dicts

        for m in paclo.read(sys.argv[1], decode="full"):
            print(repr(m), [gc.is_tracked(d) for d in _dicts(m, [])])
        """
    )

    def run(env_value):
        env = dict(os.environ)
        env.pop("PACLO_DICT_IN_PLACE", None)
        if env_value is not None:
            env["PACLO_DICT_IN_PLACE"] = env_value
        out = subprocess.run(
            [sys.executable, "-c", script, str(path), os.path.dirname(os.path.abspath(__file__))], env=env, capture_output=True, text=True, check=True
        )
        return out.stdout.splitlines()

    in_place, plain = run(None), run("0")
    assert len(in_place) == len(FRAMES) * 3
    assert in_place == plain
