"""Fitting the published curve's form, dE%(N) = A - S * x / (1 + x), x = N / Nstar, to one
card's own measured points, and the crossover size where dE% = 0.

The model is linear in (A, S) once Nstar is fixed, so the fit profiles Nstar over a log
grid, solving (A, S) by weighted least squares at each value, then refines the best
Nstar with scipy. Weights are 1/se^2, se being each point's standard error recovered
from its paired Student-t 95% interval. The crossover's uncertainty is a parametric
bootstrap: each point is redrawn from N(delta, se), the curve refitted, and the 2.5th
and 97.5th percentiles of the refitted crossovers taken. With three points the fit is
exactly determined (three parameters): the curve then passes through the points, its
shape is assumed rather than tested, and the interval carries only the points' own
measurement uncertainty. numpy and scipy are imported inside the functions; the fit is
sweep.json's CurveFit (sweeps/document.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ecocompute.core.stats import se_of_t_interval
from ecocompute.published.figures import delta_pct
from ecocompute.sweeps.document import (
    EXTRAPOLATED,
    NONE_IN_RANGE,
    WITHIN,
    CrossoverStatus,
    CurveFit,
    FitParameters,
    SizeCrossover,
)

# A crossover further than this factor outside the measured sizes is not claimed: the
# saturating form is an assumption, and extrapolating it far is guesswork.
EXTRAPOLATION_FACTOR = 2.0
# Nstar is searched over [smallest size / 100, largest size * 100].
NSTAR_SPAN = 100.0
NSTAR_GRID = 400
N_BOOT = 2000
SEED = 0
MIN_SIZES = 3
SE_FLOOR_PCT = 0.01  # a point whose pairs all agree must not get infinite weight

SIZE_DECIMALS = 4  # sizes in billions: 4 decimals ...
SIZE_DIGITS = 3  # ... or more, to keep at least this many significant digits


@dataclass(frozen=True)
class Point:
    """One measured delta: size in billions, percent vs FP16, its standard error."""

    params_b: float
    delta_pct: float
    se_pct: float | None
    label: str = ""


def round_size_b(size_b: float) -> float:
    """A size in billions to 4 decimals, or to SIZE_DIGITS significant digits where 4
    decimals would keep fewer (sizes below 0.01 B): 4 decimals alone turned an Nstar of
    1e-6 B (a fit at 0.0001 B) into 0, and the curve drawn from it divided by zero."""
    if size_b == 0 or not math.isfinite(size_b):
        return size_b
    digits = SIZE_DIGITS - 1 - math.floor(math.log10(abs(size_b)))
    return round(size_b, max(SIZE_DECIMALS, digits))


def se_from_ci(ci95: Sequence[float] | None, df: int | None) -> float | None:
    """Standard error of a paired mean delta from its Student-t 95% interval of df
    degrees of freedom (pairs - 1; compiles - 1 over --compiles N)."""
    se = se_of_t_interval(ci95, df)
    return None if se is None else max(se, SE_FLOOR_PCT)


def crossover_of(a_pct: float, s_pct: float, nstar_b: float) -> float | None:
    """N where A - S x/(1+x) = 0, i.e. x = A / (S - A); None where the curve never
    crosses zero at a positive size."""
    if s_pct == a_pct:
        return None
    x = a_pct / (s_pct - a_pct)
    return nstar_b * x if x > 0 else None


def _position(a: float, s: float, nstar: float, lo: float, hi: float) -> tuple[float, str | None]:
    """The crossover as a number on the extended line (for percentiles): itself when
    inside [lo, hi], +inf when it lies above hi, -inf below lo; with a phrase for why."""
    cross = crossover_of(a, s, nstar)
    if cross is not None and lo <= cross <= hi:
        return cross, None
    d_lo, d_hi = delta_pct(lo, a, s, nstar), delta_pct(hi, a, s, nstar)
    decreasing = d_lo >= d_hi
    costs = d_hi > 0 if decreasing else d_lo > 0
    above = costs == decreasing
    words = "costs energy" if costs else "saves energy"
    return (math.inf if above else -math.inf), f"the fitted curve {words} across the range"


def _profile(n: Any, y: Any, w: Any, nstars: Any) -> tuple[Any, Any, Any]:
    """(A, S, chi2) for each Nstar in nstars; y may carry leading batch dimensions."""
    import numpy as np

    g = n[None, :] / nstars[:, None]
    g = g / (1.0 + g)  # (K, P)
    yb = y[..., None, :]  # (..., 1, P)
    sw = w.sum()
    sg = (w * g).sum(-1)
    sgg = (w * g * g).sum(-1)
    sy = (w * yb).sum(-1)
    sgy = (w * g * yb).sum(-1)
    det = sw * sgg - sg**2
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (sy * sgg - sg * sgy) / det
        s = (sg * sy - sw * sgy) / det
    resid = yb - (a[..., None] - s[..., None] * g)
    chi2 = (w * resid**2).sum(-1)
    chi2 = np.where(np.isfinite(chi2), chi2, np.inf)
    return a, s, chi2


def fit_points(points: Sequence[Point], *, n_boot: int = N_BOOT, seed: int = SEED) -> CurveFit:
    """Fit the curve to points and locate the crossover: a fitted CurveFit, or a skipped
    one with the reason."""
    sizes = sorted({p.params_b for p in points})
    if len(sizes) < MIN_SIZES:
        return CurveFit(
            status="skipped",
            reason=f"the curve has 3 parameters and needs points at {MIN_SIZES} or more "
            f"sizes; got {len(sizes)}",
            n_points=len(points),
        )
    import numpy as np
    from scipy.optimize import minimize_scalar

    n = np.array([p.params_b for p in points], dtype=float)
    y = np.array([p.delta_pct for p in points], dtype=float)
    weighted = all(p.se_pct is not None for p in points)
    se = np.array([p.se_pct if weighted else 1.0 for p in points], dtype=float)
    w = 1.0 / se**2
    lo_n, hi_n = min(sizes), max(sizes)
    log_bounds = (math.log(lo_n / NSTAR_SPAN), math.log(hi_n * NSTAR_SPAN))
    grid = np.exp(np.linspace(*log_bounds, NSTAR_GRID))
    _, _, chi_k = _profile(n, y, w, grid)
    k = int(np.argmin(chi_k))

    def chi2_at(log_nstar: float) -> float:
        _, _, chi = _profile(n, y, w, np.array([math.exp(log_nstar)]))
        return float(chi[0])

    step = (log_bounds[1] - log_bounds[0]) / (NSTAR_GRID - 1)
    lo_b = max(log_bounds[0], math.log(grid[k]) - step)
    hi_b = min(log_bounds[1], math.log(grid[k]) + step)
    best = minimize_scalar(chi2_at, bounds=(lo_b, hi_b), method="bounded")
    nstar = math.exp(float(best.x)) if best.fun <= chi_k[k] else float(grid[k])
    a_arr, s_arr, chi_arr = _profile(n, y, w, np.array([nstar]))
    a, s, chi2 = float(a_arr[0]), float(s_arr[0]), float(chi_arr[0])
    dof = len(points) - 3
    at_bound = nstar <= grid[0] * 1.001 or nstar >= grid[-1] / 1.001

    search = (lo_n / EXTRAPOLATION_FACTOR, hi_n * EXTRAPOLATION_FACTOR)
    crossover = _crossover(a, s, nstar, (lo_n, hi_n), search)
    crossover = _bootstrap(crossover, n, y, se, w, grid, search, weighted, n_boot, seed)
    return CurveFit(
        status="fitted",
        formula="dE%(N) = A - S * x / (1 + x), x = N / Nstar, N in billions of parameters",
        parameters=FitParameters(A=round(a, 4), S=round(s, 4), Nstar=round_size_b(nstar)),
        n_points=len(points),
        dof=dof,
        chi2=round(chi2, 4),
        reduced_chi2=round(chi2 / dof, 4) if dof > 0 and weighted else None,
        weighting="1/se^2, se from each point's paired Student-t 95% interval"
        if weighted
        else "uniform",
        measured_range_b=[lo_n, hi_n],
        crossover=crossover,
        notes=_notes(dof, at_bound, weighted),
    )


def _crossover(
    a: float,
    s: float,
    nstar: float,
    measured: tuple[float, float],
    search: tuple[float, float],
) -> SizeCrossover:
    """Where the fitted curve crosses zero: inside the measured sizes, a little outside
    them (extrapolated), or nowhere in the search range (and on which side)."""
    lo_n, hi_n = measured
    value, why_none = _position(a, s, nstar, *search)
    status: CrossoverStatus
    if why_none is None:
        status = WITHIN if lo_n <= value <= hi_n else EXTRAPOLATED
    else:
        status = NONE_IN_RANGE
    crossover = SizeCrossover(
        status=status,
        params_b=round_size_b(value) if why_none is None else None,
        search_range_b=[round_size_b(search[0]), round_size_b(search[1])],
        search_range_rule=f"measured sizes extended by a factor of {EXTRAPOLATION_FACTOR:g} "
        "each way; a crossover beyond is not claimed",
    )
    if why_none is None:
        return crossover
    side = "above" if value > 0 else "below"
    beyond = crossover_of(a, s, nstar)
    return crossover.model_copy(
        update={
            "note": f"no crossover in {search[0]:g}-{search[1]:g}B: {why_none}; "
            f"any crossover lies {side} this range",
            "fitted_curve_crossover_b": None if beyond is None else round_size_b(beyond),
        }
    )


def _notes(dof: int, at_bound: bool, weighted: bool) -> list[str]:
    """What a reader must know about the fit's strength."""
    notes = []
    if dof == 0:
        notes.append(
            "3 points, 3 parameters: the fit is exactly determined, so the curve passes "
            "through the points; its shape is assumed, not tested, and the crossover "
            "interval carries only the points' own measurement uncertainty"
        )
    if at_bound:
        notes.append(
            "Nstar sits at the edge of its search range: the points do not pin down the "
            "curve's bend, only its values near them"
        )
    if not weighted:
        notes.append("unweighted: at least one point has no confidence interval")
    return notes


def _bootstrap(
    crossover: SizeCrossover,
    n: Any,
    y: Any,
    se: Any,
    w: Any,
    grid: Any,
    search: tuple[float, float],
    weighted: bool,
    n_boot: int,
    seed: int,
) -> SizeCrossover:
    """The crossover with its 95% interval, by parametric bootstrap over the points' own
    CIs."""
    if not weighted:
        why = "unavailable: a point without a confidence interval gives the bootstrap "
        why += "nothing to redraw it from"
        return crossover.model_copy(update={"ci95_b": None, "ci_method": None, "ci_note": why})
    import numpy as np

    rng = np.random.default_rng(seed)
    draws = y[None, :] + se[None, :] * rng.standard_normal((n_boot, len(y)))
    a_bk, s_bk, chi_bk = _profile(n, draws, w, grid)
    best = np.argmin(chi_bk, axis=-1)
    rows = np.arange(n_boot)
    a_b, s_b, nstar_b = a_bk[rows, best], s_bk[rows, best], grid[best]
    values = np.array(
        [_position(float(a_b[i]), float(s_b[i]), float(nstar_b[i]), *search)[0] for i in rows]
    )
    values.sort()
    lo = values[math.floor(0.025 * (n_boot - 1))]
    hi = values[math.ceil(0.975 * (n_boot - 1))]
    inside = float(np.isfinite(values).mean())

    def bound(v: float) -> float | None:
        return round_size_b(float(v)) if math.isfinite(v) else None

    note = [
        f"the {name} bound lies {'above' if v > 0 else 'below'} the search range"
        for name, v in (("lower", lo), ("upper", hi))
        if not math.isfinite(v)
    ]
    return crossover.model_copy(
        update={
            "ci95_b": [bound(lo), bound(hi)],
            "ci_method": f"parametric bootstrap: {n_boot} redraws of every point from "
            f"N(delta, se), refitted, 2.5th-97.5th percentile (seed {seed})",
            "ci_note": "; ".join(note) + ("; null bound = beyond the search range" if note else ""),
            "resamples_crossing_in_range": round(inside, 4),
        }
    )
