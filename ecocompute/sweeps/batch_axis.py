"""The batch axis of a sweep: per model and format, the delta vs FP16 against the
batch size, the batch size where it crosses zero (with a 95% interval), and the map in
words ("INT4 saves at batch 1-4, costs from 16").

The crossover is located on a log2 batch axis, linearly between the two measured batch
sizes whose deltas have opposite signs (the first such pair from the smallest size).
Its interval is a parametric bootstrap: each point's delta is redrawn from its own
paired Student-t interval (mean + se * t(n-1)), and the crossover found again. A draw
in which the sign never changes puts the crossover beyond the largest batch measured
(or below the smallest, if the smallest already changed sign): then that end of the
interval is open, said so, never closed at the edge of the sizes measured. Where no
draw crosses at all, the interval is "outside lo..hi": a sign that never changes says
no crossover lies among the sizes, not on which side one would. Batch sizes are never
pooled: each point is one session's report.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

from ecocompute.sweeps.curvefit import se_from_ci
from ecocompute.sweeps.document import BatchAxisEntry, BatchCrossover, BatchPoint, Draws

N_BOOT = 4000
SEED = 20261201


def first_crossing(points: Sequence[tuple[int, float]]) -> float | None:
    """The batch size where the deltas (sorted by batch) first change sign, on a log2
    axis; None where they never do. +inf/-inf are not returned here."""
    found = _crossing(points)
    return None if found is None else found[0]


def _crossing(points: Sequence[tuple[int, float]]) -> tuple[float, list[float]] | None:
    """first_crossing, and the two measured batch sizes it lies between."""
    for (b0, d0), (b1, d1) in itertools.pairwise(points):
        if d0 == 0.0:
            return float(b0), [b0, b1]
        if (d0 < 0) != (d1 < 0) or d1 == 0.0:
            x0, x1 = math.log2(b0), math.log2(b1)
            x = x0 + (0.0 - d0) * (x1 - x0) / (d1 - d0)
            return 2.0**x, [b0, b1]
    return None


def interval_df(point: BatchPoint) -> int | None:
    """Its interval's degrees of freedom (a sweep.json of before the field: pairs - 1)."""
    if point.interval_df is not None:
        return point.interval_df
    return None if point.n_pairs is None else point.n_pairs - 1


def _draw(point: BatchPoint, rng: random.Random) -> float:
    df = interval_df(point)
    se = se_from_ci(point.ci95_pct, df)
    if se is None or df is None:
        return point.delta_pct
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
) -> BatchCrossover:
    """The crossover batch size of one format's points. Degenerate data gets no
    invented figure: one batch size (however many reports hold it) or a batch size of
    several reports (never pooled) locates no crossover; points without an interval
    (derived, or one pair) get no interval, never one of zero width."""
    pts = sorted(points, key=lambda p: p.batch_size)
    lo_b, hi_b = pts[0].batch_size, pts[-1].batch_size
    sizes = [p.batch_size for p in pts]
    repeated = sorted({b for b in sizes if sizes.count(b) > 1})
    if len(set(sizes)) < 2:
        held = f" ({len(pts)} reports of batch {lo_b}, never pooled)" if repeated else ""
        return BatchCrossover(
            batch_sizes=sizes,
            batch_size=None,
            status="one batch size",
            ci95=None,
            note=f"one batch size measured{held}: no crossover can be located",
        )
    if repeated:
        listed = ", ".join(map(str, repeated))
        return BatchCrossover(
            batch_sizes=sizes,
            batch_size=None,
            status="repeated batch size",
            ci95=None,
            note=f"batch size {listed} is held by more than one report, and batch sizes are "
            "never pooled: no crossover is located (fit the reports of one sweep)",
        )
    crossing = _crossing([(p.batch_size, p.delta_pct) for p in pts])
    mean = None if crossing is None else crossing[0]
    status = "outside" if mean is None else "inside"
    side = "saves" if pts[0].delta_pct < 0 else "costs"
    never = f"the mean delta {side} at every batch size measured ({lo_b}..{hi_b})"
    if any(se_from_ci(p.ci95_pct, interval_df(p)) is None for p in pts):
        return BatchCrossover(
            batch_sizes=sizes,
            batch_size=None if mean is None else round(mean, 3),
            status=status,
            ci95=None,
            ci95_text="no interval: a point carries none (derived, or a single pair)",
            note=None if mean is not None else never + ": no crossover lies among them",
        )
    rng = random.Random(seed)
    below = beyond = 0
    found: list[float] = []
    start_sign = _sign_before_crossing(pts)
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
    text = f"{_end(low, lo_b, hi_b)} .. {_end(high, lo_b, hi_b)}"
    result = BatchCrossover(
        batch_sizes=sizes,
        batch_size=None if mean is None else round(mean, 3),
        status=status,
        ci95=[None if math.isinf(v) else round(v, 3) for v in (low, high)],
        draws=Draws(n=n_boot, no_crossing_beyond=beyond, no_crossing_below=below),
        ci95_text=f"outside {lo_b}..{hi_b}" if low == high and math.isinf(low) else text,
        ci_note="parametric bootstrap over each point's paired t interval, the delta taken "
        "as log2-linear between measured sizes (the interval holds the points' noise, not "
        "the curve's shape between them); an open end (below / beyond) means the draws put "
        "the crossover outside the batch sizes measured",
        between_batch_sizes=None if crossing is None else crossing[1],
    )
    if mean is not None:
        return result
    # outside only where at most 2.5% of the draws crossed among the sizes measured (an
    # interval from below the first to beyond the last holds every draw that crossed
    # inside: 41% of them once read "any crossover lies outside them")
    if len(found) <= 0.025 * n_boot:
        return result.model_copy(update={"note": never + ": any crossover lies outside them"})
    return result.model_copy(  # the interval reaches in: the crossover may lie among them
        update={
            "note": never + ", but the points' intervals do not rule out a crossover among "
            f"them (95% interval {result.ci95_text})"
        }
    )


def _sign_before_crossing(pts: Sequence[BatchPoint]) -> bool:
    """Whether the delta is negative before the crossover: the smallest batch size's
    sign, or, where its delta is exactly 0 (the crossover itself), the other side of
    the first non-zero delta after it."""
    first = pts[0].delta_pct
    if first != 0.0:
        return first < 0
    after = next((p.delta_pct for p in pts if p.delta_pct != 0.0), 0.0)
    return not after < 0


def _end(value: float, lo_b: int, hi_b: int) -> str:
    if value == math.inf:
        return f"beyond {hi_b}"
    if value == -math.inf:
        return f"below {lo_b}"
    return f"{value:.3g}"


def map_words(fmt: str, points: Sequence[BatchPoint]) -> str:
    """'INT4 saves at batch 1-4, costs from 16', from each point's verdict."""
    pts = sorted(points, key=lambda p: p.batch_size)
    runs = [  # the verdict of each run of batch sizes that share one
        ("is inconclusive" if verdict == "inconclusive" else verdict, [p.batch_size for p in run])
        for verdict, run in itertools.groupby(pts, key=lambda p: p.verdict or "inconclusive")
    ]
    if len(runs) == 1:
        said, batches = runs[0]
        every = "every batch measured" if len(batches) > 1 else f"batch {batches[0]}"
        return f"{fmt} {said} at {every}"
    parts = []
    for k, (said, batches) in enumerate(runs):
        if len(batches) > 1 and batches[-1] == pts[-1].batch_size:
            parts.append(f"{said} from {batches[0]}")
        else:
            span = f"{batches[0]}" + (f"-{batches[-1]}" if len(batches) > 1 else "")
            parts.append(f"{said} at {'batch ' if k == 0 else ''}{span}")
    return f"{fmt} " + ", ".join(parts)


def axis_entry(
    model: str, fmt: str, points: Sequence[BatchPoint], n_boot: int | None
) -> BatchAxisEntry:
    """One (model, format) curve over the batch axis."""
    pts = sorted(points, key=lambda p: p.batch_size)
    return BatchAxisEntry(
        model_name=model,
        precision=fmt,
        points=pts,
        crossover=crossover(pts, **({} if n_boot is None else {"n_boot": n_boot})),
        map=map_words(fmt, pts) + phase_words(fmt, pts),
    )


def phase_words(fmt: str, points: Sequence[BatchPoint]) -> str:
    """With the phases apart (every point): the workload's map and the phase that
    decides it at each batch size, after the headline's (the decode window's), e.g.
    "; for 1024 in, 256 out: NF4 costs at every batch measured (the prefill decides at
    batch 1-16)". Empty otherwise."""
    phases = [p.phases for p in points if p.phases is not None]
    if not phases or len(phases) != len(points):
        return ""
    workload = [
        p.model_copy(update={"delta_pct": ph.workload.delta_pct, "verdict": ph.workload.verdict})
        for p, ph in zip(points, phases, strict=True)
    ]
    deciders: dict[str, list[int]] = {}
    for p, ph in zip(points, phases, strict=True):
        if ph.decided_by is not None:
            deciders.setdefault(ph.decided_by, []).append(p.batch_size)
    said = "; ".join(
        f"the {phase} decides at "
        + (
            "every batch measured"
            if len(sizes) == len(phases) > 1
            else "batch " + ", ".join(str(b) for b in sizes)
        )
        for phase, sizes in deciders.items()
    )
    head = "decode" if len(phases) > 1 else "the decode window"
    text = f" ({head}); for {phases[0].prompt_tokens} in, {phases[0].new_tokens} out: "
    return text + map_words(fmt, workload) + (f" ({said})" if said else "")
