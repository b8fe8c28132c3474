"""What the paclo command line says about bad paths, warnings, single JSON objects, flows
without ports and its version; and paclo.read on a directory."""

from __future__ import annotations

import errno
import json

import pytest
from _flows_util import eth, icmp, ipv4, udp, write_pcap
from test_cli import run

import paclo


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    d = tmp_path_factory.mktemp("msg")
    a = eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(5000, 53, 20)))
    return write_pcap(d / "in.pcap", [(1_000_000_000 + i, a) for i in range(4)])


def _one_error(r) -> str:
    errors = [line for line in r.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1, r.stderr
    assert r.stdout == ""
    return errors[0]


def test_pcap_filter_names_a_missing_output_directory(capture, tmp_path):
    out = tmp_path / "no" / "such" / "dir" / "out.pcap"
    r = run("pcap-filter", capture, out)
    assert r.returncode == 2
    assert _one_error(r) == f"ERROR: output directory not found: {tmp_path / 'no' / 'such' / 'dir'}"
    assert not (tmp_path / "no").exists()


def test_pcap_filter_refuses_a_directory_as_output(capture, tmp_path):
    r = run("pcap-filter", capture, tmp_path)
    assert r.returncode == 4
    assert _one_error(r) == f"ERROR: OUT is a directory: {tmp_path}"


@pytest.mark.parametrize("command", [["flow-topn"], ["pcap-stats"], ["pcap-filter", "{out}"]])
def test_a_directory_as_input_is_named_so(tmp_path, command):
    args = [a.format(out=tmp_path / "o.pcap") for a in command]
    r = run(args[0], tmp_path, *args[1:])
    assert r.returncode == 5
    assert _one_error(r) == f"ERROR: input is a directory, not a capture file: {tmp_path}"


@pytest.mark.parametrize("call", [
    lambda p: paclo.read(p),
    lambda p: paclo.flows(p),
    lambda p: paclo.project(p),
])
def test_read_of_a_directory_raises_is_a_directory(tmp_path, call):
    with pytest.raises(IsADirectoryError) as ei:
        call(tmp_path)
    assert ei.value.errno == errno.EISDIR
    assert ei.value.filename == str(tmp_path)
    assert "is a directory" in str(ei.value)


def _truncated(tmp_path, capture):
    data = capture.read_bytes()
    path = tmp_path / "truncated.pcap"
    path.write_bytes(data[:-10])  # the last record loses 10 of its bytes
    return path


@pytest.mark.parametrize("command", [["pcap-stats"], ["flow-topn"], ["pcap-filter", "{out}"]])
def test_warnings_are_one_plain_line(tmp_path, capture, command):
    path = _truncated(tmp_path, capture)
    args = [a.format(out=tmp_path / "o.pcap") for a in command]
    r = run(args[0], path, *args[1:])
    assert r.returncode == 0, r.stderr
    *warned, meta = r.stderr.splitlines()
    assert meta.split("=")[0] in ("filter", "flows", "wrote"), r.stderr  # the metadata line
    # Everything before it is a warning line: no file:line, no category, no source line.
    assert warned and all(line.startswith("paclo: warning: ") for line in warned), r.stderr
    assert not any("TruncatedCaptureWarning" in line or ".py:" in line for line in warned)
    assert any("truncated record" in line for line in warned), r.stderr


def test_pcap_filter_json_is_one_object(capture, tmp_path):
    r = run("pcap-filter", capture, tmp_path / "o.pcap", "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert isinstance(report, dict)
    assert (report["in_packets"], report["out_packets"]) == (4, 4)
    lines = run("pcap-filter", capture, tmp_path / "o2.pcap", "--format", "jsonl").stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["out_packets"] == 4


def test_flow_topn_table_says_why_a_flow_has_no_ports(tmp_path):
    with_ports = eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(5000, 53, 20)))
    later_fragment = eth(0x0800, ipv4(17, "10.0.0.3", "10.0.0.4", b"\x00" * 24, frag=185))
    ping = eth(0x0800, ipv4(1, "10.0.0.5", "10.0.0.6", icmp()))
    path = write_pcap(tmp_path / "t.pcap", [(1_000_000_000 + i, f) for i, f in
                                            enumerate([with_ports] * 3 + [later_fragment] * 2 + [ping])])
    r = run("flow-topn", path, "--filter", "")
    assert r.returncode == 0, r.stderr
    header, *rows = r.stdout.splitlines()
    assert header.split()[-1] == "NOTE"
    by_src = {row.split()[1]: row for row in rows}
    assert by_src["10.0.0.1:5000"].split()[2:] == ["10.0.0.2:53", "3", str(3 * len(with_ports))]
    assert by_src["10.0.0.3"].endswith("no ports: non-first fragments (or a cut TCP/UDP header)")
    assert by_src["10.0.0.5"].endswith("no ports: icmp is not TCP/UDP")
    # Machine formats keep their columns.
    rows = json.loads(run("flow-topn", path, "--filter", "", "--format", "json").stdout)
    assert all(set(row) == {"flow", "packets", "bytes"} for row in rows)


def test_flow_topn_table_has_no_note_column_when_every_flow_has_ports(capture):
    r = run("flow-topn", capture)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split() == ["PROTO", "SRC", "DST", "PACKETS", "BYTES"]


def test_version():
    r = run("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"paclo {paclo.__version__}\n", "")
    from importlib.metadata import version

    assert paclo.__version__ == version("paclo")
