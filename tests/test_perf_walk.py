"""The C mmap record walk: the floor of a raw read, measured in every default offline run and
shown as `x walk` beside every scenario."""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from _perf_util import SpecDatasets, expected_bytes, expected_file_size, generate

from paclo.perf import cli, config, peers, runner

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "docs" / "results-schema.json").read_text())

needs_cc = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                              reason="no C compiler on this machine")


def validate(document: dict) -> None:
    import jsonschema

    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(document)


@pytest.fixture(scope="module")
def walk(tmp_path_factory) -> str:
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler on this machine")
    return peers.compile_c_peer(tmp_path_factory.mktemp("walk"), "peer-c-mmap-walk")


def run_walk(binary: str, path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, str(path), *extra], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("case", config.CASES)
def test_walk_counts_every_record_and_its_caplen(walk, tmp_path, case):
    path = tmp_path / f"{case}.pcap"
    generate(case, 3001, str(path))
    proc = run_walk(walk, path)
    assert proc.returncode == 0, proc.stderr
    packets, nbytes, elapsed, cpu, rss = (int(x) for x in proc.stdout.split())
    assert (packets, nbytes) == (3001, expected_bytes(case, 3001))
    assert elapsed > 0 and cpu > 0 and rss > 0


def test_walk_stops_after_max_packets(walk, tmp_path):
    path = tmp_path / "mixed.pcap"
    generate("mixed", 100, str(path))
    packets, nbytes = (int(x) for x in run_walk(walk, path, "7").stdout.split()[:2])
    assert (packets, nbytes) == (7, expected_bytes("mixed", 7))


def test_walk_reads_big_endian_and_nanosecond_files(walk, tmp_path):
    records = [bytes(range(60)), bytes(1500), b""]
    for magic, order in ((0xA1B2C3D4, ">"), (0xA1B23C4D, "<"), (0xA1B23C4D, ">")):
        path = tmp_path / f"{magic:x}{order}.pcap"
        data = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, 1)
        for i, rec in enumerate(records):
            data += struct.pack(order + "IIII", 1, i, len(rec), len(rec) + 4) + rec
        path.write_bytes(data)
        proc = run_walk(walk, path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split()[:2] == ["3", str(sum(map(len, records)))]


def test_walk_names_what_is_wrong_with_a_bad_file(walk, tmp_path):
    good = tmp_path / "good.pcap"
    generate("udp-64", 10, str(good))
    cut = tmp_path / "cut.pcap"
    cut.write_bytes(good.read_bytes()[: expected_file_size("udp-64", 10) - 20])
    proc = run_walk(walk, cut)
    assert proc.returncode == 1 and proc.stdout == ""
    assert "record 10 runs past the end of the file" in proc.stderr
    tail = tmp_path / "tail.pcap"
    tail.write_bytes(good.read_bytes() + b"\0" * 5)
    proc = run_walk(walk, tail)
    assert proc.returncode == 1 and "5 bytes after the last whole record" in proc.stderr
    pcapng = tmp_path / "x.pcapng"
    pcapng.write_bytes(struct.pack("<IIIHHq", 0x0A0D0D0A, 28, 0x1A2B3C4D, 1, 0, -1) + struct.pack("<I", 28))
    proc = run_walk(walk, pcapng)
    assert proc.returncode == 1 and "not a classic pcap file (magic 0x0a0d0d0a)" in proc.stderr
    short = tmp_path / "short.pcap"
    short.write_bytes(b"\xd4\xc3\xb2\xa1")
    proc = run_walk(walk, short)
    assert proc.returncode == 1 and "shorter than a pcap file header" in proc.stderr
    proc = run_walk(walk, tmp_path / "missing.pcap")
    assert proc.returncode == 1 and "missing.pcap" in proc.stderr


@needs_cc
def test_walk_beside_paclo_in_a_run_and_the_x_walk_column(tmp_path):
    opts = cli.parse_args(["--output", str(tmp_path / "out"), "--packets", "2000", "--runs", "2",
                           "--scenarios", "sync-loop,peer-c-mmap-walk"])
    out = io.StringIO()
    doc = runner.run(opts, datasets=SpecDatasets, out=out)
    validate(doc)
    assert [(r["case"], r["scenario"]) for r in doc["offline"]] == [
        (case, scenario) for case in config.CASES for scenario in ("sync-loop", "peer-c-mmap-walk")
    ]
    for r in doc["offline"]:
        if r["scenario"] != "peer-c-mmap-walk":
            continue
        assert "floor of a raw read" in r["note"]
        for run in r["runs"]:
            assert run["packets"] == 2000 and run["bytes"] == expected_bytes(r["case"], 2000)
            # timed inside the C process: no Python figures
            assert run["gc_count"] is None and run["python_allocated_bytes"] is None
            assert run["native_allocated_bytes"] is None
    assert (tmp_path / "out" / "bin" / "mmap_walk").exists()
    lines = out.getvalue().splitlines()
    assert lines[0].rstrip().endswith("x walk") and "x C loop" not in lines[0]
    by = {(r["case"], r["scenario"]): r for r in doc["offline"]}
    for case in config.CASES:
        walk_row = next(line for line in lines if line.startswith(case) and "peer-c-mmap-walk" in line)
        assert walk_row.rstrip().endswith("1.00")
        row = next(line for line in lines if line.startswith(case) and "sync-loop" in line)
        ratio = (by[(case, "sync-loop")]["summary"]["packets_per_sec"]["median"]
                 / by[(case, "peer-c-mmap-walk")]["summary"]["packets_per_sec"]["median"])
        assert row.split()[-1] == f"{ratio:,.2f}"
    assert any(line.startswith("x walk ") for line in lines)


def _summary(pps: float) -> dict:
    return {"packets_per_sec": {"median": pps, "min": pps, "max": pps}}


def test_table_shows_x_walk_beside_x_c_loop():
    results = [
        {"case": "udp-64", "scenario": name, "summary": _summary(pps)}
        for name, pps in (("sync-loop", 30e6), ("peer-c-mmap-walk", 120e6), ("peer-c-pcap-next-ex", 15e6))
    ] + [{"case": "tcp-512", "scenario": "sync-loop", "summary": _summary(1e6)}]
    lines = runner.table(results).splitlines()
    assert lines[0].rstrip().endswith("x C loop  x walk")
    rows = {(line.split()[0], line.split()[1]): line.split() for line in lines[2:]}
    assert rows[("udp-64", "sync-loop")][-2:] == ["2.00", "0.25"]
    assert rows[("udp-64", "peer-c-mmap-walk")][-2:] == ["8.00", "1.00"]
    assert rows[("udp-64", "peer-c-pcap-next-ex")][-2:] == ["1.00", "0.12"]
    # no reference on this case: no ratio
    assert rows[("tcp-512", "sync-loop")][-2:] == ["-", "-"]
    legend = runner.legend([dict(r, summary={}) for r in results])
    assert "x walk" in legend and "x C loop" in legend
    assert "x walk" not in runner.legend([dict(results[0], summary={})])


def _fake_worker(scenario: str, path: str, count: int, warmups: int, runs: int, binary: str | None) -> list[str]:
    case = next(c for c in config.CASES if c in Path(path).name)
    run = {"packets": count, "bytes": expected_bytes(case, count), "decode_errors": 0, "elapsed_ns": 10**6}
    doc = {"scenario": scenario, "path": path, "count": count, "runs": [run], "binary": binary}
    return [sys.executable, "-c", f"print({json.dumps(json.dumps(doc))})"]


def test_default_run_leaves_the_walk_out_without_a_compiler_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    opts = cli.parse_args(["--output", str(tmp_path / "out"), "--packets", "200"])
    assert config.WALK_SCENARIO in opts.offline_scenarios()
    doc = runner.run(opts, datasets=SpecDatasets, worker_cmd=_fake_worker, out=io.StringIO())
    assert {r["scenario"] for r in doc["offline"]} == set(config.OFFLINE_SCENARIOS)
    assert "[perf] peer-c-mmap-walk left out: peer-c-mmap-walk needs a C compiler" in capsys.readouterr().err
    # named, it is required: the run fails and says why
    named = cli.parse_args(["--output", str(tmp_path / "out"), "--packets", "200", "--scenarios",
                            "raw-seq,peer-c-mmap-walk"])
    with pytest.raises(runner.RunFailed, match="peer-c-mmap-walk needs a C compiler"):
        runner.run(named, datasets=SpecDatasets, worker_cmd=_fake_worker, out=io.StringIO())


@needs_cc
def test_each_c_peer_gets_its_own_binary(tmp_path):
    opts = cli.parse_args(["--output", str(tmp_path / "out"), "--packets", "200", "--scenarios",
                           "raw-seq,peer-c-mmap-walk,peer-c-pcap-next-ex"])
    seen: dict[str, str | None] = {}

    def record(scenario: str, path: str, count: int, warmups: int, runs: int, binary: str | None) -> list[str]:
        seen[scenario] = binary
        return _fake_worker(scenario, path, count, warmups, runs, binary)

    runner.run(opts, datasets=SpecDatasets, worker_cmd=record, out=io.StringIO())
    assert seen["raw-seq"] is None
    assert Path(seen["peer-c-mmap-walk"] or "").name == "mmap_walk"
    assert Path(seen["peer-c-pcap-next-ex"] or "").name == "pcap_next_ex_loop"
