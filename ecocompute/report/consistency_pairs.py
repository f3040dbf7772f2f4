"""A measured report's pairs, mean delta, interval and verdict follow from its trials
(part of report/consistency.py's checks).

A pair is the FP16 trial and the quantized trial of the same round; its delta is the
two's energies per token. The mean delta, its paired Student-t interval and the verdict
are recomputed from the pairs' (rounded) deltas with the writer's own estimator
(stats.estimate_delta). FP16 alone has no pairs, no interval and no verdict. Written
for one quantized format per call: a report of several formats checks each against its
round's FP16 trial. The same checks hold for the view of every GPU a session held
(results.held_gpus, report/consistency_held.py): its pairs are of the trials'
held_energy_per_token_mj, under its own path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.core.stats import estimate_delta, t_quantile, verdict_for
from ecocompute.report.tolerance import (
    DELTA_3DP,
    HALF_MJ,
    HALF_PCT,
    SLACK,
    close,
    delta_fields,
    number,
    pct_range,
)

FP16 = "FP16"


def fp16_alone_problems(res: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, expected in (("vs_fp16_ci95_pct", None), ("n_pairs", None), ("verdict", None)):
        if res.get(key) != expected:
            problems.append(f"$.results.{key}: {res.get(key)!r}, but FP16 alone has no pairs")
    if res.get("pairs"):
        problems.append("$.results.pairs: present, but FP16 alone has no pairs")
    for key in ("vs_fp16_energy_pct", DELTA_3DP):
        if number(res.get(key)) not in (0.0, None):
            problems.append(f"$.results.{key}: {res.get(key)!r}, but FP16 vs itself is 0")
    return problems


def pair_problems(
    doc: Mapping[str, Any],
    res: Mapping[str, Any],
    trials: Sequence[Mapping[str, Any]],
    precision: str,
    *,
    where: str = "$.results",
    trial_key: str = "energy_per_token_mj",
    fields: Sequence[tuple[str, float]] | None = None,
) -> list[str]:
    """Pairs from the trials of the same round; the delta, interval and verdict from them.
    res: the block holding pairs, n_pairs, the delta fields (default: the headline's,
    delta_fields(doc)), vs_fp16_ci95_pct and verdict, at `where`; trial_key: the trials'
    energy per token that the pairs compare."""
    problems: list[str] = []
    fp16 = {t["pair"]: t for t in trials if t.get("format") == FP16 and _is_index(t.get("pair"))}
    quant = {
        t["pair"]: t for t in trials if t.get("format") == precision and _is_index(t.get("pair"))
    }
    common = sorted(k for k in fp16 if k in quant)
    pairs = [p for p in res.get("pairs") or [] if isinstance(p, Mapping)]
    listed = [p.get("pair") for p in pairs]
    if listed != common:
        problems.append(f"{where}.pairs: pairs {listed}, but the trials pair up as {common}")
        return problems
    n_pairs = res.get("n_pairs")
    if n_pairs != len(pairs):
        problems.append(f"{where}.n_pairs: {n_pairs!r}, but the report holds {len(pairs)} pair(s)")
    deltas: list[float] = []
    for k, (p, key) in enumerate(zip(pairs, common, strict=True)):
        problems += _one_pair(f"{where}.pairs[{k}]", p, fp16[key], quant[key], trial_key)
        d = number(p.get("delta_pct"))
        if d is not None:
            deltas.append(d)
    if problems or len(deltas) != len(pairs) or not deltas:
        return problems
    return _estimate(res, deltas, delta_fields(doc) if fields is None else fields, where)


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _one_pair(
    where: str,
    p: Mapping[str, Any],
    f_trial: Mapping[str, Any],
    q_trial: Mapping[str, Any],
    trial_key: str,
) -> list[str]:
    problems = []
    f, q = number(p.get("fp16_energy_per_token_mj")), number(p.get("energy_per_token_mj"))
    for key, value, trial in (
        ("fp16_energy_per_token_mj", f, f_trial),
        ("energy_per_token_mj", q, q_trial),
    ):
        source = number(trial.get(trial_key))
        if value is None or source is None or not close(value, source, 0.0):
            problems.append(f"{where}.{key}: {value!r}, but its trial says {source!r}")
    d = number(p.get("delta_pct"))
    if f is None or q is None or d is None or problems:
        return problems
    if f <= HALF_MJ:
        return [f"{where}.fp16_energy_per_token_mj: {f:g}, too small to compare against"]
    low, high = pct_range(q, f, HALF_MJ)
    if not low - HALF_PCT - SLACK <= d <= high + HALF_PCT + SLACK:
        problems.append(
            f"{where}.delta_pct: {d:g}%, but its energies ({q:g} vs FP16 {f:g} mJ/token) "
            f"give {100 * (q / f - 1):.3f}%"
        )
    return problems


def _estimate(
    res: Mapping[str, Any],
    deltas: Sequence[float],
    fields: Sequence[tuple[str, float]],
    where: str,
) -> list[str]:
    """The mean delta, interval and verdict, recomputed from the pairs' (rounded) deltas
    with the writer's own estimator (stats.estimate_delta)."""
    problems = []
    n = len(deltas)
    estimate = estimate_delta(deltas)
    for key, half in fields:  # the pairs' deltas are rounded too
        mean = number(res.get(key))
        if mean is None or not close(mean, estimate.mean_pct, half + HALF_PCT):
            problems.append(
                f"{where}.{key}: {mean!r}, but the mean of its pairs is {estimate.mean_pct:.3f}%"
            )
    ci = res.get("vs_fp16_ci95_pct")
    verdict = res.get("verdict")
    if estimate.ci95_pct is None:
        if ci is not None:
            problems.append(f"{where}.vs_fp16_ci95_pct: {ci}, but one pair has no interval")
        if verdict != "inconclusive":
            problems.append(f"{where}.verdict: {verdict!r}, but one pair is inconclusive")
        return problems
    # Each pair's delta is rounded (+-HALF_PCT): the mean moves by at most that, the
    # half-width by t * HALF_PCT / sqrt(n - 1) (the sample sd is 1-Lipschitz in the
    # deltas' L2 norm over sqrt(n - 1)); the bounds themselves are rounded too.
    tolerance = HALF_PCT * (2.0 + t_quantile(0.975, n - 1) / math.sqrt(n - 1))
    if not (isinstance(ci, list) and len(ci) == 2 and all(number(x) is not None for x in ci)):
        problems.append(f"{where}.vs_fp16_ci95_pct: {ci!r}, but {n} pairs have an interval")
        return problems
    lo, hi = float(ci[0]), float(ci[1])
    want_lo, want_hi = estimate.ci95_pct
    if not (close(lo, want_lo, tolerance) and close(hi, want_hi, tolerance)):
        problems.append(
            f"{where}.vs_fp16_ci95_pct: [{lo:g}, {hi:g}], but its pairs give "
            f"[{want_lo:.3f}, {want_hi:.3f}]"
        )
        return problems
    # the writer decides the verdict on the unrounded bounds: near 0 either side may hold
    possible = {
        verdict_for((lo + a, hi + b))
        for a in (-tolerance, 0.0, tolerance)
        for b in (-tolerance, 0.0, tolerance)
    }
    if verdict not in possible:
        problems.append(
            f"{where}.verdict: {verdict!r}, but its interval [{lo:g}, {hi:g}] says "
            f"{verdict_for((lo, hi))!r}"
        )
    return problems
