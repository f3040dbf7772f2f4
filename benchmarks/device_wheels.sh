#!/usr/bin/env bash
# The wheels a GPU run of this project carries (`carry: [".whl"]`): what the H200
# machines' image lacks (Python 3.12, torch 2.11, transformers 5.17, accelerate,
# nvidia-ml-py and PyYAML are there). Into ./.whl of this checkout, git-ignored through
# .git/info/exclude; about 48 MiB, under a call's 64 MiB with the working tree (~9 MiB).
#   bash benchmarks/device_wheels.sh
# Each GPU script installs them first (pip --no-index --target /tmp/site .whl/*.whl).
# pydantic (and its four dependencies) since the report became one typed model (0.6.0):
# a run without them fails at import, after the machine's start has been paid.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
grep -qxF '/.whl/' "$root/.git/info/exclude" 2>/dev/null || echo '/.whl/' >> "$root/.git/info/exclude"
# A fresh folder: wheels left from an older pin would give pip two versions of one package.
rm -rf "$root/.whl"
mkdir -p "$root/.whl"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d "$root/.whl" \
  bitsandbytes==0.50.2 torchao==0.18.0 \
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==0.30.0 \
  fastjsonschema==2.21.2 attrs==26.1.0 \
  pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
  typing-extensions==4.16.0
# The bitsandbytes wheel carries a library per CUDA, ROCm and XPU release (41 MiB); the
# machines' torch is CUDA 13 (cu130), which loads libbitsandbytes_cuda130.so. Keep the
# CUDA 13 builds and the CPU one, and their lines in RECORD: the whole wheel and the
# working tree no longer fit one call (2026-12-05).
python3 - "$root"/.whl/bitsandbytes-*.whl <<'PY'
import re, sys, zipfile
from pathlib import Path
wheel = Path(sys.argv[1]); cut = wheel.with_suffix(".cut")
drop = re.compile(r"libbitsandbytes_(cuda1[0-2][0-9]|rocm[0-9]+|xpu[0-9]+)\.so$")
with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(cut, "w", zipfile.ZIP_DEFLATED) as out:
    for info in src.infolist():
        if drop.search(info.filename):
            continue
        data = src.read(info)
        if info.filename.endswith(".dist-info/RECORD"):
            kept = [r for r in data.splitlines() if not drop.search(r.split(b",")[0].decode())]
            data = b"".join(r + b"\n" for r in kept)
        out.writestr(info, data)
cut.replace(wheel)
PY
ls -la "$root/.whl"
du -sh "$root/.whl"
