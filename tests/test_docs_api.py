"""docs/api.md is true to the code: every function's table names exactly its parameters, with
their defaults."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import paclo

API = Path(__file__).resolve().parents[1] / "docs" / "api.md"
FUNCTIONS = ("read", "capture", "reduce", "project", "flows", "flow_topn", "read_batches", "write_pcap", "fan_out",
             "analysis_view", "to_pandas", "to_polars", "ip_to_str", "ip_to_bytes", "ip_range")


def tables() -> dict[str, list[tuple[str, str]]]:
    """{function name: [(option, default)]} from the headings `paclo.<name>` and the table under each."""
    out: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in API.read_text().splitlines():
        heading = re.match(r"#+ `paclo\.(\w+)`$", line)
        if heading:
            current = heading.group(1)
            out[current] = []
            continue
        cells = re.match(r"\| `([^`]+)` \|\s*([^|]*?)\s*\|", line)
        if current and cells:
            out[current].append((cells.group(1), cells.group(2).strip()))
    return out


def documented_default(param: inspect.Parameter) -> str:
    if param.kind is inspect.Parameter.VAR_KEYWORD:
        return ""
    if param.default is inspect.Parameter.empty:
        return "(required)"
    return "`" + repr(param.default).replace("'", '"') + "`"


def test_every_function_has_a_table():
    assert set(FUNCTIONS) <= set(tables())


@pytest.mark.parametrize("name", FUNCTIONS)
def test_table_matches_the_signature(name):
    rows = tables()[name]
    params = inspect.signature(getattr(paclo, name)).parameters.values()
    expected = [("**" + p.name if p.kind is inspect.Parameter.VAR_KEYWORD else p.name, documented_default(p)) for p in params]
    assert rows == expected


def test_headline_signatures_name_the_real_defaults():
    # The one-line signatures under the headings quote defaults too: each must be the code's.
    text = API.read_text()
    for name in FUNCTIONS:
        params = inspect.signature(getattr(paclo, name)).parameters
        for line in re.findall(rf"`paclo\.{name}\((.*?)\)( -> [^`]*)?`", text):
            for option, value in re.findall(r"(\w+)=([^,)]+)", line[0]):
                if value.strip() == "...":
                    continue
                assert option in params, (name, option)
                assert repr(params[option].default).replace("'", '"') == value.strip(), (name, option, value)
