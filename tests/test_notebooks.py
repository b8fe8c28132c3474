"""Every notebook in notebooks/ runs headless, top to bottom, with no cell error; they are
stored without outputs; and they leave no temporary folder behind."""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from _perf_util import SpecDatasets

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb"))


def execute(name: str, env: dict[str, str], *, kernel: str = "python3", timeout: int = 600):
    """Run notebooks/<name> in a fresh kernel of this interpreter with ``env`` added; returns
    the executed notebook and the text of every output."""
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    saved = dict(os.environ)
    # The kernel must be this interpreter (the one paclo is installed in).
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + saved.get("PATH", "")
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ.update(env)
    try:
        client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name=kernel, resources={"metadata": {"path": str(ROOT)}})
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append(out.get("text", ""))
            texts.append(str(out.get("data", {}).get("text/plain", "")))
            texts.append(str(out.get("data", {}).get("text/markdown", "")))
    return nb, "\n".join(texts)


def images(nb) -> int:
    return sum(1 for cell in nb.cells for out in cell.get("outputs", []) if "image/png" in out.get("data", {}))


def test_the_four_notebooks_exist_and_are_stored_without_outputs():
    assert [p.name for p in NOTEBOOKS] == ["01-quickstart.ipynb", "02-flow-analysis.ipynb",
                                           "03-perf-results.ipynb", "04-live-capture.ipynb"]
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        assert nb.cells[0].cell_type == "markdown" and "paclo[notebooks]" in nb.cells[0].source, path.name
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.name} has outputs in git"


@pytest.fixture
def scratch():
    with tempfile.TemporaryDirectory(prefix="paclo-nb-test-") as d:
        yield d
    assert not os.path.exists(d)


def test_01_quickstart(scratch):
    _, text = execute("01-quickstart.ipynb", {"PACLO_NOTEBOOK_DIR": scratch})
    assert "20,000 packets" in text
    assert "wrote and read back" in text and "timestamps and bytes equal" in text
    assert "dns" in text and "example" in text


def test_02_flow_analysis(scratch):
    nb, text = execute("02-flow-analysis.ipynb", {"PACLO_NOTEBOOK_DIR": scratch})
    assert "UInt16" in text and "datetime64[ns, UTC]" in text  # the analysis view's dtypes
    assert "10.1.0.99" in text  # the demo's backup host tops the talkers
    assert "flows from 2001:db8::/32" in text and "to the DNS server 198.51.100.53" in text
    assert images(nb) == 3


def test_notebooks_remove_their_own_temporary_folder(tmp_path):
    # Without PACLO_NOTEBOOK_DIR the notebook makes its folder under TMPDIR and removes it.
    execute("01-quickstart.ipynb", {"TMPDIR": str(tmp_path)})
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def perf_results(tmp_path_factory):
    from paclo.perf import cli, runner

    out = tmp_path_factory.mktemp("perf-nb")
    paths = []
    for name, scenarios in (("a", "raw-seq,flow-table,peer-c-pcap-next-ex"), ("b", "raw-seq,flow-table")):
        opts = cli.parse_args(["--output", str(out / name), "--packets", "2000", "--runs", "2", "--warmups", "0",
                               "--peers", "--scenarios", scenarios])
        runner.run(opts, datasets=SpecDatasets, out=io.StringIO())
        paths.append(out / name / "results.json")
    return paths


def test_03_perf_results_on_results_files(scratch, perf_results):
    a, b = perf_results
    nb, text = execute("03-perf-results.ipynb", {"PACLO_NOTEBOOK_DIR": scratch, "PACLO_PERF_RESULTS": str(a),
                                                 "PACLO_PERF_COMPARE": str(b)})
    assert "profile quick" in text and "x C loop" in text
    assert "packets_per_sec_ratio" in text
    assert "report.html" in text
    assert images(nb) >= 3 + 1 + 3  # throughput per case, one allocation, compare per case
    assert (Path(scratch) / "report" / "report.html").exists()


def test_03_perf_results_makes_its_own_runs(scratch):
    nb, text = execute("03-perf-results.ipynb", {"PACLO_NOTEBOOK_DIR": scratch}, timeout=900)
    doc = json.loads((Path(scratch) / "run-a" / "results.json").read_text())
    assert doc["profile"] == "quick" and doc["config"]["packets"] == 50_000  # the quick profile's own size
    assert {r["scenario"] for r in doc["offline"]} >= {"raw-seq", "sync-loop", "flow-table", "peer-dpkt-raw"}
    assert "--profile quick" in text and "packets_per_sec_ratio" in text
    assert images(nb) >= 7


def test_04_live_capture(scratch):
    if os.geteuid() != 0:
        pytest.skip("live capture on lo needs root (CI runs as root)")
    _, text = execute("04-live-capture.ipynb", {})
    assert "capturing on lo" in text
    assert "sent 20,000, captured and processed" in text
    assert "queue dropped" in text and "skipped" not in text
    assert "udp" in text  # the flow table of the written capture


def test_04_skips_with_a_message_without_capture_permission(tmp_path):
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("dropping capabilities needs root and setpriv")
    # A kernel whose process has lost CAP_NET_RAW and CAP_NET_ADMIN, as an unprivileged user's would.
    spec = tmp_path / "kernels" / "python3-nocap"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": ["setpriv", "--bounding-set", "-net_raw,-net_admin", "--inh-caps", "-net_raw,-net_admin",
                 sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "no capture permission", "language": "python"}))
    _, text = execute("04-live-capture.ipynb", {"JUPYTER_PATH": str(tmp_path)}, kernel="python3-nocap")
    assert "Skipping the live capture:" in text and "CAP_NET_RAW" in text
    assert text.count("skipped: no capture permission") == 2
    assert "sent 20,000" not in text


def _requirement_names(extra: str) -> set[str]:
    import re
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["optional-dependencies"][extra]
    return {re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0].lower() for r in reqs}


def test_the_notebooks_extra_brings_everything_they_import():
    import ast

    # import name -> the distribution that provides it
    provider = {"IPython": "ipykernel", "matplotlib_inline": "ipykernel"}
    imported: set[str] = set()
    for path in NOTEBOOKS:
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            source = "\n".join(line for line in cell.source.splitlines() if not line.startswith("%"))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Import):
                    imported |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m != "paclo"}
    assert third_party, "the notebooks import pandas, polars, ..."
    needed = {provider.get(m, m).lower() for m in third_party} | {"dpkt", "jupyterlab"}  # 03 runs dpkt; Jupyter opens them
    assert needed <= _requirement_names("notebooks"), needed - _requirement_names("notebooks")
    # and the test extra has what running them here needs (no skips in CI)
    assert ({provider.get(m, m).lower() for m in third_party} | {"nbclient", "nbformat", "dpkt"}) <= _requirement_names("test")
