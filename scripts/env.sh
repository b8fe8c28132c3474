# shellcheck shell=bash
# Sourced by scripts/setup.sh and scripts/test.sh: the Rust toolchain rustup installs
# ($CARGO_HOME/bin, default ~/.cargo/bin) goes first on PATH, so neither a shell that started
# before rustup ran nor a system cargo older than rust-version gets in the way.
if [ -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo" ]; then
  PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
  export PATH
fi
