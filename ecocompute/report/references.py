"""A derived report's reference blocks: what gave its figure (this project's or the
site's curve, or the site's anchors at a measured size) and, for this project's own
figures, how they varied between units of the card (results.reference_*)."""

from __future__ import annotations

from collections.abc import Sequence

from ecocompute.formats.table import format_key
from ecocompute.params import RunParams
from ecocompute.published.curves import ORIGIN_PUBLISHED
from ecocompute.published.project import (
    UnitSpread,
    at_units_size,
    card_model_spread,
    project_measurements,
)
from ecocompute.published.site_curves import SITE_CURVES
from ecocompute.report.model import Software
from ecocompute.report.results_model import (
    ReferenceAnchorPoint,
    ReferenceAnchors,
    ReferenceCurve,
    ReferenceUnits,
)
from ecocompute.report.software import release
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.published_path import PublishedRun

EAGER_NOTE = (
    "the published figures are eager generate() measurements (the published protocol); "
    "no published figure covers the graphs or compiled regimes"
)


def published_decode_note(p: RunParams) -> str:
    """How a derived figure was decoded, and what the run asked of the workload that a
    published figure cannot follow (it was dropped without a word)."""
    words = EAGER_NOTE
    if p.prompt_tokens is not None:
        words += (
            f"; --prompt_tokens {p.prompt_tokens} was not applied: the published figures "
            "used the published protocol's prompt"
        )
    if p.phases == "apart":
        words += (
            "; --phases apart was not applied: the published figures are whole windows, "
            "prefill and decode together"
        )
    return words


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


def card_model_units(run: MeasuredRun, params_b: float | None) -> ReferenceUnits | None:
    """Beside a measured unit: how the same format's delta (as tables name it: INT8 is
    LLM.int8() at threshold 6) varied between this project's units of its card model in
    its regime, of its model, at its size, batch size and tokens per run, where the
    project measured that; None otherwise, for FP16 alone, for a run that sums several
    GPUs or mixes card models (the units were one GPU each), and for one that chose its
    prompt's length or measured its phases apart (the units' are the published prompt's
    whole windows)."""
    p, hw, spec = run.params, run.hardware, run.params.spec()
    one_gpu = all(len(g) == 1 for g in run.format_gpus.values())
    if p.precision == "FP16" or hw.gpu_name is None or hw.names != hw.gpu_name or not one_gpu:
        return None
    if p.prompt_tokens is not None or p.phases == "apart":
        return None
    u = card_model_spread(
        run.arch,
        format_key(spec.precision, spec.library, spec.llm_int8_threshold),  # not INT8-torchao
        str(run.decode.get("regime")),
        hw.gpu_name,
        p.model_name,
        params_b,
        p.batch_size,
        p.tokens,
        p.compile_notes,
    )
    return None if u is None else units_model(u)


def units_model(u: UnitSpread) -> ReferenceUnits:
    """The report's block of a between-unit spread: the same fields as
    published/project.py's UnitSpread, whose tuples become the model's lists, which is
    why the check is not strict here; compile notes only where there are some."""
    units = ReferenceUnits.model_validate(u, from_attributes=True, strict=False)
    return units if units.compile_notes else units.model_copy(update={"compile_notes": None})


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


def software_departures(arch: str, software: Software | None) -> list[str]:
    """Where a run's stack is not the one this project's units of the arch were measured
    with (project_measurements.software; every units' report ran it), each as the run's
    version: 'torch 2.13.0'; none where the run names no stack."""
    if software is None:
        return []
    theirs = (project_measurements(arch) or {}).get("software") or {}
    ours = {**(software.packages or {}), "python": software.python}
    ours |= {"torch_cuda": software.torch_cuda, "nvidia_driver": software.nvidia_driver}
    return [
        f"{name} {ours.get(name)}"
        for name, version in theirs.items()
        if release(ours.get(name))
        not in map(release, version if isinstance(version, list) else [version])
    ]


def beside_unit(
    units: ReferenceUnits,
    delta_pct: float,
    own_ci95: Sequence[float] | None,
    fp16_mj: float | None,
    software: Sequence[str] = (),
    idle_w: float | None = None,
) -> tuple[str, bool]:
    """Where a measured unit's own delta and FP16 energy lie among the units': the
    words, and whether either sets it apart from what the units gave (their prediction
    interval, else their pooled one; their FP16 prediction interval, where the block
    gives one: their FP16 range is stated, never a cause). The delta sets it apart only
    where its own 95% interval lies wholly outside theirs: the band is for a unit's true
    delta, and one session's eager interval can be +-10-30 points wide. Software: where
    the run's stack departs from the units' (software_departures), named as a cause.
    Idle power (this unit's GPUs' before the session): where its FP16 lies outside theirs
    on the side its idle power lies outside their idle range, and their FP16 energy rose
    with idle power (r from IDLE_R_FLOOR), named as a likely cause (docs/units.md: r 0.82
    over twelve H100s)."""
    where, (lo, hi) = units.band()
    side = _side(delta_pct, lo, hi)
    words = f"this unit's {delta_pct:+.1f}% lies {side} their {where}"
    outside = False
    if side != "inside":
        words += f" [{lo:+.1f}, {hi:+.1f}]"
        if own_ci95 is None:  # one pair: nothing to judge its point by
            words += ", with no interval of its own: it cannot be placed at this run's precision"
        else:
            outside = _side(own_ci95[0], lo, hi) == _side(own_ci95[1], lo, hi) == side
            reach = "wholly" if outside else "reaching into it:"
            words += f", its own interval [{own_ci95[0]:+.1f}, {own_ci95[1]:+.1f}] {reach}"
            if not outside:
                words += " not apart at this run's precision"
            else:
                words += f" {side}"
    pi = units.fp16_energy_per_token_mj_pi95
    fp16 = pi or units.fp16_energy_per_token_mj_range
    if fp16 is not None and fp16_mj is not None:
        place = _side(fp16_mj, *fp16)
        words += f", its FP16 ({fp16_mj:,.0f} mJ/token) {place} their FP16 "
        words += "prediction interval" if pi else "range"
        if place != "inside":
            words += f" [{fp16[0]:,.0f}, {fp16[1]:,.0f}]"
        # n units' bare range leaves out about 2 in n + 1 ordinary units: no cause by it
        outside = outside or (pi is not None and place != "inside")
    if outside:
        what = ", its host or its compile" if units.regime == "compiled" else " or its host"
        cause = f"something of this unit{what}"
        idle = _idle_words(units, idle_w, fp16_mj)
        if idle:
            cause = f"{idle} or something else of this unit{what}"
        if software:
            cause = f"its software ({', '.join(software)}: not the units') or {cause}"
        words += f"; {cause} sets it apart from them (docs/units.md)"
    return words, outside


IDLE_R_FLOOR = 0.7  # the units' correlation from which idle power is named as a cause


def _idle_words(units: ReferenceUnits, idle_w: float | None, fp16_mj: float | None) -> str:
    """Its idle power as the likely cause of an FP16 figure apart from the units': where
    both lie outside the units' on the side their correlation predicts; '' otherwise."""
    spread, r = units.idle_before_w_range, units.idle_fp16_energy_r
    fp16 = units.fp16_energy_per_token_mj_pi95
    if spread is None or r is None or fp16 is None or idle_w is None or fp16_mj is None:
        return ""
    idle_side, fp16_side = _side(idle_w, *spread), _side(fp16_mj, *fp16)
    if r < IDLE_R_FLOOR or idle_side == "inside" or idle_side != fp16_side:
        return ""
    return (
        f"its idle power before the session ({idle_w:.0f} W, {idle_side} their "
        f"{spread[0]:.0f}-{spread[1]:.0f} W, where their FP16 energy rose with idle power, r "
        f"{r:+.2f}: a warmer or leakier chip)"
    )


def units_disagreement(
    units: ReferenceUnits, delta_pct: float, params_b: float | None
) -> str | None:
    """Where a figure at the units' own size lies outside their pooled interval: a
    sentence that says so, since the figure and the units came from different sessions.
    The figure stands for the card model, so it is set beside the units' mean, not beside
    the interval for one unit not yet measured, which carries the spread between units
    (core/meta.py)."""
    if not at_units_size(units.params_b, params_b):
        return None
    lo, hi = units.ci95_pct
    side = _side(delta_pct, lo, hi)
    if side == "inside":
        return None
    return (
        f"At {params_b:g}B this figure ({delta_pct:+.1f}%) lies {side} the units' "
        f"pooled interval [{lo:+.1f}, {hi:+.1f}]: the figure and those units' measurements "
        f"disagree at this size, and that difference is part of how far the figure can "
        f"be trusted"
    )


def _side(value: float, lo: float, hi: float) -> str:
    return "below" if value < lo else ("above" if value > hi else "inside")
