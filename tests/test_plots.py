"""plot: the figure's content read back through matplotlib's objects, not pixels."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("matplotlib")

from matplotlib.container import ErrorbarContainer

from ecocompute.cli import main
from ecocompute.errors import InputError
from ecocompute.published.figures import curve_for
from ecocompute.results.collect import read_reports
from ecocompute.results.plot import build_figure

from .conftest import REPO
from .made_reports import measured, write


def _lines(ax, gid_prefix):
    return [ln for ln in ax.get_lines() if (ln.get_gid() or "").startswith(gid_prefix)]


@pytest.fixture
def hopper_reports(tmp_path):
    write(measured(params_b=1.1, delta=20.0, half_ci=5.0), tmp_path / "a1")
    write(measured(params_b=1.1, delta=24.0, half_ci=5.0), tmp_path / "a2")  # n = 2
    write(measured(params_b=6.7, delta=5.0, half_ci=4.0), tmp_path / "b")  # n = 1
    return read_reports([tmp_path])[0]


def test_panel_has_log_axis_break_even_curves_and_points(hopper_reports):
    fig = build_figure(hopper_reports)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log"
    assert "billions of parameters" in ax.get_xlabel()
    assert "vs FP16 (%)" in ax.get_ylabel()

    (zero,) = _lines(ax, "break-even")
    assert set(zero.get_ydata()) == {0.0}
    assert any(t.get_text() == "break-even" for t in ax.texts)
    lo, hi = ax.get_ylim()
    assert lo < 0 < hi

    # Hopper borrows Ampere's curve: solid over 7-14B, dashed beyond, labelled borrowed.
    (solid,) = _lines(ax, "published-ampere-NF4-fitted")
    assert solid.get_linestyle() == "-"
    assert min(solid.get_xdata()) == pytest.approx(7.0)
    assert max(solid.get_xdata()) == pytest.approx(14.0)
    assert "BORROWED for hopper" in solid.get_label()
    beyond = _lines(ax, "published-ampere-NF4-beyond")
    assert beyond and all(ln.get_linestyle() == "--" for ln in beyond)
    ampere = curve_for("ampere", "NF4")
    x, y = solid.get_xdata()[0], solid.get_ydata()[0]
    assert y == pytest.approx(ampere.delta_pct(x))
    # Ada's NF4 curve for context, named as another arch.
    (ada,) = _lines(ax, "published-ada-NF4-fitted")
    assert "context" in ada.get_label()

    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 2
    by_n = {c.get_label().split("n=")[-1]: c for c in bars}
    pooled, single = by_n["2"], by_n["1"]
    marker = pooled.lines[0]
    assert marker.get_xdata()[0] == pytest.approx(1.1)
    assert marker.get_ydata()[0] == pytest.approx(22.0)
    assert marker.get_markerfacecolor() != "none"  # filled: n >= 2
    assert single.lines[0].get_markerfacecolor() == "none"  # hollow: n = 1
    # the n = 1 point's bar is its own 95% CI: 5 +- 4
    segs = single.lines[2][0].get_segments()
    assert [p[1] for p in segs[0]] == [pytest.approx(1.0), pytest.approx(9.0)]

    title = fig.get_suptitle()
    assert "NVIDIA H200" in title and "torch 2.11.0" in title and "bitsandbytes" in title


def test_one_panel_per_format_and_svg(tmp_path):
    write(measured(params_b=1.1, delta=20.0), tmp_path / "nf4")
    write(measured(params_b=1.1, delta=200.0, precision="INT8"), tmp_path / "int8")
    write(measured(params_b=1.1, precision="FP16"), tmp_path / "fp16")  # no delta: left out
    fig = build_figure(read_reports([tmp_path])[0])
    assert [ax.get_title() for ax in fig.axes] == ["NF4 vs FP16", "INT8 vs FP16"]
    out = tmp_path / "c.svg"
    assert main(["plot", str(tmp_path), "-o", str(out)]) == 0
    assert "<svg" in out.read_text()[:2000]
    png = tmp_path / "c.png"
    assert main(["plot", str(tmp_path), "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_several_cards_need_a_choice(tmp_path):
    write(measured(), tmp_path / "h200")
    write(measured(gpu="NVIDIA GeForce RTX 4090", arch="ada"), tmp_path / "4090")
    reports = read_reports([tmp_path])[0]
    with pytest.raises(InputError, match="several cards"):
        build_figure(reports)
    fig = build_figure(reports, card="RTX 4090")
    (ax,) = fig.axes
    assert _lines(ax, "published-ada-NF4-fitted")
    assert not _lines(ax, "published-ampere")


def test_user_fit_and_crossover_are_drawn(hopper_reports):
    fit = {
        "status": "fitted",
        "parameters": {"A": 40.0, "S": 80.0, "Nstar": 3.0},
        "n_points": 3,
        "crossover": {"status": "within measured range", "params_b": 3.0, "ci95_b": [2.5, None]},
    }
    (ax,) = build_figure(hopper_reports, fits={"NF4": fit}).axes
    (line,) = _lines(ax, "user-fit")
    assert line.get_linestyle() == ":"
    (cross,) = _lines(ax, "user-crossover")
    assert list(cross.get_xdata()) == [3.0, 3.0]


def test_committed_validation_reports_plot(tmp_path):
    out = tmp_path / "c.png"
    assert main(["plot", str(REPO / "docs" / "validation"), "-o", str(out)]) == 0
    assert out.stat().st_size > 10_000


def test_without_matplotlib_plot_says_so_and_exits_1(tmp_path, monkeypatch, capsys):
    write(measured(), tmp_path / "a")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now raises ImportError
    assert main(["plot", str(tmp_path), "-o", str(tmp_path / "c.png")]) == 1
    assert "pip install 'ecocompute[plot]'" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()
