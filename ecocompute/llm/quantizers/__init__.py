"""One module per library that makes a format, each a Quantizer with the same few
methods (base.py); quantizer_for() is the one mapping from a format to its module."""

from __future__ import annotations

from ecocompute.formats.table import BITSANDBYTES, TORCH, TORCHAO, FormatSpec
from ecocompute.llm.quantizers.base import Quantizer


def quantizer_for(spec: FormatSpec) -> Quantizer:
    """The quantizer that makes `spec` (imports no heavy library)."""
    if spec.library == TORCH:
        from ecocompute.llm.quantizers.plain import PlainWeights

        return PlainWeights(spec)
    if spec.library == BITSANDBYTES:
        from ecocompute.llm.quantizers.bitsandbytes import Bitsandbytes

        return Bitsandbytes(spec)
    if spec.library == TORCHAO:
        from ecocompute.llm.quantizers.torchao import Torchao

        return Torchao(spec)
    raise KeyError(spec.library)  # the table names no other library
