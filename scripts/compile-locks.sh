#!/usr/bin/env bash
# Regenerate every lock from its inputs. Run after changing requirements-gpu.in,
# requirements-mlcube.in or pyproject.toml's dependencies; commit the .in and the locks
# together. Each lock's first lines repeat the exact uv command that wrote it.
#
#   requirements.lock.txt         GPU image: pyproject [gpu] + requirements-gpu.in pins,
#                                 CPython 3.11 on manylinux_2_28 x86_64, sha256 hashes
#   requirements-cpu.lock.txt     CPU image: pyproject's core dependencies, held to the
#                                 same versions as the GPU lock (-c), same target
#   requirements-fleet.lock.txt   the [fleet] extra (Dask distributed) with the core
#                                 dependencies, held to the GPU lock's versions (-c),
#                                 same target: `pip install --require-hashes -r` it on
#                                 top of either image, or alone for a CPU client
#   requirements-mlcube.lock.txt  the mlcube CLI on the host, any platform (--universal)
#
# Needs uv (pip install uv==0.13.9); the resolution reads PyPI (or UV_INDEX_URL).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
uv --version
image_target=(--python-version 3.11 --python-platform x86_64-manylinux_2_28 --generate-hashes)
uv pip compile pyproject.toml --extra gpu requirements-gpu.in "${image_target[@]}" \
  -o requirements.lock.txt
uv pip compile pyproject.toml -c requirements.lock.txt "${image_target[@]}" \
  -o requirements-cpu.lock.txt
uv pip compile pyproject.toml --extra fleet -c requirements.lock.txt "${image_target[@]}" \
  -o requirements-fleet.lock.txt
uv pip compile requirements-mlcube.in --universal --python-version 3.10 --generate-hashes \
  -o requirements-mlcube.lock.txt
