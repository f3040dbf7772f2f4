"""Models and a greedy decode for the GPU probe scripts (imported by them; they run as
`python benchmarks/<script>.py`, so this folder is on sys.path)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ecocompute.accel import CudaAccelerator
from ecocompute.models import ModelBackend


def load_models(
    model_name: str, precisions: Sequence[str] = ("FP16", "NF4")
) -> tuple[CudaAccelerator, dict[str, Any], tuple[Any, Any]]:
    """(accelerator, {precision: model}, (input ids, attention mask)) for one prompt."""
    accel = CudaAccelerator()
    backend = ModelBackend()
    checkpoint = backend.checkpoint(model_name, accel)
    models = {p: backend.load(checkpoint, p, accel, 6.0).model for p in precisions}
    return accel, models, backend.prompt(checkpoint, 1, accel)


def greedy(model: Any, prompt: tuple[Any, Any], tokens: int) -> None:
    """The protocol's decode: exactly `tokens` new tokens, greedy, batch 1."""
    ids, mask = prompt
    model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=tokens,
        min_new_tokens=tokens,
        do_sample=False,
    )
