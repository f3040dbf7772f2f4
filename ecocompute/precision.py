"""The formats a run compares: FP16, the baseline, and the two bitsandbytes formats."""

from __future__ import annotations

from enum import StrEnum


class Precision(StrEnum):
    """A weight format. A str, so it is written into JSON and compared as its name."""

    FP16 = "FP16"
    NF4 = "NF4"  # bitsandbytes 4-bit NormalFloat
    INT8 = "INT8"  # bitsandbytes LLM.int8()

    @property
    def quantized(self) -> bool:
        return self is not Precision.FP16
