#!/usr/bin/env bash
# Runs the README's two commands, taken verbatim from README.md, as root on a fresh Debian
# bookworm: a minimal debootstrap (cached in target/bookworm-base), copied afresh for every
# run to target/bookworm-run, with a clone of this checkout's HEAD in /root/paclo.
#   bash scripts/fresh-bookworm.sh [--host-rust] [--first-only] [--keep]
# --host-rust  bind-mount this machine's rustup toolchains read-only into the root instead of
#              letting setup.sh download Rust (for machines that cannot reach rustup's server)
# --first-only run command 1 alone (install everything, the main job), not the test suite
# --keep       leave target/bookworm-run in place afterwards (it is removed otherwise)
# Needs root, debootstrap (installed with apt-get when missing) and a Debian mirror. Local CA
# certificates (/usr/local/share/ca-certificates) are copied in, so a machine behind a
# TLS-inspecting proxy reaches the package registries from the root as it does outside (pip
# is pointed at the system's certificate store then).
# Output goes to the terminal and to target/fresh-bookworm.log; the exit code is the commands'.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
host_rust=0
keep=0
first_only=0
for arg in "$@"; do
  case $arg in
    --host-rust) host_rust=1 ;;
    --keep) keep=1 ;;
    --first-only) first_only=1 ;;
    *) echo "fresh-bookworm: unknown argument: $arg" >&2; exit 1 ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-bookworm: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >/dev/null

mkdir -p "$src/target"
base=$src/target/bookworm-base
run=$src/target/bookworm-run
log=$src/target/fresh-bookworm.log
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

# The two commands, exactly as the README shows them.
mapfile -t commands < <(awk '/^## Two commands/ {s = 1; next} /^## / {s = 0}
  s && /```sh/ {c = 1; next} s && c && /```/ {c = 0; next} s && c {sub(/^ +/, ""); print}' README.md)
[ ${#commands[@]} -eq 2 ] || { echo "fresh-bookworm: README.md does not show two commands" >&2; exit 1; }

if [ ! -x "$base/bin/bash" ]; then
  echo "fresh-bookworm: debootstrap --variant=minbase bookworm (once, into $base)"
  rm -rf "$base.tmp"
  debootstrap --variant=minbase bookworm "$base.tmp" "$mirror" >"$src/target/debootstrap.log" 2>&1 ||
    { tail -n 20 "$src/target/debootstrap.log" >&2; exit 1; }
  mv "$base.tmp" "$base"
fi

mounts=()
# shellcheck disable=SC2317 # run by the trap
cleanup() {
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -R "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}"; done
  # Never delete through a mount that is still there (/dev, the toolchain).
  if grep -q " $run/" /proc/self/mounts; then
    echo "fresh-bookworm: mounts remain under $run; left in place" >&2
  elif [ "$keep" = 0 ]; then
    rm -rf --one-file-system "$run"
  fi
}
trap cleanup EXIT
mnt() { # mnt TARGET MOUNT-ARGS...
  local target=$1
  shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounts+=("$target")
}

if grep -q " $run/" /proc/self/mounts; then
  echo "fresh-bookworm: an earlier run left mounts under $run: unmount them first" >&2
  exit 1
fi
rm -rf --one-file-system "$run"
cp -a "$base" "$run"
git clone -q --no-hardlinks "$src" "$run/root/paclo"
cp /etc/resolv.conf "$run/etc/resolv.conf"
local_ca=()
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  # pip trusts its own certificate bundle unless told to use the system's.
  local_ca=(PIP_CERT=/etc/ssl/certs/ca-certificates.crt)
  mkdir -p "$run/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$run/usr/local/share/ca-certificates/"
fi
mnt "$run/proc" -t proc proc
mnt "$run/sys" -t sysfs sysfs
mnt "$run/dev" --rbind /dev
mount --make-rslave "$run/dev"
if [ "$host_rust" = 1 ]; then
  rustup_home=$(rustup show home)
  mnt "$run/root/.rustup" --bind "$rustup_home"
  mount -o remount,bind,ro "$run/root/.rustup"
  mkdir -p "$run/root/.cargo/bin"
  cp "$(command -v rustup)" "$run/root/.cargo/bin/rustup"
  for proxy in cargo rustc rustdoc cargo-fmt rustfmt cargo-clippy clippy-driver; do
    ln -f "$run/root/.cargo/bin/rustup" "$run/root/.cargo/bin/$proxy"
  done
fi

if [ "$first_only" = 1 ]; then
  commands=("${commands[0]}")
fi
# Each command in turn, stopping at the first that fails; each reports its exit code and time.
script="cd /root/paclo || exit 1"
for i in "${!commands[@]}"; do
  script+="; t=\$SECONDS; { ${commands[$i]}; }; c=\$?"
  script+="; echo \"fresh-bookworm: command $((i + 1)) exit \$c after \$((SECONDS - t)) s\""
  script+="; [ \$c = 0 ] || exit \$c"
done
echo "fresh-bookworm: running in a fresh bookworm root, in /root/paclo (a clone of $(git rev-parse --short HEAD)):"
printf '  %s\n' "${commands[@]}"
set +e
chroot "$run" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  ${http_proxy:+http_proxy=$http_proxy} ${https_proxy:+https_proxy=$https_proxy} "${local_ca[@]}" \
  /bin/bash -c "$script" 2>&1 | tee "$log"
code=${PIPESTATUS[0]}
set -e
echo "fresh-bookworm: exit $code (log: $log)"
exit "$code"
