"""One table from (precision, library) to what that format is, each row a named record.

Everything else asks this table (loading, the regimes, the published path, the report),
never `if precision is NF4`. Facts about the libraries are from their documentation:
bitsandbytes (NF4 in blocks of 64, LLM.int8() with its outlier threshold), torchao 0.18
(Int4WeightOnlyConfig with tinygemm's tile packing, Float8DynamicActivationFloat8Weight
Config with PerRow granularity, Int8WeightOnlyConfig), and NVIDIA's FP8 support
(float8 matrix products from compute capability 8.9, Ada and Hopper).

A setting that belongs to one format is held by that format's row, as transformers'
quantizers hold their quantization_config: LLM.int8()'s outlier threshold is a field of
the bitsandbytes INT8 row (None on every other row), set for a run by spec_for().
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.errors import InputError

TORCH = "torch"
BITSANDBYTES = "bitsandbytes"
TORCHAO = "torchao"
BACKENDS = (BITSANDBYTES, TORCHAO)
AUTO = "auto"
LLM_INT8_THRESHOLD = 6.0  # bitsandbytes' default outlier threshold (0.0: pure INT8)


@dataclass(frozen=True, kw_only=True)
class FormatSpec:
    """One weight format. Units and meanings in the names; text fields are for people."""

    precision: Precision
    library: str  # TORCH (the baseline), BITSANDBYTES or TORCHAO
    method: str  # what the library does, in its own terms
    bits: int  # bits per weight (before scales)
    compute_dtype: str  # the dtype matrix products run in: "float16" or "bfloat16"
    granularity: str  # how scales are shared
    needs: str  # what it needs to run, in words
    footprint_ratio: float  # its weights' memory vs FP16's (embeddings stay 16-bit)
    min_library_version: str | None = None  # e.g. "0.18.0"
    min_compute_capability: tuple[int, int] | None = None  # None: any CUDA card (or the CPU)
    needs_cuda: bool = False  # no CPU kernel in the library
    graphs: str = "captures"  # whether the graphs regime can capture it, in words
    published: bool = False  # the published dataset has figures for it
    llm_int8_threshold: float | None = None  # LLM.int8()'s outlier threshold; its row only

    def __str__(self) -> str:
        return self.key

    @property
    def key(self) -> str:
        """How folders and the command line name it (format_key)."""
        return format_key(self.precision, self.library)

    @property
    def label(self) -> str:
        """For messages: 'INT4 (torchao int4 weight-only, group 128)'."""
        if self.library == TORCH:
            return str(self.precision)
        return f"{self.precision} ({self.library} {self.method})"

    @property
    def published_as_set(self) -> bool:
        """Whether the published dataset measured this format as set here: LLM.int8() only
        at bitsandbytes' default outlier threshold. Threshold 0 is another kernel path: on
        an H200 (synthetic Llama-2-7B, eager, batch 1) +145.8% vs FP16 at threshold 6 and
        +94.1% at 0 (docs/validation/h200-eager-units, h200-map-whole)."""
        return self.published and self.llm_int8_threshold in (None, LLM_INT8_THRESHOLD)

    @property
    def label_as_set(self) -> str:
        """label, naming an LLM.int8() threshold other than the default."""
        t = self.llm_int8_threshold
        if t in (None, LLM_INT8_THRESHOLD):
            return self.label
        return f"{self.label} at outlier threshold {t:g}, not the default {LLM_INT8_THRESHOLD:g}"


FP16_SPEC = FormatSpec(
    precision=Precision.FP16, library=TORCH, method="float16 weights (the baseline)", bits=16,
    compute_dtype="float16", granularity="none", needs="torch", footprint_ratio=1.0,
    published=True,
)  # fmt: skip


def _bitsandbytes(**named: Any) -> FormatSpec:
    return FormatSpec(
        library=BITSANDBYTES, compute_dtype="float16", needs="bitsandbytes 0.45 or newer",
        min_library_version="0.45.0", published=True, **named,
    )  # fmt: skip


def _torchao(**named: Any) -> FormatSpec:
    return FormatSpec(
        library=TORCHAO, compute_dtype="bfloat16", min_library_version="0.18.0", **named
    )


FORMATS: tuple[FormatSpec, ...] = (
    FP16_SPEC,
    _bitsandbytes(
        precision=Precision.NF4, bits=4, footprint_ratio=0.3,
        method="nf4 (4-bit NormalFloat), no double quantization",
        granularity="blocks of 64 weights",
    ),
    _bitsandbytes(
        precision=Precision.INT8, bits=8, footprint_ratio=0.55,
        method="LLM.int8() (outlier columns in float16)",
        granularity="per row, outliers above --llm_int8_threshold",
        graphs="captures only at --llm_int8_threshold 0.0 (outlier columns are found at run "
        "time, a shape a graph cannot hold)",
        llm_int8_threshold=LLM_INT8_THRESHOLD,
    ),
    _torchao(
        precision=Precision.INT4, bits=4, footprint_ratio=0.3,
        method="int4 weight-only, tinygemm tile packing",
        granularity="groups of 128 weights (asymmetric, tinygemm qparams)",
        needs="torchao 0.18 or newer and a CUDA GPU (tinygemm's _weight_int4pack_mm)",
        needs_cuda=True,
    ),
    _torchao(
        precision=Precision.FP8, bits=8, footprint_ratio=0.55,
        method="float8 e4m3 weights and dynamic float8 activations",
        granularity="per row (weights and activations)",
        needs="torchao 0.18 or newer and compute capability 8.9 or newer (Ada, Hopper)",
        min_compute_capability=(8, 9), needs_cuda=True,
    ),
    _torchao(
        precision=Precision.INT8, bits=8, footprint_ratio=0.55, method="int8 weight-only",
        granularity="per row", needs="torchao 0.18 or newer",
    ),
)  # fmt: skip
_BY_NAME = {(spec.precision, spec.library): spec for spec in FORMATS}
# A precision's first row is its default library's (INT8: bitsandbytes, not torchao).
DEFAULT_LIBRARY = {spec.precision: spec.library for spec in reversed(FORMATS)}


def libraries_for(precision: Precision) -> tuple[str, ...]:
    return tuple(f.library for f in FORMATS if f.precision is precision)


def spec_for(
    precision: Precision, backend: str = AUTO, *, llm_int8_threshold: float | None = None
) -> FormatSpec:
    """The format of `precision` made by `backend` (AUTO: the precision's default), with
    `llm_int8_threshold` (None: the row's default) where the format has that setting.
    Raises InputError naming the libraries that do make it."""
    if not precision.quantized:
        return FP16_SPEC
    library = DEFAULT_LIBRARY[precision] if backend == AUTO else backend
    spec = _BY_NAME.get((precision, library))
    if spec is None:
        offered = ", ".join(libraries_for(precision))
        raise InputError("backend", backend, f"{backend} does not make {precision}; {offered} does")
    if spec.llm_int8_threshold is None or llm_int8_threshold is None:
        return spec
    return dataclasses.replace(spec, llm_int8_threshold=llm_int8_threshold)


def format_key(precision: str, library: str | None, llm_int8_threshold: float | None = None) -> str:
    """A format's name as tables give it: the precision, with the library where it is
    not the precision's default (INT8-torchao), and LLM.int8() at another outlier
    threshold than bitsandbytes' default named with it ("INT8 (threshold 0)": pure int8,
    another kernel path); a precision this table does not know as it is, and no library
    as the precision's default (only LLM.int8() records a threshold)."""
    if precision not in set(Precision):
        return str(precision)
    if library is not None and DEFAULT_LIBRARY[Precision(precision)] != library:
        return f"{precision}-{library}"
    t = llm_int8_threshold
    if precision == Precision.INT8 and t is not None and t != LLM_INT8_THRESHOLD:
        return f"{precision} (threshold {t:g})"
    return str(precision)
