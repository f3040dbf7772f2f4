#!/usr/bin/env bash
# Download the wheels an image installs into the Docker build context, on the host.
#
# Why: the Dockerfiles install with `pip --no-index`, so a build needs no registry and no
# network from inside the build (air-gapped clusters, our CI, hosts whose proxy CA the
# containers do not trust). The host, which can reach PyPI (or a mirror of it), does the
# downloading; every file is checked against the lock's sha256 hashes.
#
# Usage: scripts/build-wheelhouse.sh cpu|gpu [WHEELHOUSE_ROOT]   (default .wheelhouse)
#   cpu: requirements-cpu.lock.txt -> WHEELHOUSE_ROOT/cpu        (~2 MB)
#   gpu: requirements.lock.txt     -> WHEELHOUSE_ROOT/gpu        (several GB: torch + CUDA)
#   both also build this checkout's ecocompute wheel into WHEELHOUSE_ROOT/ecocompute.
# Env:   PYTHON (default python3): the host Python that runs pip; any version works,
#        the wheels are chosen for the image's Python (cp311, manylinux x86_64).
#        PIP_INDEX_URL / PIP_EXTRA_INDEX_URL / PIP_FIND_LINKS: a local mirror, as usual.
set -euo pipefail

usage() { echo "usage: $0 cpu|gpu [WHEELHOUSE_ROOT]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
flavour="$1"
case "$flavour" in
  cpu) lock=requirements-cpu.lock.txt ;;
  gpu) lock=requirements.lock.txt ;;
  *) usage ;;
esac

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${2:-$repo/.wheelhouse}"
python="${PYTHON:-python3}"
cd "$repo"

# The images run Debian bookworm's (or python:3.11-slim's) CPython 3.11 on x86_64; the
# locks are compiled for exactly that (see their first lines).
# pip does not widen --platform to older manylinux versions (the image's glibc 2.36 runs
# them all), so name each one; manylinux2014 brings 2010 and 1 with it.
target=(--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311)
for minor in $(seq 28 -1 5); do target+=(--platform "manylinux_2_${minor}_x86_64"); done
target+=(--platform manylinux2014_x86_64)

mkdir -p "$root/$flavour"
echo "== wheelhouse ($flavour): $lock -> $root/$flavour"
# --no-deps: the lock is the full transitive set, and --require-hashes refuses any file
# whose sha256 is not in it. pip skips files already present with a matching hash.
# (The grep drops pip's notes about find-links/extra-index folders of this host's pip
# config that lack a package; they are noise, not errors.)
"$python" -m pip download --quiet --no-deps --require-hashes "${target[@]}" \
  -r "$lock" -d "$root/$flavour" 2> >(grep -v "^WARNING: Location '" >&2)

# Files left over from an older lock would only bloat the build context.
"$python" - "$lock" "$root/$flavour" <<'PY'
import pathlib, re, sys
lock, folder = sys.argv[1], pathlib.Path(sys.argv[2])
norm = lambda s: re.sub(r"[-_.]+", "-", s).lower()
pins = {}
for line in open(lock):
    m = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)", line)
    if m:
        pins[norm(m[1])] = m[2]
for wheel in folder.glob("*.whl"):
    name, version = wheel.name.split("-")[:2]
    if pins.get(norm(name)) != version:
        print(f"removing stale {wheel.name}")
        wheel.unlink()
PY

echo "== ecocompute wheel from this checkout -> $root/ecocompute"
rm -rf "$root/ecocompute" && mkdir -p "$root/ecocompute"
"$python" -m pip wheel --quiet --no-deps -w "$root/ecocompute" "$repo"
ls -1 "$root/ecocompute"
du -sh "$root/$flavour"
