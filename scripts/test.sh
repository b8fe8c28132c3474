#!/usr/bin/env bash
# Every test paclo has: the format, lint and type gates, the Rust suite, the Python suite
# against the installed package, and a bounded fuzz run of every fuzz target. Run from anywhere;
# needs libpcap-dev, pkg-config, a C compiler, Rust and Python 3.11+.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

echo "== install paclo with its test dependencies"
python3 -m pip install --quiet ".[test]"

echo "== gates: rustfmt, clippy, ruff, mypy"
cargo fmt --check
cargo clippy --quiet --all-targets -- -D warnings
cargo clippy --quiet --all-targets --features python -- -D warnings
python3 -m ruff check --quiet python tests
python3 -m mypy --strict python/paclo

echo "== cargo test"
cargo test --quiet

echo "== pytest (installed package)"
# Run from tests/ so that the installed paclo is imported, never the source tree.
(cd tests && python3 -m pytest -q -p no:cacheprovider .)

echo "== stub matches the native module"
(cd tests && python3 -m mypy.stubtest paclo._paclo)

echo "== fuzz the decoder, the file reader and the flow path for 60 s"
bash fuzz/run.sh 60
