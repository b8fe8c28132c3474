#!/usr/bin/env bash
# Bounded fuzz run of every target: `bash fuzz/run.sh [SECONDS]` (default 60) splits the
# seconds between the targets; `FUZZ_RUNS=N bash fuzz/run.sh` runs each target for N
# executions instead, and `FUZZ_SANITIZER=none` builds without AddressSanitizer (about ten
# times faster; overflow and bounds checks stay on): the long run recorded in
# docs/fuzzing.md.
#
#   decode  the decoder: a link type and one frame (seeds: fuzz/seeds/decode, committed)
#   read    the capture file reader: a whole classic pcap or pcapng file
#   flow    bytes -> fast path -> flow table and projection builders
#   l7      bytes -> fingerprint engine (TLS/HTTP reassembly, QUIC decryption, X.509) and a
#           flow table with every feature group
#
# The seeds of `read`, `flow` and `l7` are generated first (fuzz/make_seeds.py: paclo's writer,
# the test builders, and tcpdump/tshark/editcap/mergecap where installed). New inputs go to
# fuzz/corpus/<target> (ignored by git). Each target prints one summary line; its full
# libFuzzer output is printed only when it fails, and a crashing input stays in
# fuzz/artifacts/<target>. Uses the cargo-fuzz on PATH, else builds a pinned one into
# target/tools (once, saying so; never into ~/.cargo). cargo-fuzz passes nightly-only flags
# (-Zsanitizer=address); RUSTC_BOOTSTRAP=1 lets the stable toolchain accept them.
set -euo pipefail
secs=${1:-60}
runs=${FUZZ_RUNS:-}
sanitizer=(-s "${FUZZ_SANITIZER:-address}")
cd "$(dirname "$0")/.."
CARGO_FUZZ_VERSION=0.13.2
targets=(decode read flow l7)
if ! cargo fuzz --version >/dev/null 2>&1; then
  PATH="$PWD/target/tools/bin:$PATH"
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz: building cargo-fuzz $CARGO_FUZZ_VERSION into target/tools (once; a few minutes)" >&2
    cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --quiet --root "$PWD/target/tools"
  fi
fi
mkdir -p fuzz/corpus fuzz/artifacts
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

python3 fuzz/make_seeds.py fuzz/corpus/seeds
if ! RUSTC_BOOTSTRAP=1 cargo fuzz build "${sanitizer[@]}" >"$logs/build" 2>&1; then
  cat "$logs/build"
  echo "fuzz: the targets do not build" >&2
  exit 1
fi

# Each target gets an equal share of the seconds left, less the few seconds libFuzzer takes
# to start and load its corpus, so the whole run stays within SECONDS (the build aside).
deadline=$((SECONDS + secs))
left=${#targets[@]}
status=0
for t in "${targets[@]}"; do
  per=$(((deadline - SECONDS) / left - 3))
  ((per > 0)) || per=1
  left=$((left - 1))
  seeds=fuzz/corpus/seeds/$t
  [[ $t == decode ]] && seeds=fuzz/seeds/decode
  mkdir -p "fuzz/corpus/$t"
  if [[ -n $runs ]]; then
    limit=(-runs="$runs")
  else
    limit=(-max_total_time="$per")
  fi
  log=$logs/$t
  start=$SECONDS
  if RUSTC_BOOTSTRAP=1 cargo fuzz run "${sanitizer[@]}" "$t" "fuzz/corpus/$t" "$seeds" -- \
      "${limit[@]}" -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1; then
    result="no crash"
  else
    result="FAILED"
    status=1
  fi
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  printf 'fuzz %-6s %10s runs in %4ds (%s/s), %s new inputs, corpus %s, peak RSS %s MB: %s\n' \
    "$t" "$(stat number_of_executed_units)" "$((SECONDS - start))" "$(stat average_exec_per_sec)" \
    "$(stat new_units_added)" "$(find "fuzz/corpus/$t" -type f | wc -l)" "$(stat peak_rss_mb)" "$result"
  if [[ $result == FAILED ]]; then
    cat "$log"
  fi
done
exit $status
