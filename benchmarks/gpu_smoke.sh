#!/usr/bin/env bash
# A short run of every code path on an H200 machine, before the long runs.
# Writes reports and a log under $OUT.
set -uo pipefail
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L
python3 benchmarks/gpu_probe.py
for prec in FP16 NF4 INT8; do
  python3 -m ecocompute energy_estimate --model synthetic:tinyllama-1.1b --precision $prec \
    --tokens 32 --iterations 3 --warmup 1 --idle_seconds 2 --output_dir "$OUT/smoke-$prec"
  echo "rc=$?"
done
python3 -m ecocompute validate "$OUT"/smoke-*/energy.json
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  echo "== CUDA_VISIBLE_DEVICES=1 =="
  CUDA_VISIBLE_DEVICES=1 python3 benchmarks/gpu_probe.py
  python3 benchmarks/energy_counters.py before
  CUDA_VISIBLE_DEVICES=1 python3 -m ecocompute energy_estimate --model synthetic:tinyllama-1.1b \
    --precision FP16 --tokens 64 --iterations 3 --warmup 1 --idle_seconds 2 --output_dir "$OUT/smoke-gpu1"
  python3 benchmarks/energy_counters.py after
fi
