#!/usr/bin/env bash
# The multi-GPU paths on a 2-GPU H200 machine. Logs and reports in $OUT.
# Usage: bash benchmarks/multi_gpu_h200.sh [spread] [nocap] [refused]
#   spread:  tinyllama-1.1b NF4 with --max_gpu_memory_gib 1.5, so FP16 (2.1 GB) spans
#            GPUs 0 and 1: the report should list both, with per-GPU energies summed;
#            NVML counters of both GPUs are read before and after for comparison.
#   nocap:   the same on both GPUs without a cap: the model stays on GPU 0.
#   refused: one visible GPU and a 0.5 GiB cap: FP16 cannot fit, the run must be
#            refused (exit 1), not offloaded to the CPU or disk.
set -uo pipefail
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi -L
SHORT=(--model synthetic:tinyllama-1.1b --precision NF4 --tokens 256 --iterations 4 --warmup 1 --idle_seconds 2)
run() {  # name, extra args...
  local name=$1; shift
  echo "\$ ecocompute energy_estimate ${SHORT[*]} $* --output_dir $name" > "$OUT/$name.log"
  python3 benchmarks/energy_counters.py before >> "$OUT/$name.log"
  python3 -m ecocompute energy_estimate "${SHORT[@]}" "$@" --output_dir "$OUT/$name" 2>&1 \
    | grep -v "Loading weights\|Writing model" >> "$OUT/$name.log"
  echo "rc=${PIPESTATUS[0]}" >> "$OUT/$name.log"
  python3 benchmarks/energy_counters.py after >> "$OUT/$name.log"
  tail -22 "$OUT/$name.log"
}
# Which cases: all by default, or the ones named (spread nocap refused).
CASES=${*:-spread nocap refused}
for case in $CASES; do
  case $case in
    spread) run spread --max_gpu_memory_gib 1.5 ;;
    nocap) run nocap ;;
    refused) CUDA_VISIBLE_DEVICES=0 run refused --max_gpu_memory_gib 0.5 ;;
  esac
done
python3 -m ecocompute validate "$OUT"/*/energy.json
