#!/usr/bin/env bash
# Make this checkout ready to build, test and run paclo (Debian or Ubuntu):
#   1. the system packages of scripts/apt-packages.txt through apt-get: compilers, libpcap,
#      Python's venv, and the tools the tests cross-check against (tshark, tcpdump, ...);
#   2. a Rust toolchain at least as new as Cargo.toml's rust-version, with rustfmt and clippy,
#      installed by rustup (non-interactive, into ~/.cargo) when cargo is missing or older;
#   3. a virtual environment .venv in the checkout with paclo and its test extra installed,
#      rebuilt when the sources changed since the last install.
# Idempotent and quiet: it checks everything first, names what is missing, prints one line per
# thing it does (nothing when all is in place) and a failing step's log. Apt needs root or sudo.
#   bash scripts/setup.sh           do what is missing
#   bash scripts/setup.sh --check   only list what is missing (exit 1 when anything is)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh

check_only=0
case "${1:-}" in
  "") ;;
  --check) check_only=1 ;;
  -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "setup: error: unknown argument: $1 (expected --check or nothing)" >&2; exit 1 ;;
esac

# The system packages: scripts/apt-packages.txt, one a line, '#' starting a comment.
mapfile -t APT_PACKAGES < <(sed 's/#.*//' scripts/apt-packages.txt | tr -s ' \t' '\n' | grep -v '^$')
PYTHON=${PYTHON:-python3}
VENV=$root/.venv
LOGS=$root/target/setup
STAMP=$VENV/.paclo-source

say() { echo "setup: $*"; }
die() { echo "setup: error: $*" >&2; exit 1; }

# step NAME WHAT CMD...: runs CMD with its output in target/setup/NAME.log, shown when it fails.
step() {
  local name=$1 what=$2
  shift 2
  mkdir -p "$LOGS"
  say "$what"
  if ! "$@" >"$LOGS/$name.log" 2>&1; then
    echo "setup: error: $what: failed; the end of $LOGS/$name.log:" >&2
    tail -n 40 "$LOGS/$name.log" >&2
    exit 1
  fi
}

# ---- checks ---------------------------------------------------------------------------

rust_required() { sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' Cargo.toml | head -n 1; }

# version_3 V: V with three components (1.85 -> 1.85.0).
version_3() {
  local v=$1
  while [ "$(printf '%s' "$v" | tr -cd . | wc -c)" -lt 2 ]; do v=$v.0; done
  echo "$v"
}

# version_lt A B: true when version A is older than B (1.84.1 < 1.85 = 1.85.0 < 1.85.1).
version_lt() {
  local a b
  a=$(version_3 "$1")
  b=$(version_3 "$2")
  [ "$a" != "$b" ] && [ "$(printf '%s\n%s\n' "$a" "$b" | sort -V | head -n 1)" = "$a" ]
}

# rust_plan: "ok", "install" (no cargo) or "upgrade VERSION" (cargo older than rust-version).
rust_plan() {
  local have
  if ! have=$(cargo --version 2>/dev/null); then
    echo install
    return
  fi
  have=$(echo "$have" | awk '{print $2}')
  have=${have%%-*}
  if version_lt "$have" "$(rust_required)"; then echo "upgrade $have"; else echo ok; fi
}

rust_components_missing() {
  local c out=()
  for c in fmt clippy; do
    cargo "$c" --version >/dev/null 2>&1 || out+=("$( [ "$c" = fmt ] && echo rustfmt || echo clippy)")
  done
  echo "${out[*]}"
}

apt_missing() {
  local p out=()
  for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q " installed$" || out+=("$p")
  done
  echo "${out[*]}"
}

# Without dpkg: name the commands and libraries the build and the tests need that are absent.
tools_missing() {
  local t out=()
  for t in cc c++ pkg-config git; do command -v "$t" >/dev/null 2>&1 || out+=("$t"); done
  pkg-config --exists libpcap 2>/dev/null || out+=("libpcap (development files)")
  for t in tshark tcpdump ip; do command -v "$t" >/dev/null 2>&1 || out+=("$t"); done
  echo "${out[*]}"
}

python_problem() {
  command -v "$PYTHON" >/dev/null 2>&1 || { echo "$PYTHON is not installed"; return; }
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null ||
    { echo "$PYTHON is $("$PYTHON" -V 2>&1); paclo needs 3.11 or newer (set PYTHON=...)"; return; }
  "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null || echo "$PYTHON cannot create virtual environments (python3-venv)"
}

venv_ok() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null
}

# A digest of everything `pip install .` builds from.
source_digest() {
  local f inputs=()
  for f in Cargo.toml Cargo.lock pyproject.toml README.md LICENSE build.rs src python; do
    [ -e "$f" ] && inputs+=("$f")
  done
  find "${inputs[@]}" -type f ! -path '*/__pycache__/*' ! -name '*.so' ! -name '*.pyc' -print0 |
    LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -d ' ' -f 1
}

paclo_current() {
  venv_ok && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(source_digest)" ] &&
    (cd / && "$VENV/bin/python" -c 'import paclo') >/dev/null 2>&1
}

have_dpkg=0
command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && have_dpkg=1

todo=()
apt_todo=""
if [ "$have_dpkg" = 1 ]; then
  apt_todo=$(apt_missing)
  [ -n "$apt_todo" ] && todo+=("apt packages: $apt_todo")
else
  missing_tools=$(tools_missing)
  [ -n "$missing_tools" ] && todo+=("not a Debian system; install with your package manager: $missing_tools")
fi
rust=$(rust_plan)
case $rust in
  install) todo+=("Rust: cargo not found; rustup installs stable (rust-version is $(rust_required))") ;;
  upgrade*) todo+=("Rust: cargo ${rust#upgrade } is older than rust-version $(rust_required); rustup installs stable") ;;
  ok)
    components=$(rust_components_missing)
    [ -n "$components" ] && todo+=("Rust components: $components")
    ;;
esac
if ! venv_ok; then
  todo+=("virtual environment .venv")
  [ -z "$apt_todo" ] && problem=$(python_problem) && [ -n "$problem" ] && todo+=("Python: $problem")
fi
paclo_current || todo+=("paclo (release build) and its test extra in .venv")

if [ "$check_only" = 1 ]; then
  [ ${#todo[@]} -eq 0 ] && { say "everything is in place"; exit 0; }
  for t in "${todo[@]}"; do say "missing: $t"; done
  exit 1
fi
[ ${#todo[@]} -eq 0 ] && exit 0
for t in "${todo[@]}"; do say "missing: $t"; done

# ---- actions --------------------------------------------------------------------------

if [ "$have_dpkg" = 0 ] && [ -n "${missing_tools:-}" ]; then
  die "install these first: $missing_tools"
fi

apt_install() {
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  # tshark asks whether users outside the wireshark group may capture: no, without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | "${sudo[@]}" debconf-set-selections
  local install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@")
  # Package lists are refreshed only when an install needs them (a fresh system has none).
  "${install[@]}" || { "${sudo[@]}" apt-get update -q && "${install[@]}"; }
}

if [ -n "$apt_todo" ]; then
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
    die "apt packages missing and neither root nor sudo: as root, run: apt-get install -y $apt_todo"
  fi
  # shellcheck disable=SC2086 # a list of package names
  step apt "installing apt packages: $apt_todo" apt_install $apt_todo
fi

rust_install() {
  if command -v rustup >/dev/null 2>&1; then
    rustup toolchain install stable --profile minimal -c rustfmt -c clippy
    rustup default stable
  else
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs |
      sh -s -- -y --profile minimal --default-toolchain stable -c rustfmt -c clippy
  fi
}

case $rust in
  install | upgrade*)
    step rustup "installing the stable Rust toolchain with rustup (into ${CARGO_HOME:-$HOME/.cargo})" rust_install
    . scripts/env.sh
    rust=$(rust_plan)
    [ "$rust" = ok ] || die "cargo on PATH is still not rust-version $(rust_required) after rustup ($rust)"
    ;;
esac
components=$(rust_components_missing)
if [ -n "$components" ]; then
  command -v rustup >/dev/null 2>&1 || die "cargo lacks $components (needed by the tests); install them with your toolchain"
  # shellcheck disable=SC2086 # component names
  step rustup-components "adding Rust components: $components" rustup component add $components
fi

if ! venv_ok; then
  problem=$(python_problem)
  [ -z "$problem" ] || die "$problem"
  step venv "creating the virtual environment .venv with $("$PYTHON" -V 2>&1)" "$PYTHON" -m venv --clear "$VENV"
fi

if ! paclo_current; then
  digest=$(source_digest)
  rm -f "$STAMP"
  step pip "installing paclo and its test extra into .venv (a release build: minutes the first time)" \
    "$VENV/bin/python" -m pip install --disable-pip-version-check --no-input ".[test]"
  echo "$digest" >"$STAMP"
fi
say "ready: .venv has paclo $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("paclo"))')"
