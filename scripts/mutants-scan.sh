#!/bin/sh
# Hand-picked mutants of the scanner's guards (#18): each disables one
# mechanism (the ledger's two directions, its path normalisation, the
# near-misses' comment, frozen-clock, nested-worktree and loopback rules,
# --prove's direction and Holm), and a lib test must then fail. Restores
# every file; exits 1 if a mutant survives.
# Slow (one rebuild of the lib tests per mutant): run by hand, not in CI.
#   scripts/mutants-scan.sh
set -u
cd "$(dirname "$0")/.."
survived=0
mutant() { # name file from to test
    name=$1 file=$2 from=$3 to=$4 test=$5
    cp "$file" "$file.orig"
    python3 - "$file" "$from" "$to" <<'PY' || { mv "$file.orig" "$file"; echo "mutant $name: pattern not found"; exit 2; }
import sys
p, a, b = sys.argv[1:]
s = open(p).read()
assert s.count(a) == 1, f"{a!r} found {s.count(a)} times"
open(p, "w").write(s.replace(a, b))
PY
    if cargo test --quiet --lib "$test" >/tmp/mutant-$name.log 2>&1; then
        echo "mutant $name SURVIVED: $test passed"; survived=1
    else
        failed=$(grep -E '^    scan::' /tmp/mutant-$name.log | tr -d ' ' | tr '\n' ' ')
        echo "mutant $name killed: failing: $failed"
    fi
    mv "$file.orig" "$file"
}
mutant ledger-no-stale src/scan/ledger.rs \
    'stale: entries.difference(&found).cloned().collect(),' 'stale: Vec::new(),' scan::
mutant ledger-no-new src/scan/ledger.rs \
    'new: found.difference(&entries).cloned().collect(),' 'new: Vec::new(),' scan::
mutant no-path-normalisation src/scan/ledger.rs \
    "let p = path.replace('\\\\', \"/\");" 'let p = path.to_string();' scan::
mutant comments-read-as-code src/scan/syntax.rs \
    '            if self.is_comment(x) {
                comments.push' '            if false && self.is_comment(x) {
                comments.push' scan::
mutant frozen-clock-ignored src/scan/detect.rs \
    'let finding = !self.frozen && self.reaches_assert(n);' 'let finding = self.reaches_assert(n);' scan::
mutant nested-worktree-walked src/scan/walk.rs \
    'if path.join(".git").exists() {' 'if false && path.join(".git").exists() {' scan::
mutant loopback-is-remote src/scan/detect.rs \
    '|| host.starts_with("127.")' '' scan::
mutant prove-heal-counts-as-flip src/scan/prove.rs \
    'if nc == 0 || nb == 0 || kc * nb <= kb * nc {' 'if nc == 0 || nb == 0 {' scan::prove
mutant prove-without-holm src/scan/prove.rs \
    'let differs = adj <= alpha;' 'let differs = p <= alpha;' scan::prove
exit $survived
