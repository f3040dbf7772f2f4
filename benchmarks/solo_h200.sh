#!/usr/bin/env bash
# Default-protocol runs one after another on a 1-GPU H200 machine, nothing
# else on the host: the counter-vs-sampler check without a neighbour's load.
# Usage: bash benchmarks/solo_h200.sh NAME=MODEL=PRECISION ...   (reports and logs in $OUT)
set -uo pipefail
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L
for spec in "$@"; do
  IFS== read -r name model precision <<< "$spec"
  echo "\$ python3 -m ecocompute energy_estimate --model $model --precision $precision --output_dir $name" > "$OUT/$name.log"
  python3 -m ecocompute energy_estimate --model "$model" --precision "$precision" \
    --output_dir "$OUT/$name" 2>&1 | grep -v "Loading weights\|Writing model" >> "$OUT/$name.log"
  echo "rc=${PIPESTATUS[0]}" >> "$OUT/$name.log"
  tail -12 "$OUT/$name.log"
done
python3 -m ecocompute validate "$OUT"/*/energy.json
