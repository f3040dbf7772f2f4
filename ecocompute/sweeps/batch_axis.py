"""The batch axis of a sweep: per model and format, the delta vs FP16 against the
batch size, the batch size where it crosses zero (with a 95% interval), and the map in
words ("INT4 saves at batch 1-4, costs from 16").

The crossover is located on a log2 batch axis, linearly between the two measured batch
sizes whose deltas have opposite signs (the first such pair from the smallest size).
Its interval is a parametric bootstrap: each point's delta is redrawn from its own
paired Student-t interval (mean + se * t(n-1)), and the crossover found again. A draw
in which the sign never changes puts the crossover beyond the largest batch measured
(or below the smallest, if the smallest already changed sign): then that end of the
interval is open, said so, never closed at the edge of the sizes measured. Batch sizes
are never pooled: each point is one session's report.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ecocompute.sweeps.curvefit import se_from_ci

N_BOOT = 4000
SEED = 20261201


@dataclass(frozen=True)
class BatchPoint:
    batch_size: int
    delta_pct: float
    ci95_pct: tuple[float, float] | None
    n_pairs: int | None
    verdict: str | None
    report: str  # relative to the sweep's folder
    throughput_tokens_per_s: float | None = None
    fp16_throughput_tokens_per_s: float | None = None


def first_crossing(points: Sequence[tuple[int, float]]) -> float | None:
    """The batch size where the deltas (sorted by batch) first change sign, on a log2
    axis; None where they never do. +inf/-inf are not returned here."""
    for (b0, d0), (b1, d1) in itertools.pairwise(points):
        if d0 == 0.0:
            return float(b0)
        if (d0 < 0) != (d1 < 0) or d1 == 0.0:
            x0, x1 = math.log2(b0), math.log2(b1)
            x = x0 + (0.0 - d0) * (x1 - x0) / (d1 - d0)
            return 2.0**x
    return None


def _draw(point: BatchPoint, rng: random.Random) -> float:
    se = se_from_ci(point.ci95_pct, point.n_pairs)
    if se is None or point.n_pairs is None:
        return point.delta_pct
    df = point.n_pairs - 1
    # Student-t draw: a normal over the root of a scaled chi-square
    chi2 = (
        sum(rng.gauss(0.0, 1.0) ** 2 for _ in range(df))
        if df < 30
        else rng.gammavariate(df / 2.0, 2.0)
    )
    t = rng.gauss(0.0, 1.0) / math.sqrt(chi2 / df)
    return point.delta_pct + se * t


def crossover(
    points: Sequence[BatchPoint], *, n_boot: int = N_BOOT, seed: int = SEED
) -> dict[str, Any]:
    """The crossover batch size of one format's points, JSON-ready."""
    pts = sorted(points, key=lambda p: p.batch_size)
    lo_b, hi_b = pts[0].batch_size, pts[-1].batch_size
    record: dict[str, Any] = {"batch_sizes": [p.batch_size for p in pts]}
    if len(pts) < 2:
        record.update(batch_size=None, status="one batch size", ci95=None)
        record["note"] = "one batch size measured: no crossover can be located"
        return record
    mean = first_crossing([(p.batch_size, p.delta_pct) for p in pts])
    rng = random.Random(seed)
    below = beyond = 0
    found: list[float] = []
    start_sign = pts[0].delta_pct < 0
    for _ in range(n_boot):
        drawn = [(p.batch_size, _draw(p, rng)) for p in pts]
        cross = first_crossing(drawn)
        if cross is not None:
            found.append(cross)
        elif (drawn[0][1] < 0) != start_sign:
            below += 1  # every drawn point has the other sign: it crossed before the first
        else:
            beyond += 1
    ranked = sorted([-math.inf] * below + found + [math.inf] * beyond)
    low = ranked[int(0.025 * (len(ranked) - 1))]
    high = ranked[math.ceil(0.975 * (len(ranked) - 1))]
    record["ci95"] = [
        None if math.isinf(low) else round(low, 3),
        None if math.isinf(high) else round(high, 3),
    ]
    record["draws"] = {"n": n_boot, "no_crossing_beyond": beyond, "no_crossing_below": below}
    if mean is None:
        side = "saves" if pts[0].delta_pct < 0 else "costs"
        record.update(
            batch_size=None,
            status="outside",
            note=f"the mean delta {side} at every batch size measured ({lo_b}..{hi_b}): "
            "any crossover lies outside them",
        )
    else:
        record.update(batch_size=round(mean, 3), status="inside")
    record["ci95_text"] = f"{_end(low, lo_b, hi_b)} .. {_end(high, lo_b, hi_b)}"
    if low == high and math.isinf(low):
        record["ci95_text"] = _end(low, lo_b, hi_b)
    record["ci_note"] = (
        "parametric bootstrap over each point's paired t interval; an open end (below / "
        "beyond) means the draws put the crossover outside the batch sizes measured"
    )
    return record


def _end(value: float, lo_b: int, hi_b: int) -> str:
    if value == math.inf:
        return f"beyond {hi_b}"
    if value == -math.inf:
        return f"below {lo_b}"
    return f"{value:.3g}"


def _span(batches: Sequence[int], last: int) -> str:
    if len(batches) == 1:
        return f"{batches[0]}"
    if batches[-1] == last:
        return f"from {batches[0]}"
    return f"{batches[0]}-{batches[-1]}"


def map_words(fmt: str, points: Sequence[BatchPoint]) -> str:
    """'INT4 saves at batch 1-4, costs from 16', from each point's verdict."""
    pts = sorted(points, key=lambda p: p.batch_size)
    last = pts[-1].batch_size
    groups: list[tuple[str, list[int]]] = []
    for p in pts:
        verdict = p.verdict or "inconclusive"
        if groups and groups[-1][0] == verdict:
            groups[-1][1].append(p.batch_size)
        else:
            groups.append((verdict, [p.batch_size]))
    if len(groups) == 1:
        verdict, batches = groups[0]
        every = "every batch measured" if len(batches) > 1 else f"batch {batches[0]}"
        return (
            f"{fmt} {verdict} at {every}"
            if verdict != "inconclusive"
            else (f"{fmt} is inconclusive at {every}")
        )
    parts = []
    for k, (verdict, batches) in enumerate(groups):
        span = _span(batches, last)
        at = "at " if not span.startswith("from") else ""
        prefix = "batch " if k == 0 and not span.startswith("from") else ""
        word = verdict if verdict != "inconclusive" else "is inconclusive"
        parts.append(f"{word} {at}{prefix}{span}")
    return f"{fmt} " + ", ".join(parts)


def axis_entry(
    model: str, fmt: str, points: Sequence[BatchPoint], n_boot: int | None
) -> dict[str, Any]:
    """One (model, format) curve over the batch axis, JSON-ready."""
    pts = sorted(points, key=lambda p: p.batch_size)
    return {
        "model_name": model,
        "precision": fmt,
        "points": [
            {
                "batch_size": p.batch_size,
                "delta_pct": p.delta_pct,
                "ci95_pct": list(p.ci95_pct) if p.ci95_pct else None,
                "n_pairs": p.n_pairs,
                "verdict": p.verdict,
                "throughput_tokens_per_s": p.throughput_tokens_per_s,
                "fp16_throughput_tokens_per_s": p.fp16_throughput_tokens_per_s,
                "report": p.report,
            }
            for p in pts
        ],
        "crossover": crossover(pts, **({} if n_boot is None else {"n_boot": n_boot})),
        "map": map_words(fmt, pts),
    }
