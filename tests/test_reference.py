"""The published-reference math against hand-computed values."""

from __future__ import annotations

import pytest

from ecocompute.published.figures import anchors_for, curve_for, delta_pct
from ecocompute.published.figures import published_figure as estimate


def test_anchor_values_are_returned_exactly():
    assert anchors_for("ada").energy_per_token_mj(1.1) == pytest.approx(1600.58, abs=1e-9)
    assert anchors_for("turing").energy_per_token_mj(7.0) == pytest.approx(21722.65)


def test_log_log_interpolation_between_anchors():
    # ada 1.1B -> 1600.58, 1.5B -> 2238.87; slope ln(2238.87/1600.58)/ln(1.5/1.1) = 1.08212
    # E(1.3) = 1600.58 * (1.3/1.1)^1.08212 = 1917.70 (computed by hand, 2 d.p.)
    assert anchors_for("ada").energy_per_token_mj(1.3) == pytest.approx(1917.70, abs=0.01)


def test_extrapolation_extends_the_nearest_segment():
    # above: ada 1.5->3.0 segment extended to 7B: 2989.22 * (7/3)^0.41716 = 4256.02
    assert anchors_for("ada").energy_per_token_mj(7.0) == pytest.approx(4256.02, abs=0.01)
    # below: ada 0.5->1.1 segment extended to 0.3B: 1474.16 * 0.6^0.10449 = 1397.64
    assert anchors_for("ada").energy_per_token_mj(0.3) == pytest.approx(1397.64, abs=0.01)


def test_delta_curve_formula():
    # x = 1.1 / 0.381 = 2.88714; 106.0936 - 90.55 * x / (1 + x) = 38.838
    assert delta_pct(1.1, 106.0936, 90.55, 0.381) == pytest.approx(38.838, abs=0.001)
    assert curve_for("ampere", "INT8").delta_pct(7.0) == pytest.approx(128.397, abs=0.001)
    assert curve_for("ampere", "NF4").delta_pct(9.0) == pytest.approx(-1.0293)


def test_acceptance_tinyllama_nf4_on_ada():
    # refitted Ada curve: x = 1.1 / 10.31 = 0.106693; 57.5906 - 218.066 * x / (1 + x)
    # = 57.5906 - 21.0230 = 36.568 (by hand)
    ref = estimate("ada", 1.1, "NF4")
    assert ref.basis == "interpolated"
    assert ref.fp16_energy_per_token_mj == pytest.approx(1600.58, abs=0.005)
    assert ref.vs_fp16_energy_pct == pytest.approx(36.568, abs=0.001)
    assert ref.energy_per_token_mj == pytest.approx(1600.58 * 1.36568, rel=1e-4)


@pytest.mark.parametrize(
    ("arch", "precision"),
    [
        ("turing", "INT8"),
        ("ada", "INT8"),
        ("blackwell", "INT8"),
        ("volta", "NF4"),
        ("unknown", "NF4"),
        ("volta", "FP16"),
    ],
)
def test_no_curve_means_no_number(arch, precision):
    ref = estimate(arch, 1.1, precision)
    assert ref.basis == "unavailable"
    assert ref.energy_per_token_mj is None
    assert ref.vs_fp16_energy_pct is None
    assert ref.fp16_energy_per_token_mj is None


def test_outside_the_measured_range_is_extrapolated():
    assert estimate("ada", 7.0, "NF4").basis == "extrapolated"
    assert estimate("ampere", 70.0, "INT8").basis == "extrapolated"
    assert estimate("ampere", 70.0, "INT8").vs_fp16_energy_pct == pytest.approx(68.993, abs=1e-3)
    assert estimate("turing", 3.0, "NF4").basis == "interpolated"


def test_hopper_borrows_ampere_only_where_our_h200_figures_have_nothing():
    # INT8: this project measured only 1.1B, so at 9B Ampere's published curve is borrowed.
    ref = estimate("hopper", 9.0, "INT8")
    ampere = estimate("ampere", 9.0, "INT8")
    assert ref.basis == "extrapolated"  # even inside Ampere's range
    assert ref.vs_fp16_energy_pct == pytest.approx(ampere.vs_fp16_energy_pct)
    assert "borrowed" in ref.note and "Ampere" in ref.note
    assert "INT8 points only at 1.1B" in ref.note
    # FP16 is no longer Ampere's (5445.12 at 9B) but our H200 anchors, extended past 7B.
    assert ref.fp16_energy_per_token_mj != pytest.approx(5445.12)
    assert ref.reference_card == "NVIDIA H200"
    assert "borrowed" in ref.source and "this project's H200 measurements" in ref.source


def test_fp16_alone_has_zero_delta_from_the_anchors():
    ref = estimate("blackwell", 3.0, "FP16")
    assert ref.basis == "interpolated"
    assert ref.energy_per_token_mj == ref.fp16_energy_per_token_mj == pytest.approx(3382.64)
    assert ref.vs_fp16_energy_pct == 0.0
