"""The measured report's measurement.decode: the regime's record, the batch and prompt,
and, where the regime prepared each format on its own (the compiled regime's compile),
what it did for each format of this report (FP16 and the format), with compile_s the
seconds this report's formats spent compiling, before any measured window."""

from __future__ import annotations

from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.task.outcome import MeasuredRun


def decode_block(run: MeasuredRun) -> dict[str, Any]:
    p = run.params
    block: dict[str, Any] = {
        **run.decode,
        "batch_size": p.batch_size,
        "prompt": "12 seeded random token ids"
        if run.checkpoint.weights == "synthetic"
        else "a fixed English instruction (ecocompute.llm.loading.PROMPT_TEXT)",
    }
    per = run.decode_per_format
    if not per:
        return block
    order = sorted(per, key=lambda fmt: fmt is not Precision.FP16)  # FP16 first
    block["per_format"] = {str(fmt): dict(per[fmt]) for fmt in order}
    seconds = [per[fmt].get("compile_s") for fmt in order]
    if all(isinstance(s, (int, float)) for s in seconds):
        block["compile_s"] = round(sum(float(s) for s in seconds if s is not None), 3)
        block["compile_note"] = (
            "seconds compiling the decode step of this report's formats ("
            + ", ".join(str(fmt) for fmt in order)
            + "), each before any measured window; per_format gives each format's"
        )
    return block
