"""What every library's quantizer does, in the same few methods (the shape of
transformers' quantizers): say whether it can run here and why not, prepare the load,
finish the loaded model, check that the model really is in its format, and say what
the report should record. A quantizer holds its format's row (formats/table.py), and
with it any setting of that format alone (LLM.int8()'s outlier threshold)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.errors import RunError
from ecocompute.formats.table import FormatSpec
from ecocompute.llm.cuda import Accelerator


class Quantizer(ABC):
    def __init__(self, spec: FormatSpec) -> None:
        self.spec = spec

    @abstractmethod
    def preflight(self, accelerator: Accelerator) -> None:
        """Before anything big is loaded: the library imports and a tiny op of this
        format runs on this device. Raises RunError naming the format and why not."""

    @abstractmethod
    def load_arguments(self) -> dict[str, object]:
        """from_pretrained's dtype and quantization_config for this format."""

    def finish(self, model: Any) -> JsonObject:
        """Quantize in memory where the library does it after loading; returns what
        it did (layers quantized, skipped). The default: nothing to do."""
        return {}

    def quantize_block(self, block: Any, head: Any) -> None:
        """A model built in memory (llm/in_memory.py): quantize this block's linear
        layers, other than the output layer `head`, where they lie, right after the
        block was built at 16 bits. The default (FP16): nothing to do."""
        return None

    def tally(self, model: Any) -> JsonObject:
        """After an in-memory build: what quantize_block did over the whole model, as
        finish() says it after a load. The default: nothing to say."""
        return {}

    @abstractmethod
    def check(self, model: Any) -> None:
        """Refuse a model that is not in this format (its energy would be reported as
        this format's). Raises RunError."""

    @abstractmethod
    def record(self) -> JsonObject | None:
        """What the report says of how the weights were quantized (None for FP16)."""

    def refuse(self, why: str) -> RunError:
        return RunError(f"{self.spec.label} cannot run here: {why}; nothing was written")


class PlainWeights(Quantizer):
    """FP16: the checkpoint's weights in float16, nothing quantized (the baseline)."""

    def preflight(self, accelerator: Accelerator) -> None:
        return None

    def load_arguments(self) -> dict[str, object]:
        import torch

        return {"dtype": torch.float16, "quantization_config": None}

    def check(self, model: Any) -> None:
        return None

    def record(self) -> dict[str, Any] | None:
        return None
