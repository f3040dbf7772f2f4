"""The sweep's fit: recovering a known crossover from synthetic points."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("scipy")

from ecocompute.core.stats import t_quantile
from ecocompute.published.figures import DeltaCurve, delta_pct, published
from ecocompute.sweeps.curvefit import (
    EXTRAPOLATED,
    NONE_IN_RANGE,
    WITHIN,
    Point,
    crossover_of,
    fit_points,
    se_from_ci,
)

# The superseded RTX 4090D-only Ada NF4 curve (kept in the JSON for provenance) never
# reaches zero (A - S = +15.5%): a known curve that does not cross. The made curve keeps
# its shape (S, N*) and lowers A so that it crosses exactly at 3.7B, where the refitted
# Ada curve of the published page crosses.
_OLD = published()["superseded_curves"]["ada"]["NF4"]
ADA = DeltaCurve("ada", "NF4", _OLD["A"], _OLD["S"], _OLD["Nstar"], (0.5, 3.0))
TRUE_CROSS_B = 3.7
_X = TRUE_CROSS_B / ADA.nstar_b
A_CROSSING = ADA.s_pct * _X / (1 + _X)


def _curve(n):
    return delta_pct(n, A_CROSSING, ADA.s_pct, ADA.nstar_b)


def test_the_made_curve_crosses_where_intended():
    assert crossover_of(A_CROSSING, ADA.s_pct, ADA.nstar_b) == pytest.approx(TRUE_CROSS_B)
    assert crossover_of(ADA.a_pct, ADA.s_pct, ADA.nstar_b) is None


def test_noisy_points_recover_the_crossover_within_tolerance():
    rng = random.Random(5)
    se = 1.5
    points = [
        Point(n, _curve(n) + rng.gauss(0.0, se), se) for n in (0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    ]
    fit = fit_points(points, n_boot=1000)
    assert fit.status == "fitted" and fit.dof == 4
    cross = fit.crossover
    assert cross is not None and cross.status == WITHIN
    assert cross.params_b == pytest.approx(TRUE_CROSS_B, abs=0.4)
    assert cross.ci95_b is not None
    lo, hi = cross.ci95_b
    assert lo is not None and hi is not None
    assert lo < TRUE_CROSS_B < hi
    assert hi - lo < 2.0
    assert fit.reduced_chi2 is not None


def test_three_exact_points_are_an_exactly_determined_fit():
    points = [Point(n, _curve(n), 1.0) for n in (1.0, 2.0, 3.0)]
    fit = fit_points(points, n_boot=500)
    p, cross = fit.parameters, fit.crossover
    assert p is not None and cross is not None
    assert pytest.approx(A_CROSSING, abs=0.05) == p.A
    assert pytest.approx(ADA.s_pct, abs=0.05) == p.S
    assert p.Nstar == pytest.approx(ADA.nstar_b, rel=1e-3)
    assert fit.dof == 0 and fit.reduced_chi2 is None
    assert any("exactly determined" in note for note in fit.notes or [])
    assert cross.status == EXTRAPOLATED  # 3.7B lies just past the largest point
    assert cross.params_b == pytest.approx(TRUE_CROSS_B, rel=1e-3)


def test_a_curve_that_never_crosses_says_none_in_range():
    points = [Point(n, ADA.delta_pct(n), 2.0) for n in (0.5, 1.5, 3.0)]
    cross = fit_points(points, n_boot=300).crossover
    assert cross is not None and cross.status == NONE_IN_RANGE and cross.params_b is None
    assert "costs energy across the range" in (cross.note or "") and "above" in (cross.note or "")
    assert cross.search_range_b == [0.25, 6.0]


def test_fewer_than_three_sizes_is_skipped_with_the_reason():
    fit = fit_points([Point(1.0, 10.0, 1.0), Point(1.0, 11.0, 1.0), Point(2.0, 5.0, 1.0)])
    assert fit.status == "skipped" and "3 or more sizes" in (fit.reason or "")


def test_points_without_intervals_fit_unweighted_with_no_interval():
    fit = fit_points([Point(n, _curve(n), None) for n in (1.0, 2.0, 3.0, 5.0)])
    assert fit.weighting == "uniform" and fit.crossover is not None
    assert fit.crossover.ci95_b is None
    assert "unavailable" in (fit.crossover.ci_note or "")


def test_standard_error_from_a_paired_t_interval():
    se = se_from_ci([10.0, 20.0], 9)  # ten pairs: 9 degrees of freedom
    assert se == pytest.approx(5.0 / t_quantile(0.975, 9))
    assert se_from_ci([10.0, 20.0], 0) is None and se_from_ci(None, 9) is None
    # two compiles' pooled interval: t on 1 degree of freedom (12.71, not 3.18 for 4 pairs)
    assert se_from_ci([10.0, 20.0], 1) == pytest.approx(5.0 / 12.706204736174698)
