"""The checks of a report without trials: one derived from the published figures (its
delta from its two energies, and from the curve, size and basis it names, or, naming
none, from a curve the published figures have had), and the published container's
single measured run (its totals against its figures). report/checks.py holds the rest.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from decimal import Decimal

from ecocompute.published.curves import Anchors, delta_pct
from ecocompute.published.project import at_units_size
from ecocompute.report.labels import format_label
from ecocompute.report.model import Report
from ecocompute.report.results_model import ReferenceUnits, Results


def close(a: float, b: float, absolute: float, relative: float) -> bool:
    return abs(a - b) <= absolute + relative * max(abs(a), abs(b)) + 1e-12


def decimals_of(value: float) -> int:
    """The decimal places a figure is written to, in exponent form too (1e-05: 5)."""
    text = repr(float(value))
    if "e" not in text:  # "12.50" is never written: repr gives the shortest, "12.5"
        point = text.find(".")
        return 0 if point < 0 else len(text) - point - 1  # "inf", "nan": none
    exponent = Decimal(text).as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


# -- a derived report ---------------------------------------------------------------------


def _as_written(value: float) -> tuple[float, float]:
    """The interval a figure stands for: itself, give or take half of its last written
    decimal (a whole number: half a unit)."""
    places = 0 if float(value).is_integer() else decimals_of(value)
    half = 0.5 * 10.0**-places
    return value - half, value + half


def run_totals_problems(res: Results, sample_rate_hz: int) -> list[str]:
    """A published-format measured report (one run, no trials): its energy per token is
    its total energy over its tokens, within the rounding of the figures. Its power is
    the mean of its samples while the total integrates them, and its throughput counts
    the wall time (tokens / throughput) while its sampler, started and stopped beside the
    run, spans a little less (the published container's own file falls 0.21 s short
    over 94 s): the time its energy and power imply may fall short of the wall time by
    two sample periods and 0.5% of it, and exceed it by 0.5%, beyond their rounding."""
    total, n = res.total_energy_joules, res.tokens_generated
    if total is None or not n:
        return []
    problems = []
    t_lo, t_hi = _as_written(total)
    e = res.energy_per_token_mj
    if e is not None:
        e_lo, e_hi = _as_written(e)
        if not (e_lo <= t_hi * 1000.0 / n + 1e-9 and t_lo * 1000.0 / n <= e_hi + 1e-9):
            problems.append(
                f"$.results.energy_per_token_mj: {e:g} mJ/token, but its total "
                f"{total:g} J over {n} tokens is {total * 1000.0 / n:.3f}"
            )
    p, thr = res.avg_power_watts, res.throughput_tokens_per_s
    if p is not None and thr is not None and thr > 0:
        (p_lo, p_hi), (r_lo, r_hi) = _as_written(p), _as_written(thr)
        sampled_lo = max(t_lo, 0.0) / p_hi if p_hi > 0 else math.inf
        sampled_hi = t_hi / p_lo if p_lo > 0 else math.inf
        wall_lo, wall_hi = n / r_hi, (n / r_lo if r_lo > 0 else math.inf)
        short_s = 2.0 / sample_rate_hz + 0.005 * wall_hi
        if not (sampled_hi >= wall_lo - short_s and sampled_lo <= wall_hi * 1.005):
            problems.append(
                f"$.results.avg_power_watts: {p:g} W, but its total {total:g} J over "
                f"{n} tokens at {thr:g} tokens/s ({n / thr:.3f} s) is {total * thr / n:.3f} W"
            )
    return problems


def derived_problems(report: Report, exact: bool) -> list[str]:
    res = report.results
    problems = [
        f"$.results.{name}: {getattr(res, name)!r} in a report derived from the published "
        "dataset, which ran no trials (expected null)"
        for name in ("vs_fp16_ci95_pct", "n_pairs", "total_energy_joules")
        if getattr(res, name) is not None
    ]
    problems += [
        f"$.results.{name}: present in a report derived from the published dataset, "
        "which ran no trials"
        for name in ("trials", "pairs", "per_format")
        if getattr(res, name)
    ]
    figures = ("vs_fp16_energy_pct", "vs_fp16_energy_pct_exact", "energy_per_token_mj")
    if res.basis == "unavailable":
        problems += [
            f"$.results.{name}: {getattr(res, name)!r}, but basis 'unavailable' has no figure "
            "(expected null)"
            for name in figures
            if getattr(res, name) is not None
        ]
    return (
        problems
        + delta_from_energies(res, exact)
        + curve_problems(report, exact)
        + unnamed_curve_problems(report)
        + unnamed_fp16_problems(report)
        + (anchor_problems(report) if exact else [])
        + anchors_problems(report, exact)
        + units_problems(report)
    )


def units_problems(report: Report) -> list[str]:
    """A between-unit spread stands beside a figure of the same format from the same
    card's measurements, and its intervals hold its pooled delta; a spread of the regime
    asked for (regime_units) is of that regime, size and batch size."""
    res, work = report.results, report.workload
    problems = []
    u = res.reference_units
    if u is not None:
        where = "$.results.reference_units"
        if res.vs_fp16_energy_pct is None:
            problems.append(f"{where}: present, but the report claims no delta vs FP16")
        if u.card != res.reference_card:
            problems.append(f"{where}.card: {u.card!r}, but the figure is {res.reference_card!r}'s")
        if u.compile_notes:  # beside the eager figures: no compile at all
            problems.append(f"{where}.compile_notes: {u.compile_notes}, beside an eager figure")
        problems += _spread_problems(u, where, work.precision)
    r = res.regime_units
    if r is not None:
        where = "$.results.regime_units"
        decode = report.measurement.decode
        asked = decode.requested_regime
        if r.regime != asked:
            problems.append(f"{where}.regime: {r.regime!r}, but the run asked for {asked!r}")
        notes = decode.requested_compile_notes or []
        if notes and asked != "compiled":
            problems.append(f"$.measurement.decode.requested_compile_notes: {notes}, no compile")
        if (r.compile_notes or []) != notes:  # another compile is another regime
            problems.append(
                f"{where}.compile_notes: {r.compile_notes or []}, but the run asked for a "
                f"compile that departs from the regime's own by {notes}"
            )
        problems += _size_problems(r, where, report) + _spread_problems(r, where, work.precision)
    return problems


def measured_units_problems(report: Report) -> list[str]:
    """Beside a measured unit, the card model's units are of its card model (one card,
    one GPU a format), its regime, size, batch size and tokens per run, and of its
    format as tables name it (INT8-torchao, or LLM.int8() at another threshold, is not
    the units' INT8)."""
    u, work = report.results.reference_units, report.workload
    if u is None:
        return []
    label = format_label(report)
    where = "$.results.reference_units"
    problems = []
    names = {g.name for g in report.system_under_test.gpus}
    card = names.pop() if len(names) == 1 else None
    if card != u.card:  # an H200 NVL is not the units' H200
        problems.append(
            f"{where}.card: {u.card!r}, but the run measured {report.system_under_test.gpu!r}"
        )
    if any(len(s.nvml_indices) != 1 for s in report.results.per_format.values()):
        problems.append(f"{where}: units of one GPU each, but the run sums several per format")
    decode = report.measurement.decode
    if u.regime != decode.regime:
        problems.append(f"{where}.regime: {u.regime!r}, but the run decoded {decode.regime!r}")
    compiled = () if decode.compiler is None else decode.compiler.notes()
    if tuple(u.compile_notes or ()) != compiled:  # another compile is another regime
        problems.append(
            f"{where}.compile_notes: {list(u.compile_notes or ())}, but the run's compile "
            f"departed from the regime's own by {list(compiled)}"
        )
    if u.model_name != work.model_name:
        problems.append(
            f"{where}.model_name: {u.model_name!r}, but the run measured {work.model_name!r}"
        )
    if work.prompt_source == "prompt_tokens" or decode.phases == "apart":
        problems.append(
            f"{where}: units of the published prompt in whole windows, but the run chose "
            f"its prompt's length or measured its phases apart"
        )
    if u.tokens_per_run != work.max_new_tokens:  # a run's delta moves with its length
        problems.append(
            f"{where}.tokens_per_run: {u.tokens_per_run}, but the run decoded "
            f"{work.max_new_tokens} tokens a run"
        )
    return problems + _size_problems(u, where, report) + _spread_problems(u, where, label)


def _size_problems(u: ReferenceUnits, where: str, report: Report) -> list[str]:
    """Units of a run's own workload (reference_units beside a measured unit, regime_units
    beside a derived figure) are of its size and batch size."""
    work = report.workload
    if u.batch_size == work.batch_size and at_units_size(u.params_b, work.params_b):
        return []
    return [
        f"{where}: measured at {u.params_b:g}B batch {u.batch_size}, but the report is of "
        f"{work.params_b}B batch {work.batch_size}"
    ]


def _spread_problems(u: ReferenceUnits, where: str, precision: str) -> list[str]:
    problems = []
    if u.precision != precision:
        problems.append(f"{where}.precision: {u.precision!r}, but the report is of {precision}")
    for name in ("fp16_energy_per_token_mj_range", "fp16_energy_per_token_mj_pi95"):
        fp16 = getattr(u, name)
        if fp16 is not None and not 0 < fp16[0] <= fp16[1]:
            problems.append(f"{where}.{name}: {fp16} is no range of energies")
    upper = u.between_unit_sd_upper_pts
    if upper is not None and upper < u.between_unit_sd_pts:
        problems.append(
            f"{where}.between_unit_sd_upper_pts: {upper:g} lies below between_unit_sd_pts "
            f"{u.between_unit_sd_pts:g}, the spread it bounds"
        )
    if upper is not None and u.n_units < 3:
        problems.append(f"{where}.between_unit_sd_upper_pts: two units bound no spread")
    intervals = {"ci95_pct": u.ci95_pct, "pi95_pct": u.pi95_pct}
    for name, interval in intervals.items():
        if interval is None:
            continue  # no prediction interval: fewer than three units
        lo, hi = interval
        if not lo <= u.pooled_pct <= hi:
            problems.append(
                f"{where}.{name}: [{lo:g}, {hi:g}] does not hold pooled_pct {u.pooled_pct:g}"
            )
    return problems


def anchors_problems(report: Report, exact: bool) -> list[str]:
    """A derived figure at a measured size: its delta is the mean of the anchors it names,
    at the report's size, with no curve beside it, and its band holds the mean."""
    res, work = report.results, report.workload
    a = res.reference_anchors
    if a is None:
        return []
    problems = []
    if res.reference_curve is not None:
        problems.append(
            "$.results.reference_anchors: a figure from the anchors names no curve as well"
        )
    if work.params_b is None or abs(a.params_b - work.params_b) > 1e-6:
        problems.append(
            f"$.results.reference_anchors.params_b: {a.params_b:g}B, but the report is for "
            f"{work.params_b}B"
        )
    mean = sum(pt.delta_pct for pt in a.points) / len(a.points)
    said = res.vs_fp16_energy_pct_exact
    if said is not None and not close(said, mean, 0.0 if exact else 0.0005, 1e-9):
        problems.append(
            f"$.results.vs_fp16_energy_pct_exact: {said:g}%, but the mean of its anchors is "
            f"{mean:.3f}%"
        )
    if not a.band_pct[0] <= mean <= a.band_pct[1]:
        problems.append(
            f"$.results.reference_anchors.band_pct: {a.band_pct} does not hold {mean:g}%"
        )
    return problems


def anchor_problems(report: Report) -> list[str]:
    """A derived report of this tool's format 2.0 says "interpolated" only where its FP16
    figure is too: its size inside the measured range of FP16 anchors of its own arch
    class (published/figures.py). The FP16 figure itself is not held to today's anchors:
    a report derived from an older version of them (which names none) stands, as one
    derived from an older curve does."""
    from ecocompute.published.figures import anchors_for

    res, work, arch = report.results, report.workload, report.system_under_test.gpu_arch
    anchors = anchors_for(arch)
    if res.basis != "interpolated" or work.params_b is None or anchors is None:
        return []
    own = anchors.arch == arch
    if own and anchors.covers(work.params_b):
        return []
    lo, hi = anchors.range_b
    where = f"outside the FP16 anchors' range {lo:g}..{hi:g}B" if own else "borrowed"
    return [
        f"$.results.basis: 'interpolated', but its FP16 figure at {work.params_b:g}B is "
        f"{where} ({anchors.arch}'s)"
    ]


def delta_from_energies(res: Results, exact: bool) -> list[str]:
    """Without trials, the delta follows from the two energies; none from an FP16 energy
    of 0 or less."""
    e, f = res.energy_per_token_mj, res.fp16_energy_per_token_mj
    stated = res.vs_fp16_energy_pct is not None or res.vs_fp16_energy_pct_exact is not None
    if f is not None and f <= 0 and stated:
        return [
            f"$.results.fp16_energy_per_token_mj: {f:g} mJ/token, but the report states a "
            "delta vs FP16, which no FP16 energy of 0 or less gives"
        ]
    if e is None or f is None or f <= 0:
        return []
    truth = (e / f - 1.0) * 100.0
    if not math.isfinite(truth):
        return [f"$.results.energy_per_token_mj: {e:g} against FP16 {f:g} mJ/token: no delta"]
    problems = []
    for name, decimals in (("vs_fp16_energy_pct_exact", None), ("vs_fp16_energy_pct", 1)):
        said = getattr(res, name)
        if said is None:
            continue
        half = 0.05 if decimals == 1 else 0.0
        # the energies' rounding (0.05% of each) moves the delta by 0.05 * (e / f + 1) points
        tol = 0.05 * (e / f + 1.0) if not exact else 1e-9 * max(1.0, abs(truth))
        if not abs(said - truth) <= half + tol + 1e-9:
            given = f"{truth:.3f}" if abs(truth) < 1e9 else f"{truth:.3g}"
            problems.append(
                f"$.results.{name}: {said:g}%, but its energies ({e:g} vs FP16 {f:g} mJ/token) "
                f"give {given}%"
            )
    return problems


def curve_problems(report: Report, exact: bool) -> list[str]:
    """A derived figure from a curve: the delta is the curve's at the report's size, its
    basis says whether that size lies inside the range the curve was fitted over, and
    the curve is of the report's arch class (or borrowed, and said so)."""
    res, work = report.results, report.workload
    c = res.reference_curve
    if c is None or res.vs_fp16_energy_pct_exact is None or work.params_b is None:
        return []
    curve = c.delta_curve()
    problems = []
    truth = curve.delta_pct(work.params_b)
    if not close(res.vs_fp16_energy_pct_exact, truth, 0.0 if exact else 0.0005, 1e-9):
        problems.append(
            f"$.results.vs_fp16_energy_pct_exact: {res.vs_fp16_energy_pct_exact:g}%, but its "
            f"curve gives {truth:.3f}% at {work.params_b:g}B"
        )
    lo, hi = c.fitted_range_b
    inside = lo <= work.params_b <= hi and c.borrowed_from is None
    if res.basis == "interpolated" and not inside:
        problems.append(
            f"$.results.basis: 'interpolated', but {work.params_b:g}B lies outside the curve's "
            f"fitted range {lo:g}..{hi:g}B" + (" (a borrowed curve)" if c.borrowed_from else "")
        )
    if c.borrowed_from is None and c.arch != report.system_under_test.gpu_arch:
        problems.append(
            f"$.results.reference_curve.arch: {c.arch!r}, but the report is for "
            f"{report.system_under_test.gpu_arch!r} and says no curve was borrowed"
        )
    if c.borrowed_from is not None and c.borrowed_from != c.arch:
        problems.append(
            f"$.results.reference_curve.borrowed_from: {c.borrowed_from!r}, but the curve is "
            f"{c.arch!r}'s"
        )
    if c.precision != work.precision:
        problems.append(
            f"$.results.reference_curve.precision: {c.precision!r}, but the report is of "
            f"{work.precision}"
        )
    # A curve of another version than those known here may be named (an older
    # curves.json: its own parameters); one known here is named with its own range.
    shape = (c.A, c.S, c.Nstar)
    known = [k for k in known_parameters(c.arch, c.precision) if _same(k[:3], shape)]
    if known and not any(_same(k[3], (lo, hi)) for k in known):
        ranges = ", ".join(f"{k[3][0]:g}..{k[3][1]:g}B" for k in known)
        problems.append(
            f"$.results.reference_curve.fitted_range_b: {lo:g}..{hi:g}B, but the {c.arch} "
            f"{c.precision} curve of those parameters was fitted over {ranges}"
        )
    return problems


Curve = tuple[float, float, float, tuple[float, float]]  # A, S, Nstar, fitted range (B)


def _same(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return all(close(x, y, 0.0, 1e-9) for x, y in zip(a, b, strict=True))


def known_parameters(arch: str, precision: str) -> list[Curve]:
    """Every curve the published figures and this tool have used for an arch class and
    format, as (A, S, Nstar, fitted range): the site's own (today's curves.json), this
    project's own fit (Hopper), the site's curve it superseded and this project's
    earlier refit (data/published_reference.json). A new curves.json must keep the curve
    it replaces there (superseded_curves), or the reports derived from it read as invalid."""
    from ecocompute.published.project import project_curve_for
    from ecocompute.published.reference_data import published
    from ecocompute.published.site_curves import site_curve

    out: list[Curve] = []
    for curve in (site_curve(arch, precision), project_curve_for(arch, precision)):
        if curve is not None:
            out.append((curve.a_pct, curve.s_pct, curve.nstar_b, curve.fitted_range_b))
    reference = published()
    for kind in ("superseded_curves", "comparison_curves"):
        old = reference.get(kind, {}).get(arch, {}).get(precision)
        if isinstance(old, dict):
            lo, hi = old["fitted_range_b"]
            out.append((float(old["A"]), float(old["S"]), float(old["Nstar"]), (lo, hi)))
    return out


# How far a published-format figure (written to 1 decimal) may lie from a known curve's.
UNNAMED_CURVE_TOLERANCE_PTS = 0.15


def unnamed_curve_problems(report: Report) -> list[str]:
    """A derived report that names no curve (the published container's 1.0 and 1.1): its
    delta must be the figure of a curve the published figures have had for its arch
    class and format (the site's today, or one it superseded) at its size, and
    "interpolated" only where its size lies inside a range such a curve was fitted
    over. Which of them the writer used is not said, so any one of them stands."""
    res, work, arch = report.results, report.workload, report.system_under_test.gpu_arch
    said = res.vs_fp16_energy_pct_exact
    said = res.vs_fp16_energy_pct if said is None else said
    if res.reference_curve is not None or res.reference_anchors is not None:
        return []  # a named curve is checked against itself; the anchors' mean above
    n = report.figure_params_b  # the container's own where it records none
    if said is None or n is None:
        return []
    curves = known_curves(arch, work.precision)
    if not curves:
        return []
    figures = [figure(n) for figure, _ in curves]
    problems = []
    if not any(abs(said - f) <= UNNAMED_CURVE_TOLERANCE_PTS for f in figures):
        shown = ", ".join(sorted({f"{f:+.1f}%" for f in figures}))
        problems.append(
            f"$.results.vs_fp16_energy_pct: {said:g}%, but the published {arch} "
            f"{work.precision} curves give {shown} at {n:g}B"
        )
    inside = any(lo <= n <= hi for _, (lo, hi) in curves)
    if res.basis == "interpolated" and not inside:
        ranges = ", ".join(sorted({f"{lo:g}..{hi:g}B" for _, (lo, hi) in curves}))
        problems.append(
            f"$.results.basis: 'interpolated', but {n:g}B lies outside every range the "
            f"published {arch} {work.precision} curves were fitted over ({ranges})"
        )
    return problems


def unnamed_fp16_problems(report: Report) -> list[str]:
    """The published container's derived figure: its FP16 energy is, within its rounding,
    the FP16 anchors' at its size (log-log between them, as it derives it) of a set the
    published figures have had for its arch class: the site's today, or the one card's
    of the main dataset that its own copy holds (Ada's RTX 4090D)."""
    from ecocompute.published.reference_data import published
    from ecocompute.published.site_curves import site_anchors

    f, n, arch = (
        report.results.fp16_energy_per_token_mj,
        report.figure_params_b,
        report.system_under_test.gpu_arch,
    )
    if report.ours or f is None or n is None:
        return []
    sets = [site_anchors(arch)]
    card = published()["card_fp16_anchors"].get(arch)
    if card is not None:
        points = tuple((float(size), float(e)) for size, e in card["points"])
        sets.append(Anchors(arch, str(card["card"]), points))
    figures = [a.energy_per_token_mj(n) for a in sets if a is not None]
    lo, hi = _as_written(f)
    if not figures or any(lo - 1e-9 * e <= e <= hi + 1e-9 * e for e in figures):
        return []
    shown = ", ".join(sorted({f"{e:.2f}" for e in figures}))
    return [
        f"$.results.fp16_energy_per_token_mj: {f:g} mJ/token, but the published {arch} FP16 "
        f"anchors give {shown} at {n:g}B"
    ]


def known_curves(
    arch: str, precision: str
) -> list[tuple[Callable[[float], float], tuple[float, float]]]:
    """(its figure at a size, its fitted range) of every curve a derived report that
    names none may have followed (known_parameters, the site's own also capped as the
    site caps it); never a borrowed one."""
    from ecocompute.published.site_curves import site_curve

    out: list[tuple[Callable[[float], float], tuple[float, float]]] = []
    site = site_curve(arch, precision)
    if site is not None:
        out.append((site.delta_pct, site.fitted_range_b))
    for a, s, nstar, fitted in known_parameters(arch, precision):
        out.append((functools.partial(delta_pct, a_pct=a, s_pct=s, nstar_b=nstar), fitted))
    return out
