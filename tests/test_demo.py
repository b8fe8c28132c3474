"""paclo.demo: the deterministic capture the notebooks and the quickstart use."""

from __future__ import annotations

import pytest

import paclo
import paclo.demo


def test_demo_capture_is_deterministic_and_exact(tmp_path):
    a = paclo.demo.write_demo_capture(tmp_path / "a.pcap", packets=3000, seconds=10)
    b = paclo.demo.write_demo_capture(tmp_path / "b.pcap", packets=3000, seconds=10)
    assert a.read_bytes() == b.read_bytes()
    assert paclo.demo.write_demo_capture(tmp_path / "c.pcap", packets=3000, seconds=10, seed=2).read_bytes() != a.read_bytes()
    times = [p.ts_ns for p in paclo.read(a)]
    assert len(times) == 3000 and times == sorted(times)
    assert times[-1] - times[0] < 10 * 10**9
    view = paclo.project(a, view="analysis")
    assert set(view.column("ip_version").drop_null().to_pylist()) == {4, 6}
    assert {"tcp", "udp", "icmp"} <= set(view.column("protocol").drop_null().to_pylist())
    # DNS carries real queries and answers
    names = {m["decoded"]["l3"]["l4"]["app"]["qname"] for m in paclo.read(a, filter="udp port 53", decode="full")}
    assert "example.com" in names or len(names) > 1


def test_demo_capture_rejects_bad_sizes(tmp_path):
    with pytest.raises(ValueError, match="packets must be a positive integer, not 0"):
        paclo.demo.write_demo_capture(tmp_path / "x.pcap", packets=0)
    with pytest.raises(ValueError, match="seconds must be a positive number"):
        paclo.demo.write_demo_capture(tmp_path / "x.pcap", seconds=0)
