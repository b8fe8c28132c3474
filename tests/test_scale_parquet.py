"""paclo.to_parquet: round trips, failures by path, resumable re-runs, Ctrl-C safety."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _scale_util import big_captures, check_after_interrupt, interrupt_when_writing, outputs, partials, write_captures

import paclo
from paclo.parquet import MANIFEST, read_manifest, to_parquet


@pytest.fixture(scope="module")
def caps(tmp_path_factory) -> list[Path]:
    root = tmp_path_factory.mktemp("caps")
    return write_captures(root / "day1", files=3) + write_captures(root / "day2", files=2, seed=8)


def _manifest_lines(out: Path) -> list[str]:
    return (out / MANIFEST).read_text().splitlines()


def _in_memory(kind: str, path: Path, **options) -> pa.Table:
    if kind == "flows":
        return paclo.flows(path, **options)
    if kind == "projection":
        return paclo.project(path, **options)
    batches = list(paclo.read_batches(path, **options))
    return pa.Table.from_batches(batches)


@pytest.mark.parametrize(
    ("kind", "options"),
    [
        ("flows", {}),
        ("flows", {"bidirectional": True}),
        ("flows", {"idle_timeout": 0.05}),
        ("flows", {"filter": "tcp"}),
        ("projection", {}),
        ("packets", {}),
        ("packets", {"filter": "udp"}),
    ],
)
def test_round_trip_equals_the_in_memory_tables(caps, tmp_path, kind, options):
    out = tmp_path / "out"
    report = to_parquet(caps[0].parent.parent, out, kind=kind, workers=2, progress=False, **options)
    assert report.ok and len(report.written) == len(caps) == 5
    names = sorted(r.output for r in report.results)
    assert names == sorted(str(out / c.parent.name / (c.name + ".parquet")) for c in caps)
    for cap in caps:
        name = f"{cap.parent.name}/{cap.name}"
        got = pq.read_table(out / (name + ".parquet"))
        assert got.column_names[0] == "capture"
        assert set(got.column("capture").to_pylist()) == ({name} if got.num_rows else set())
        want = _in_memory(kind, cap, **options)
        assert want.num_rows > 0
        assert got.drop_columns(["capture"]).equals(want), name
        meta = got.schema.metadata
        assert meta[b"paclo.capture"] == name.encode()
        assert json.loads(meta[b"paclo.options"])["kind"] == kind
        if kind == "flows":
            assert meta[b"paclo.packets_total"] == want.schema.metadata[b"paclo.packets_total"]
    # The same rows as a whole dataset, through pyarrow's reader of the directory.
    assert pq.read_table(out).num_rows == sum(r.rows for r in report.written)


def test_an_unreadable_capture_is_reported_and_the_others_are_written(caps, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    good = []
    for c in caps[:3]:
        (src / c.name).write_bytes(c.read_bytes())
        good.append(src / c.name)
    bad = src / "broken.pcap"
    bad.write_bytes(b"this is not a capture file")
    (src / "notes.txt").write_text("not a capture, not named like one: skipped")
    out = tmp_path / "out"
    with pytest.warns(RuntimeWarning, match="broken.pcap"):
        report = to_parquet(src, out, progress=False)
    assert [r.status for r in report.results] == ["failed", "written", "written", "written"]
    failed = report.failed[0]
    assert failed.input == str(bad) and "PcapFormatError" in failed.error and str(bad) in failed.error
    assert report.summary() == "4 captures: 3 written, 0 skipped, 1 failed" and not report.ok
    assert sorted(outputs(out)) == sorted(p.name + ".parquet" for p in good)
    assert sorted(e["output"] for e in read_manifest(out)) == sorted(p.name + ".parquet" for p in good)
    for p in good:
        assert pq.read_table(out / (p.name + ".parquet")).drop_columns(["capture"]).equals(paclo.flows(p))


def test_a_re_run_writes_nothing_new(caps, tmp_path):
    out = tmp_path / "out"
    first = to_parquet(caps, out, kind="projection", progress=False)
    assert len(first.written) == 5
    before, lines = outputs(out), _manifest_lines(out)
    again = to_parquet(caps, out, kind="projection", progress=False)
    assert [r.status for r in again.results] == ["skipped"] * 5
    assert [r.rows for r in again.results] == [r.rows for r in first.results]
    assert outputs(out) == before and _manifest_lines(out) == lines

    # A changed input (new mtime) and changed options are converted again; the rest not.
    os.utime(caps[1], ns=(time.time_ns(), time.time_ns()))
    third = to_parquet(caps, out, kind="projection", progress=False)
    assert [r.status for r in third.results] == ["skipped", "written", "skipped", "skipped", "skipped"]
    after = outputs(out)
    changed = {k for k in before if after[k] != before[k]}
    assert changed == {f"{caps[1].parent.name}/{caps[1].name}.parquet"}
    fourth = to_parquet(caps, out, kind="projection", filter="udp", progress=False)
    assert [r.status for r in fourth.results] == ["written"] * 5


def test_a_damaged_output_is_not_taken_as_complete(caps, tmp_path):
    out = tmp_path / "out"
    to_parquet(caps[:2], out, progress=False)
    victim = out / f"{caps[0].name}.parquet"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    report = to_parquet(caps[:2], out, progress=False)
    assert [r.status for r in report.results] == ["written", "skipped"]
    assert victim.read_bytes() == data


def test_bad_options_raise_before_anything_is_written(caps, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="kind must be"):
        to_parquet(caps, out, kind="frames")
    with pytest.raises(ValueError, match="invalid filter"):
        to_parquet(caps, out, filter="udp and")
    with pytest.raises(ValueError, match="bidirectional applies to kind='flows' only"):
        to_parquet(caps, out, kind="projection", bidirectional=True)
    with pytest.raises(ValueError, match="workers must be"):
        to_parquet(caps, out, workers=0)
    with pytest.raises(ValueError, match="compression must be"):
        to_parquet(caps, out, compression="xz")
    with pytest.raises(FileNotFoundError, match=r"missing\.pcap"):
        to_parquet([caps[0], caps[0].parent / "missing.pcap"], out)
    assert not out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="no capture files"):
        to_parquet(empty, out)


def test_the_export_does_not_import_pandas(caps, tmp_path):
    # pandas costs a second or more to import; a command-line export has no use for it.
    code = textwrap.dedent(f"""
        import sys, paclo
        paclo.to_parquet({str(caps[0])!r}, {str(tmp_path / "out")!r}, kind="projection", progress=False)
        paclo.flows({str(caps[0])!r})
        print("pandas" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_same_file_names_in_two_directories_do_not_collide(tmp_path):
    a = write_captures(tmp_path / "a", files=1)
    b = write_captures(tmp_path / "b", files=1, seed=99)
    assert a[0].name == b[0].name
    report = to_parquet([a[0], b[0]], tmp_path / "out", progress=False)
    assert [Path(r.output).relative_to(tmp_path / "out").as_posix() for r in report.results] == [
        "a/part-000.pcap.parquet",
        "b/part-000.pcap.parquet",
    ]
    assert not pq.read_table(report.results[0].output).equals(pq.read_table(report.results[1].output))


def test_a_second_run_on_the_same_directory_is_refused_while_one_runs(caps, tmp_path):
    import fcntl

    out = tmp_path / "out"
    out.mkdir()
    with open(out / "_paclo.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        with pytest.raises(RuntimeError, match="another to_parquet run"):
            to_parquet(caps, out, progress=False)


# ---- Ctrl-C ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_caps(tmp_path_factory) -> list[Path]:
    return big_captures(tmp_path_factory.mktemp("big"))


def test_ctrl_c_in_python_leaves_nothing_taken_as_complete(big_caps, tmp_path):
    out = tmp_path / "out"
    script = textwrap.dedent(f"""
        import paclo
        paclo.to_parquet({[str(p) for p in big_caps]!r}, {str(out)!r}, kind="packets", workers=1, progress=False)
    """)
    done = interrupt_when_writing([sys.executable, "-c", script], out)
    # An uncaught KeyboardInterrupt ends CPython by SIGINT (or status 1 on older versions).
    assert done.returncode in (1, -signal.SIGINT) and "KeyboardInterrupt" in done.stderr, done.stderr
    # The capture being written finished in the background and removed its temporary file.
    assert not partials(out)
    check_after_interrupt(big_caps, out)
