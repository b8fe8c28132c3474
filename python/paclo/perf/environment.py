"""The environment block of results.json: machine, interpreter and library versions."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any


def _run(cmd: list[str], cwd: str | None = None) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10, cwd=cwd)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def git_sha() -> str | None:
    """HEAD of the git checkout paclo is imported from, else of the working directory, else None."""
    if shutil.which("git") is None:
        return None
    import paclo

    for where in (str(Path(paclo.__file__).resolve().parent), os.getcwd()):
        sha = _run(["git", "rev-parse", "HEAD"], cwd=where)
        if sha:
            return sha
    return None


def cpu_model() -> str | None:
    """The CPU model name (/proc/cpuinfo on Linux, sysctl on macOS, else platform.processor())."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        model = _run(["sysctl", "-n", "machdep.cpu.brand_string"])
        if model:
            return model
    return platform.processor() or None


def libpcap_version() -> str | None:
    """paclo.libpcap_version() when available, else pcap_lib_version() through ctypes."""
    try:
        import paclo

        return str(paclo.libpcap_version())
    except Exception:  # noqa: BLE001 - any failure falls back to the shared library's name
        pass
    name = ctypes.util.find_library("pcap")
    if name is None:
        return None
    try:
        lib = ctypes.CDLL(name)
        lib.pcap_lib_version.restype = ctypes.c_char_p
        version: bytes = lib.pcap_lib_version()
        return version.decode()
    except (OSError, AttributeError):
        return None


def _module_version(name: str) -> str | None:
    try:
        module = __import__(name)
    except ImportError:
        return None
    return getattr(module, "__version__", None)


def collect(argv: list[str]) -> dict[str, Any]:
    """The environment of this run; `argv` is the runner's command line."""
    import paclo

    return {
        "git_sha": git_sha(),
        "os_name": platform.system(),
        "os_version": platform.release(),
        "architecture": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "paclo_version": getattr(paclo, "__version__", None),
        "rustc_version": _run(["rustc", "--version"]) if shutil.which("rustc") else None,
        "libpcap_version": libpcap_version(),
        "numpy_version": _module_version("numpy"),
        "pyarrow_version": _module_version("pyarrow"),
        "command_line": list(argv),
    }
