"""Issue 20, item 13: a sweep's fit keeps sizes as sizes.

Three valid reports at 0.0001, 1 and 2 B fitted to an Nstar of about 1e-6 B, which the
fit wrote rounded to 4 decimals: 0. Drawing the curve then divided by zero (an internal
error, no sweep.json). Sizes in billions are rounded to significant digits instead.
"""

from __future__ import annotations

import json

import pytest

from ecocompute.cli import main
from ecocompute.published.figures import delta_pct
from ecocompute.sweeps.curvefit import Point, fit_points

from ..made_reports import measured, write

TINY_FIRST = ((0.0001, 30.0), (1.0, 10.0), (2.0, 10.0))


def test_sizes_are_rounded_to_significant_digits():
    from ecocompute.sweeps.curvefit import round_size_b

    assert round_size_b(1.234567e-6) == 1.23e-6
    assert round_size_b(0.000123456789) == 0.000123
    assert round_size_b(1.89443) == 1.8944  # 4 decimals where they keep the digits
    assert round_size_b(7.0) == 7.0 and round_size_b(0.0001) == 0.0001


def test_a_fit_with_a_tiny_nstar_keeps_it_positive():
    points = [Point(n, d, 5.0 / 2.262) for n, d in TINY_FIRST]
    p = fit_points(points, n_boot=50).parameters
    assert p is not None and p.Nstar > 0
    for n, d in TINY_FIRST:  # three points, three parameters: the curve passes through them
        assert delta_pct(n, p.A, p.S, p.Nstar) == pytest.approx(d, abs=0.05)


def test_fit_only_over_a_tiny_size_writes_sweep_json_and_its_plot(tmp_path, capsys):
    pytest.importorskip("scipy")
    for n, d in TINY_FIRST:
        write(measured(params_b=n, delta=d), tmp_path / f"m{n:g}")
    status = main(["sweep", "--fit_only", "--output_dir", str(tmp_path), "-q"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    sweep = json.loads((tmp_path / "sweep.json").read_text())
    (fit,) = sweep["fits"]
    assert fit["status"] == "fitted" and fit["parameters"]["Nstar"] > 0
    assert min(fit["crossover"]["search_range_b"]) > 0
    assert sweep["plot"] == "sweep.png"
