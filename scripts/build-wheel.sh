#!/usr/bin/env bash
# Builds flakelab's PyPI wheel for this platform into DIR (default dist/).
#
#   scripts/build-wheel.sh [--profile PROFILE] [--out DIR]
#       maturin's binary bindings (packaging/pypi/pyproject.toml): a build
#       of the crate (release by default; `--profile dev` relinks the debug
#       build a warm target/ has), stripped, in a wheel tagged for the
#       lowest manylinux this binary allows (py3-none-manylinux_2_34_x86_64
#       on Debian 12). What a release publishes, one run per platform
#       (`pip install maturin` first).
#   scripts/build-wheel.sh --binary PATH [--out DIR]
#       the same wheel layout around a binary already built (the test
#       binary, so that the test suite builds nothing twice): PATH as
#       flakelab-VERSION.data/scripts/flakelab, tagged py3-none-<this
#       platform>, with the METADATA, WHEEL and RECORD maturin writes.
#
# Prints the wheel's path.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/dist"
binary=""
profile="release"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --profile) profile="$2"; shift 2 ;;
    *) echo "usage: $0 [--profile PROFILE | --binary PATH] [--out DIR]" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"

if [ -z "$binary" ]; then
  command -v maturin >/dev/null || { echo "maturin not found: pip install maturin" >&2; exit 2; }
  cd "$root/packaging/pypi"
  maturin build --profile "$profile" --out "$out" >&2
  ls -t "$out"/flakelab-*.whl | head -n 1
  exit 0
fi

[ -x "$binary" ] || { echo "not an executable: $binary" >&2; exit 2; }
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n 1)"
python3 - "$binary" "$version" "$out" <<'EOF'
import base64, hashlib, sys, sysconfig, zipfile

binary, version, out = sys.argv[1:4]
platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
tag = f"py3-none-{platform}"
dist = f"flakelab-{version}"
wheel = f"{out}/{dist}-{tag}.whl"
metadata = f"""Metadata-Version: 2.4
Name: flakelab
Version: {version}
Summary: A perturbation lab for test suites: k of N under declared perturbations, with proof and repro lines
License: MIT OR Apache-2.0
Requires-Python: >=3.8
"""
wheel_file = f"""Wheel-Version: 1.0
Generator: flakelab scripts/build-wheel.sh
Root-Is-Purelib: false
Tag: {tag}
"""
records = []

def add(z, name, data, mode=0o644):
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    z.writestr(info, data, compresslevel=1)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    records.append(f"{name},sha256={digest},{len(data)}")

with zipfile.ZipFile(wheel, "w") as z:
    with open(binary, "rb") as f:
        add(z, f"{dist}.data/scripts/flakelab", f.read(), 0o755)
    add(z, f"{dist}.dist-info/METADATA", metadata.encode())
    add(z, f"{dist}.dist-info/WHEEL", wheel_file.encode())
    record = f"{dist}.dist-info/RECORD"
    records.append(f"{record},,")
    add_data = ("\n".join(records) + "\n").encode()
    info = zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = (0o100644) << 16
    z.writestr(info, add_data)
print(wheel)
EOF
