"""The README's example runs as written, against a generated capture."""

from __future__ import annotations

import re
from pathlib import Path

from paclo.perf import datasets

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "README has a python example"
    # Port 53 traffic for the example's filter, and more besides.
    datasets.generate("mixed", 200, tmp_path / "other.pcap")
    import paclo

    frame = bytearray(bytes(next(iter(paclo.read(tmp_path / "other.pcap")))))
    frame[36:38] = (53).to_bytes(2, "big")  # UDP destination port 53
    paclo.write_pcap(tmp_path / "trace.pcap", [bytes(frame), *paclo.read(tmp_path / "other.pcap")])
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    printed = capsys.readouterr().out
    assert "10.0.0.1" in printed  # the one port-53 packet, printed by the loop
    assert len(namespace["top"]) == 3  # UDP to 5300, UDP to 53, TCP to 443
