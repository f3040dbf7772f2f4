"""The quality probe: perplexity of FP16 and the quantized model on a fixed text.

Scored by teacher forcing in non-overlapping windows of quality_seq_len tokens, only
after every power sampler has stopped. Only the delta against the same run's FP16
baseline is comparable, and only between runs whose corpus sha256 agrees.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ecocompute.precision import Precision

CORPUS = "data/corpus/kjv-ruth-jonah.txt"
CORPUS_SOURCE = (
    "Ruth and Jonah, King James Version (1611, copyright expired), as printed by Debian's "
    "bible-kjv 4.38 from bible-kjv-text 4.38 (scripts/make-corpus.sh)"
)
MAX_WINDOWS = 16


@functools.lru_cache(maxsize=1)
def corpus_text() -> str:
    return resources.files("ecocompute").joinpath(CORPUS).read_text(encoding="utf-8")


def corpus_record() -> dict[str, Any]:
    data = corpus_text().encode("utf-8")
    return {
        "name": CORPUS.rsplit("/", 1)[-1],
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "source": CORPUS_SOURCE,
        "license": "public domain (KJV text); data file 'provided for unrestricted use'",
    }


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
            if len(chunk) < 2 or windows >= MAX_WINDOWS:
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
    models: Mapping[Precision, Any], tokenizer: Any, seq_len: int, device: Any
) -> dict[Precision, PerplexityScore]:
    """Each model's score on the corpus."""
    ids = tokenizer(corpus_text(), add_special_tokens=False)["input_ids"]
    return {p: perplexity(m, ids, seq_len, device) for p, m in models.items()}
