"""One table from (precision, library) to what that format is.

Everything else asks this table (loading, the regimes, the published path, the report),
never `if precision is NF4`. Facts about the libraries are from their documentation:
bitsandbytes (NF4 in blocks of 64, LLM.int8() with its outlier threshold), torchao 0.18
(Int4WeightOnlyConfig with tinygemm's tile packing, Float8DynamicActivationFloat8Weight
Config with PerRow granularity, Int8WeightOnlyConfig), and NVIDIA's FP8 support
(float8 matrix products from compute capability 8.9, Ada and Hopper).
"""

from __future__ import annotations

from dataclasses import dataclass

from ecocompute.core.precision import Precision
from ecocompute.errors import InputError

TORCH = "torch"
BITSANDBYTES = "bitsandbytes"
TORCHAO = "torchao"
BACKENDS = (BITSANDBYTES, TORCHAO)
AUTO = "auto"


@dataclass(frozen=True)
class FormatSpec:
    """One weight format. Units and meanings in the names; text fields are for people."""

    precision: Precision
    library: str  # TORCH (the baseline), BITSANDBYTES or TORCHAO
    method: str  # what the library does, in its own terms
    bits: int  # bits per weight (before scales)
    compute_dtype: str  # the dtype matrix products run in: "float16" or "bfloat16"
    granularity: str  # how scales are shared
    needs: str  # what it needs to run, in words
    min_library_version: str | None  # e.g. "0.18.0"
    min_compute_capability: tuple[int, int] | None  # None: any CUDA card (or the CPU)
    needs_cuda: bool  # no CPU kernel in the library
    graphs: str  # whether the graphs regime can capture it, in words
    published: bool  # the published dataset has figures for it
    footprint_ratio: float  # its weights' memory vs FP16's (embeddings stay 16-bit)

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


FP16_SPEC = FormatSpec(
    Precision.FP16, TORCH, "float16 weights (the baseline)", 16, "float16", "none",
    "torch", None, None, False, "captures", True, 1.0,
)  # fmt: skip

FORMATS: tuple[FormatSpec, ...] = (
    FP16_SPEC,
    FormatSpec(
        Precision.NF4, BITSANDBYTES, "nf4 (4-bit NormalFloat), no double quantization", 4,
        "float16", "blocks of 64 weights", "bitsandbytes 0.45 or newer", "0.45.0", None,
        False, "captures", True, 0.3,
    ),
    FormatSpec(
        Precision.INT8, BITSANDBYTES, "LLM.int8() (outlier columns in float16)", 8,
        "float16", "per row, outliers above --llm_int8_threshold", "bitsandbytes 0.45 or newer",
        "0.45.0", None, False, "captures only at --llm_int8_threshold 0.0 (outlier columns "
        "are found at run time, a shape a graph cannot hold)", True, 0.55,
    ),
    FormatSpec(
        Precision.INT4, TORCHAO, "int4 weight-only, tinygemm tile packing", 4, "bfloat16",
        "groups of 128 weights (asymmetric, tinygemm qparams)",
        "torchao 0.18 or newer and a CUDA GPU (tinygemm's _weight_int4pack_mm)", "0.18.0",
        None, True, "captures", False, 0.3,
    ),
    FormatSpec(
        Precision.FP8, TORCHAO, "float8 e4m3 weights and dynamic float8 activations", 8,
        "bfloat16", "per row (weights and activations)",
        "torchao 0.18 or newer and compute capability 8.9 or newer (Ada, Hopper)",
        "0.18.0", (8, 9), True, "captures", False, 0.55,
    ),
    FormatSpec(
        Precision.INT8, TORCHAO, "int8 weight-only", 8, "bfloat16", "per row",
        "torchao 0.18 or newer", "0.18.0", None, False, "captures", False, 0.55,
    ),
)  # fmt: skip

DEFAULT_LIBRARY: dict[Precision, str] = {
    Precision.FP16: TORCH,
    Precision.NF4: BITSANDBYTES,
    Precision.INT8: BITSANDBYTES,
    Precision.INT4: TORCHAO,
    Precision.FP8: TORCHAO,
}


def libraries_for(precision: Precision) -> tuple[str, ...]:
    return tuple(f.library for f in FORMATS if f.precision is precision)


def spec_for(precision: Precision, backend: str = AUTO) -> FormatSpec:
    """The format of `precision` made by `backend` (AUTO: the precision's default).
    Raises InputError naming the libraries that do make it."""
    if not precision.quantized:
        return FP16_SPEC
    library = DEFAULT_LIBRARY[precision] if backend == AUTO else backend
    for spec in FORMATS:
        if spec.precision is precision and spec.library == library:
            return spec
    offered = ", ".join(libraries_for(precision))
    raise InputError("backend", backend, f"{backend} does not make {precision}; {offered} does")


def table_rows() -> list[dict[str, object]]:
    """The table as records, for docs and `--help`-like listings."""
    return [
        {
            "format": spec.key,
            "precision": str(spec.precision),
            "library": spec.library,
            "method": spec.method,
            "bits": spec.bits,
            "compute_dtype": spec.compute_dtype,
            "granularity": spec.granularity,
            "needs": spec.needs,
            "graphs": spec.graphs,
            "published_figures": spec.published,
        }
        for spec in FORMATS
    ]


def format_key(precision: str, library: str | None) -> str:
    """A format's name: the precision, with the library where it is not the precision's
    default (INT8-torchao); a precision this table does not know, or no library, as it is."""
    if library is None or precision not in set(Precision):
        return str(precision)
    if DEFAULT_LIBRARY[Precision(precision)] == library:
        return str(precision)
    return f"{precision}-{library}"
