"""Peak resident memory while reading a large capture: O(1) in packets for the streaming
paths (the iterator, decode="full", reduce, read_batches, flows), O(output) for project.

Each path runs in a fresh process, first over a small file (so one-time costs, such as
pyarrow's first stream import, are paid), then over the large one; the process reports its
resident memory between the two (the baseline) and its peak (VmHWM). The large file is
larger than the bound, so a reader that kept the file resident fails.
`PACLO_MEMORY_PACKETS=10000000` runs it at the stress profile's size (docs/performance.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import paclo.perf.datasets

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="VmHWM is read from /proc"),
]

PACKETS = int(os.environ.get("PACLO_MEMORY_PACKETS", "1000000"))
#: Peak above the baseline allowed to a streaming path: the reader keeps at most 16 MiB of
#: the map resident; the rest is slack for the interpreter's own growth.
BOUND_MIB = 48

CHILD = r"""
import json, sys
import pyarrow as pa
import paclo

def mib(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024

def run(path, what):
    if what == "read":
        return sum(1 for _ in paclo.read(path)), 0
    if what == "full":
        return sum(1 for m in paclo.read(path, decode="full") if "decoded" in m), 0
    if what == "reduce":
        return paclo.reduce(lambda a, p: a + 1, 0, path=path), 0
    if what == "read_batches":
        return sum(b.num_rows for b in paclo.read_batches(path)), 0
    if what == "flows":
        return pa.table(paclo.flows(path)).num_rows, 0
    t = pa.table(paclo.project(path))
    return t.num_rows, t.nbytes / 2**20

small, path, what = sys.argv[1:4]
run(small, what)
base = mib("VmRSS")
n, output = run(path, what)
print(json.dumps({"n": n, "output_mib": output, "base_mib": base, "peak_mib": mib("VmHWM")}))
"""


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("memory")
    path, small = d / "udp-64.pcap", d / "small.pcap"
    info = paclo.perf.datasets.generate("udp-64", PACKETS, str(path))
    paclo.perf.datasets.generate("udp-64", 1000, str(small))
    assert info["file_size"] > 1.5 * BOUND_MIB * 2**20
    return path, small


def run(dataset, what: str) -> dict:
    path, small = dataset
    r = subprocess.run([sys.executable, "-c", CHILD, str(small), str(path), what],
                       capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("what", ["read", "full", "reduce", "read_batches", "flows"])
def test_streaming_paths_keep_memory_bounded(dataset, what):
    got = run(dataset, what)
    assert got["n"] == (1 if what == "flows" else PACKETS)
    grew = got["peak_mib"] - got["base_mib"]
    assert grew < BOUND_MIB, f"{what}: peak {got['peak_mib']:.0f} MiB, {grew:.0f} MiB above the baseline"


def test_project_memory_is_its_output(dataset):
    got = run(dataset, "project")
    assert got["n"] == PACKETS
    grew = got["peak_mib"] - got["base_mib"]
    assert grew < got["output_mib"] + BOUND_MIB, got
