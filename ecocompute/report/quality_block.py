"""The report's quality block (perplexity), in the published format's names.

A text field with nothing to say (note, delta_note, error) is left out, never null: the
published schema types them as strings, and its consumers read null as a type error.
The measured path always writes the block (basis measured, or unavailable and why); the
published path writes none, as the published container does.
"""

from __future__ import annotations

from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.units import pct_change
from ecocompute.llm.quality_probe import corpus_record
from ecocompute.task.quality import QualityOutcome

_TEXT_FIELDS = ("note", "delta_note", "error")


def _without_empty_text(block: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if not (k in _TEXT_FIELDS and v is None)}


def quality_unavailable(requested: bool, why: str, text: str | None) -> dict[str, Any]:
    """The block without a score: basis unavailable, why in note (not requested) or
    error (requested, but no score)."""
    return _without_empty_text(
        {
            "metric": "perplexity",
            "basis": "unavailable",
            "requested": requested,
            "value": None,
            "fp16_value": None,
            "delta_vs_fp16_pct": None,
            "tokens_evaluated": None,
            "mean_nll": None,
            "corpus": corpus_record(text) if requested else None,
            "note": why if not requested else None,
            "error": why if requested else None,
        }
    )


def quality_section(q: QualityOutcome) -> dict[str, Any]:
    if q.unavailable_reason is not None:
        return quality_unavailable(q.requested, q.unavailable_reason, q.text_path)
    fp16 = q.scores[Precision.FP16]
    quantized = [p for p in q.scores if p.quantized]
    score = q.scores[quantized[0]] if quantized else fp16
    return {
        "metric": "perplexity",
        "basis": "measured",
        "requested": True,
        "value": round(score.perplexity, 4),
        "fp16_value": round(fp16.perplexity, 4),
        "delta_vs_fp16_pct": round(pct_change(score.perplexity, fp16.perplexity), 3),
        "tokens_evaluated": score.tokens_scored,
        "mean_nll": round(score.mean_nll, 6),
        "fp16_mean_nll": round(fp16.mean_nll, 6),
        "windows": score.windows,
        "seq_len": q.seq_len,
        "corpus": corpus_record(q.text_path),
        "delta_note": (
            "perplexity of the same weights at the quantized format vs FP16, same corpus "
            "and windows; comparable between runs whose corpus sha256 agrees"
            if quantized
            else "FP16 alone: value is the FP16 perplexity"
        ),
    }
