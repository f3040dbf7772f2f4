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
- The 95% prediction interval for a unit not yet measured (Higgins, Thompson and
  Spiegelhalter 2009): mu +- t(k - 2) sqrt(tau^2 + SE^2), defined from three units.

Checked against the published worked example of Viechtbauer (2010, J. Stat. Softw.
36(3), the BCG vaccine trials; tests/pooling/test_units.py). Pure functions on plain numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ecocompute.core.stats import CONFIDENCE, t_quantile

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
    pi95: tuple[float, float] | None  # for a new unit: mu +- t(k-2) sqrt(tau2 + se_interval^2)
    q: float  # Cochran's Q (heterogeneity), with the inverse-variance weights
    i2_pct: float | None  # the share of the total variance that lies between units
    method: str

    @property
    def tau(self) -> float:
        return math.sqrt(self.tau2)

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
    w = [1.0 / vi for vi in v]
    mu = _weighted_mean(y, w)
    return sum(wi * (yi - mu) ** 2 for wi, yi in zip(w, y, strict=True))


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
    w = [1.0 / (vi + tau2) for vi in v]
    mu = _weighted_mean(y, w)
    se = 1.0 / math.sqrt(sum(w))
    q = _cochran_q(y, v)
    i2 = None if k < 2 or q <= 0 else max(0.0, (q - (k - 1)) / q) * 100.0
    se_hksj = se_interval = ci = pi = None
    level = 0.5 + CONFIDENCE / 2.0
    if k >= 2:
        spread = sum(wi * (yi - mu) ** 2 for wi, yi in zip(w, y, strict=True))
        se_hksj = math.sqrt(spread / ((k - 1) * sum(w)))
        se_interval = max(se_hksj, se) if floor else se_hksj
        half = t_quantile(level, k - 1) * se_interval
        ci = (mu - half, mu + half)
    if k >= 3 and se_interval is not None:
        half = t_quantile(level, k - 2) * math.sqrt(tau2 + se_interval**2)
        pi = (mu - half, mu + half)
    return RandomEffects(k, mu, tau2, se, se_hksj, se_interval, ci, pi, q, i2, method)


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
