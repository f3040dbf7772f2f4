"""The quality probe: perplexity of FP16 and the quantized model on a fixed text.

Scored as the published probe does: the whole corpus tokenized once without special
tokens, non-overlapping windows of quality_seq_len tokens (1024 by default, capped at the
model's context), teacher forcing, exp of the token-weighted mean NLL over every window.
Only after every power sampler has stopped. Only the delta against the same run's FP16
baseline is comparable, and only between runs whose corpus sha256 agrees.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.printable import recordable

CORPUS = "data/corpus/eval_text.txt"
CORPUS_SOURCE = (
    "the published EcoCompute quality-probe corpus, byte for byte (sha256 22ac091a...5504): "
    "excerpts of Carroll's Alice's Adventures in Wonderland and Darwin's On the Origin "
    "of Species (Project Gutenberg ebooks 11 and 1228); see eval_text.SOURCE.md"
)


@functools.lru_cache(maxsize=4)
def corpus_bytes(path: str | None = None) -> bytes:
    """The text to score: the published corpus, or a user's file (--quality_text)."""
    if path is None:
        return resources.files("ecocompute").joinpath(CORPUS).read_bytes()
    return Path(path).read_bytes()


def corpus_text(path: str | None = None) -> str:
    return corpus_bytes(path).decode("utf-8")


def corpus_record(path: str | None = None) -> dict[str, Any]:
    data = corpus_bytes(path)
    record = {
        "name": CORPUS.rsplit("/", 1)[-1] if path is None else recordable(Path(path).name),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }
    if path is None:
        return {**record, "source": CORPUS_SOURCE, "license": "public domain texts"}
    return {**record, "source": f"the user's --quality_text {recordable(path)}"}


@dataclass(frozen=True)
class PerplexityScore:
    """One model's score on the corpus."""

    perplexity: float
    mean_nll: float  # token-weighted mean negative log-likelihood, nats
    windows: int
    tokens_scored: int


def perplexity(model: Any, token_ids: list[int], seq_len: int, device: Any) -> PerplexityScore:
    """The model's perplexity on token_ids, in non-overlapping windows of seq_len tokens:
    exp of the token-weighted mean NLL over every window. Raises ValueError when nothing
    can be scored or the loss is not finite."""
    import torch

    nll_sum = 0.0
    scored = 0
    windows = 0
    with torch.inference_mode():
        for start in range(0, len(token_ids), seq_len):
            chunk = token_ids[start : start + seq_len]
            if len(chunk) < 2:
                break
            ids = torch.tensor([chunk], device=device)
            loss = model(input_ids=ids, labels=ids).loss
            nll_sum += float(loss) * (len(chunk) - 1)
            scored += len(chunk) - 1
            windows += 1
    if scored == 0:
        raise ValueError("the corpus gave no tokens to score")
    mean_nll = nll_sum / scored
    if not math.isfinite(mean_nll):
        raise ValueError("non-finite loss")
    return PerplexityScore(math.exp(mean_nll), mean_nll, windows, scored)


def score_models(
    models: Mapping[Precision, Any],
    tokenizer: Any,
    seq_len: int,
    device: Any,
    text_path: str | None = None,
) -> dict[Precision, PerplexityScore]:
    """Each model's score on the corpus (tokenized once, without special tokens), in
    windows of seq_len tokens capped at the model's context, as the published probe."""
    ids = tokenizer(corpus_text(text_path), add_special_tokens=False)["input_ids"]
    out = {}
    for precision, model in models.items():
        limit = getattr(model.config, "max_position_embeddings", None) or seq_len
        out[precision] = perplexity(model, ids, min(seq_len, int(limit)), device)
    return out
