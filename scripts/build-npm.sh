#!/usr/bin/env bash
# Assembles and packs flakelab's npm packages (the esbuild/biome pattern):
# `flakelab`, a small launcher (packaging/npm/flakelab) whose optional
# dependencies are one package per platform, and `flakelab-<platform>`
# (packaging/npm/platform), which carries the binary and declares its os
# and cpu so that npm installs only the one that fits.
#
#   scripts/build-npm.sh --binary PATH [--platform linux-x64] [--out DIR]
#
# PATH is a flakelab binary built for PLATFORM (a release build for
# publishing; the test suite packs the binary under test). Both packages
# get the crate's version. Prints the two tarballs' paths (`npm pack`),
# the launcher's first. Publishing: `npm publish` each platform's tarball,
# then the launcher's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/dist/npm"
binary=""
platform="linux-x64"
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary="$2"; shift 2 ;;
    --platform) platform="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "usage: $0 --binary PATH [--platform OS-CPU] [--out DIR]" >&2; exit 2 ;;
  esac
done
[ -n "$binary" ] && [ -x "$binary" ] || { echo "--binary: not an executable: $binary" >&2; exit 2; }
case "$platform" in
  linux-x64|linux-arm64) ;;
  *) echo "--platform: flakelab builds for linux-x64 and linux-arm64, not $platform" >&2; exit 2 ;;
esac
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -rf "$out/flakelab" "$out/flakelab-$platform"
cp -R "$root/packaging/npm/flakelab" "$out/flakelab"
cp -R "$root/packaging/npm/platform" "$out/flakelab-$platform"
mkdir -p "$out/flakelab-$platform/bin"
cp "$binary" "$out/flakelab-$platform/bin/flakelab"
chmod 755 "$out/flakelab-$platform/bin/flakelab" "$out/flakelab/bin/flakelab.js"

# The version, the platform's os and cpu, and the launcher's optional
# dependency on every platform package of this version.
node - "$out" "$platform" "$version" <<'JS'
const fs = require("fs");
const [out, platform, version] = process.argv.slice(2);
const [os, cpu] = platform.split("-");
const edit = (file, f) => {
  const json = JSON.parse(fs.readFileSync(file, "utf8"));
  f(json);
  fs.writeFileSync(file, JSON.stringify(json, null, 2) + "\n");
};
edit(`${out}/flakelab-${platform}/package.json`, (p) => {
  p.name = `flakelab-${platform}`;
  p.version = version;
  p.description = p.description.replace("PLATFORM", platform);
  p.os = [os];
  p.cpu = [cpu];
});
edit(`${out}/flakelab/package.json`, (p) => {
  p.version = version;
  p.optionalDependencies = {
    "flakelab-linux-x64": version,
    "flakelab-linux-arm64": version,
  };
});
JS
for dir in flakelab "flakelab-$platform"; do
  (cd "$out" && npm pack --silent --pack-destination "$out" "./$dir" >/dev/null)
done
echo "$out/flakelab-$version.tgz"
echo "$out/flakelab-$platform-$version.tgz"
