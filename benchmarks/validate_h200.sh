#!/usr/bin/env bash
# The issue-3 validation on a 2-GPU H200 machine, default protocol:
#   GPU 0: synthetic:tinyllama-1.1b NF4, then INT8
#   GPU 1: synthetic:llama-2-7b NF4, then the sampler-overhead benchmark
# The two GPUs run at the same time (device time is scarce); each process sees one GPU.
set -uo pipefail
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L; python3 benchmarks/gpu_probe.py
run() {  # gpu, name, args...
  local gpu=$1 name=$2; shift 2
  echo "\$ CUDA_VISIBLE_DEVICES=$gpu ecocompute energy_estimate $* --output_dir $name" > "$OUT/$name.log"
  CUDA_VISIBLE_DEVICES=$gpu python3 -m ecocompute energy_estimate "$@" --output_dir "$OUT/$name" \
    >> "$OUT/$name.log" 2>&1
  echo "rc=$?" >> "$OUT/$name.log"
}
(
  run 0 tinyllama-nf4 --model synthetic:tinyllama-1.1b --precision NF4
  run 0 tinyllama-int8 --model synthetic:tinyllama-1.1b --precision INT8
) &
(
  run 1 llama2-7b-nf4 --model synthetic:llama-2-7b --precision NF4
  CUDA_VISIBLE_DEVICES=1 python3 benchmarks/sampler_overhead.py --pairs 10 > "$OUT/sampler-overhead.log" 2>&1
) &
wait
for f in "$OUT"/*.log; do echo "=== $f"; grep -v "Loading weights\|Writing model" "$f" | tail -25; done
python3 -m ecocompute validate "$OUT"/*/energy.json
