"""One module per library that makes a format, each a Quantizer with the same few
methods (base.py, beside FP16's, which quantizes nothing); quantizer_for() is the one
mapping from a format to its class."""

from __future__ import annotations

import importlib

from ecocompute.formats.table import FormatSpec
from ecocompute.llm.quantizers.base import Quantizer

# format name (FormatSpec.key) -> (module under llm/quantizers/, class)
QUANTIZERS: dict[str, tuple[str, str]] = {
    "FP16": ("base", "PlainWeights"),
    "NF4": ("bitsandbytes", "Nf4"),
    "INT8": ("bitsandbytes", "LlmInt8"),
    "INT4": ("torchao", "Torchao"),
    "FP8": ("torchao", "Torchao"),
    "INT8-torchao": ("torchao", "Torchao"),
}


def quantizer_for(spec: FormatSpec) -> Quantizer:
    """The quantizer that makes `spec`, holding it (imports no heavy library)."""
    module, name = QUANTIZERS[spec.key]  # the table names no other format
    cls: type[Quantizer] = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return cls(spec)
