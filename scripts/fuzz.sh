#!/usr/bin/env bash
# Runs flakelab's fuzz targets (fuzz/, cargo-fuzz + libFuzzer) for SECONDS
# each, one after another: `scripts/fuzz.sh 10` (the test command's short
# run), `scripts/fuzz.sh 600 junit` (one target, ten minutes).
# Needs cargo-fuzz (`cargo install cargo-fuzz`); the stable toolchain's
# nightly-only flags are allowed with RUSTC_BOOTSTRAP=1. New inputs go to a
# scratch corpus under the target dir (the committed corpus is only read),
# crashes to target/fuzz-artifacts/<target>/; a crash fails the script.
# Properties per input: no panic, at most 10 s (-timeout), 1 GiB (-rss_limit_mb).
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds="${1:-10}"; shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(junit store catalog config cell_spec signature archive quarantine)
export RUSTC_BOOTSTRAP=1
target_dir="${CARGO_TARGET_DIR:-../target}"
export CARGO_TARGET_DIR="$target_dir/fuzz"
if ! out=$(cargo fuzz build --sanitizer none -O 2>&1); then echo "$out" >&2; exit 1; fi
for t in "${targets[@]}"; do
  scratch="$CARGO_TARGET_DIR/corpus/$t"; artifacts="$CARGO_TARGET_DIR/artifacts/$t"
  mkdir -p "$scratch" "$artifacts"
  log="$CARGO_TARGET_DIR/fuzz-$t.log"
  if cargo fuzz run --sanitizer none -O "$t" "$scratch" "corpus/$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 > "$log" 2>&1; then status=0; else status=$?; fi
  grep -E '^(Done|stat::number_of_executed_units|stat::average_exec_per_sec)|DONE' "$log" \
    | sed "s/^/fuzz $t: /" || true
  if [ "$status" -ne 0 ]; then
    tail -30 "$log" >&2
    echo "fuzz $t: a finding (exit $status); the input is in $artifacts, the log in $log" >&2
    exit 1
  fi
done
