"""The published path: a figure derived from the published dataset, never a measurement.

Taken when there is no usable GPU, when NVML or power telemetry is unavailable, on
--dry_run, or when an on-device measurement was refused; the reason says which.
"""

from __future__ import annotations

from dataclasses import dataclass

from ecocompute.params import RunParams, nominal_params_b
from ecocompute.published.archs import arch_from_product_name, normalise_arch_choice
from ecocompute.published.figures import (
    BASIS_UNAVAILABLE,
    PublishedFigure,
    headline,
    published_figure,
    unavailable_figure,
)
from ecocompute.published.project import UnitSpread, at_units_size, project_regime_spread
from ecocompute.task.figure_guard import check_possible
from ecocompute.task.hardware import Hardware

# Every published figure (the site's and this project's own) was measured at batch 1.
PUBLISHED_BATCH_SIZE = 1


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
    product: str | None = None  # the card's product name where one was given or read


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
    # --decode graphs or compiled: what this project measured across units in that
    # regime for this card, format and size at batch 1 (the figure is eager's)
    regime_units: UnitSpread | None = None


def resolve_arch(choice: str, gpu_name: str | None) -> ResolvedArch:
    arch, product = normalise_arch_choice(choice)
    if product is not None:
        return ResolvedArch(arch, f"--gpu_arch product name '{product}'", product=product)
    if arch != "auto":
        return ResolvedArch(arch, "--gpu_arch")
    if gpu_name is not None:
        return ResolvedArch(
            arch_from_product_name(gpu_name), f"NVML product name '{gpu_name}'", product=gpu_name
        )
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
    if spec.published_as_set:
        figure = published_figure(arch.arch, params_b, params.precision)
    else:
        figure = not_published(arch.arch, params_b, str(spec.precision), spec.label_as_set)
    check_possible(figure, params_b)  # far beyond its curves, a size is bad input
    if params.batch_size != PUBLISHED_BATCH_SIZE:
        figure = not_at_batch(figure, params.batch_size)
    regime_units = None
    if params.decode != "eager":
        units = project_regime_spread(
            arch.arch, str(params.precision), params.decode, arch.product, params.compile_notes
        )
        if (
            units is not None
            and units.batch_size == params.batch_size
            and at_units_size(units.params_b, params_b)
        ):
            regime_units = units
    return PublishedRun(
        params, reason, hardware, params_b, params_b_source, arch, figure, regime_units
    )


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


def not_at_batch(figure: PublishedFigure, batch_size: int) -> PublishedFigure:
    """No figure at a batch size the published figures never measured (they are all
    batch 1): basis unavailable, and the batch-1 figure named in the note, never passed
    off as this batch's. The energy per token and even the sign of the delta change with
    the batch size (docs/published-figures.md, "The batch size")."""
    none_at_batch = (
        f"the published figures are all batch {PUBLISHED_BATCH_SIZE} and none exists for "
        f"batch {batch_size}"
    )
    if figure.basis == BASIS_UNAVAILABLE:
        why = f"{figure.note}; and {none_at_batch}"
    else:
        if figure.vs_fp16_energy_pct is not None and figure.precision != "FP16":
            shown = f"{figure.precision} {figure.vs_fp16_energy_pct:+.1f}% vs FP16"
            what = "card, size and format"
        else:
            shown = f"FP16 {figure.fp16_energy_per_token_mj:.2f} mJ/token"
            what = "card and size"
        why = (
            f"{none_at_batch}; the batch-{PUBLISHED_BATCH_SIZE} figure for this {what} is "
            f"{shown} ({figure.basis}), and it is not passed off as batch {batch_size}'s "
            f"(pass --batch_size {PUBLISHED_BATCH_SIZE} for it)"
        )
    return unavailable_figure(figure.arch, figure.params_b, figure.precision, why)
