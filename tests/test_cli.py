"""The paclo command line through a subprocess: outputs, formats, exit codes, messages."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest
from _flows_util import eth, ipv4, ipv6, mixed_packets, tcp, udp, write_pcap

import paclo


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "paclo", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    a = eth(0x0800, ipv4(17, "10.0.0.1", "1.1.1.1", udp(58555, 53, 40)))
    b = eth(0x0800, ipv4(17, "1.1.1.1", "10.0.0.1", udp(53, 58555, 80)))
    c = eth(0x86DD, ipv6("2001:db8::1", "2001:db8::53", 6, tcp(40000, 443, 0x02)))
    arp = eth(0x0806, bytes(28))
    pkts = [(1_000_000_000 + i * 1_000_000, f) for i, f in enumerate([a, b, a, c, arp, c, c])]
    return write_pcap(d / "small.pcap", pkts), pkts


def test_flow_topn_formats(small):
    path, pkts = small
    r = run("flow-topn", path, "--format", "jsonl")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert rows == [
        {"flow": {"proto": "tcp", "src": "[2001:db8::1]:40000", "dst": "[2001:db8::53]:443"}, "packets": 3,
         "bytes": 3 * len(pkts[3][1])},
        {"flow": {"proto": "udp", "src": "10.0.0.1:58555", "dst": "1.1.1.1:53"}, "packets": 2,
         "bytes": 2 * len(pkts[0][1])},
        {"flow": {"proto": "udp", "src": "1.1.1.1:53", "dst": "10.0.0.1:58555"}, "packets": 1,
         "bytes": len(pkts[1][1])},
    ]
    assert rows == paclo.flow_topn(path)
    assert "flows=3 rows=3 packets=6 top=10 mode=unidir by=packets" in r.stderr
    j = run("flow-topn", path, "--format", "json", "--mode", "bidir", "--by", "bytes", "--top", "1")
    assert json.loads(j.stdout) == [
        {"flow": {"proto": "udp", "src": "1.1.1.1:53", "dst": "10.0.0.1:58555"}, "packets": 3,
         "bytes": 2 * len(pkts[0][1]) + len(pkts[1][1])}]
    c = run("flow-topn", path, "--format", "csv", "--filter", "")
    table = list(csv.DictReader(io.StringIO(c.stdout)))
    assert table[0] == {"proto": "tcp", "src": "[2001:db8::1]:40000", "dst": "[2001:db8::53]:443",
                        "packets": "3", "bytes": str(3 * len(pkts[3][1]))}
    assert "packets=7" in c.stderr
    t = run("flow-topn", path)
    lines = t.stdout.splitlines()
    assert lines[0].split() == ["PROTO", "SRC", "DST", "PACKETS", "BYTES"]
    assert lines[1].split()[:4] == ["tcp", "[2001:db8::1]:40000", "[2001:db8::53]:443", "3"]
    assert len(lines) == 4


def test_no_hidden_caps(tmp_path):
    f = eth(0x0800, ipv4(17, "10.0.0.1", "10.0.0.2", udp(1, 2)))
    # 5,000 packets spread over three hours: nothing stops early.
    path = write_pcap(tmp_path / "long.pcap", [(i * 2_200_000_000, f) for i in range(5000)])
    r = run("flow-topn", path, "--format", "json")
    assert json.loads(r.stdout)[0]["packets"] == 5000
    s = json.loads(run("pcap-stats", path, "--format", "json").stdout)
    assert s["packets"] == 5000 and s["times"]["duration_s"] == pytest.approx(4999 * 2.2)


def test_pcap_stats(small):
    path, pkts = small
    r = run("pcap-stats", path, "--format", "json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    lens = [len(f) for _, f in pkts]
    assert s["packets"] == 7 and s["bytes"] == sum(lens)
    assert s["caplen"] == {"min": min(lens), "avg": round(sum(lens) / 7, 3), "max": max(lens)}
    assert s["times"] == {"first": "1970-01-01T00:00:01.000000000Z", "last": "1970-01-01T00:00:01.006000000Z",
                          "duration_s": 0.006}
    assert s["proto"] == {"l3": {"ipv4": 3, "ipv6": 3, "non_ip": 1}, "l4": {"tcp": 3, "udp": 3}}
    assert s["top"]["src"][0] == {"key": "2001:db8::1", "count": 3}
    assert s["top"]["dst"] == [{"key": "2001:db8::53", "count": 3}, {"key": "1.1.1.1", "count": 2},
                               {"key": "10.0.0.1", "count": 1}]
    c = run("pcap-stats", path, "--format", "csv", "--top", "1")
    rows = {r["key"]: r["value"] for r in csv.DictReader(io.StringIO(c.stdout))}
    assert rows["packets"] == "7" and rows["proto.l3.non_ip"] == "1" and rows["top.dst.1"] == "2001:db8::53 3"
    assert "top.dst.2" not in rows
    u = run("pcap-stats", path, "--filter", "udp", "--format", "jsonl")
    assert json.loads(u.stdout)["packets"] == 3 and len(u.stdout.splitlines()) == 1


def test_pcap_filter_keeps_timestamps_and_counts(tmp_path):
    pkts = mixed_packets(seed=5, count=200)
    src = write_pcap(tmp_path / "in.pcap", pkts)
    out = tmp_path / "out.pcap"
    r = run("pcap-filter", src, out, "--filter", "tcp", "--min-caplen", "60", "--format", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)  # one report: one object
    expected = [p for p in paclo.read(src, filter="tcp") if p.caplen >= 60]
    got = list(paclo.read(out))
    assert [(p.ts_ns, p.data, p.wirelen) for p in got] == [(p.ts_ns, p.data, p.wirelen) for p in expected]
    assert 0 < len(got) < len(pkts)
    assert report == {"in": str(src), "out": str(out), "filter": "tcp", "min_caplen": 60,
                      "in_packets": len(pkts), "out_packets": len(got),
                      "in_bytes": sum(len(f) for _, f, _ in pkts), "out_bytes": sum(p.caplen for p in got),
                      "drop_pct": round(100 * (1 - len(got) / len(pkts)), 6)}
    assert f"wrote={len(got)}" in r.stderr
    plain = run("pcap-filter", src, tmp_path / "all.pcap", "--format", "jsonl")
    assert json.loads(plain.stdout)["drop_pct"] == 0.0
    assert [p.ts_ns for p in paclo.read(tmp_path / "all.pcap")] == [ts // 1000 * 1000 for ts, _, _ in pkts]


@pytest.mark.parametrize(
    "args,code,message",
    [
        (["flow-topn", "MISSING"], 2, "ERROR: input PCAP not found: {abs}"),
        (["pcap-stats", "MISSING"], 2, "ERROR: input PCAP not found: {abs}"),
        (["pcap-filter", "MISSING", "o.pcap"], 2, "ERROR: input PCAP not found: {abs}"),
        (["flow-topn", "{path}", "--mode", "both"], 3, "ERROR: invalid mode: both (allowed: unidir, bidir)"),
        (["flow-topn", "{path}", "--by", "flows"], 3, "ERROR: invalid metric: flows (allowed: packets, bytes)"),
        (["flow-topn", "{path}", "--format", "edn"], 3, "ERROR: invalid format: edn (allowed: table, jsonl, json, csv)"),
        (["pcap-stats", "{path}", "--format", "xml"], 3, "ERROR: invalid format: xml"),
        (["frobnicate"], 3, "ERROR: invalid command: frobnicate"),
        (["flow-topn", "{path}", "--top", "ten"], 4, "ERROR: --top requires a non-negative integer, got 'ten'"),
        (["flow-topn", "{path}", "--top"], 4, "ERROR: --top requires a value"),
        (["flow-topn", "{path}", "--async"], 4, "ERROR: unknown flag: --async"),
        (["pcap-filter", "{path}", "o.pcap", "--min-caplen", "x"], 4, "ERROR: --min-caplen requires a non-negative integer"),
        (["flow-topn", "{path}", "--filter", "port port"], 4, "ERROR: invalid filter"),
        (["flow-topn"], 1, "ERROR: missing arguments: IN"),
        (["pcap-filter", "{path}"], 1, "ERROR: missing arguments: OUT"),
        ([], 1, "ERROR: missing COMMAND"),
        (["pcap-stats", "{garbage}"], 5, "ERROR: "),
    ],
)
def test_exit_codes_and_messages(small, tmp_path, args, code, message):
    path, _ = small
    garbage = tmp_path / "garbage.pcap"
    garbage.write_bytes(b"this is not a capture")
    args = [a.format(path=path, garbage=garbage) for a in args]
    r = run(*args, cwd=tmp_path)
    assert r.returncode == code, (r.stdout, r.stderr)
    expected = message.format(abs=os.path.join(str(tmp_path), "MISSING"))
    err_lines = [line for line in r.stderr.splitlines() if line.startswith("ERROR:")]
    assert len(err_lines) == 1 and err_lines[0].startswith(expected), r.stderr
    assert r.stdout == ""
    if code == 1:
        assert "usage:" in r.stderr


def test_help(small):
    r = run("--help")
    assert r.returncode == 0 and "flow-topn" in r.stdout and "pcap-stats" in r.stdout
    r = run("flow-topn", "--help")
    assert r.returncode == 0 and "--mode" in r.stdout and "unidir|bidir" in r.stdout
    r = subprocess.run(["paclo", "pcap-filter", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--min-caplen" in r.stdout


def test_perf_subcommand_forwards_its_arguments(monkeypatch):
    import types

    from paclo import cli

    seen = []
    fake = types.ModuleType("paclo.perf.__main__")
    fake.main = lambda argv: seen.append(argv) or 7
    monkeypatch.setitem(sys.modules, "paclo.perf.__main__", fake)
    assert cli.main(["perf", "--profile", "quick", "--format", "json"]) == 7
    assert seen == [["--profile", "quick", "--format", "json"]]


def test_command_lets_ctrl_c_stop_it(small):
    """As a command, SIGINT has its default action: it stops a native loop at once."""
    path, _ = small
    code = ("import signal, sys; from paclo import cli; "
            f"sys.argv = ['paclo', 'pcap-stats', {str(path)!r}, '--format', 'json']; cli.main(); "
            "print(signal.getsignal(signal.SIGINT) is signal.SIG_DFL, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stderr.strip().endswith("True"), r.stderr
    code_lib = ("import signal, sys; from paclo import cli; "
                f"cli.main(['pcap-stats', {str(path)!r}, '--format', 'json']); "
                "print(signal.getsignal(signal.SIGINT) is signal.SIG_DFL, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code_lib], capture_output=True, text=True, timeout=60)
    assert r.stderr.strip().endswith("False"), r.stderr  # main(argv) from Python keeps the handler
