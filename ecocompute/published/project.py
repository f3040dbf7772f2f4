"""This project's own H200 measurements (project_measurements of the reference data,
written from the committed reports by benchmarks/hopper_figures.py): never published
figures, and labelled so wherever they are used.

They stand in only where the published site has nothing measured on a class (Hopper,
whose curve the site borrows from Ampere).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from ecocompute.published.curves import ORIGIN_PROJECT, Anchors, DeltaCurve
from ecocompute.published.reference_data import published

# A point of this project's measurements stands for a requested size within 5% of it
# (the same rule check uses to match an anchor).
POINT_SIZE_TOLERANCE = 0.05
# A between-unit spread was measured at one nominal size; a figure is at it when equal.
UNITS_SIZE_TOLERANCE_B = 1e-6


def at_units_size(units_params_b: float, params_b: float | None) -> bool:
    """Whether a figure's size is the one the units were measured at."""
    return params_b is not None and abs(params_b - units_params_b) <= UNITS_SIZE_TOLERANCE_B


def project_measurements(arch: str) -> dict[str, Any] | None:
    """This project's own measurements for an arch class (not published), or None."""
    entry: dict[str, Any] | None = published().get("project_measurements", {}).get(arch)
    return entry


def is_project_card(card: str | None) -> bool:
    """Whether a reference card names this project's own measurements, not published ones."""
    return card is not None and any(
        entry.get("card") == card
        for entry in published().get("project_measurements", {}).values()
        if isinstance(entry, dict)
    )


@dataclass(frozen=True)
class MeasuredDelta:
    """One size's mean delta vs FP16 from this project's own reports."""

    params_b: float
    delta_pct: float
    n_reports: int
    n_pairs: int

    def stands_for(self, params_b: float) -> bool:
        return abs(params_b - self.params_b) <= POINT_SIZE_TOLERANCE * self.params_b


def project_anchors(arch: str) -> Anchors | None:
    own = project_measurements(arch)
    if own is None:
        return None
    points = tuple(
        sorted((float(n), float(e)) for n, e in own["fp16_anchors_mj_per_token"]["points"])
    )
    return Anchors(arch=arch, card=own["card"], points=points, origin=ORIGIN_PROJECT)


def project_curve_for(arch: str, precision: str) -> DeltaCurve | None:
    """This project's own fitted delta curve for an arch class (not published), or None."""
    own = project_measurements(arch)
    entry = (own or {}).get("delta_curves_pct", {}).get(precision)
    if entry is None:
        return None
    lo, hi = entry["fitted_range_b"]
    up_to = entry.get("used_up_to_b")
    return DeltaCurve(
        arch=arch,
        precision=precision,
        a_pct=float(entry["A"]),
        s_pct=float(entry["S"]),
        nstar_b=float(entry["Nstar"]),
        fitted_range_b=(float(lo), float(hi)),
        origin=ORIGIN_PROJECT,
        used_up_to_b=None if up_to is None else float(up_to),
        n_anchors=int(entry.get("n_points") or 0),
    )


def project_points_for(arch: str, precision: str) -> tuple[MeasuredDelta, ...]:
    """This project's own per-size mean deltas for an arch class (not published)."""
    own = project_measurements(arch)
    rows = (own or {}).get("delta_points_pct", {}).get(precision, [])
    return tuple(
        MeasuredDelta(
            float(r["params_b"]), float(r["mean"]), int(r["n_reports"]), int(r["n_pairs"])
        )
        for r in rows
    )


class _FormatSpread(BaseModel):
    """One format's entry of a unit-spread block (benchmarks/hopper_figures.py)."""

    model_config = ConfigDict(frozen=True)

    n_units: int
    n_pairs: int
    pooled_pct: float
    ci95_pct: tuple[float, float]
    between_unit_sd_pts: float
    # where three units or more cannot tell their spread from none: the most they cannot
    # rule out (tau's Q-profile upper end; core/meta.py)
    between_unit_sd_upper_pts: float | None = None
    pi95_pct: tuple[float, float] | None = None
    # the lowest and highest FP16 energy per token of the units' reports
    fp16_energy_per_token_mj_range: tuple[float, float] | None = None
    # a 95% prediction interval for another unit's FP16, on the log scale (from 3 units)
    fp16_energy_per_token_mj_pi95: tuple[float, float] | None = None
    # the units' idle power before their sessions, and how FP16's energy went with it
    idle_before_w_range: tuple[float, float] | None = None
    idle_fp16_energy_r: float | None = None


class _SpreadScope(BaseModel):
    """Where units were measured: one card, regime and workload."""

    model_config = ConfigDict(frozen=True)

    source: str  # the folder of the reports, in this repository
    card: str
    regime: str
    model_name: str
    params_b: float
    batch_size: int
    tokens_per_run: int
    # how the units' compile departed from the compiled regime's own (max-autotune, the
    # whole step for its batch size), e.g. ("mode default",); none for the regime's own
    compile_notes: tuple[str, ...] = ()


class UnitSpread(_SpreadScope, _FormatSpread):
    """How one format's delta vs FP16 varied between GPU units of the card model where
    this project measured that (one model, batch size and regime; `aggregate --units`):
    the pooled delta, its 95% interval, the between-unit sd and the 95% prediction
    interval for a unit not yet measured."""

    precision: str


class _SpreadBlock(_SpreadScope):
    """A unit-spread block of the reference data: its scope, and each format measured
    there."""

    formats: dict[str, _FormatSpread]

    def spread(self, precision: str) -> UnitSpread | None:
        entry = self.formats.get(precision)
        if entry is None:
            return None
        scope = self.model_dump(exclude={"formats"})
        return UnitSpread(**scope, precision=precision, **entry.model_dump())


def project_unit_spread(arch: str, precision: str) -> UnitSpread | None:
    """The between-unit spread of a format's delta in this project's own measurements
    of an arch class (benchmarks/hopper_figures.py writes it), or None where none was
    measured. Eager, the regime of the figures it stands beside."""
    block = (project_measurements(arch) or {}).get("unit_spread_pct")
    return None if block is None else _SpreadBlock.model_validate(block).spread(precision)


def project_regime_spread(
    arch: str,
    precision: str,
    regime: str,
    product: str | None = None,
    compile_notes: tuple[str, ...] = (),
) -> UnitSpread | None:
    """The same for a decode regime no published figure covers (graphs, compiled), where
    this project measured the format across units in it, with the compile asked for (its
    notes: none for the compiled regime's own): of the card the product names where the
    project measured that card in the regime (an H100's for 'h100'), else of the card its
    figures are from; None where neither was measured. A bare model ('h100', 'NVIDIA
    H100') stands for the card this project measured of it; a fuller name, with or
    without the vendor, for that card alone ('H100 PCIe' is another card than the units'
    H100 80GB HBM3, of other power and memory, as card_model_spread holds it)."""
    own = project_measurements(arch) or {}
    blocks = [b for b in _spread_blocks(arch, regime) if b.compile_notes == compile_notes]
    chosen = [b for b in blocks if product is not None and _names(product, b.card)]
    chosen += [b for b in blocks if b.card == own.get("card")]
    found = (b.spread(precision) for b in chosen)
    return next((u for u in found if u is not None), None)


def card_model_spread(
    arch: str,
    precision: str,
    regime: str,
    card: str,
    model_name: str,
    params_b: float | None,
    batch_size: int,
    tokens_per_run: int,
    compile_notes: tuple[str, ...] = (),
) -> UnitSpread | None:
    """The between-unit spread this project measured on the card model a measured run
    ran on (the NVML product name the units gave: an 'NVIDIA H200 NVL' or 'NVIDIA H100
    PCIe' is another card, of other power and memory), in the run's regime and compile
    (its notes), of its model (synthetic:llama-2-7b: no other model of the size, nor
    its pretrained weights), at its size, batch size and tokens per run; None where no
    units of that card were measured there. A measured report states it beside its own
    unit's figure."""
    found = (
        b.spread(precision)
        for b in _spread_blocks(arch, regime)
        if (b.card, b.model_name) == (card, model_name)
        and (b.regime, b.batch_size, b.tokens_per_run) == (regime, batch_size, tokens_per_run)
        and b.compile_notes == compile_notes
        and at_units_size(b.params_b, params_b)
    )
    return next((u for u in found if u is not None), None)


def _spread_blocks(arch: str, regime: str) -> list[_SpreadBlock]:
    """The unit-spread blocks of an arch's measurements in one regime: the regime's
    own (graphs, compiled), and for eager the block beside the eager figures."""
    own = project_measurements(arch) or {}
    raw = list((own.get("regime_unit_spread_pct") or {}).get(regime) or [])
    eager = own.get("unit_spread_pct")
    if regime == "eager" and eager is not None:
        raw.append(eager)
    return [_SpreadBlock.model_validate(b) for b in raw]


def _names(product: str, card: str) -> bool:
    """Whether a product name the user gave names this card: the card's own name, or
    its bare model."""
    given = " ".join(product.lower().split()).removeprefix("nvidia ")
    bare = model_token(product)
    return given == card.lower().removeprefix("nvidia ") or (
        bare is not None and given == bare and model_token(card) == bare
    )


def model_token(name: str | None) -> str | None:
    """A card's model in a product name: 'h100' in 'NVIDIA H100 80GB HBM3' and 'H100'."""
    if name is None:
        return None
    found = re.search(r"\b([a-z]+\d{2,4})\b", name.lower().replace("nvidia", ""))
    return None if found is None else found.group(1)
