"""Statistics of a measurement: per-format summaries, paired deltas, a 95% interval
(paired Student t) and the verdict. Pure functions on plain numbers."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ecocompute.core.units import pct_change

CI_METHOD = "paired Student t, 95%, on per-pair percent deltas vs FP16"
CONFIDENCE = 0.95


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def regularized_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _betacf(a, b, x) / a
    return 1.0 - math.exp(log_front) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student t cumulative distribution."""
    tail = 0.5 * regularized_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=512)  # the same few (p, df) for every report read
def t_quantile(p: float, df: float) -> float:
    """Inverse of t_cdf for 0.5 <= p < 1, by bisection (to 1e-10)."""
    if not 0.5 <= p < 1.0:
        raise ValueError("p must be in [0.5, 1)")
    return _inverse(lambda x: t_cdf(x, df), p, 1.0, lambda lo, hi: hi - lo < 1e-10)


def _inverse(
    cdf: Callable[[float], float], p: float, hi: float, close: Callable[[float, float], bool]
) -> float:
    """Where an increasing cdf on [0, inf) reaches p: bisection from [0, hi], hi doubled
    until the cdf there reaches p, until close(lo, hi) (at most 200 halvings)."""
    lo = 0.0
    while cdf(hi) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if cdf(mid) < p:
            lo = mid
        else:
            hi = mid
        if close(lo, hi):
            break
    return (lo + hi) / 2.0


def chi2_cdf(x: float, df: float) -> float:
    """Chi-square cumulative distribution: the regularized lower incomplete gamma
    P(df/2, x/2), by its power series (enough for the few units a pool holds; checked
    against scipy in tests/core/test_stats.py)."""
    if x <= 0.0:
        return 0.0
    a, half = df / 2.0, x / 2.0
    term = total = 1.0 / a
    n = 0
    while abs(term) > 1e-17 * abs(total) and n < 10_000:
        n += 1
        term *= half / (a + n)
        total += term
    return min(1.0, math.exp(a * math.log(half) - half - math.lgamma(a)) * total)


@functools.lru_cache(maxsize=512)
def chi2_quantile(p: float, df: float) -> float:
    """Inverse of chi2_cdf for 0 < p < 1, by bisection (to 1e-12 relative)."""
    if not 0.0 < p < 1.0:
        raise ValueError("p must be in (0, 1)")
    return _inverse(lambda x: chi2_cdf(x, df), p, max(1.0, df), lambda lo, hi: hi - lo < 1e-12 * hi)


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    sd: float | None  # sample standard deviation; None for n = 1
    cv_pct: float | None


def mean(values: Iterable[float]) -> float:
    """statistics.fmean to the bit (one compensated sum over the count), without its
    generator bookkeeping: a report's figures are derived again many times over when an
    older report's rounding bounds are worked out (report/compare.py)."""
    listed = list(values)
    return math.fsum(listed) / len(listed)


def summarise(values: Sequence[float]) -> Summary:
    """n, mean, sample sd and CV (sd over |mean|, in percent). Raises ValueError on none.
    Two-pass, with compensated sums (math.fsum): as exact as statistics.stdev for any
    figure a report holds, and far faster."""
    if not values:
        raise ValueError("no values")
    n = len(values)
    centre = mean(values)
    if n < 2:
        return Summary(n, centre, None, None)
    sd = math.sqrt(math.fsum((v - centre) ** 2 for v in values) / (n - 1))
    return Summary(n, centre, sd, sd / abs(centre) * 100.0 if centre else None)


def summarise_known(values: Sequence[float | None]) -> Summary | None:
    """summarise() of the values that are not None; None when there are none."""
    known = [v for v in values if v is not None]
    return summarise(known) if known else None


def t_interval(s: Summary) -> tuple[float, float] | None:
    """Student t interval of the mean; None below two values."""
    if s.sd is None:
        return None
    half = t_quantile(0.5 + CONFIDENCE / 2.0, s.n - 1) * s.sd / math.sqrt(s.n)
    return s.mean - half, s.mean + half


def se_of_t_interval(ci: Sequence[float] | None, df: int | None) -> float | None:
    """The standard error behind a Student-t 95% interval of df degrees of freedom
    (t_interval's, read back); None without an interval or a degree of freedom."""
    if not ci or df is None or df < 1:
        return None
    return (float(ci[1]) - float(ci[0])) / 2.0 / t_quantile(0.975, df)


def paired_deltas_pct(fp16: Sequence[float], quantized: Sequence[float]) -> list[float]:
    """Per pair: (Q - FP16) / FP16 in percent."""
    if len(fp16) != len(quantized):
        raise ValueError("unpaired trials")
    return [pct_change(q, f) for f, q in zip(fp16, quantized, strict=True)]


@dataclass(frozen=True)
class DeltaEstimate:
    n_pairs: int
    mean_pct: float
    ci95_pct: tuple[float, float] | None  # None when n < 2
    verdict: str  # saves | costs | inconclusive


def verdict_for(ci: tuple[float, float] | None) -> str:
    if ci is None:
        return "inconclusive"
    lo, hi = ci
    if hi < 0:
        return "saves"
    if lo > 0:
        return "costs"
    return "inconclusive"


def estimate_delta(deltas_pct: Sequence[float]) -> DeltaEstimate:
    """Mean paired delta with its paired Student t 95% interval, and the verdict."""
    s = summarise(deltas_pct)
    ci = t_interval(s)
    return DeltaEstimate(s.n, s.mean, ci, verdict_for(ci))
