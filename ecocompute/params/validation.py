"""Ranges and choices: every RunParams passes here once, so that a bad flag and a bad
YAML key get the same one-line error."""

from __future__ import annotations

from ecocompute.core.printable import is_text
from ecocompute.errors import InputError
from ecocompute.formats.table import AUTO, BACKENDS, libraries_for, spec_for
from ecocompute.params.model_size import name_size_b, params_b_problem
from ecocompute.params.path_checks import check_http_url, check_quality_text
from ecocompute.params.run_params import (
    DECODE_REGIMES,
    SAMPLE_RATE_RANGE_HZ,
    UPPER_BOUNDS,
    RunParams,
)
from ecocompute.published.archs import ARCH_CLASSES, SHORT_NAMES, normalise_arch_choice


def validated(p: RunParams) -> RunParams:
    if not is_text(p.model_name):
        raise InputError(
            "model_name",
            p.model_name,
            "holds bytes that are not UTF-8 text; a report names its model in text: "
            "rename the folder (or link to it under a UTF-8 name)",
        )
    for name, bound in UPPER_BOUNDS.items():
        value = getattr(p, name)
        if value is not None and value > bound:
            raise InputError(name, value, f"must be at most {bound:g}")
    try:
        normalise_arch_choice(p.gpu_arch)
    except ValueError:
        raise InputError(
            "gpu_arch",
            p.gpu_arch,
            "allowed: auto, " + ", ".join(ARCH_CLASSES) + ", a known NVIDIA product "
            "name such as 'RTX 4090' or 'NVIDIA H200', or a short name: " + ", ".join(SHORT_NAMES),
        ) from None
    for name in ("site", "api_base"):
        check_http_url(name, getattr(p, name))
    for name in ("tokens", "iterations", "batch_size", "context_length", "quality_seq_len"):
        if getattr(p, name) <= 0:
            raise InputError(name, getattr(p, name), "must be a positive whole number")
    if p.params_b is not None and (why := params_b_problem(p.params_b)) is not None:
        raise InputError("params_b", p.params_b, why)
    if p.params_b is None:
        name_size_b(p.model_name)  # a size the name states is checked as --params_b is
    if p.warmup < 0:
        raise InputError("warmup", p.warmup, "must be 0 or more")
    lo, hi = SAMPLE_RATE_RANGE_HZ
    if not lo <= p.sample_rate_hz <= hi:
        raise InputError("sample_rate_hz", p.sample_rate_hz, f"must be within {lo:g}..{hi:g} Hz")
    if p.llm_int8_threshold < 0:
        raise InputError("llm_int8_threshold", p.llm_int8_threshold, "must be 0 or more")
    if p.max_gpu_memory_gib is not None and p.max_gpu_memory_gib <= 0:
        raise InputError("max_gpu_memory_gib", p.max_gpu_memory_gib, "must be a positive GiB")
    if p.idle_seconds < 0:
        raise InputError("idle_seconds", p.idle_seconds, "must be 0 or more seconds")
    if p.quality_text is not None:
        check_quality_text(p.quality_text)
    _check_formats(p)
    if len(p.session_formats) > 1 and (p.share or p.prefetch):
        raise InputError(
            "share" if p.share else "prefetch",
            True,
            "works with one --precision at a time (a session of several writes a report "
            "per format; share or prefetch each format's run on its own)",
        )
    if p.decode not in DECODE_REGIMES:
        raise InputError("decode", p.decode, "allowed: " + ", ".join(DECODE_REGIMES))
    if p.ci_target_pts is not None:
        if p.ci_target_pts <= 0:
            raise InputError("ci_target_pts", p.ci_target_pts, "must be a positive number")
        if not p.precision.quantized:
            raise InputError(
                "ci_target_pts",
                p.ci_target_pts,
                "needs a quantized --precision (NF4, INT8, INT4 or FP8): it targets the "
                "delta vs FP16",
            )
    if p.ci_target_pts is not None and p.max_rounds < p.iterations:
        raise InputError(
            "max_rounds", p.max_rounds, f"must be at least --iterations ({p.iterations})"
        )
    if p.max_minutes <= 0:
        raise InputError("max_minutes", p.max_minutes, "must be a positive number of minutes")
    if p.tokens >= p.context_length:
        raise InputError(
            "tokens",
            p.tokens,
            f"must leave room for the prompt in context_length {p.context_length}",
        )
    return p


def _check_formats(p: RunParams) -> None:
    """--backend must be a library, and make every quantized format asked for."""
    if p.backend != AUTO and p.backend not in BACKENDS:
        raise InputError("backend", p.backend, "allowed: " + ", ".join((AUTO, *BACKENDS)))
    for precision in p.session_formats:
        if p.backend != AUTO and p.backend not in libraries_for(precision):
            offered = " or ".join(libraries_for(precision))
            raise InputError(
                "backend", p.backend, f"{p.backend} does not make {precision} ({offered} does)"
            )
        spec_for(precision, p.backend)
