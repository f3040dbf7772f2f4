"""Perplexity of a checkpoint folder on the published corpus, scored the way the
published container scores it (shared docs/published-reference.md): the whole corpus
tokenized once without special tokens, non-overlapping windows of seq_len tokens,
every window scored (no 16-window cap, unlike the product's probe), exp of the
token-weighted mean NLL. One JSON line per window length.

    python benchmarks/real_weights_perplexity.py FOLDER [--dtype float32] [--seq-len 1024 512]

FOLDER: e.g. one made by `python -m ecocompute.cli.gguf_command`. On a CPU, float32
(float16 matmuls are slow there); the device is the CPU unless --device says otherwise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import time
from importlib import resources

CORPUS = "data/corpus/eval_text.txt"


def score(model, ids: list[int], seq_len: int, device: str) -> dict:
    import torch

    nll_sum, scored, windows = 0.0, 0, 0
    t0 = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(ids), seq_len):
            chunk = ids[start : start + seq_len]
            if len(chunk) < 2:
                break
            x = torch.tensor([chunk], device=device)
            nll_sum += float(model(input_ids=x, labels=x).loss) * (len(chunk) - 1)
            scored += len(chunk) - 1
            windows += 1
    mean_nll = nll_sum / scored
    return {
        "seq_len": seq_len,
        "windows": windows,
        "tokens_evaluated": scored,
        "mean_nll": round(mean_nll, 6),
        "perplexity": round(math.exp(mean_nll), 4),
        "duration_s": round(time.perf_counter() - t0, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    parser.add_argument("--seq-len", type=int, nargs="+", default=[1024, 512])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    data = resources.files("ecocompute").joinpath(CORPUS).read_bytes()
    tokenizer = AutoTokenizer.from_pretrained(args.folder)
    ids = tokenizer(data.decode("utf-8"), add_special_tokens=False)["input_ids"]
    model = AutoModelForCausalLM.from_pretrained(
        args.folder, dtype=getattr(torch, args.dtype), device_map={"": args.device}
    ).eval()
    limit = model.config.max_position_embeddings
    for seq_len in args.seq_len:
        record = score(model, ids, min(seq_len, limit), args.device)
        record.update(
            folder=args.folder,
            dtype=args.dtype,
            corpus_sha256=hashlib.sha256(data).hexdigest(),
            corpus_tokens=len(ids),
            torch=torch.__version__,
        )
        print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
