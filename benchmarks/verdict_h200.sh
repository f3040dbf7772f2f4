#!/usr/bin/env bash
# Issue 12 on 2 x H200 (a 2 x H200 machine), one call of under 10 minutes:
#   GPU 0: the graphs-regime sweep, default protocol otherwise (10 rounds, 256 tokens,
#          2 warm-ups, 5 s idle), NF4, from SmolLM2-135M's shape up to Llama-2-7B's; its
#          tinyllama-1.1b and llama-2-7b reports are the graphs acceptance runs.
#   GPU 1: eager llama-2-7b NF4 with --ci_target_pts 3 (stop on precision), capped so
#          the call ends in time (--max_minutes, MAX_MIN below).
# The two run side by side on one host: each GPU's energy is its own NVML counter; host
# CPU load is shared (the graphs process keeps one core busy launching replays).
# Everything lands under $OUT: logs, graphs sweep.json/png, fit.log, aggregate.txt and a
# tarball of every report.
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
GRAPHS_MODELS=${GRAPHS_MODELS:-synthetic:smollm2-135m,synthetic:smollm2-360m,synthetic:qwen2.5-0.5b,synthetic:tinyllama-1.1b,synthetic:qwen2.5-1.5b,synthetic:qwen2.5-3b,synthetic:llama-2-7b}
MAX_MIN=${MAX_MIN:-6}
LIMIT_S=${LIMIT_S:-540}
WORK=/tmp/ecocompute-verdict
rm -rf "$WORK"; mkdir -p "$WORK"
nvidia-smi -L
echo "\$ CUDA_VISIBLE_DEVICES=0 python3 -m ecocompute sweep --models $GRAPHS_MODELS --precisions NF4 --decode graphs --output_dir graphs" > "$OUT/graphs.log"
CUDA_VISIBLE_DEVICES=0 timeout "$LIMIT_S" python3 -m ecocompute sweep --models "$GRAPHS_MODELS" \
  --precisions NF4 --decode graphs --output_dir "$WORK/graphs" >> "$OUT/graphs.log" 2>&1 &
echo "\$ CUDA_VISIBLE_DEVICES=1 python3 -m ecocompute energy_estimate --model synthetic:llama-2-7b --precision NF4 --ci_target_pts 3 --max_minutes $MAX_MIN --output_dir eager-7b-ci3" > "$OUT/eager-7b-ci3.log"
CUDA_VISIBLE_DEVICES=1 timeout "$LIMIT_S" python3 -m ecocompute energy_estimate \
  --model synthetic:llama-2-7b --precision NF4 --ci_target_pts 3 --max_minutes "$MAX_MIN" \
  --output_dir "$WORK/eager-7b-ci3" >> "$OUT/eager-7b-ci3.log" 2>&1 &
wait
grep -v "Loading weights\|Writing model" "$OUT/graphs.log" | tail -25
grep -v "Loading weights\|Writing model" "$OUT/eager-7b-ci3.log" | tail -25
python3 -m ecocompute sweep --fit_only --output_dir "$WORK/graphs" > "$OUT/fit.log" 2>&1
python3 -m ecocompute validate "$WORK" >> "$OUT/fit.log" 2>&1
python3 -m ecocompute aggregate "$WORK" > "$OUT/aggregate.txt" 2>&1
cat "$OUT/fit.log"
cp "$WORK/graphs/sweep.png" "$OUT/" 2>/dev/null
tar -czf "$OUT/reports.tar.gz" -C "$WORK" .
ls -la "$OUT"
