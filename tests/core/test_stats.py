"""Statistics against known values."""

from __future__ import annotations

import pytest

from ecocompute.core.stats import (
    chi2_cdf,
    chi2_quantile,
    estimate_delta,
    paired_deltas_pct,
    summarise,
    t_cdf,
    t_quantile,
    verdict_for,
)


@pytest.mark.parametrize(
    ("df", "q975"),
    [
        (1, 12.7062),
        (2, 4.3027),
        (4, 2.7764),
        (9, 2.2622),
        (19, 2.0930),
        (29, 2.0452),
        (120, 1.9799),
    ],
)
def test_t_quantiles_match_tables(df, q975):
    assert t_quantile(0.975, df) == pytest.approx(q975, abs=1e-4)


@pytest.mark.parametrize("df", [1, 2, 3, 4, 6, 7, 12, 30, 2.5])
def test_chi_square_against_scipy(df):
    """The Q-profile's quantiles (core/meta.py): both tails, to the bisection's
    tolerance, and the distribution itself across its range."""
    from scipy.stats import chi2

    for p in (0.001, 0.025, 0.5, 0.975, 0.999):
        assert chi2_quantile(p, df) == pytest.approx(chi2.ppf(p, df), rel=1e-9)
    for x in (0.01, 0.5, 3.0, 10.0, 40.0, 100.0):
        assert chi2_cdf(x, df) == pytest.approx(chi2.cdf(x, df), abs=1e-12)
    with pytest.raises(ValueError):
        chi2_quantile(1.0, df)


def test_t_cdf_symmetry_and_centre():
    assert t_cdf(0.0, 5) == pytest.approx(0.5)
    assert t_cdf(-2.0, 7) == pytest.approx(1.0 - t_cdf(2.0, 7))


def test_summary_mean_sd_cv():
    s = summarise([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert s.mean == 5.0
    assert s.sd == pytest.approx(2.13809, abs=1e-5)  # sample sd
    assert s.cv_pct == pytest.approx(42.7618, abs=1e-4)
    assert summarise([3.0]).sd is None


def test_paired_deltas():
    assert paired_deltas_pct([100.0, 200.0], [110.0, 150.0]) == pytest.approx([10.0, -25.0])
    with pytest.raises(ValueError):
        paired_deltas_pct([1.0], [1.0, 2.0])


def test_interval_by_hand():
    # deltas 10, 12, 8, 11, 9: mean 10, sd 1.5811, se 0.7071, t(0.975, 4) = 2.7764
    est = estimate_delta([10.0, 12.0, 8.0, 11.0, 9.0])
    assert est.mean_pct == 10.0
    assert est.ci95_pct == pytest.approx((10.0 - 1.9632, 10.0 + 1.9632), abs=1e-3)
    assert est.verdict == "costs"


def test_verdicts():
    assert estimate_delta([-5.0, -6.0, -4.0]).verdict == "saves"
    assert estimate_delta([-5.0, 6.0, -4.0]).verdict == "inconclusive"
    assert estimate_delta([7.0]).verdict == "inconclusive"  # n = 1: no interval
    assert estimate_delta([7.0]).ci95_pct is None
    assert verdict_for((0.0, 3.0)) == "inconclusive"  # touching zero is not "costs"
    assert verdict_for((-3.0, 0.0)) == "inconclusive"  # nor "saves"
