"""How many of LLM.int8()'s matmul columns take the FP16 outlier path, real weights
against random ones of the same shape (issue 14). GPU only (bitsandbytes' INT8 layers).

LLM.int8() splits each matmul: the input's feature columns holding any value of
magnitude >= threshold run in FP16, the rest in INT8. A forward pre-hook on every
bitsandbytes Linear8bitLt counts those columns per call: for the quality corpus read in
windows (prefill-like, many tokens per call) and for a greedy decode (one token per
call, the case the energy protocol measures).

    python benchmarks/int8_outliers.py MODEL [MODEL ...] --threshold 6.0 --out FILE.json

MODEL: a checkpoint folder or synthetic:<preset>. Prints one line per model.
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any


class ColumnCounter:
    """Fractions of input columns at or above the threshold, per Linear8bitLt call."""

    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.fractions: list[float] = []

    def hook(self, module: Any, args: tuple[Any, ...]) -> None:
        x = args[0].reshape(-1, args[0].shape[-1])
        outliers = (x.abs() >= self.threshold).any(dim=0)
        self.fractions.append(float(outliers.float().mean()))

    def summary(self) -> dict[str, Any]:
        if not self.fractions:
            return {"calls": 0}
        nonzero = [f for f in self.fractions if f > 0]
        return {
            "calls": len(self.fractions),
            "mean_fraction_pct": round(100 * statistics.fmean(self.fractions), 4),
            "max_fraction_pct": round(100 * max(self.fractions), 4),
            "calls_with_any_outlier_pct": round(100 * len(nonzero) / len(self.fractions), 2),
        }


def measure(model_name: str, threshold: float, windows: int, seq_len: int, decode: int) -> dict:
    import torch

    from ecocompute.core.precision import Precision
    from ecocompute.formats.table import spec_for
    from ecocompute.llm.cuda import CudaAccelerator
    from ecocompute.llm.loading import load, load_tokenizer, resolve_checkpoint
    from ecocompute.llm.quality_probe import corpus_text

    accelerator = CudaAccelerator()
    checkpoint = resolve_checkpoint(model_name, accelerator)
    loaded = load(checkpoint, spec_for(Precision.INT8, llm_int8_threshold=threshold), accelerator)
    model = loaded.model
    if checkpoint.weights == "synthetic":
        vocab = model.config.vocab_size
        ids = torch.randint(
            3, vocab, (1, windows * seq_len), generator=torch.Generator().manual_seed(0)
        )
        ids = ids[0].tolist()
        text_source = "random token ids (synthetic weights have no tokenizer)"
    else:
        ids = load_tokenizer(checkpoint)(corpus_text(), add_special_tokens=False)["input_ids"]
        text_source = "the published quality corpus"
    layers = [m for m in model.modules() if type(m).__name__ == "Linear8bitLt"]
    prefill, decoding = ColumnCounter(threshold), ColumnCounter(threshold)
    device = accelerator.input_device()
    with torch.inference_mode():
        handles = [m.register_forward_pre_hook(prefill.hook) for m in layers]
        for k in range(windows):
            chunk = ids[k * seq_len : (k + 1) * seq_len]
            model(input_ids=torch.tensor([chunk], device=device))
        for h in handles:
            h.remove()
        prompt = torch.tensor([ids[:16]], device=device)
        out = model(input_ids=prompt, use_cache=True)
        past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        handles = [m.register_forward_pre_hook(decoding.hook) for m in layers]
        for _ in range(decode):
            out = model(input_ids=token, past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for h in handles:
            h.remove()
    return {
        "model": model_name,
        "weights": checkpoint.weights,
        "threshold": threshold,
        "int8_layers": len(layers),
        "text": text_source,
        "windows": {"count": windows, "tokens": seq_len, **prefill.summary()},
        "decode": {"tokens": decode, **decoding.summary()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--threshold", type=float, default=6.0)
    parser.add_argument("--windows", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    results = []
    for name in args.models:
        r = measure(name, args.threshold, args.windows, args.seq_len, args.decode)
        results.append(r)
        w, d = r["windows"], r["decode"]
        print(
            f"{name} ({r['weights']}): {r['int8_layers']} INT8 layers; outlier columns "
            f"(|x| >= {args.threshold:g}) mean {w.get('mean_fraction_pct')}% of columns over "
            f"{w.get('calls')} window calls, {d.get('mean_fraction_pct')}% over "
            f"{d.get('calls')} decode calls (any outlier in {d.get('calls_with_any_outlier_pct')}%)"
        )
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(results, handle, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
