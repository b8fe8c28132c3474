#!/usr/bin/env bash
# Every test paclo has: the format, lint and type gates, the Rust suite, the Python suite
# against the package installed in the checkout's .venv, the stub check, and a bounded fuzz
# run of every fuzz target. Run from anywhere. It first runs scripts/setup.sh, which installs
# what is missing (system packages, Rust, .venv) and reinstalls paclo when the sources changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/setup.sh
. scripts/env.sh
# The venv's python, pytest, paclo and maturin come first, whether or not it is activated.
PATH="$root/.venv/bin:$PATH"
export PATH VIRTUAL_ENV="$root/.venv"
py="$root/.venv/bin/python"

echo "== gates: rustfmt, clippy, ruff, mypy"
cargo fmt --check
cargo clippy --quiet --all-targets -- -D warnings
cargo clippy --quiet --all-targets --features python -- -D warnings
"$py" -m ruff check --quiet python tests
"$py" -m mypy --strict python/paclo

echo "== cargo test"
cargo test --quiet

echo "== pytest (installed package)"
# Run from tests/ so that the installed paclo is imported, never the source tree.
(cd tests && "$py" -m pytest -q -p no:cacheprovider .)

echo "== stub matches the native module"
(cd tests && "$py" -m mypy.stubtest paclo._paclo)

echo "== fuzz the decoder, the file reader, the flow path and the L7 readers for 80 s"
bash fuzz/run.sh 80
