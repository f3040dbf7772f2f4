"""The published EcoCompute anchors and fitted curves, and the figure built from them.

The figures live in data/published_reference.json (with their DOIs); the two formulas
live here, once: log-log interpolation of the FP16 anchors, and the fitted delta curve
dE%(N) = A - S * x / (1 + x), x = N / Nstar. Anything that plots or checks against the
published curve calls these functions instead of repeating them.

Two kinds of figure, never mixed up:
- published: the EcoCompute dataset's anchors and curves (anchors_for, curve_for); a
  class without its own may borrow another's curve, labelled borrowed;
- this project's own measurements (project_measurements in the JSON, derived from the
  committed reports by benchmarks/hopper_figures.py): used by the published path only
  where the published dataset has nothing for the class (Hopper), and labelled so in
  every note. curve_for never returns one, so check, plot and sweep, which compare with
  the published curve, never see them as published.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ecocompute.precision import Precision

BASIS_INTERPOLATED = "interpolated"
BASIS_EXTRAPOLATED = "extrapolated"
BASIS_UNAVAILABLE = "unavailable"

ORIGIN_PUBLISHED = "published"
ORIGIN_PROJECT = "project"
PUBLISHED_SOURCE = "the published EcoCompute dataset"
PUBLISHED_METHOD = (
    "none in this run: figure derived from the published EcoCompute dataset "
    "(NVML power at 10 Hz integrated over the decode loop, batch 1, 256 tokens, "
    "10 iterations after 2 warm-ups, n = 2 per configuration)"
)
# A point of this project's measurements stands for a requested size within 5% of it
# (the same rule check uses to match an anchor).
POINT_SIZE_TOLERANCE = 0.05


@functools.lru_cache(maxsize=1)
def published() -> dict[str, Any]:
    """The published figures (and this project's own, in project_measurements)."""
    text = resources.files("ecocompute").joinpath("data/published_reference.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def dataset_dois() -> list[str]:
    return [source["doi"] for source in published()["sources"]]


def headline() -> dict[str, str]:
    """The published headline card: {"arch": ..., "card": ...}."""
    return dict(published()["headline"])


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
class Anchors:
    arch: str
    card: str
    points: tuple[tuple[float, float], ...]  # (params_b, fp16 mJ per token), ascending
    origin: str = ORIGIN_PUBLISHED

    @property
    def range_b(self) -> tuple[float, float]:
        return self.points[0][0], self.points[-1][0]

    def covers(self, params_b: float) -> bool:
        lo, hi = self.range_b
        return lo <= params_b <= hi

    def energy_per_token_mj(self, params_b: float) -> float:
        """FP16 mJ/token by linear interpolation in log(params)-log(energy).

        Outside the measured range the nearest segment is extended (extrapolation);
        the caller labels that via covers().
        """
        if params_b <= 0:
            raise ValueError(f"params_b must be positive, got {params_b}")
        pts = self.points
        if len(pts) == 1:
            return pts[0][1]
        i = 0
        while i < len(pts) - 2 and params_b > pts[i + 1][0]:
            i += 1
        (n0, e0), (n1, e1) = pts[i], pts[i + 1]
        slope = (math.log(e1) - math.log(e0)) / (math.log(n1) - math.log(n0))
        return math.exp(math.log(e0) + slope * (math.log(params_b) - math.log(n0)))


@dataclass(frozen=True)
class DeltaCurve:
    arch: str
    precision: str
    a_pct: float
    s_pct: float
    nstar_b: float
    fitted_range_b: tuple[float, float]
    borrowed_from: str | None = None
    origin: str = ORIGIN_PUBLISHED
    used_up_to_b: float | None = None  # not used above this size (None: used everywhere)

    def delta_pct(self, params_b: float) -> float:
        """Energy per token vs FP16 in percent at params_b billion parameters."""
        return delta_pct(params_b, self.a_pct, self.s_pct, self.nstar_b)

    def covers(self, params_b: float) -> bool:
        lo, hi = self.fitted_range_b
        return lo <= params_b <= hi

    def usable_at(self, params_b: float) -> bool:
        return self.used_up_to_b is None or params_b <= self.used_up_to_b


@dataclass(frozen=True)
class MeasuredDelta:
    """One size's mean delta vs FP16 from this project's own reports."""

    params_b: float
    delta_pct: float
    n_reports: int
    n_pairs: int

    def stands_for(self, params_b: float) -> bool:
        return abs(params_b - self.params_b) <= POINT_SIZE_TOLERANCE * self.params_b


def delta_pct(params_b: float, a_pct: float, s_pct: float, nstar_b: float) -> float:
    """dE%(N) = A - S * x / (1 + x), x = N / Nstar. Negative means quantization saves."""
    x = params_b / nstar_b
    return a_pct - s_pct * x / (1.0 + x)


def _source_arch(arch: str) -> tuple[str, str | None]:
    borrowed = published().get("borrowed_curves", {}).get(arch)
    return (borrowed["from"], arch) if borrowed else (arch, None)


def _points(pairs: list[list[float]]) -> tuple[tuple[float, float], ...]:
    return tuple(sorted((float(n), float(e)) for n, e in pairs))


def anchors_for(arch: str) -> Anchors | None:
    """FP16 anchors for an arch class: its published ones, else this project's own
    measurements (Hopper), else a borrowed class's published ones; None where none exist."""
    entry = published()["fp16_anchors_mj_per_token"].get(arch)
    if entry is not None:
        return Anchors(arch=arch, card=entry["card"], points=_points(entry["points"]))
    own = project_measurements(arch)
    if own is not None:
        return Anchors(
            arch=arch,
            card=own["card"],
            points=_points(own["fp16_anchors_mj_per_token"]["points"]),
            origin=ORIGIN_PROJECT,
        )
    source, _ = _source_arch(arch)
    entry = published()["fp16_anchors_mj_per_token"].get(source)
    if entry is None:
        return None
    return Anchors(arch=source, card=entry["card"], points=_points(entry["points"]))


def curve_for(arch: str, precision: str) -> DeltaCurve | None:
    """The published fitted delta curve (the class's own, or a borrowed one), or None
    where the dataset has none (never invented). Never this project's own fit."""
    source, borrower = _source_arch(arch)
    entry = published()["delta_curves_pct"].get(source, {}).get(precision)
    if entry is None:
        return None
    return _curve(entry, source, precision, borrowed_from=source if borrower else None)


def project_curve_for(arch: str, precision: str) -> DeltaCurve | None:
    """This project's own fitted delta curve for an arch class (not published), or None."""
    own = project_measurements(arch)
    entry = (own or {}).get("delta_curves_pct", {}).get(precision)
    if entry is None:
        return None
    up_to = entry.get("used_up_to_b")
    return _curve(
        entry,
        arch,
        precision,
        origin=ORIGIN_PROJECT,
        used_up_to_b=None if up_to is None else float(up_to),
    )


def _curve(entry: dict[str, Any], arch: str, precision: str, **labels: Any) -> DeltaCurve:
    """A DeltaCurve from a data file entry (A, S, Nstar, fitted_range_b)."""
    lo, hi = entry["fitted_range_b"]
    return DeltaCurve(
        arch=arch,
        precision=precision,
        a_pct=float(entry["A"]),
        s_pct=float(entry["S"]),
        nstar_b=float(entry["Nstar"]),
        fitted_range_b=(float(lo), float(hi)),
        **labels,
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
class PublishedFigure:
    """A figure derived from reference figures (published, or this project's own for a
    class the published dataset lacks). Never a measurement of this machine."""

    arch: str
    precision: str
    params_b: float
    basis: str
    fp16_energy_per_token_mj: float | None
    energy_per_token_mj: float | None
    vs_fp16_energy_pct: float | None
    reference_card: str | None
    note: str
    source: str = PUBLISHED_SOURCE  # whose figures, in words, for "Derived from ..."
    method: str = PUBLISHED_METHOD  # measurement.method of the derived report


@dataclass(frozen=True)
class _Delta:
    pct: float
    inside: bool  # inside the range its source covers
    text: str
    borrowed_from: str | None = None


def _curve_text(curve: DeltaCurve, params_b: float, whose: str) -> str:
    lo, hi = curve.fitted_range_b
    return (
        f"{curve.precision} {curve.delta_pct(params_b):+.1f}% from {whose} "
        f"A={curve.a_pct:g}, S={curve.s_pct:g}, N*={curve.nstar_b:g}B "
        f"(fitted over {lo:g}-{hi:g}B)"
    )


def _delta_for(arch: str, params_b: float, precision: str) -> _Delta | None:
    """The delta vs FP16, from (in order) the class's own published curve, this project's
    own fit within the sizes it is used over, this project's own point at that size, or
    a borrowed published curve; None where there is none of these."""
    curve = curve_for(arch, precision)
    if curve is not None and curve.borrowed_from is None:
        text = _curve_text(curve, params_b, f"the fitted {curve.arch} curve")
        return _Delta(curve.delta_pct(params_b), curve.covers(params_b), text)

    own = project_measurements(arch)
    label = own["label"] if own else ""
    mine = project_curve_for(arch, precision)
    if mine is not None and mine.usable_at(params_b):
        whose = f"this project's fit to its own {own['card'] if own else ''} points"
        text = _curve_text(mine, params_b, whose) + ", eager generate(); not a published curve"
        return _Delta(mine.delta_pct(params_b), mine.covers(params_b), text)
    points = project_points_for(arch, precision)
    for point in points:
        if point.stands_for(params_b):
            text = (
                f"{precision} {point.delta_pct:+.1f}% from {label} at "
                f"{point.params_b:g}B (mean of {point.n_reports} reports, {point.n_pairs} "
                "pairs; not the published dataset)"
            )
            return _Delta(point.delta_pct, True, text)

    if curve is None:
        return None
    if mine is not None:
        why = (
            f"{label} give an {precision} fit over {mine.fitted_range_b[0]:g}-"
            f"{mine.fitted_range_b[1]:g}B that is not extended above {mine.used_up_to_b:g}B"
        )
    elif points:
        sizes = ", ".join(f"{p.params_b:g}B" for p in points)
        why = f"{label} have {precision} points only at {sizes}"
    elif own is not None:
        why = f"{label} have no {precision} point"
    else:
        why = f"arch '{arch}' has no measured {precision} curve"
    lender = anchors_for(curve.arch)
    borrowed_card = lender.card if lender else curve.arch
    text = (
        _curve_text(curve, params_b, f"the fitted {curve.arch} curve")
        + f"; {why}: {curve.arch.capitalize()}'s published curve ({borrowed_card}) is "
        "borrowed, so this is an extrapolation to another architecture"
    )
    return _Delta(curve.delta_pct(params_b), False, text, borrowed_from=curve.arch)


def _anchor_text(anchors: Anchors, fp16_mj: float) -> str:
    lo, hi = anchors.range_b
    if anchors.origin == ORIGIN_PROJECT:
        own = project_measurements(anchors.arch) or {}
        return (
            f"FP16 {fp16_mj:.2f} mJ/token from {own.get('label', 'this project')} "
            f"({anchors.card}, {lo:g}-{hi:g}B, {own.get('weights', '?')} weights, "
            f"{own.get('n_reports', '?')} reports, {', '.join(own.get('dates', []))}; "
            "log-log interpolation; not the published dataset)"
        )
    return (
        f"FP16 {fp16_mj:.2f} mJ/token from the published {anchors.card} anchors "
        f"({lo:g}-{hi:g}B, log-log interpolation)"
    )


def _source_words(anchors: Anchors, delta: _Delta | None) -> tuple[str, str]:
    """(whose figures, in words; measurement.method) for the derived report."""
    if anchors.origin != ORIGIN_PROJECT:
        return PUBLISHED_SOURCE, PUBLISHED_METHOD
    own = project_measurements(anchors.arch) or {}
    label = own.get("label", "this project's measurements")
    source = f"{label} (not the published EcoCompute dataset)"
    method = f"none in this run: figure derived from {label} ({own.get('protocol', '')})"
    if delta is not None and delta.borrowed_from:
        source = (
            f"{label} (FP16) and the published EcoCompute dataset's {delta.borrowed_from} "
            "curve, borrowed"
        )
        method += (
            f"; the delta vs FP16 from the published EcoCompute dataset's "
            f"{delta.borrowed_from} curve, borrowed"
        )
    return source, method


def published_figure(arch: str, params_b: float, precision: str) -> PublishedFigure:
    """The figure for one arch class, size and format on the published path."""
    anchors = anchors_for(arch)

    def unavailable(why: str) -> PublishedFigure:
        return PublishedFigure(
            arch,
            precision,
            params_b,
            BASIS_UNAVAILABLE,
            None,
            None,
            None,
            anchors.card if anchors else None,
            why,
        )

    if anchors is None:
        return unavailable(
            f"the published dataset has no FP16 measurements for arch class '{arch}', "
            "so no figure is claimed"
        )
    delta = None
    if precision != Precision.FP16:
        delta = _delta_for(arch, params_b, precision)
        if delta is None:
            return unavailable(
                f"the published dataset has no fitted {precision} curve for arch class "
                f"'{arch}', so no delta vs FP16 is claimed"
            )

    fp16_mj = anchors.energy_per_token_mj(params_b)
    parts = [_anchor_text(anchors, fp16_mj)]
    pct = 0.0 if delta is None else delta.pct
    if delta is not None:
        parts.append(delta.text)
    borrowed_anchors = anchors.arch != arch
    if borrowed_anchors:
        parts.append(
            f"arch '{arch}' has no measured curve: {anchors.arch.capitalize()}'s "
            f"({anchors.card}) is borrowed, so this is an extrapolation to another architecture"
        )
    inside = anchors.covers(params_b) and (delta is None or delta.inside)
    if borrowed_anchors or (delta is not None and delta.borrowed_from):
        basis = BASIS_EXTRAPOLATED
    elif inside:
        basis = BASIS_INTERPOLATED
    else:
        basis = BASIS_EXTRAPOLATED
        parts.append(f"{params_b:g}B lies outside the measured range: extrapolated")
    source, method = _source_words(anchors, delta)
    return PublishedFigure(
        arch=arch,
        precision=precision,
        params_b=params_b,
        basis=basis,
        fp16_energy_per_token_mj=fp16_mj,
        energy_per_token_mj=fp16_mj * (1.0 + pct / 100.0),
        vs_fp16_energy_pct=pct,
        reference_card=anchors.card,
        note="; ".join(parts),
        source=source,
        method=method,
    )
