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


@dataclass(frozen=True)
class UnitSpread:
    """How one format's delta vs FP16 varied between GPU units of the card model where
    this project measured that (one model, batch size and regime; `aggregate --units`):
    the pooled delta, its 95% interval, the between-unit sd and the 95% prediction
    interval for a unit not yet measured."""

    source: str  # the folder of the reports, in this repository
    card: str
    regime: str
    model_name: str
    params_b: float
    batch_size: int
    tokens_per_run: int
    precision: str
    n_units: int
    n_pairs: int
    pooled_pct: float
    ci95_pct: tuple[float, float]
    between_unit_sd_pts: float
    pi95_pct: tuple[float, float] | None
    # the lowest and highest FP16 energy per token of the units' reports
    fp16_energy_per_token_mj_range: tuple[float, float] | None = None


def project_unit_spread(arch: str, precision: str) -> UnitSpread | None:
    """The between-unit spread of a format's delta in this project's own measurements
    of an arch class (benchmarks/hopper_figures.py writes it), or None where none was
    measured. Eager, the regime of the figures it stands beside."""
    return _unit_spread((project_measurements(arch) or {}).get("unit_spread_pct"), precision)


def project_regime_spread(
    arch: str, precision: str, regime: str, product: str | None = None
) -> UnitSpread | None:
    """The same for a decode regime no published figure covers (graphs, compiled), where
    this project measured the format across units in it: of the card the product names
    where the project measured that card in the regime (an H100's for 'h100'), else of
    the card its figures are from; None where neither was measured."""
    own = project_measurements(arch) or {}
    blocks = (own.get("regime_unit_spread_pct") or {}).get(regime) or []
    named = _model_token(product)
    chosen = [b for b in blocks if named is not None and _model_token(b["card"]) == named]
    chosen += [b for b in blocks if b["card"] == own.get("card")]
    found = (_unit_spread(b, precision) for b in chosen)
    return next((u for u in found if u is not None), None)


def _model_token(name: str | None) -> str | None:
    """A card's model in a product name: 'h100' in 'NVIDIA H100 80GB HBM3' and 'H100'."""
    if name is None:
        return None
    found = re.search(r"\b([a-z]+\d{2,4})\b", name.lower().replace("nvidia", ""))
    return None if found is None else found.group(1)


def _unit_spread(block: dict[str, Any] | None, precision: str) -> UnitSpread | None:
    entry = None if block is None else block.get("formats", {}).get(precision)
    if block is None or entry is None:
        return None
    pi, fp16 = entry.get("pi95_pct"), entry.get("fp16_energy_per_token_mj_range")
    return UnitSpread(
        source=str(block["source"]),
        card=str(block["card"]),
        regime=str(block["regime"]),
        model_name=str(block["model_name"]),
        params_b=float(block["params_b"]),
        batch_size=int(block["batch_size"]),
        tokens_per_run=int(block["tokens_per_run"]),
        precision=precision,
        n_units=int(entry["n_units"]),
        n_pairs=int(entry["n_pairs"]),
        pooled_pct=float(entry["pooled_pct"]),
        ci95_pct=(float(entry["ci95_pct"][0]), float(entry["ci95_pct"][1])),
        between_unit_sd_pts=float(entry["between_unit_sd_pts"]),
        pi95_pct=None if pi is None else (float(pi[0]), float(pi[1])),
        fp16_energy_per_token_mj_range=None if fp16 is None else (float(fp16[0]), float(fp16[1])),
    )
