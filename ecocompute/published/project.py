"""This project's own H200 measurements (project_measurements of the reference data,
written from the committed reports by benchmarks/hopper_figures.py): never published
figures, and labelled so wherever they are used.

They stand in only where the published site has nothing measured on a class (Hopper,
whose curve the site borrows from Ampere).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ecocompute.published.curves import ORIGIN_PROJECT, Anchors, DeltaCurve
from ecocompute.published.reference_data import published

# A point of this project's measurements stands for a requested size within 5% of it
# (the same rule check uses to match an anchor).
POINT_SIZE_TOLERANCE = 0.05


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
