"""A derived report's reference blocks: what gave its figure (this project's or the
site's curve, or the site's anchors at a measured size) and, for this project's own
figures, how they varied between units of the card (results.reference_*)."""

from __future__ import annotations

from ecocompute.published.curves import ORIGIN_PUBLISHED
from ecocompute.published.project import UnitSpread
from ecocompute.published.site_curves import SITE_CURVES
from ecocompute.report.results_model import (
    ReferenceAnchorPoint,
    ReferenceAnchors,
    ReferenceCurve,
    ReferenceUnits,
)
from ecocompute.task.published_path import PublishedRun


def reference_anchors(run: PublishedRun) -> ReferenceAnchors | None:
    """The site's anchors that gave a derived delta at a size its dataset measured."""
    fig = run.figure.anchors
    if fig is None or run.figure.vs_fp16_energy_pct is None:
        return None
    return ReferenceAnchors(
        source=SITE_CURVES,
        arch=fig.arch,
        precision=fig.precision,
        params_b=fig.params_b,
        points=[
            ReferenceAnchorPoint(gpu=pt.gpu, model=pt.model, delta_pct=pt.delta_pct, n=pt.n)
            for pt in fig.points
        ],
        band_pct=list(fig.band_pct),
    )


def reference_units(run: PublishedRun) -> ReferenceUnits | None:
    """How this project's own figure of the format varied between units of its card,
    where the project measured that (published/project.py); None otherwise."""
    u = run.figure.units
    if u is None or run.figure.vs_fp16_energy_pct is None:
        return None
    return units_model(u)


def units_model(u: UnitSpread) -> ReferenceUnits:
    """The report's block of a between-unit spread: the same fields as
    published/project.py's UnitSpread, whose tuples become the model's lists, which is
    why the check is not strict here."""
    return ReferenceUnits.model_validate(u, from_attributes=True, strict=False)


def reference_curve(run: PublishedRun) -> ReferenceCurve | None:
    """The curve that gave a derived delta, so that a reader can draw it under the point
    and check the figure; None where none did (FP16, no figure)."""
    fig = run.figure
    curve = fig.curve
    if curve is None or fig.vs_fp16_energy_pct is None:
        return None
    return ReferenceCurve(
        source=SITE_CURVES if curve.origin == ORIGIN_PUBLISHED else "this project's own fit",
        origin=curve.origin,  # type: ignore[arg-type]
        arch=curve.arch,
        precision=curve.precision,
        A=curve.a_pct,
        S=curve.s_pct,
        Nstar=curve.nstar_b,
        fitted_range_b=list(curve.fitted_range_b),
        s_cap_pct=curve.s_cap_pct,
        borrowed_from=curve.borrowed_from,
        capped=curve.capped_at(fig.params_b),
    )
