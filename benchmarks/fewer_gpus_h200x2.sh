#!/usr/bin/env bash
# Issue 22 on 2 x H200 (device kind nvidia-h200-x2): fewer GPUs. Synthetic llama-2-70b
# built in GPU memory (~138 GB at FP16: more than the machine's 128 GB of disk, so never
# saved), one session of FP16 against NF4 (bitsandbytes) and INT4 (torchao), every model
# resident, order rotated per round, each delta paired with its round's FP16 trial, in
# both views (the GPUs each model used; every GPU the session held).
# --max_gpu_memory_gib 72 spreads FP16 over both GPUs (by its weights alone, 128.5 GiB,
# it would fit one H200's 140 GiB, with ~11 GiB left: no room for a quantized copy
# beside it, nor for a serving KV cache); NF4 and INT4 (~37 GiB each) go whole to one
# GPU each. Eager decode: the graphs regime refuses weights that span GPUs (one graph is
# captured on one GPU, llm/graphs.py), and a session's formats share one regime.
# One call per case, each under the 10-minute limit, carrying .whl (bitsandbytes 0.50.2,
# torchao 0.18.0, jsonschema and its dependencies, as for benchmarks/map_h200.sh):
#   bash benchmarks/fewer_gpus_h200x2.sh b1       # batch 1, ~7 min
#   bash benchmarks/fewer_gpus_h200x2.sh b16      # batch 16, ~7 min
#   (TOKENS=128 halves each decode, should the 70B decode much slower than the ~12-16
#   tokens/s estimated from eager 13B on an H200: the session is cut at 570 s, unwritten)
#   bash benchmarks/fewer_gpus_h200x2.sh probe    # optional, ~1 min: seeding on both
#        GPUs, a model whole on GPU 1 decoded eager and graphs (fewer_gpus_probe.py)
#   bash benchmarks/fewer_gpus_h200x2.sh graphs   # optional, ~2 min: the graphs regime
#        asked for, to record its refusal (exit 1, nothing written)
# Rehearsal on the CPU (two fake GPUs, tests/cli_with_fake_gpus.py; synthetic:tiny-in-
# memory; NF4 and LLM.int8() quantized by bitsandbytes on the CPU, INT4 has no CPU
# kernel): REHEARSAL=1 OUT=/tmp/r PY=.venv/bin/python bash benchmarks/fewer_gpus_h200x2.sh
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1
CASES=${*:-b1 b16}
if [ -n "${REHEARSAL:-}" ]; then
  PY=${PY:-python3}; EC=("$PY" -m tests.cli_with_fake_gpus); MODEL=synthetic:tiny-in-memory
  FORMATS=NF4,INT8; CAP=0.00041; BIG=2; LIMIT=200; PROBE=(--cpu)
  EXTRA=(--tokens 4 --idle_seconds 0.5 --max_minutes 0.05)
else
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { echo "no wheels here: carry .whl"; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD
  PY=python3; EC=(python3 -m ecocompute); MODEL=synthetic:llama-2-70b
  FORMATS=NF4,INT4; CAP=72; BIG=16; LIMIT=570; PROBE=()
  EXTRA=(--tokens "${TOKENS:-256}" --max_minutes 3.5)
  nvidia-smi -L; nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv
  df -h / /tmp | tail -2
  python3 -c "import jsonschema, torch, torchao, bitsandbytes, accelerate, transformers as t
print('torch', torch.__version__, 'torchao', torchao.__version__, 'bnb', bitsandbytes.__version__,
      'accelerate', accelerate.__version__, 'transformers', t.__version__)" 2>&1 | tail -1
fi
WORK=/tmp/ecocompute-fewer-gpus
mkdir -p "$WORK"

session() {  # name, batch size, decode regime
  local name=$1 batch=$2 decode=$3
  local args=(energy_estimate --model "$MODEL" --precision "$FORMATS" --max_gpu_memory_gib "$CAP"
              --batch_size "$batch" --decode "$decode" --iterations 3 --ci_target_pts 2
              --max_rounds 5 --warmup 1 "${EXTRA[@]}" --output_dir "$WORK/$name")
  rm -rf "${WORK:?}/$name"
  echo "\$ ecocompute ${args[*]}" > "$OUT/$name.log"
  date -u +"start %FT%TZ" >> "$OUT/$name.log"
  { time timeout "$LIMIT" "${EC[@]}" "${args[@]}"; } >> "$OUT/$name.log" 2>&1
  echo "rc=$?" >> "$OUT/$name.log"
  date -u +"end %FT%TZ" >> "$OUT/$name.log"
  [ -n "${REHEARSAL:-}" ] || nvidia-smi --query-gpu=index,memory.used,power.draw --format=csv \
    >> "$OUT/$name.log"
  grep -v "Loading weights\|Writing model\|Failed to load\|register_constant\|W1201" \
    "$OUT/$name.log" | tail -45
  if [ -d "$WORK/$name" ]; then
    "${EC[@]}" validate "$WORK/$name" 2>&1 | tail -3
    tar -czf "$OUT/$name.tar.gz" -C "$WORK" "$name"
  fi
}

for case in $CASES; do
  case $case in
    b1) session b1 1 eager ;;
    b16) session b16 "$BIG" eager ;;
    graphs) session graphs 1 graphs ;;
    probe) { time "$PY" benchmarks/fewer_gpus_probe.py "${PROBE[@]}"; } > "$OUT/probe.log" 2>&1
           grep -v "Failed to load\|register_constant\|W1201" "$OUT/probe.log" ;;
    *) echo "unknown case $case (b1, b16, probe, graphs)"; exit 2 ;;
  esac
done
ls -la "$OUT"
