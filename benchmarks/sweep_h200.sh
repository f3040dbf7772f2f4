#!/usr/bin/env bash
# Issue 5: map NF4's crossover on an H200 with `ecocompute sweep` over synthetic sizes
# (an H200 machine of 1 or 2 GPUs; finishes in about 5-6 minutes on 2 GPUs).
#
# With 2 GPUs the models are split across them: two sweeps run side by side into one
# folder, each process seeing one GPU, then `sweep --fit_only` fits all the reports
# together. With 1 GPU the three Qwen sizes run in one sweep (about 7 minutes).
# The runs overlap in time on one host, as in the issue-3 validation; each GPU's energy
# is its own NVML counter, but host CPU load is shared.
#
# Everything lands under $OUT, at most 7 files and no folders (what comes back from
# the machine is 8 files, 2 folders deep): sweep.json, sweep.png, sweep-reports.tar.gz (every run's
# energy.json and the merged sweep.json), aggregate.txt, and one log per process.
#
# Override: MODELS_GPU0 / MODELS_GPU1 (comma lists), ITERATIONS, TOKENS, WHEELS, and
# EXTRA (more sweep flags, e.g. EXTRA="--warmup 1 --idle_seconds 2" for a smoke run).
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
WHEELS=${WHEELS:-.whl}
if compgen -G "$WHEELS/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$WHEELS"/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD

ITERATIONS=${ITERATIONS:-6}
TOKENS=${TOKENS:-256}
WORK=/tmp/ecocompute-sweep   # the reports stay out of $OUT until they are tarred
rm -rf "$WORK"; mkdir -p "$WORK"
# shellcheck disable=SC2206  # EXTRA is split into flags on purpose
COMMON=(--precisions NF4 --iterations "$ITERATIONS" --tokens "$TOKENS" --no_quality_probe
        --output_dir "$WORK" ${EXTRA:-})

nvidia-smi -L
GPUS=$(nvidia-smi -L | wc -l)
if [ "$GPUS" -ge 2 ]; then
  MODELS_GPU0=${MODELS_GPU0:-synthetic:qwen2.5-0.5b,synthetic:qwen2.5-3b}
  MODELS_GPU1=${MODELS_GPU1:-synthetic:qwen2.5-1.5b,synthetic:llama-2-7b}
  CUDA_VISIBLE_DEVICES=0 python3 -m ecocompute sweep --models "$MODELS_GPU0" "${COMMON[@]}" \
    > "$OUT/gpu0.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=1 python3 -m ecocompute sweep --models "$MODELS_GPU1" "${COMMON[@]}" \
    > "$OUT/gpu1.log" 2>&1 &
  wait
else
  MODELS_GPU0=${MODELS_GPU0:-synthetic:qwen2.5-0.5b,synthetic:qwen2.5-1.5b,synthetic:qwen2.5-3b}
  CUDA_VISIBLE_DEVICES=0 python3 -m ecocompute sweep --models "$MODELS_GPU0" "${COMMON[@]}" \
    > "$OUT/gpu0.log" 2>&1
fi
for f in "$OUT"/gpu*.log; do
  echo "=== $f"; grep -v "Loading weights\|Writing model" "$f" | tail -15
done

# One fit over every report the sweeps wrote (also the single-GPU case: same result).
python3 -m ecocompute sweep --fit_only --output_dir "$WORK" 2>&1 | tee "$OUT/fit.log"
python3 -m ecocompute validate "$WORK"/*/energy.json >> "$OUT/fit.log" 2>&1
python3 -m ecocompute aggregate "$WORK" > "$OUT/aggregate.txt" 2>&1
cp "$WORK/sweep.json" "$OUT/sweep.json"
[ -f "$WORK/sweep.png" ] && cp "$WORK/sweep.png" "$OUT/sweep.png"
tar -czf "$OUT/sweep-reports.tar.gz" -C "$WORK" .
ls -la "$OUT"
