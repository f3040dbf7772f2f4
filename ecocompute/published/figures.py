"""The figure of the published path, and the curves it is built from.

Two kinds of figure, never mixed up:
- published: the site's fitted curves and FP16 anchors as the site states them
  (site_curves.py reads data/site/curves.json), through anchors_for and curve_for; a
  class without a curve of its own gets the one the site borrows for it (Hopper:
  Ampere's), labelled borrowed;
- this project's own measurements (project.py): used only where the site has nothing
  measured on the class (Hopper), and labelled so in every note. curve_for never
  returns one, so check, plot and sweep, which compare with the published curve, never
  see them as published.
The two formulas (log-log FP16 interpolation, the capped delta curve) are curves.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ecocompute.core.precision import Precision
from ecocompute.published.curves import (
    ORIGIN_PROJECT,
    ORIGIN_PUBLISHED,
    Anchors,
    DeltaCurve,
    delta_pct,
)
from ecocompute.published.project import (
    UnitSpread,
    at_units_size,
    is_project_card,
    project_anchors,
    project_curve_for,
    project_measurements,
    project_points_for,
    project_unit_spread,
)
from ecocompute.published.reference_data import dataset_dois, headline, published
from ecocompute.published.site_curves import (
    SITE_CURVES,
    AnchorFigure,
    CurvesFile,
    borrowed_by_site,
    site_anchor_figure,
    site_anchors,
    site_curve,
)

__all__ = [
    "ORIGIN_PROJECT",
    "ORIGIN_PUBLISHED",
    "Anchors",
    "DeltaCurve",
    "PublishedFigure",
    "anchors_for",
    "curve_for",
    "dataset_dois",
    "delta_pct",
    "headline",
    "is_project_card",
    "project_curve_for",
    "project_measurements",
    "project_points_for",
    "published",
    "published_figure",
]

BASIS_INTERPOLATED = "interpolated"
BASIS_EXTRAPOLATED = "extrapolated"
BASIS_UNAVAILABLE = "unavailable"

PUBLISHED_SOURCE = SITE_CURVES
# measurement.method of a derived report: the published container's phrase for it first
REFERENCE_ESTIMATE = "reference estimate from published dataset (no on-device measurement)"
PUBLISHED_METHOD = (
    f"{REFERENCE_ESTIMATE}: {SITE_CURVES}, fitted to the EcoCompute datasets' "
    "measurements (NVML power at 10 Hz integrated over eager generate() decode loops, "
    "batch 1, 256 tokens, 10 iterations after 2 warm-ups)"
)


def anchors_for(arch: str) -> Anchors | None:
    """FP16 anchors for an arch class: the site's own for it, else this project's own
    measurements (Hopper), else the anchors of the class whose curve the site borrows
    for it; None where none exist."""
    own = site_anchors(arch) or project_anchors(arch)
    if own is not None:
        return own
    lender = borrowed_by_site(arch)
    return site_anchors(lender) if lender else None


def curve_for(arch: str, precision: str, curves: CurvesFile | None = None) -> DeltaCurve | None:
    """The site's fitted delta curve (the class's own, or the one the site borrows for
    it, marked so), or None where the site has none (never invented). Never this
    project's own fit. curves: another curves.json than the packaged copy (check
    --curves)."""
    own = site_curve(arch, precision, curves)
    if own is not None:
        return own
    lender = borrowed_by_site(arch, curves)
    curve = site_curve(lender, precision, curves) if lender else None
    return None if curve is None else replace(curve, borrowed_from=curve.arch)


@dataclass(frozen=True)
class PublishedFigure:
    """A figure derived from reference figures (the site's, or this project's own for a
    class the site has not measured). Never a measurement of this machine."""

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
    curve: DeltaCurve | None = None  # the curve that gave the delta (None: FP16, a point)
    # at a size the site's dataset measured: the mean of its anchors there, with the
    # site's band (then curve is None: the curve did not give the figure)
    anchors: AnchorFigure | None = None
    # this project's own figure of a format: how its delta varied between units of the card
    units: UnitSpread | None = None


@dataclass(frozen=True)
class _Delta:
    pct: float
    inside: bool  # inside the range its source covers
    text: str
    curve: DeltaCurve | None = None
    borrowed_from: str | None = None
    anchors: AnchorFigure | None = None


def _anchors_text(fig: AnchorFigure) -> str:
    each = ", ".join(
        f"{pt.gpu} {pt.delta_pct:+.2f}% (n={'?' if pt.n is None else pt.n})" for pt in fig.points
    )
    return (
        f"{fig.precision} {fig.mean_pct:+.1f}% [{fig.band_pct[0]:+.1f}, {fig.band_pct[1]:+.1f}]: "
        f"the mean of the site's {len(fig.points)} {fig.arch} anchor(s) measured at "
        f"{fig.params_b:g}B ({each}), with the site's band, as its estimator gives a measured "
        "size (between and beyond its anchors the fitted curve gives the figure)"
    )


def _curve_text(curve: DeltaCurve, params_b: float, whose: str) -> str:
    lo, hi = curve.fitted_range_b
    text = (
        f"{curve.precision} {curve.delta_pct(params_b):+.1f}% from {whose} "
        f"A={curve.a_pct:.10g}, S={curve.s_pct:.10g}, N*={curve.nstar_b:.10g}B "
        f"(fitted over {lo:g}-{hi:g}B)"
    )
    if curve.capped_at(params_b):
        text += f", capped at -{curve.s_cap_pct:g}% (the site's bound on the saving)"
    return text


def _delta_for(arch: str, params_b: float, precision: str) -> _Delta | None:
    """The delta vs FP16, from (in order) the class's own published curve, this project's
    own fit within the sizes it is used over, this project's own point at that size, or
    a borrowed published curve; None where there is none of these."""
    curve = curve_for(arch, precision)
    if curve is not None and curve.borrowed_from is None:
        measured_here = site_anchor_figure(arch, precision, params_b)
        if measured_here is not None:
            return _Delta(
                measured_here.mean_pct, True, _anchors_text(measured_here), anchors=measured_here
            )
        text = _curve_text(curve, params_b, f"the site's fitted {curve.arch} curve")
        return _Delta(curve.delta_pct(params_b), curve.covers(params_b), text, curve)

    own = project_measurements(arch)
    label = own["label"] if own else ""
    mine = project_curve_for(arch, precision)
    if mine is not None and mine.usable_at(params_b):
        whose = f"this project's fit to its own {own['card'] if own else ''} points"
        text = _curve_text(mine, params_b, whose) + ", eager generate(); not a published curve"
        return _Delta(mine.delta_pct(params_b), mine.covers(params_b), text, mine)
    points = project_points_for(arch, precision)
    # a fitted format's points are its fit's: past the sizes the fit is used over, none
    # of them stands in (a 13B point for 13.5B), and the published curve is borrowed
    for point in points if mine is None else ():
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
        why = f"{label} have {precision} points of their default protocol only at {sizes}"
    elif own is not None:
        why = f"{label} have no {precision} point"
    else:
        why = f"arch '{arch}' has no measured {precision} curve"
    lender = anchors_for(curve.arch)
    borrowed_card = lender.card if lender else curve.arch
    text = (
        _curve_text(curve, params_b, f"the site's fitted {curve.arch} curve")
        + f"; {why}: {curve.arch.capitalize()}'s published curve ({borrowed_card}) is "
        "borrowed, as the site borrows it, so this is an extrapolation to another architecture"
    )
    return _Delta(curve.delta_pct(params_b), False, text, curve, borrowed_from=curve.arch)


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
        f"FP16 {fp16_mj:.2f} mJ/token from the site's {anchors.card} anchors "
        f"({lo:g}-{hi:g}B, log-log interpolation)"
    )


def _source_words(anchors: Anchors, delta: _Delta | None) -> tuple[str, str]:
    """(whose figures, in words; measurement.method) for the derived report."""
    if anchors.origin != ORIGIN_PROJECT:
        return PUBLISHED_SOURCE, PUBLISHED_METHOD
    own = project_measurements(anchors.arch) or {}
    label = own.get("label", "this project's measurements")
    source = f"{label} (not the published EcoCompute dataset)"
    method = (
        f"reference estimate from {label} (no on-device measurement; not the published "
        f"dataset): {own.get('protocol', '')}"
    )
    if delta is not None and delta.borrowed_from:
        source = f"{label} (FP16) and {SITE_CURVES}: {delta.borrowed_from}'s, borrowed"
        method += f"; the delta vs FP16 from {SITE_CURVES}: {delta.borrowed_from}'s, borrowed"
    return source, method


def unavailable_figure(arch: str, params_b: float, precision: str, why: str) -> PublishedFigure:
    """No figure, and why (basis unavailable): nothing is claimed for this card class,
    size and format."""
    anchors = anchors_for(arch)
    card = anchors.card if anchors else None
    return PublishedFigure(
        arch, precision, params_b, BASIS_UNAVAILABLE, None, None, None, card, why
    )


def published_figure(arch: str, params_b: float, precision: str) -> PublishedFigure:
    """The figure for one arch class, size and format on the published path."""
    anchors = anchors_for(arch)

    def unavailable(why: str) -> PublishedFigure:
        return unavailable_figure(arch, params_b, precision, why)

    if anchors is None:
        return unavailable(
            f"the published site has no FP16 measurements for arch class '{arch}', "
            "so no figure is claimed"
        )
    delta = None
    if precision != Precision.FP16:
        delta = _delta_for(arch, params_b, precision)
        if delta is None:
            return unavailable(
                f"the published site has no fitted {precision} curve for arch class "
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
    # the between-unit spread this project measured for the format on this card, beside a
    # figure from this project's own H200 measurements; beside a borrowed delta only at the
    # units' own size, where it is a measurement of the same thing the figure guesses
    units = None
    if delta is not None and anchors.origin == ORIGIN_PROJECT and not borrowed_anchors:
        units = project_unit_spread(arch, precision)
        if units is not None and delta.borrowed_from is not None:
            units = units if at_units_size(units.params_b, params_b) else None
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
        curve=None if delta is None else delta.curve,
        anchors=None if delta is None else delta.anchors,
        units=units,
    )
