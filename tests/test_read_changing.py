"""A capture file that another process truncates or extends while paclo reads it.

Truncated: the read ends with `PcapFormatError` ("the file changed while it was read"), on
every path (the iterator, decode="full", reduce, read_batches); the interpreter lives on,
and packets kept from before the cut can still be read. Grown: the file is read to the size
it had when opened. Each case runs in a child process, so a SIGBUS fails the test (a
negative return code) instead of killing pytest.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import paclo.perf.datasets

PACKETS = 20_000
CUT = 200_000

CHILD = r"""
import json, subprocess, sys
import paclo

path, what, cut = sys.argv[1], sys.argv[2], sys.argv[3]

def change():
    # Another process: truncate(1) cuts the file, a shell append extends it.
    if cut == "grow":
        subprocess.run(["sh", "-c", f"head -c 100000 /dev/zero >> {path}"], check=True)
    else:
        subprocess.run(["truncate", "-s", cut, path], check=True)

out = {"n": 0, "error": None}
kept = []
try:
    if what == "reduce":
        def step(n, p):
            if n == 100:
                change()
            out["n"] += 1
            return n + 1
        assert paclo.reduce(step, 0, path=path) == out["n"]
    elif what == "read_batches":
        batches = iter(paclo.read_batches(path, batch_size=100))
        out["n"] = next(batches).num_rows
        change()
        for b in batches:
            out["n"] += b.num_rows
    else:
        it = iter(paclo.read(path, decode="full" if what == "full" else None))
        for _ in range(100):
            kept.append(next(it))
            out["n"] += 1
        change()
        for p in it:
            out["n"] += 1
except paclo.PcapFormatError as e:
    out["error"] = str(e)
# Packets read before the change stay readable (their bytes are the file's).
out["kept"] = [bytes(p.data) == bytes(memoryview(p)) and len(p.data) == p.caplen
               for p in kept if isinstance(p, paclo.Packet)]
print(json.dumps(out))
"""


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "live.pcap"
    info = paclo.perf.datasets.generate("udp-64", PACKETS, str(path))
    assert info["file_size"] > 4 * CUT
    return path, info["file_size"]


def child(path, what: str, cut: str) -> dict:
    r = subprocess.run([sys.executable, "-c", CHILD, str(path), what, cut],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"the reader's process died (rc {r.returncode}): {r.stderr}"
    return json.loads(r.stdout)


@pytest.mark.parametrize("what", ["read", "full", "reduce", "read_batches"])
@pytest.mark.parametrize("cut", [CUT, CUT + 1000])
def test_truncated_while_read_raises_format_error(capture, what, cut):
    path, size = capture
    got = child(path, what, str(cut))
    assert got["error"] is not None, got
    assert f"the file changed while it was read: it is now {cut} bytes, it had {size} when opened" in got["error"]
    # Every complete packet before the cut was delivered (a batch cut short is not).
    complete = (cut - 24) // 80
    if what == "read_batches":
        assert 100 <= got["n"] <= complete
    else:
        assert got["n"] == complete
    assert all(got["kept"])


@pytest.mark.parametrize("what", ["read", "reduce"])
def test_grown_while_read_is_read_to_its_size_at_open(capture, what):
    path, _ = capture
    got = child(path, what, "grow")
    assert got == {"n": PACKETS, "error": None, "kept": got["kept"]}
    assert all(got["kept"])
