"""`paclo to-parquet` through a subprocess: rows on stdout, summary on stderr, exit codes,
and Ctrl-C (the default SIGINT action) that leaves nothing a re-run takes as complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from _scale_util import big_captures, check_after_interrupt, interrupt_when_writing, partials, write_captures

import paclo
from paclo.parquet import read_manifest


def run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "paclo", "to-parquet", *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def caps(tmp_path_factory) -> list[Path]:
    return write_captures(tmp_path_factory.mktemp("cli") / "in", files=3)


def test_rows_on_stdout_summary_on_stderr_and_a_re_run_skips(caps, tmp_path):
    out = tmp_path / "out"
    r = run(caps[0].parent, out, "--format", "jsonl", "--mode", "bidir", "--workers", "2")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(row["input"], row["status"]) for row in rows] == [(str(c), "written") for c in caps]
    for row, cap in zip(rows, caps, strict=True):
        table = pq.read_table(row["output"])
        assert row["rows"] == table.num_rows
        assert table.drop_columns(["capture"]).equals(paclo.flows(cap, bidirectional=True))
    assert r.stderr.startswith(f"captures=3 written=3 skipped=0 failed=0 out={out} kind=flows seconds=")
    again = run(caps[0].parent, out, "--format", "csv", "--mode", "bidir")
    assert again.returncode == 0
    assert again.stdout.splitlines()[0] == "input,output,status,rows,error"
    assert [line.split(",")[2] for line in again.stdout.splitlines()[1:]] == ["skipped"] * 3


def test_a_failed_capture_exits_5_and_the_others_are_written(caps, tmp_path):
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a capture")
    out = tmp_path / "out"
    r = run(caps[0], bad, caps[1], out, "--kind", "projection", "--format", "json")
    assert r.returncode == 5
    rows = json.loads(r.stdout)
    assert [row["status"] for row in rows] == ["written", "failed", "written"]
    assert "PcapFormatError" in rows[1]["error"] and rows[1]["rows"] is None
    errors = [line for line in r.stderr.splitlines() if line.startswith("ERROR:")]
    assert errors == [f"ERROR: 1 of 3 captures failed; the first: {bad}: {rows[1]['error']}"]
    # Names are relative to the common directory of the inputs.
    root = os.path.commonpath([caps[0].parent, bad.parent])
    assert sorted(e["output"] for e in read_manifest(out)) == sorted(f"{os.path.relpath(c, root)}.parquet" for c in caps[:2])


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["{in}"], 1, "ERROR: missing arguments: OUT"),
        (["{in}/nope.pcap", "{out}"], 2, "ERROR: input PCAP not found: {in}/nope.pcap"),
        (["{empty}", "{out}"], 2, "ERROR: no capture files in: {empty}"),
        (["{in}", "{out}", "--kind", "frames"], 3, "ERROR: invalid kind: frames (allowed: flows, projection, packets)"),
        (["{in}", "{out}", "--mode", "both"], 3, "ERROR: invalid mode: both (allowed: unidir, bidir)"),
        (["{in}", "{out}", "--compression", "xz"], 3, "ERROR: invalid compression: xz"),
        (["{in}", "{out}", "--workers", "0"], 4, "ERROR: --workers requires a positive integer, got '0'"),
        (["{in}", "{out}", "--idle-timeout", "soon"], 4, "ERROR: --idle-timeout requires a positive number of seconds, got 'soon'"),
        (["{in}", "{out}", "--kind", "packets", "--mode", "bidir"], 4, "ERROR: --mode bidir, --idle-timeout and --active-timeout apply to --kind flows only"),
        (["{in}", "{out}", "--filter", "udp and"], 4, 'ERROR: invalid filter "udp and"'),
        (["{in}", "{in}/part-000.pcap"], 4, "ERROR: OUT must be a directory: {in}/part-000.pcap"),
    ],
)
def test_exit_codes_and_messages(caps, tmp_path, args, code, message):
    (tmp_path / "empty").mkdir()
    names = {"in": caps[0].parent, "out": tmp_path / "out", "empty": tmp_path / "empty"}
    r = run(*(a.format(**names) for a in args))
    assert r.returncode == code, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith(message.format(**names)), r.stderr
    assert r.stdout == ""
    assert not (tmp_path / "out").exists()


@pytest.fixture(scope="module")
def big_caps(tmp_path_factory) -> list[Path]:
    return big_captures(tmp_path_factory.mktemp("big"))


def test_ctrl_c_kills_the_command_and_a_re_run_completes(big_caps, tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "paclo", "to-parquet", *map(str, big_caps), str(out), "--kind", "packets", "--workers", "1"]
    done = interrupt_when_writing(cmd, out)
    # The command keeps SIGINT's default action: killed at once, its temporary file left
    # behind under a hidden name that no reader or re-run takes for an output.
    assert done.returncode == -signal.SIGINT, done.stderr
    assert partials(out)
    check_after_interrupt(big_caps, out)
