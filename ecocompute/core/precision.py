"""The precisions a run can compare: FP16, the baseline, and the quantized ones. Which
library makes each (and how) is the format table's business (formats/table.py)."""

from __future__ import annotations

from enum import StrEnum


class Precision(StrEnum):
    """A weight precision. A str, so it is written into JSON and compared as its name."""

    FP16 = "FP16"
    NF4 = "NF4"  # 4-bit NormalFloat (bitsandbytes)
    INT8 = "INT8"  # 8-bit integers (bitsandbytes LLM.int8(), or torchao weight-only)
    INT4 = "INT4"  # 4-bit integers, weight-only (torchao)
    FP8 = "FP8"  # float8 e4m3 weights and activations (torchao)

    @property
    def quantized(self) -> bool:
        return self is not Precision.FP16
