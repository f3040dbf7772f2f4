"""The quality probe's part in a measured run: which formats were scored, or why none.

Perplexity is scored only after every sampler has stopped, and it is optional: a probe
that fails leaves the energy measurement standing and says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ecocompute.boundary.progress import Progress
from ecocompute.core.precision import Precision
from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.loading import Checkpoint, ModelBackend
from ecocompute.llm.quality_probe import PerplexityScore, score_models
from ecocompute.params import RunParams, quality_text_problem


@dataclass(frozen=True)
class QualityOutcome:
    requested: bool
    scores: Mapping[Precision, PerplexityScore]  # empty when nothing was scored
    unavailable_reason: str | None  # why there is no score, when requested
    seq_len: int
    text_path: str | None  # --quality_text, None for the published corpus


@dataclass
class ScoreSheet:
    """Scores gathered phase by phase (a format is scored while it is still loaded)."""

    params: RunParams
    checkpoint: Checkpoint
    backend: ModelBackend
    accelerator: Accelerator
    progress: Progress
    scores: dict[Precision, PerplexityScore] = field(default_factory=dict)
    error: str | None = None

    def __post_init__(self) -> None:
        text = self.params.quality_text
        problem = quality_text_problem(text) if text is not None else None
        if problem is not None:  # the run goes on without the probe (the container's way)
            self.error = f"--quality_text {text} {problem}: the probe was skipped"

    def wanted(self) -> bool:
        return (
            self.params.quality_probe and self.checkpoint.weights != "synthetic" and not self.error
        )

    def score(self, models: Mapping[Precision, Any]) -> None:
        """Perplexity of models; only ever called with every sampler stopped."""
        if not self.wanted():
            return
        self.progress(f"quality probe (samplers stopped): {', '.join(models)}")
        try:
            tokenizer = self.backend.tokenizer(self.checkpoint)
            device = self.accelerator.input_device()
            p = self.params
            self.scores.update(
                score_models(models, tokenizer, p.quality_seq_len, device, p.quality_text)
            )
        except Exception as exc:  # optional probe: reported as unavailable, never fatal
            self.error = f"{type(exc).__name__}: {str(exc)[:300]}"

    def outcome(self) -> QualityOutcome:
        p = self.params
        reason = None
        if not p.quality_probe:
            reason = "--no_quality_probe"
        elif self.checkpoint.weights == "synthetic":
            reason = "synthetic weights: perplexity of random weights is meaningless"
        elif self.error or Precision.FP16 not in self.scores:
            reason = self.error or "not scored"
        return QualityOutcome(
            requested=p.quality_probe,
            scores=dict(self.scores) if reason is None else {},
            unavailable_reason=reason,
            seq_len=p.quality_seq_len,
            text_path=p.quality_text,
        )
