"""Pairs: each round's format trial against its FP16 trial, the paired delta with its
interval and verdict, and over --compiles N the two-level estimate (rounds within
compiles). Pure functions of a report's trials, unrounded (report/derive.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, TypedDict, cast

from ecocompute.core.meta import pool
from ecocompute.core.stats import (
    estimate_delta,
    paired_deltas_pct,
    summarise,
    t_interval,
    verdict_for,
)
from ecocompute.report.results_model import (
    BetweenCompiles,
    CompileDelta,
    Format,
    Pair,
    Trial,
    Verdict,
)

FP16: Format = "FP16"
# A compile whose pairs agree exactly (a stand-in, or rounding) has no spread; the
# random-effects pool needs a positive variance per estimate
MIN_SE_PCT = 1e-9
CI_METHOD_COMPILES = (
    "two levels, rounds within compiles: each compile's paired mean delta vs FP16 with its "
    "standard error, pooled by a random-effects model (REML between-compile variance, "
    "modified Hartung-Knapp interval: the larger of the Hartung-Knapp-Sidik-Jonkman and "
    "the classic standard error, Student t on compiles - 1 degrees of freedom)"
)
# what reports of compiles said before the floor (2026-12-05): read, never written
CI_METHOD_COMPILES_HKSJ = (
    "two levels, rounds within compiles: each compile's paired mean delta vs FP16 with its "
    "standard error, pooled by a random-effects model (REML between-compile variance, "
    "Hartung-Knapp-Sidik-Jonkman interval, Student t on compiles - 1 degrees of freedom)"
)
SE_FLOORED: Literal["max(hksj, classic)"] = "max(hksj, classic)"


def rounds_paired(trials: Sequence[Trial], precision: Format) -> list[tuple[Trial, Trial]]:
    """(FP16 trial, the format's trial) of every round that has both, in round order."""
    fp16 = {t.pair: t for t in trials if t.format == FP16 and t.pair is not None}
    quant = {t.pair: t for t in trials if t.format == precision and t.pair is not None}
    return [(fp16[k], quant[k]) for k in sorted(fp16) if k in quant]


def pairs_of(
    trials: Sequence[Trial], precision: Format, per_token: Callable[[Trial], float | None]
) -> list[Pair]:
    pairs = []
    for f, q in rounds_paired(trials, precision):
        fv, qv = per_token(f), per_token(q)
        if fv is None or qv is None:
            continue
        (delta,) = paired_deltas_pct([fv], [qv])
        pairs.append(
            Pair.model_construct(
                pair=f.pair or 0,
                fp16_energy_per_token_mj=fv,
                energy_per_token_mj=qv,
                delta_pct=delta,
            )
        )
    return pairs


def estimate_pairs(
    pairs: Sequence[Pair], compiles: BetweenCompiles | None = None
) -> tuple[float | None, list[float] | None, int | None, str | None]:
    """The paired delta, its interval, pairs and verdict; over compiles, the pooled one."""
    if not pairs:
        return None, None, None, None
    if compiles is not None:
        lo, hi = compiles.ci95_pct
        return compiles.delta_pct, [lo, hi], len(pairs), verdict_for((lo, hi))
    est = estimate_delta([p.delta_pct for p in pairs])
    ci = None if est.ci95_pct is None else list(est.ci95_pct)
    return est.mean_pct, ci, est.n_pairs, est.verdict


class PairedFigures(TypedDict):
    """The fields a paired comparison shares (held_gpus, each phase)."""

    vs_fp16_energy_pct: float | None
    vs_fp16_ci95_pct: list[float] | None
    n_pairs: int | None
    verdict: Verdict | None
    pairs: list[Pair]


def paired_figures(pairs: list[Pair], compiles: BetweenCompiles | None = None) -> PairedFigures:
    """The delta, its interval, pairs and verdict (estimate_pairs), and the pairs."""
    delta, ci, n, verdict = estimate_pairs(pairs, compiles)
    return {
        "vs_fp16_energy_pct": delta,
        "vs_fp16_ci95_pct": ci,
        "n_pairs": n,
        "verdict": cast(Verdict | None, verdict),  # estimate_pairs' verdicts are Verdict's
        "pairs": pairs,
    }


def between_compiles(
    trials: Sequence[Trial], pairs: Sequence[Pair], floor: bool = True
) -> BetweenCompiles | None:
    """--compiles N: each compile's paired delta (its own rounds), pooled by random
    effects (core/meta.py: REML tau^2, the modified Hartung-Knapp interval on N - 1
    degrees of freedom; floor=False: HKSJ alone, as reports before 2026-12-05 were
    derived). None for one compile, or where a compile has fewer than two pairs."""
    compile_of = {t.pair: t.compile for t in trials if t.pair is not None and t.format == FP16}
    by_compile: dict[int, list[float]] = {}
    for p in pairs:
        k = compile_of.get(p.pair)
        if k is None:
            return None
        by_compile.setdefault(k, []).append(p.delta_pct)
    if len(by_compile) < 2 or any(len(d) < 2 for d in by_compile.values()):
        return None
    per = []
    for k in sorted(by_compile):
        s = summarise(by_compile[k])
        ci = t_interval(s)
        assert ci is not None and s.sd is not None  # n >= 2
        per.append(
            CompileDelta.model_construct(
                compile=k,
                n_pairs=s.n,
                delta_pct=s.mean,
                se_pct=s.sd / math.sqrt(s.n),
                ci95_pct=list(ci),
            )
        )
    ys = [c.delta_pct for c in per]
    vs = [max(c.se_pct, MIN_SE_PCT) ** 2 for c in per]
    pooled = pool(ys, vs, floor=floor)
    assert pooled.ci95 is not None  # k >= 2
    within = estimate_delta([p.delta_pct for p in pairs]).ci95_pct
    return BetweenCompiles.model_construct(
        compiles=len(per),
        model=CI_METHOD_COMPILES if floor else CI_METHOD_COMPILES_HKSJ,
        interval_se=SE_FLOORED if floor else None,
        per_compile=per,
        delta_pct=pooled.mu,
        ci95_pct=list(pooled.ci95),
        between_compile_sd_pts=pooled.tau,
        i2_pct=pooled.i2_pct,
        within_compile_ci95_pct=None if within is None else list(within),
    )
