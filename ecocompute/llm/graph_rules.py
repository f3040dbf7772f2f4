"""What the graph-replayed regimes (graphs, compiled) ask of a model before they
capture it: what cannot be captured (refused before trying), its end-of-sequence ids,
whether its prefill can keep the last position's logits only."""

from __future__ import annotations

from typing import Any

from ecocompute.errors import DecodeCaptureFailed


def refuse_uncapturable(model: Any, label: str, regime: str = "graphs") -> None:
    """Refuse, before any capture, what is known not to capture: LLM.int8() layers with
    an outlier threshold > 0 (outlier columns found at run time: data-dependent shapes;
    on an H200 the attempt ended in a device assert that poisons the CUDA context)."""
    for name, module in model.named_modules():
        if type(module).__name__ != "Linear8bitLt":
            continue
        threshold = float(getattr(getattr(module, "state", None), "threshold", 0.0) or 0.0)
        if threshold > 0:
            raise DecodeCaptureFailed(
                label,
                f"LLM.int8() with outlier threshold {threshold:g} ({name}) finds outlier "
                "columns at run time, shapes a CUDA graph cannot capture; threshold 0.0 "
                "captures",
                regime,
            )


def eos_ids(model: Any) -> Any:
    """The end-of-sequence id(s) as a 1-D long tensor on the output layer's device, or
    None when the model has none."""
    import torch

    eos = model.config.eos_token_id
    if eos is None:
        return None
    ids = [eos] if isinstance(eos, int) else list(eos)
    head = model.get_output_embeddings()
    device = head.weight.device if head is not None else model.device
    return torch.tensor(ids, dtype=torch.long, device=device)


def accepts_logits_to_keep(model: Any) -> bool:
    """generate() asks the prefill for the last position's logits only, when it can."""
    import inspect

    return "logits_to_keep" in inspect.signature(model.forward).parameters
