"""What a sweep fits: per format, the size curve over its measured points (with the
published curve beside it), or, on a batch axis, the delta against the batch size and
its crossover (batch_axis.py)."""

from __future__ import annotations

from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path

from ecocompute.core.precision import Precision
from ecocompute.formats.table import spec_for
from ecocompute.published.figures import anchors_for, curve_for
from ecocompute.report.results_model import PhaseFigure
from ecocompute.results.collect import Report
from ecocompute.sweeps.batch_axis import axis_entry
from ecocompute.sweeps.curvefit import Point, crossover_of, fit_points, se_from_ci
from ecocompute.sweeps.document import (
    BatchAxisEntry,
    BatchPoint,
    CurveFit,
    Fit,
    FitPoint,
    PhaseDelta,
    PointPhases,
    PublishedCurve,
    format_label_field,
)
from ecocompute.sweeps.records import relative


def missing_fit_stack() -> list[str]:
    return [name for name in ("numpy", "scipy", "matplotlib") if find_spec(name) is None]


def published_curve(arch: str | None, precision: str, label: str) -> PublishedCurve | None:
    """The published curve of a format as tables name it (label). A label other than
    the precision names another library or setting than its default, which the
    published figures never measured (INT8: LLM.int8() at outlier threshold 6 only)."""
    if arch is None:
        return None
    if label != precision:
        spec = spec_for(Precision(precision))  # the default, which the site measured
        t = spec.llm_int8_threshold
        at = "" if t is None else f" at outlier threshold {t:g}"
        return PublishedCurve(
            arch=arch,
            note=f"the published dataset has no {label} curve: its {precision} figures are "
            f"{spec.library} {spec.method}{at} only",
        )
    curve = curve_for(arch, precision)
    if curve is None:
        return PublishedCurve(
            arch=arch, note=f"the published dataset has no {precision} curve for {arch}"
        )
    anchors = anchors_for(curve.arch)
    cross = crossover_of(curve.a_pct, curve.s_pct, curve.nstar_b)
    notes: dict[str, str] = {}  # set only where said: never written as null
    if curve.borrowed_from:
        notes["note"] = (
            f"{arch} has no published curve; this is {curve.arch}'s, borrowed, so it is not "
            f"a measurement of {arch}"
        )
    if cross is None:
        notes["crossover_note"] = "the published curve never crosses zero"
    return PublishedCurve(
        arch=curve.arch,
        card=anchors.card if anchors else None,
        A=curve.a_pct,
        S=curve.s_pct,
        Nstar=curve.nstar_b,
        fitted_range_b=list(curve.fitted_range_b),
        crossover_b=None if cross is None else round(cross, 4),
        borrowed_for=arch if curve.borrowed_from else None,
        **notes,
    )


def fit_entry(
    label: str,
    reports: Sequence[Report],
    output_dir: Path,
    arch: str | None,
    missing: Sequence[str],
    n_boot: int | None,
) -> Fit:
    """One format's fit over the measured reports (or why it was skipped). label: the
    format as tables name it (INT8 from torchao, or at another outlier threshold, is
    never one curve with LLM.int8())."""
    ours = [r for r in reports if r.format_label == label]
    fmt = ours[0].precision
    used = [r for r in ours if r.measured and r.delta_pct is not None and r.params_b]
    left_out = [
        f"{r.model} (illustrative: the report says it is not a real measurement)"
        if r.kind == "illustrative"
        else f"{r.model} ({r.basis}: no figure, not measured)"
        if r.delta_pct is None
        else f"{r.model} ({r.basis}: derived from the published dataset, not measured)"
        for r in ours
        if not r.measured
    ]
    points = [
        Point(
            float(r.params_b or 0.0),
            float(r.delta_pct or 0.0),
            se_from_ci(r.ci95_pct, r.interval_df),
            r.model,
        )
        for r in used
    ]
    listed = [
        FitPoint(
            model_name=r.model,
            params_b=p.params_b,
            delta_pct=p.delta_pct,
            se_pct=None if p.se_pct is None else round(p.se_pct, 4),
            ci95_pct=list(r.ci95_pct) if r.ci95_pct else None,
            report=relative(r.path, output_dir),
        )
        for r, p in zip(used, points, strict=True)
    ]
    units = {r.unit for r in used}
    if len(units) > 1 and len(used) > len({r.model for r in used}):
        # a size measured on several GPUs: units differ by more than a unit's interval
        # (docs/units.md), so one curve through all their points would claim too much
        why = (
            f"the points were measured on {len(units)} GPUs, some sizes on several: units "
            "differ by more than one unit's interval, so one curve through them would "
            "claim too much; pool each size over its units with `ecocompute aggregate "
            "--units` (docs/units.md), or fit one GPU's reports (sweep --fit_only --reports)"
        )
        curve = CurveFit(status="skipped", reason=why)
    elif not used and left_out:
        why = (
            "no point has a figure (unavailable): nothing to fit"
            if all(r.delta_pct is None for r in ours)
            else "every point is derived from the published curve (published path), not "
            "measured: fitting them would only give back the published curve"
            if all(r.kind == "derived" for r in ours)
            else "no point is a measurement (derived or illustrative): nothing to fit"
        )
        curve = CurveFit(status="skipped", reason=why)
    elif "scipy" in missing or "numpy" in missing:
        why = "the fit needs numpy and scipy: pip install 'ecocompute[plot]', then run "
        why += "`ecocompute sweep --fit_only --output_dir` on this folder"
        curve = CurveFit(status="skipped", reason=why)
    else:
        curve = fit_points(points, **({} if n_boot is None else {"n_boot": n_boot}))
    return Fit.model_validate(
        {
            "precision": fmt,
            **format_label_field(label, fmt),
            "points": listed,
            "left_out": left_out,
            **{name: getattr(curve, name) for name in curve.model_fields_set},
            "published_curve": published_curve(arch, fmt, label),
        }
    )


def skipped_fit(
    fmt: str, label: str, arch: str | None, batches: Sequence[int], has_axis: bool
) -> Fit:
    """No size fit over several batch sizes; the reason points at what the sweep holds
    instead: its batch_axis, or its batch_axis_note where it has none."""
    return Fit(
        precision=fmt,  # a quantized format of the sweep
        **format_label_field(label, fmt),
        points=[],
        left_out=[],
        status="skipped",
        reason=f"the sweep is over several batch sizes ({', '.join(map(str, batches))}): the "
        "size curve is fitted at one batch size (sweep --fit_only --reports over one batch's "
        f"reports); see {'batch_axis' if has_axis else 'batch_axis_note'}",
        published_curve=published_curve(arch, fmt, label),
    )


def no_batch_axis_note(reports: Sequence[Report], batches: Sequence[int]) -> str:
    """The one line of a sweep over several batch sizes with no measured point: the
    published path has figures at batch 1 only."""
    others = [b for b in batches if b != 1]
    with_figure = sorted({r.batch_size for r in reports if r.delta_pct is not None})
    has = (
        f"derived figures exist at batch {', '.join(map(str, with_figure))} only"
        if with_figure
        else "no point has a figure"
    )
    return (
        "no batch axis: no format was measured here, and the published figures are all "
        f"batch 1 ({has}; batch {', '.join(map(str, others))}: basis unavailable, "
        "docs/published-figures.md)"
    )


def batch_axis(
    reports: Sequence[Report], output_dir: Path, formats: Sequence[str], n_boot: int | None
) -> list[BatchAxisEntry]:
    """Per model and format: the delta against the batch size, its crossover and the
    map in words. Only measured points (a derived figure does not depend on the batch)."""
    entries = []
    measured = [r for r in reports if r.measured and r.delta_pct is not None]
    for model in dict.fromkeys(r.model for r in reports):
        for fmt in formats:
            # one curve per format as tables name it: INT8 from torchao, or at another
            # outlier threshold, is never one line with LLM.int8()
            mine = [r for r in measured if (r.model, r.precision) == (model, fmt)]
            for label in dict.fromkeys(r.format_label for r in mine):
                points = [batch_point(r, output_dir) for r in mine if r.format_label == label]
                entries.append(axis_entry(model, label, points, n_boot))
    return entries


def point_phases(r: Report) -> PointPhases | None:
    """The phases of a point measured with them apart (None otherwise)."""
    phases = r.phases
    if phases is None:
        return None

    def delta(figure: PhaseFigure) -> PhaseDelta:
        ci = figure.vs_fp16_ci95_pct
        return PhaseDelta(
            delta_pct=figure.vs_fp16_energy_pct or 0.0,
            ci95_pct=None if ci is None else list(ci),
            verdict=figure.verdict,
        )

    return PointPhases(
        prompt_tokens=phases.workload.prompt_tokens,
        new_tokens=phases.workload.new_tokens,
        prefill=delta(phases.prefill),
        decode=delta(phases.decode),
        workload=delta(phases.workload),
        decided_by=phases.workload.decided_by,
    )


def batch_point(r: Report, output_dir: Path) -> BatchPoint:
    return BatchPoint(
        phases=point_phases(r),
        batch_size=r.batch_size,
        delta_pct=float(r.delta_pct or 0.0),
        ci95_pct=list(r.ci95_pct) if r.ci95_pct else None,
        n_pairs=r.n_pairs,
        interval_df=r.interval_df,
        verdict=r.verdict,
        report=relative(r.path, output_dir),
        throughput_tokens_per_s=r.throughput_tokens_per_s,
        fp16_throughput_tokens_per_s=r.fp16_throughput_tokens_per_s,
    )
