#!/usr/bin/env bash
# Installs what flakelab's tests need (idempotent), then runs the quality
# gates and the full test suite. This is the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v date >/dev/null || need_pkgs+=(coreutils)
command -v locale >/dev/null || need_pkgs+=(libc-bin)
[ -e /usr/share/zoneinfo/Pacific/Kiritimati ] || need_pkgs+=(tzdata)
command -v git >/dev/null || need_pkgs+=(git)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "installing: ${need_pkgs[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_pkgs[@]}"
fi

# CI must not go green by skipping capability-dependent tests.
export FLAKELAB_TEST_REQUIRE_ALL="${FLAKELAB_TEST_REQUIRE_ALL:-1}"
export INSTA_UPDATE=no

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
if grep -rnE '\b(dbg|todo|unimplemented)!' src tests benches; then
  echo "forbidden macro found" >&2; exit 1
fi
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --quiet
cargo test --locked
