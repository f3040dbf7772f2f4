"""Pooling estimates of several units by a random-effects model (a meta-analysis).

Each unit i gives an estimate y_i (a paired delta, in percent) with its own sampling
variance v_i (its standard error squared). The model: y_i = mu + u_i + e_i, with u_i ~
N(0, tau^2) the unit's own departure from the card model's mean and e_i ~ N(0, v_i).

- tau^2 by restricted maximum likelihood (REML), the estimator the methods literature
  recommends over DerSimonian-Laird for few units (Viechtbauer 2005; Langan et al.
  2019), found by the fixed-point iteration of the REML estimating equation
  tau^2 = sum w_i^2 ((y_i - mu)^2 - v_i) / sum w_i^2 + 1 / sum w_i, w_i = 1/(v_i+tau^2),
  checked against a direct search of the restricted likelihood (the iteration can settle
  on the lower of two peaks, or not settle); DerSimonian-Laird's moment estimator is
  given too.
- mu = sum w_i y_i / sum w_i, with its standard error 1/sqrt(sum w_i) (the classic
  random-effects SE) and the Hartung-Knapp-Sidik-Jonkman SE,
  sqrt(sum w_i (y_i - mu)^2 / ((k - 1) sum w_i)). The interval uses Student t on k - 1
  degrees of freedom (IntHout et al. 2014: the z interval is too narrow for few units)
  with the larger of the two SEs, the modified Hartung-Knapp interval (Roever, Knapp and
  Friede 2015): HKSJ alone shrinks with the units' agreement, however noisy each is, so
  two compiles whose means happened to agree gave a zero-width interval and a verdict.
  floor=False gives HKSJ alone, as reports of compiles before 2026-12-05 were derived.
- tau^2's 95% confidence interval by the Q-profile method (Viechtbauer 2007, Stat. Med.
  26(1)): the tau^2 at which the generalised Q statistic, sum (y_i - mu)^2 / (v_i +
  tau^2), equals chi-square(k - 1)'s 97.5% and 2.5% quantiles; an end is 0 where Q at
  tau^2 = 0 already lies below its quantile. Its lower end at 0 is what "no between-unit
  spread detectable" means: the units' own errors cover their scatter.
- The 95% prediction interval for a unit not yet measured, from three units, by a
  variant of the confidence-distribution method of Nagashima, Noma and Furukawa (2019,
  Stat. Methods Med. Res. 28(6)), which draws tau^2 through Cochran's Q's exact
  distribution and uses the plain Hartung-Knapp SE; here the Q-profile's pivot and the
  floored SE of the pooled interval (docs/units.md says what each changes): a new unit's
  true delta is mu + tau z + se t (z standard normal, t Student t on k - 1, se the
  interval's SE at that tau^2), with tau^2 drawn from its confidence distribution,
  H(tau^2) = P(chi-square(k - 1) > Q(tau^2)) (the Q-profile's; a mass H(0), the
  heterogeneity test's p-value, at 0), and the interval is the draws' 2.5% and 97.5%
  points: 200 strata of tau^2 by 50 normal and t draws from a fixed seed, the same for
  every pool of k units, so that one pool always gives one interval (their Monte Carlo
  error, 2-3% of the half-width, is the same every time). The classic interval, mu +-
  t(k - 2) sqrt(tau^2 + SE^2) (Higgins, Thompson and Spiegelhalter 2009), takes REML's
  tau^2 as known, and REML gives 0 whenever the units scatter less than their own errors
  say, which a handful of units of 3 rounds often do: five H100 units (compiled, default
  mode) then gave NF4 a new unit [-27.2, -26.6] and INT4 [-42.9, -42.5], and of the next
  three units two NF4 and all three INT4 estimates fell outside, one (INT4 -43.5%
  [-43.7, -43.2]) wholly (docs/validation/h100-compile-mode, a sixteenth session).
  Simulated coverage of both: benchmarks/pi_coverage.py,
  docs/validation/pi-coverage.txt.

Checked against the published worked example of Viechtbauer (2010, J. Stat. Softw.
36(3), the BCG vaccine trials; tests/pooling/test_units.py). Pure functions on plain numbers.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ecocompute.core.stats import CONFIDENCE, chi2_quantile, t_quantile

Z_975 = 1.959963984540054  # the standard normal's 97.5% quantile
MAX_ITERATIONS = 500
TOLERANCE = 1e-12
GRID_POINTS = 120  # of the direct search for the likelihood's highest point
LIKELIHOOD_SLACK = 1e-9  # a higher peak than the fixed point's: by more than rounding


@dataclass(frozen=True)
class RandomEffects:
    """The pooled estimate of k units (their means y_i, variances v_i). With k == 1,
    tau2 is 0.0 by convention, not a measurement: one unit measures no spread between
    units (read k; the renderings say so)."""

    k: int
    mu: float
    tau2: float  # between-unit variance (REML unless method says otherwise)
    se: float  # the classic random-effects SE of mu, 1/sqrt(sum w)
    se_hksj: float | None  # the Hartung-Knapp-Sidik-Jonkman SE (k >= 2)
    se_interval: float | None  # what the intervals use: max(se, se_hksj), or se_hksj unfloored
    ci95: tuple[float, float] | None  # mu +- t(k-1) se_interval (k >= 2)
    pi95: tuple[float, float] | None  # for a new unit (k >= 3; the module's docstring)
    q: float  # Cochran's Q (heterogeneity), with the inverse-variance weights
    i2_pct: float | None  # the share of the total variance that lies between units
    method: str
    tau2_ci95: tuple[float, float] | None = None  # Q-profile (k >= 2)

    @property
    def tau(self) -> float:
        return math.sqrt(self.tau2)

    @property
    def spread_detected(self) -> bool:
        """Whether the units scatter beyond their own errors: tau^2's interval excludes 0."""
        return self.tau2_ci95 is not None and self.tau2_ci95[0] > 0.0

    @property
    def tau_upper(self) -> float | None:
        """The upper end of tau's 95% interval, where three units or more bound it (two
        units' chi-square on 1 degree of freedom leaves it hundreds of times their
        errors: no bound worth stating)."""
        return None if self.tau2_ci95 is None or self.k < 3 else math.sqrt(self.tau2_ci95[1])

    def z_ci95(self) -> tuple[float, float]:
        """mu +- 1.96 se: the interval most software prints by default (for checking)."""
        return self.mu - Z_975 * self.se, self.mu + Z_975 * self.se

    def z_pi95(self) -> tuple[float, float]:
        """mu +- 1.96 sqrt(tau2 + se^2): metafor's default prediction interval."""
        half = Z_975 * math.sqrt(self.tau2 + self.se**2)
        return self.mu - half, self.mu + half


def _weighted_mean(y: Sequence[float], w: Sequence[float]) -> float:
    return sum(wi * yi for wi, yi in zip(w, y, strict=True)) / sum(w)


def _cochran_q(y: Sequence[float], v: Sequence[float]) -> float:
    return _generalised_q(y, v, 0.0)


def _generalised_q(y: Sequence[float], v: Sequence[float], tau2: float) -> float:
    w = [1.0 / (vi + tau2) for vi in v]
    mu = _weighted_mean(y, w)
    return sum(wi * (yi - mu) ** 2 for wi, yi in zip(w, y, strict=True))


def tau2_q_profile(y: Sequence[float], v: Sequence[float]) -> tuple[float, float]:
    """tau^2's 95% confidence interval by the Q-profile method (the module's docstring).
    The generalised Q falls as tau^2 grows (towards 0), so each end is found by
    bisection; k >= 2."""
    k = len(y)

    def solve(target: float) -> float:
        if _generalised_q(y, v, 0.0) <= target:
            return 0.0
        hi = max(v) + (max(y) - min(y)) ** 2
        while _generalised_q(y, v, hi) > target:
            hi *= 2.0
        lo = max(min(v) * 1e-12, hi * 1e-300)  # bisected on the log scale: any magnitude
        if _generalised_q(y, v, lo) <= target:
            return lo
        for _ in range(400):
            mid = math.sqrt(lo * hi)
            if _generalised_q(y, v, mid) > target:
                lo = mid
            else:
                hi = mid
            if hi / lo - 1.0 <= TOLERANCE:
                break
        return math.sqrt(lo * hi)

    tail = (1.0 - CONFIDENCE) / 2.0
    return solve(chi2_quantile(1.0 - tail, k - 1)), solve(chi2_quantile(tail, k - 1))


def tau2_dersimonian_laird(y: Sequence[float], v: Sequence[float]) -> float:
    """The method-of-moments estimate, truncated at 0."""
    k = len(y)
    w = [1.0 / vi for vi in v]
    denominator = sum(w) - sum(wi * wi for wi in w) / sum(w)
    if k < 2 or denominator <= 0:
        return 0.0
    return max(0.0, (_cochran_q(y, v) - (k - 1)) / denominator)


def restricted_loglik(y: Sequence[float], v: Sequence[float], tau2: float) -> float:
    """The restricted (REML) log-likelihood of tau^2, up to a constant:
    -(sum log(v_i + tau^2) + log sum w_i + sum w_i (y_i - mu)^2) / 2."""
    w = [1.0 / (vi + tau2) for vi in v]
    mu = _weighted_mean(y, w)
    spread = sum(wi * (yi - mu) ** 2 for wi, yi in zip(w, y, strict=True))
    return -0.5 * (sum(math.log(vi + tau2) for vi in v) + math.log(sum(w)) + spread)


def _fixed_point(y: Sequence[float], v: Sequence[float], tau2: float) -> float | None:
    """The REML estimating equation iterated from tau2; None where it has not settled."""
    for _ in range(MAX_ITERATIONS):
        w = [1.0 / (vi + tau2) for vi in v]
        mu = _weighted_mean(y, w)
        w2 = sum(wi * wi for wi in w)
        excess = sum(wi * wi * ((yi - mu) ** 2 - vi) for wi, yi, vi in zip(w, y, v, strict=True))
        new = max(0.0, excess / w2 + 1.0 / sum(w))
        if abs(new - tau2) <= TOLERANCE * max(1.0, tau2):
            return new
        tau2 = new
    return None


def _likelihood_maximum(y: Sequence[float], v: Sequence[float]) -> float:
    """The restricted likelihood's highest point over tau^2 >= 0: the best of a grid
    (0, then GRID_POINTS geometric steps up to the spread of the estimates and their
    variances, well past any maximum), refined by golden section between its neighbours."""
    upper = 10.0 * ((max(y) - min(y)) ** 2 + max(v))
    grid = [0.0] + [
        upper * 10.0 ** (-12.0 * (1.0 - i / GRID_POINTS)) for i in range(GRID_POINTS + 1)
    ]
    values = [restricted_loglik(y, v, t) for t in grid]
    best = max(range(len(grid)), key=values.__getitem__)
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    at_a, at_b = restricted_loglik(y, v, a), restricted_loglik(y, v, b)
    while hi - lo > TOLERANCE * max(1.0, hi):  # one new point a step, the other kept
        if at_a >= at_b:
            hi, b, at_b = b, a, at_a
            a = hi - ratio * (hi - lo)
            at_a = restricted_loglik(y, v, a)
        else:
            lo, a, at_a = a, b, at_b
            b = lo + ratio * (hi - lo)
            at_b = restricted_loglik(y, v, b)
    found = (lo + hi) / 2.0
    return found if restricted_loglik(y, v, found) >= values[best] else grid[best]


def tau2_reml(y: Sequence[float], v: Sequence[float]) -> float:
    """The REML estimate, tau^2 >= 0: the estimating equation's fixed point from
    DerSimonian-Laird's estimate, where it settles on the likelihood's highest point;
    where it settles on a lower peak (estimates of very unequal variances can give the
    likelihood two) or does not settle, the likelihood's highest point found directly."""
    if len(y) < 2:
        return 0.0
    settled = _fixed_point(y, v, tau2_dersimonian_laird(y, v))
    highest = _likelihood_maximum(y, v)
    if settled is None:
        return highest
    gain = restricted_loglik(y, v, highest) - restricted_loglik(y, v, settled)
    return highest if gain > LIKELIHOOD_SLACK else settled


def pool(
    y: Sequence[float],
    v: Sequence[float],
    *,
    method: str = "REML",
    floor: bool = True,
) -> RandomEffects:
    """Pool k >= 1 estimates with positive variances. Raises ValueError otherwise.
    floor: the intervals' SE never below the classic one (see the module's docstring)."""
    if not y or len(y) != len(v):
        raise ValueError("one variance per estimate, at least one estimate")
    if any(not (vi > 0 and math.isfinite(vi)) for vi in v) or any(
        not math.isfinite(yi) for yi in y
    ):
        raise ValueError("estimates must be finite and their variances positive")
    k = len(y)
    if method == "REML":
        tau2 = tau2_reml(y, v)
    elif method == "DL":
        tau2 = tau2_dersimonian_laird(y, v)
    else:
        raise ValueError(f"unknown method {method!r} (REML or DL)")
    mu, se, se_hksj, se_interval = _mean_and_errors(y, v, tau2, floor)
    q = _cochran_q(y, v)
    i2 = None if k < 2 or q <= 0 else max(0.0, (q - (k - 1)) / q) * 100.0
    ci = pi = tau2_ci = None
    if se_interval is not None:  # k >= 2
        tau2_ci = tau2_q_profile(y, v)
        half = t_quantile(0.5 + CONFIDENCE / 2.0, k - 1) * se_interval
        ci = (mu - half, mu + half)
    if k >= 3:
        pi = prediction_interval(y, v, floor=floor)
    return RandomEffects(k, mu, tau2, se, se_hksj, se_interval, ci, pi, q, i2, method, tau2_ci)


def _mean_and_errors(
    y: Sequence[float], v: Sequence[float], tau2: float, floor: bool
) -> tuple[float, float, float | None, float | None]:
    """At a between-unit variance tau2: the weighted mean, its classic SE, its HKSJ SE
    and the SE the intervals use (the larger of the two, or HKSJ unfloored); the last two
    None for one unit."""
    w = [1.0 / (vi + tau2) for vi in v]
    mu = _weighted_mean(y, w)
    se = 1.0 / math.sqrt(sum(w))
    if len(y) < 2:
        return mu, se, None, None
    spread = sum(wi * (yi - mu) ** 2 for wi, yi in zip(w, y, strict=True))
    hksj = math.sqrt(spread / ((len(y) - 1) * sum(w)))
    return mu, se, hksj, max(hksj, se) if floor else hksj


PI_STRATA = 200  # quantiles of tau^2's confidence distribution
PI_DRAWS = 50  # normal and t draws for each


@functools.lru_cache(maxsize=64)
def _draws(df: int) -> tuple[tuple[float, float], ...]:
    """PI_STRATA * PI_DRAWS (z, t) pairs, z standard normal and t Student t on df, from a
    fixed seed: one set for every pool of df + 1 units."""
    rng = random.Random(20261205 * 1000 + df)
    pairs = []
    for _ in range(PI_STRATA * PI_DRAWS):
        z = rng.gauss(0.0, 1.0)
        t = rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate(df / 2.0, 2.0) / df)
        pairs.append((z, t))
    return tuple(pairs)


@functools.lru_cache(maxsize=64)
def _q_targets(df: int) -> tuple[float, ...]:
    """chi-square(df)'s quantiles at 1 - u for the strata's midpoints u, in order."""
    return tuple(chi2_quantile(1.0 - (i + 0.5) / PI_STRATA, df) for i in range(PI_STRATA))


def _tau2_strata(y: Sequence[float], v: Sequence[float]) -> list[float]:
    """tau^2 at each stratum's midpoint u of its confidence distribution: 0 where u <=
    H(0), else the tau^2 where Q(tau^2) meets chi-square's quantile at 1 - u. Q falls as
    tau^2 grows, so every stratum is read off one geometric grid of Q by interpolation in
    log tau^2."""
    targets = _q_targets(len(y) - 1)
    hi = max(v) + (max(y) - min(y)) ** 2
    while _generalised_q(y, v, hi) > targets[-1]:
        hi *= 4.0
    lo = max(min(v) * 1e-9, hi * 1e-300)
    steps = 400
    log_lo, log_hi = math.log(lo), math.log(hi)
    grid = [math.exp(log_lo + (log_hi - log_lo) * i / steps) for i in range(steps + 1)]
    qs = [_generalised_q(y, v, t) for t in grid]
    q0 = _generalised_q(y, v, 0.0)
    strata, at = [], 0
    for target in targets:  # falling targets: the grid is walked once
        if q0 <= target:
            strata.append(0.0)
            continue
        while at < steps and qs[at + 1] > target:
            at += 1
        if qs[at] <= target:  # below the grid's first point: tau^2 under lo
            strata.append(grid[at] * (q0 - target) / max(q0 - qs[at], 1e-300))
            continue
        a, b = math.log(grid[at]), math.log(grid[min(at + 1, steps)])
        qa, qb = qs[at], qs[min(at + 1, steps)]
        frac = 0.0 if qa == qb else (qa - target) / (qa - qb)
        strata.append(math.exp(a + frac * (b - a)))
    return strata


def prediction_interval(
    y: Sequence[float], v: Sequence[float], *, floor: bool = True
) -> tuple[float, float]:
    """The 95% prediction interval for a unit not yet measured (k >= 3), by the
    confidence-distribution method (the module's docstring)."""
    draws = _draws(len(y) - 1)
    values = []
    for i, tau2 in enumerate(_tau2_strata(y, v)):
        mu, _, _, se_t = _mean_and_errors(y, v, tau2, floor)
        assert se_t is not None  # k >= 3
        tau = math.sqrt(tau2)
        for z, t in draws[i * PI_DRAWS : (i + 1) * PI_DRAWS]:
            values.append(mu + tau * z + se_t * t)
    values.sort()
    tail = (1.0 - CONFIDENCE) / 2.0
    return _quantile(values, tail), _quantile(values, 1.0 - tail)


def _quantile(ordered: Sequence[float], p: float) -> float:
    """The p-quantile of ordered values (linear between neighbours)."""
    n = len(ordered)
    at = p * (n - 1)
    low = int(at)
    high = min(low + 1, n - 1)
    return ordered[low] + (at - low) * (ordered[high] - ordered[low])


def within_unit(
    y: Sequence[float], v: Sequence[float], df: Sequence[float]
) -> tuple[float, float, float]:
    """(mean, its SE, the Student t degrees of freedom of its interval): several
    estimates of ONE unit (sessions on the same card, each with its own t interval of
    df_i degrees of freedom), which share its true value. The inverse-variance mean; its
    SE 1/sqrt(sum w) widened by the Birge ratio sqrt(Q/(m-1)) where the sessions scatter
    more than their own errors say (Cochran's Q above m-1), never narrowed. The degrees
    of freedom: by Welch-Satterthwaite from the sessions' own, (sum w)^2 / sum(w^2/df_i);
    where the Birge ratio widens, the SE is then estimated from the m sessions' scatter,
    so at most m-1. (A z interval on the bare SE was overconfident: two sessions at -20%
    and -26%, +-0.5 each, gave [-23.3, -22.7], excluding both; on the sessions' df alone
    the widened interval covered 72% of the time where 95% was claimed, by simulation.)"""
    w = [1.0 / vi for vi in v]
    m = len(y)
    birge2 = _cochran_q(y, v) / (m - 1) if m > 1 else 1.0
    dof = sum(w) ** 2 / sum(wi * wi / di for wi, di in zip(w, df, strict=True))
    if birge2 > 1.0:
        dof = min(dof, m - 1.0)
    return _weighted_mean(y, w), math.sqrt(max(1.0, birge2) / sum(w)), dof


def spread_words(sd_pts: float, upper_pts: float | None, digits: int) -> str:
    """The between-unit spread in words: REML's sd, and where the units cannot tell it
    from none (tau's interval reaches 0), the most they cannot rule out (upper_pts: None
    where the spread is detected, or two units cannot bound it)."""
    if upper_pts is None:
        if round(sd_pts, digits) == 0.0:  # at REML's boundary (two units: no bound said)
            return "no between-unit spread detectable at these units' precision"
        return f"between-unit sd {sd_pts:.{digits}f} points"
    up = f"up to {upper_pts:.{digits}f} points not ruled out"
    if round(upper_pts, digits) == 0.0:  # Q below chi-square's 2.5% point even at none
        up = "they agree more closely than their own errors predict"
    if round(sd_pts, digits) == 0.0:  # REML at its boundary: not a spread measured as 0
        return f"no between-unit spread detectable at these units' precision ({up})"
    sd = f"between-unit sd {sd_pts:.{digits}f} points"
    return f"{sd}, not detectable at these units' precision ({up})"
