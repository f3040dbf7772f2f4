"""The published path: a figure derived from the published dataset, never a measurement.

Taken when there is no usable GPU, when NVML or power telemetry is unavailable, on
--dry_run, or when an on-device measurement was refused; the reason says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecocompute.params import RunParams, nominal_params_b
from ecocompute.published.archs import arch_from_product_name, normalise_arch_choice
from ecocompute.published.figures import (
    PublishedFigure,
    headline,
    published_figure,
    unavailable_figure,
)
from ecocompute.task.figure_guard import check_possible
from ecocompute.task.hardware import Hardware


@dataclass(frozen=True)
class FallbackReason:
    # no_gpu | nvml_unavailable | power_unsupported | dry_run | measurement_failed |
    # stack_missing (the schema lists them)
    code: str
    text: str


@dataclass(frozen=True)
class ResolvedArch:
    arch: str
    source: str  # how it was decided, for the report and the summary
    headline_default: bool = False


@dataclass(frozen=True)
class PublishedRun:
    """Everything a published-path report says, decided; report/ turns it into JSON."""

    params: RunParams
    reason: FallbackReason
    hardware: Hardware
    params_b: float
    params_b_source: str
    arch: ResolvedArch
    figure: PublishedFigure


def resolve_arch(choice: str, gpu_name: str | None) -> ResolvedArch:
    arch, product = normalise_arch_choice(choice)
    if product is not None:
        return ResolvedArch(arch, f"--gpu_arch product name '{product}'")
    if arch != "auto":
        return ResolvedArch(arch, "--gpu_arch")
    if gpu_name is not None:
        return ResolvedArch(arch_from_product_name(gpu_name), f"NVML product name '{gpu_name}'")
    card = headline()
    return ResolvedArch(
        card["arch"],
        f"no GPU detected: the published headline card {card['card']} "
        f"({card['arch']}) is used; pass --gpu_arch to choose another",
        headline_default=True,
    )


def published_run(params: RunParams, reason: FallbackReason, hardware: Hardware) -> PublishedRun:
    """The published figure for this run's card, size and format. Raises InputError
    when no size is known, or when the curves give no possible figure at that size."""
    params_b, params_b_source = nominal_params_b(params.model_name, params.params_b)
    arch = resolve_arch(params.gpu_arch, hardware.gpu_name)
    spec = params.spec()
    if spec.published:
        figure = published_figure(arch.arch, params_b, params.precision)
    else:
        figure = not_published(arch.arch, params_b, str(spec.precision), spec.label)
    check_possible(figure, params_b)  # far beyond its curves, a size is bad input
    return PublishedRun(params, reason, hardware, params_b, params_b_source, arch, figure)


def not_published(arch: str, params_b: float, precision: str, label: str) -> PublishedFigure:
    """No figure for a format the published dataset never measured (it has bitsandbytes
    NF4 and LLM.int8() only): basis unavailable, and never another format's figure."""
    return unavailable_figure(
        arch,
        params_b,
        precision,
        f"the published dataset has figures for bitsandbytes NF4 and LLM.int8() only; "
        f"{label} was never measured there, and no other format's figure is borrowed for it",
    )
