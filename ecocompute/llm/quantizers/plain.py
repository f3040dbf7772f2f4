"""FP16: the checkpoint's weights in float16, nothing quantized (the baseline)."""

from __future__ import annotations

from typing import Any

from ecocompute.llm.cuda import Accelerator
from ecocompute.llm.quantizers.base import Quantizer


class PlainWeights(Quantizer):
    def preflight(self, accelerator: Accelerator) -> None:
        return None

    def load_arguments(self) -> dict[str, object]:
        import torch

        return {"dtype": torch.float16, "quantization_config": None}

    def check(self, model: Any) -> None:
        return None

    def record(self) -> dict[str, Any] | None:
        return None
