#!/usr/bin/env bash
# Bounded fuzz run of the decoder: `bash fuzz/run.sh [SECONDS]` (default 60).
# Uses the cargo-fuzz on PATH, else builds one from crates.io into target/tools (once, saying
# so; never into ~/.cargo), then runs the `decode` target over the seeds in fuzz/seeds/decode;
# new inputs go to fuzz/corpus-work (ignored by git).
# cargo-fuzz passes nightly-only flags (-Zsanitizer=address); RUSTC_BOOTSTRAP=1 lets the
# stable toolchain accept them. A crash exits non-zero and leaves the input in fuzz/artifacts.
set -euo pipefail
secs=${1:-60}
cd "$(dirname "$0")/.."
CARGO_FUZZ_VERSION=0.13.2
if ! cargo fuzz --version >/dev/null 2>&1; then
  PATH="$PWD/target/tools/bin:$PATH"
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: building cargo-fuzz $CARGO_FUZZ_VERSION into target/tools (once; a few minutes)" >&2
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet --root "$PWD/target/tools"
  fi
fi
mkdir -p fuzz/corpus-work
RUSTC_BOOTSTRAP=1 cargo fuzz run decode fuzz/corpus-work fuzz/seeds/decode -- \
  -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1
