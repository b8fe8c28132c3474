"""Ctrl-C (a SIGALRM handler raising KeyboardInterrupt) stops project, flows, flow_topn and
read_batches mid-file: the native loops check for signals between chunks of records,
whether the filter keeps the records or rejects them all, and close their files and join
their threads before raising."""

from __future__ import annotations

import contextlib
import os
import pathlib

import pyarrow.compute as pc
import pytest
from _foundation_util import keyboard_interrupt_after

import paclo
from paclo.perf import datasets

# Enough packets that no build reads them all in the 5 ms before the alarm (a release
# build walks 64-byte packets at about 30 ns each: 60 ms for the file).
N = 2_000_000
ALARM = 0.005


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> pathlib.Path:
    p = tmp_path_factory.mktemp("interrupt") / "big.pcap"
    datasets.generate("udp-64", N, p)
    return p


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> pathlib.Path:
    p = tmp_path_factory.mktemp("interrupt") / "small.pcap"
    datasets.generate("udp-64", 1000, p)
    return p


def _open_handles(path: pathlib.Path) -> int:
    """Mappings and descriptors of this process that refer to ``path`` (0 where /proc is
    missing, so the check then proves nothing)."""
    target = os.path.realpath(path)
    n = 0
    if os.path.exists("/proc/self/maps"):
        with open("/proc/self/maps") as f:
            n += sum(1 for line in f if line.rstrip("\n").endswith(target))
    if os.path.isdir("/proc/self/fd"):
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                n += os.readlink(f"/proc/self/fd/{fd}") == target
    return n


def _threads() -> int:
    return len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0


def _raised_inside(excinfo: pytest.ExceptionInfo, function: str, native_call: str) -> None:
    """The handler ran while ``function`` was in the native call: the frame below the
    handler's is that function, on the line that calls ``native_call``."""
    entries = list(excinfo.traceback)
    assert entries[-1].name == "interrupt", [e.name for e in entries]
    caller = entries[-2]
    assert caller.name == function, [e.name for e in entries]
    assert native_call in str(caller.statement), str(caller.statement)


def _raised_in_native_iteration(excinfo: pytest.ExceptionInfo) -> None:
    """The handler ran inside the native iterator, called by ``list.extend`` from the test."""
    entries = list(excinfo.traceback)
    assert entries[-1].name == "interrupt", [e.name for e in entries]
    assert "got.extend(it)" in str(entries[-2].statement), str(entries[-2].statement)


@pytest.fixture(scope="module", autouse=True)
def _warm(small):
    # Start rayon's pool and pyarrow's stream import before any thread is counted.
    paclo.flows([small, small])
    paclo.project([small, small])


@pytest.mark.parametrize("filter", [None, "tcp"], ids=["all-kept", "all-rejected"])
def test_ctrl_c_interrupts_project_of_one_file(big, filter):
    result = None
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        result = paclo.project(big, filter=filter)
    assert result is None
    _raised_inside(excinfo, "project", "_paclo.flow_project")
    assert _open_handles(big) == 0


@pytest.mark.parametrize("filter", [None, "tcp"], ids=["all-kept", "all-rejected"])
def test_ctrl_c_interrupts_flows_of_one_file(big, filter):
    result = None
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        result = paclo.flows(big, filter=filter)
    assert result is None
    _raised_inside(excinfo, "flows", "_paclo.flow_table")
    assert _open_handles(big) == 0


@pytest.mark.parametrize("function", ["project", "flows"])
def test_ctrl_c_interrupts_a_reader_source(big, function):
    """A Reader source is read through its file: the interrupted call closes what it
    opened and leaves the Reader as it was."""
    reader = paclo.read(big)
    held = _open_handles(big)
    result = None
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        result = getattr(paclo, function)(reader)
    assert result is None
    _raised_inside(excinfo, function, "_paclo.flow_")
    assert _open_handles(big) == held
    assert next(iter(reader)).caplen == 64
    reader.close()


@pytest.mark.parametrize("idle_timeout", [None, 60], ids=["parallel", "in-order"])
def test_ctrl_c_interrupts_flows_of_files(big, small, idle_timeout):
    """A list of files is read on worker threads (one rayon task per file, or in order
    with timeouts); the interrupted call joins them and leaves the pool usable."""
    threads = _threads()
    result = None
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        result = paclo.flows([big, big, big], idle_timeout=idle_timeout)
    assert result is None
    _raised_inside(excinfo, "flows", "_paclo.flow_table")
    assert _open_handles(big) == 0
    assert _threads() == threads
    after = paclo.flows([small, small, small], idle_timeout=idle_timeout)
    assert pc.sum(after.column("packets")).as_py() == 3000


@pytest.mark.parametrize("filter", [None, "tcp"], ids=["all-kept", "all-rejected"])
def test_ctrl_c_interrupts_project_of_files(big, small, filter):
    threads = _threads()
    result = None
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        result = paclo.project([big, big], filter=filter)
    assert result is None
    _raised_inside(excinfo, "project", "_paclo.flow_project")
    assert _open_handles(big) == 0
    assert _threads() == threads
    assert paclo.project([small, small]).num_rows == 2000


@pytest.mark.parametrize("source", ["one", "list"])
def test_ctrl_c_interrupts_flow_topn(big, source):
    src = big if source == "one" else [big, big]
    result = None
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        result = paclo.flow_topn(src)
    assert result is None
    _raised_inside(excinfo, "_topn", "_paclo.flow_topn")
    assert _open_handles(big) == 0


def test_ctrl_c_interrupts_read_batches_and_it_resumes(big):
    """Consumed from C (list.extend), the batches stop mid-file; the iterator stays open
    and, read on, yields exactly the rows not yet seen."""
    got: list = []
    it = paclo.read_batches(big)
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        got.extend(it)
    _raised_in_native_iteration(excinfo)
    seen = sum(b.num_rows for b in got)
    assert seen < N
    assert _open_handles(big) > 0
    assert seen + sum(b.num_rows for b in it) == N
    # The end closes the file.
    assert _open_handles(big) == 0
    assert next(it, None) is None


def test_ctrl_c_interrupts_read_batches_whose_filter_rejects_everything(big):
    got: list = []
    it = paclo.read_batches(big, filter="tcp")
    with pytest.raises(KeyboardInterrupt) as excinfo, keyboard_interrupt_after(ALARM):
        got.extend(it)
    _raised_in_native_iteration(excinfo)
    assert got == []
    del it
    # Dropping the interrupted iterator closes the file.
    assert _open_handles(big) == 0
