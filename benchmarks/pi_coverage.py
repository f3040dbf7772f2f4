"""How often the interval for a unit not yet measured holds that unit's true delta, by
simulation, on the unit designs this project pools: each design's units keep their
committed reports' standard errors (the pool's v_i), a true between-unit sd tau is set,
and each trial draws the units' true deltas and estimates, pools them and draws one
more unit. Two intervals: the classic one at REML's tau^2 (Higgins, Thompson and
Spiegelhalter 2009; what the tool printed before 2026-12-05's sixteenth session) and the
confidence-distribution one (Nagashima, Noma and Furukawa 2019; core/meta.py).

    PYTHONPATH=. python benchmarks/pi_coverage.py [--trials N] [--seed S]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

from ecocompute.core.meta import pool
from ecocompute.core.stats import CONFIDENCE, t_quantile
from ecocompute.pooling.aggregate import group_reports
from ecocompute.pooling.units import pool_units
from ecocompute.results.collect import read_reports

REPO = Path(__file__).resolve().parents[1]
DESIGNS = (  # (name, folder, precision, compile notes)
    ("H100 compiled default, NF4", "docs/validation/h100-compile-mode", "NF4", ("mode default",)),
    ("H200 eager, NF4", "docs/validation/h200-eager-units", "NF4", ()),
    ("H200 graphs, NF4", "docs/validation/h200-units", "NF4", ()),
)
TAU_MULTIPLES = (0.0, 0.5, 1.0, 3.0)  # of the design's median unit SE


def _ses(folder: str, precision: str, notes: tuple[str, ...]) -> list[float]:
    groups = group_reports(read_reports([REPO / folder])[0])
    for p in pool_units(groups):
        if p.group.precision == precision and p.group.reports[0].compile_notes == notes:
            return [u.se_pct for u in p.units]
    raise SystemExit(f"{folder}: no {precision} units")


def classic(y: list[float], v: list[float]) -> tuple[float, float]:
    r = pool(y, v)
    assert r.se_interval is not None
    half = t_quantile(0.5 + CONFIDENCE / 2.0, r.k - 2) * math.sqrt(r.tau2 + r.se_interval**2)
    return r.mu - half, r.mu + half


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"{args.trials} trials a row, seed {args.seed}; coverage (mean width, points)")
    head = f"{'classic at REML tau':>24}  {'confidence distribution':>24}"
    print(f"{'design':<28} {'k':>2} {'tau':>6}  {head}")
    for name, folder, precision, notes in DESIGNS:
        ses = _ses(folder, precision, notes)
        v = [s * s for s in ses]
        median_se = sorted(ses)[len(ses) // 2]
        for multiple in TAU_MULTIPLES:
            tau = multiple * median_se
            hits = {"classic": 0, "cd": 0}
            widths = {"classic": 0.0, "cd": 0.0}
            start = time.perf_counter()
            for _ in range(args.trials):
                y = [rng.gauss(0.0, tau) + rng.gauss(0.0, s) for s in ses]
                new = rng.gauss(0.0, tau)
                for key, (lo, hi) in (("classic", classic(y, v)), ("cd", pool(y, v).pi95)):
                    hits[key] += lo <= new <= hi
                    widths[key] += hi - lo
            cells = [
                f"{hits[key] / args.trials:>6.3f} ({widths[key] / args.trials:>7.2f})"
                for key in ("classic", "cd")
            ]
            print(
                f"{name:<28} {len(ses):>2} {tau:>6.2f}  {cells[0]:>24}  {cells[1]:>24}"
                f"   ({time.perf_counter() - start:.0f} s)",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
