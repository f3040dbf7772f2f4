"""plot: the figure's content read back through matplotlib's objects, not pixels."""

from __future__ import annotations

import json
import sys

import pytest

pytest.importorskip("matplotlib")

from matplotlib.container import ErrorbarContainer

from ecocompute.cli import main
from ecocompute.errors import InputError
from ecocompute.plots.axes import series_color
from ecocompute.plots.size_plot import FitLine, build_figure, plottable
from ecocompute.published.figures import curve_for
from ecocompute.results.collect import read_reports

from ..conftest import REPO
from ..made_reports import measured, write


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

    # The site borrows Ampere's curve for Hopper; it gave none of these measured points,
    # so it is not drawn under them: a note says there is no Hopper curve, and why.
    assert not _lines(ax, "published-ampere")
    (note,) = _lines(ax, "no-curve-note")  # in the legend, never on the points
    text = " ".join(note.get_label().split())
    assert "no published NF4 curve measured on hopper" in text
    assert "borrows ampere's: not drawn under points it did not give" in text
    assert not [t for t in ax.texts if t.get_gid() == "no-curve-note"]
    # Ada's NF4 curve for context, named as another arch: solid 0.5-7B, dashed beyond.
    (ada,) = _lines(ax, "published-ada-NF4-fitted")
    assert "context" in ada.get_label() and ada.get_linestyle() == "-"
    assert min(ada.get_xdata()) == pytest.approx(0.5) and max(ada.get_xdata()) == pytest.approx(7)
    x, y = ada.get_xdata()[0], ada.get_ydata()[0]
    assert y == pytest.approx(curve_for("ada", "NF4").delta_pct(x))
    beyond = _lines(ax, "published-ada-NF4-beyond")
    assert beyond and all(ln.get_linestyle() == "--" for ln in beyond)

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


def test_two_reports_of_one_unit_are_a_hollow_point_and_the_title_counts_units(tmp_path):
    """The title said "filled: n >= 2 reports" while n counts units: a unit's two
    sessions were drawn hollow under it."""
    write(measured(params_b=1.1, delta=20.0, unit="one"), tmp_path / "s1")
    write(measured(params_b=1.1, delta=22.0, unit="one"), tmp_path / "s2")
    fig = build_figure(read_reports([tmp_path])[0])
    (bar,) = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert bar.lines[0].get_markerfacecolor() == "none"
    assert "filled: n >= 2 units" in fig.get_suptitle()


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


def test_a_card_named_is_the_measured_one_not_a_label_that_names_it(tmp_path, capsys):
    """Issue 29: --card "RTX 5090" also matched the no-GPU label that names the RTX 5090
    as its published card, and the message said "invalid card None"."""
    write(measured(gpu="NVIDIA GeForce RTX 5090", arch="blackwell"), tmp_path / "m")
    argv = ["run", "--dry_run", "-q", "--gpu_arch", "5090", "--model", "x-1.1b", "--params_b",
            "1.1", "--output_dir", str(tmp_path / "d")]  # fmt: skip
    assert main(argv) == 0
    reports = read_reports([tmp_path])[0]
    assert len({r.card for r in reports}) == 2
    with pytest.raises(InputError, match="invalid card 'not given'"):
        build_figure(reports)
    assert [r.card for r in plottable(reports, "RTX 5090")] == ["NVIDIA GeForce RTX 5090"]
    (derived,) = [r.card for r in reports if r.kind == "derived"]
    assert [r.card for r in plottable(reports, derived)] == [derived]  # exact: that one


def test_user_fit_and_crossover_are_drawn(hopper_reports):
    fit = FitLine(40.0, 80.0, 3.0, 3, 3.0, "within measured range", (2.5, None))
    (ax,) = build_figure(hopper_reports, fits={"NF4": fit}).axes
    (line,) = _lines(ax, "user-fit")
    assert line.get_linestyle() == ":"
    (cross,) = _lines(ax, "user-crossover")
    assert list(cross.get_xdata()) == [3.0, 3.0]


def test_committed_validation_reports_plot(tmp_path):
    """The committed reports hold two cards (H200s and, since the units of 2026-12-02,
    H100s): plot asks for one, and plots each."""
    out = tmp_path / "c.png"
    assert main(["plot", str(REPO / "docs" / "validation"), "-o", str(out)]) == 2
    assert not out.exists()
    for card in ("NVIDIA H200", "NVIDIA H100 80GB HBM3"):
        argv = ["plot", str(REPO / "docs" / "validation"), "--card", card, "-o", str(out)]
        assert main(argv) == 0
        assert out.stat().st_size > 10_000


def test_without_matplotlib_plot_says_so_and_exits_1(tmp_path, monkeypatch, capsys):
    write(measured(), tmp_path / "a")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now raises ImportError
    assert main(["plot", str(tmp_path), "-o", str(tmp_path / "c.png")]) == 1
    assert "pip install 'ecocompute[plot]'" in capsys.readouterr().err
    assert not (tmp_path / "c.png").exists()


def test_derived_points_are_drawn_on_the_curve_that_gave_them(tmp_path, capsys):
    """Hopper derived points: this project's fit up to 13B, Ampere's borrowed curve
    above; each drawn, labelled, and only there."""
    for size in ("3", "14"):
        argv = ["energy_estimate", "--dry_run", "--quiet", "--model", f"m-{size}b", "--params_b",
                size, "--gpu_arch", "hopper", "--output_dir", str(tmp_path / size)]  # fmt: skip
        assert main(argv) == 0
    (ax,) = build_figure(read_reports([tmp_path])[0]).axes
    (own,) = _lines(ax, "project-hopper-NF4-fitted")
    assert own.get_label().endswith("the curve of the derived point at 3B")
    (borrowed,) = _lines(ax, "published-ampere-NF4-fitted")
    assert "BORROWED for hopper" in borrowed.get_label()
    assert borrowed.get_label().endswith("it gave the derived point at 14B")
    assert len(_lines(ax, "derived")) == 2
    # each curve only over its own points' side: halfway (log axis) to the other's
    xs = [x for ln in _lines(ax, "published-ampere") for x in ln.get_xdata()]
    assert min(xs) == pytest.approx((3 * 14) ** 0.5) and max(xs) > 14
    xs = [x for ln in _lines(ax, "project-hopper-NF4") for x in ln.get_xdata()]
    assert max(xs) == pytest.approx((3 * 14) ** 0.5) and min(xs) < 3
    assert "published dataset" not in build_figure(read_reports([tmp_path])[0]).get_suptitle()
    # only the derived point at 3B on the Ada context curve's panel: no borrowed curve
    (ax3,) = build_figure(read_reports([tmp_path / "3"])[0]).axes
    assert not _lines(ax3, "published-ampere") and _lines(ax3, "project-hopper-NF4")


def test_a_borrowed_curve_is_labelled_and_drawn_only_around_the_points_it_gave(tmp_path):
    """Hopper INT8 at 0.5, 7 and 70B comes from Ampere's borrowed curve, at 1.1B from
    this project's H200 units (no curve); NF4 at 70B is the borrowed curve's, drawn only
    beyond its fitted range: labelled all the same."""
    for fmt, sizes in (("INT8", ("0.5", "1.1", "7", "70")), ("NF4", ("7", "70"))):
        for size in sizes:
            argv = ["energy_estimate", "--dry_run", "--quiet", "--model", f"m-{size}b",
                    "--params_b", size, "--gpu_arch", "hopper", "--precision", fmt,
                    "--output_dir", str(tmp_path / fmt / size)]  # fmt: skip
            assert main(argv) == 0
    (ax,) = build_figure(read_reports([tmp_path / "NF4"])[0]).axes
    (own,) = [t for t in _legend(ax) if "this project's own hopper NF4 fit" in t]
    assert own.endswith("the curve of the derived point at 7B")
    (borrowed,) = [t for t in _legend(ax) if "BORROWED for hopper" in t]
    assert borrowed.endswith("it gave the derived point at 70B")
    (ax,) = build_figure(read_reports([tmp_path / "INT8"])[0]).axes
    (borrowed,) = [t for t in _legend(ax) if "BORROWED for hopper" in t]
    assert borrowed.endswith("it gave the derived points at 0.5B, 7B, 70B")
    xs = [x for ln in _lines(ax, "published-ampere") for x in ln.get_xdata()]
    assert max(x for x in xs if x < 1.1) == pytest.approx((0.5 * 1.1) ** 0.5)
    assert min(x for x in xs if x > 1.1) == pytest.approx((1.1 * 7) ** 0.5)


def test_every_series_has_its_own_colour_past_six(tmp_path):
    for i in range(9):
        write(measured(params_b=1.1 + i, delta=10.0 - i), tmp_path / f"r{i}")
    (ax,) = build_figure(read_reports([tmp_path])[0]).axes
    bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    colours = {c.lines[0].get_color() for c in bars}
    assert len(bars) == 9 and len(colours) == 9
    assert len({series_color(i) for i in range(60)}) == 60


def test_copies_of_one_derived_report_are_one_point_of_n_1(tmp_path, capsys):
    argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "m-1.1b", "--gpu_arch",
            "ada", "--output_dir", str(tmp_path / "a")]  # fmt: skip
    assert main(argv) == 0
    # a second dry run: the same figure at another time (a byte-identical copy is counted
    # once before plotting: test_hostile_counted_once)
    doc = json.loads((tmp_path / "a" / "energy.json").read_text())
    doc["timestamp_utc"] = "2026-01-01T00:00:00Z"
    write(doc, tmp_path / "b")
    (ax,) = build_figure(read_reports([tmp_path])[0]).axes
    (point,) = _lines(ax, "derived")
    assert "n=1" in point.get_label() and "2 identical files" in point.get_label()


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


MAP = REPO / "docs/validation/h200-map"


def test_int4_and_fp8_reports_plot_alone_and_beside_the_others():
    b1 = MAP / "map-7b/synthetic-llama-2-7b-b1"
    alone = build_figure(read_reports([b1 / "INT4"])[0])
    assert [ax.get_title() for ax in alone.axes] == ["INT4 vs FP16"]
    fig = build_figure(read_reports([b1 / "NF4", b1 / "INT4", b1 / "FP8"])[0])
    assert [ax.get_title() for ax in fig.axes] == ["NF4 vs FP16", "INT4 vs FP16", "FP8 vs FP16"]
    for ax in fig.axes[1:]:
        (note,) = _lines(ax, "no-curve-note")
        assert "measured bitsandbytes NF4 and LLM.int8() only" in " ".join(note.get_label().split())
        assert len([c for c in ax.containers if isinstance(c, ErrorbarContainer)]) == 1


def test_legends_hold_only_their_panel_and_batches_sort_as_numbers():
    reports = read_reports([MAP / "map-7b"])[0]
    picked = [r for r in reports if r.precision in ("NF4", "INT4")]
    nf4, int4 = build_figure(picked).axes
    for ax in (nf4, int4):
        points = [t for t in _legend(ax) if ", n=" in t]
        assert [t.split("batch ")[1].split(",")[0] for t in points] == ["1", "4", "16", "64"]
        bars = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == len(points) == 4  # every legend entry is drawn in its panel
    assert all("INT4" not in t for t in _legend(nf4))


def test_the_break_even_label_stands_outside_the_points(hopper_reports):
    (ax,) = build_figure(hopper_reports).axes
    (label,) = [t for t in ax.texts if t.get_gid() == "break-even-label"]
    assert label.xy[0] == 1.0 and label.get_ha() == "left"  # right of the axes


def test_a_plot_of_derived_points_only_claims_no_bars(tmp_path):
    argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "m-1.1b", "--gpu_arch",
            "ada", "--output_dir", str(tmp_path / "a")]  # fmt: skip
    assert main(argv) == 0
    fig = build_figure(read_reports([tmp_path])[0])
    title = fig.get_suptitle()
    assert "DERIVED" in title and "bars" not in title
    # one panel, 7.5 inches wide: the title's long third line was cut at both edges
    fig.canvas.draw()
    extent = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    assert extent.x0 >= 0 and extent.x1 <= fig.bbox.x1, extent


def test_every_legend_stays_inside_the_figure():
    """Issue 29: with many groups (the committed reports) the legend below a panel ran
    past the figure's edges."""
    reports = read_reports([REPO / "docs" / "validation"])[0]
    fig = build_figure(reports, card="NVIDIA H200")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    for ax in fig.axes:
        legend = ax.get_legend()
        extent = legend.get_window_extent(renderer)
        assert extent.x0 >= 0 and extent.y0 >= 0, extent
        assert extent.x1 <= box.x1 and extent.y1 <= box.y1, extent


def test_nothing_plottable_names_the_paths_given(tmp_path, monkeypatch, capsys):
    """FP16 reports alone: bad input naming the paths as given, not 'PATH None'."""
    write(measured(precision="FP16"), tmp_path / "fp16")
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["plot", "fp16", "empty", "-o", "p.png"]) == 2
    err = capsys.readouterr().err
    assert "invalid PATH 'fp16 empty': no plottable report" in err, err
    assert not (tmp_path / "p.png").exists()


def test_reports_left_out_are_named_with_why_and_so_is_the_cause(tmp_path, capsys):
    """INT4 and FP8 dry runs have no figure (basis unavailable): they were dropped without
    a word, then 'needs quantized reports (... INT4 or FP8)' blamed reports that are INT4
    and FP8 (a review). Each report left out is one stderr line, and the error says why."""
    for fmt in ("INT4", "FP8"):
        argv = ["run", "--dry_run", "-q", "--precision", fmt, "--output_dir", str(tmp_path / fmt)]
        assert main(argv) == 0
    write(measured(precision="FP16"), tmp_path / "fp16")
    capsys.readouterr()
    assert main(["plot", str(tmp_path), "-o", str(tmp_path / "p.png")]) == 2
    err = capsys.readouterr().err.splitlines()
    unavailable = "no delta vs FP16 (basis unavailable: no figure)"
    assert err[:3] == [
        f"{tmp_path / 'FP8' / 'energy.json'}: left out of the plot: {unavailable}",
        f"{tmp_path / 'INT4' / 'energy.json'}: left out of the plot: {unavailable}",
        f"{tmp_path / 'fp16' / 'energy.json'}: left out of the plot: FP16 has no delta vs FP16 "
        "to plot",
    ]
    assert err[3].endswith(
        "; every report read was left out: FP16 has no delta vs FP16 to plot; " + unavailable
    )


def test_a_curve_is_labelled_with_the_cards_it_was_fitted_on(tmp_path):
    """The Ada INT8 fit is the RTX 4090's alone: its label named the FP16 anchors' two
    cards, RTX 4090 + RTX 4090D (a review); the NF4 fit's anchors are both cards'."""
    write(measured(precision="INT8", delta=150.0, gpu="NVIDIA GeForce RTX 4090", arch="ada"),
          tmp_path / "i")  # fmt: skip
    write(measured(precision="NF4", delta=20.0, gpu="NVIDIA GeForce RTX 4090", arch="ada"),
          tmp_path / "n")  # fmt: skip
    axes = build_figure(read_reports([tmp_path])[0]).axes
    labels = [
        ln.get_label()
        for ax in axes
        for ln in _lines(ax, "published-ada-")
        if ln.get_label()[0] != "_"
    ]
    assert any(t.startswith("published ada INT8 fit (RTX 4090), fitted") for t in labels), labels
    assert any(t.startswith("published ada NF4 fit (RTX 4090 + RTX 4090D)") for t in labels)


def _int8(folder, delta, *, threshold=None, library=None):
    doc = measured(precision="INT8", delta=delta)
    if threshold is not None:
        doc["workload"]["llm_int8_threshold"] = threshold
    if library is not None:
        doc["workload"]["quantization"] = {"library": library, "method": "int8_weight_only"}
    write(doc, folder)


def test_int8_of_another_library_or_threshold_is_a_panel_of_its_own(tmp_path, capsys):
    """INT8 from torchao, or LLM.int8() at threshold 0, is never dropped, never pooled
    with LLM.int8() at its default threshold, and plots alone (it once divided by zero)."""
    _int8(tmp_path / "bnb", 150.0, threshold=6.0)
    _int8(tmp_path / "pure", 94.0, threshold=0.0)
    _int8(tmp_path / "ao", 80.0, library="torchao")
    fig = build_figure(read_reports([tmp_path])[0])
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["INT8 vs FP16", "INT8 (threshold 0) vs FP16", "INT8-torchao vs FP16"]
    drawn = [
        [c.lines[0].get_ydata()[0] for c in ax.containers if isinstance(c, ErrorbarContainer)]
        for ax in fig.axes
    ]
    assert drawn == [[pytest.approx(150.0)], [pytest.approx(94.0)], [pytest.approx(80.0)]]
    assert main(["plot", str(tmp_path / "ao"), "-o", str(tmp_path / "ao.png")]) == 0


def test_a_point_of_one_unit_stands_at_its_pooled_figure_inside_its_interval(tmp_path):
    """Two reports of one GPU are combined by inverse variance (aggregate's figure): the
    marker is that figure, inside its bar (the plain mean of the two, -8.75, lay outside
    the interval and matplotlib refused the negative bar)."""
    write(measured(delta=-12.5, half_ci=0.5, n_pairs=10, unit="u7"), tmp_path / "a")
    write(measured(delta=-5.0, half_ci=6.0, n_pairs=3, unit="u7"), tmp_path / "b")
    reports = read_reports([tmp_path])[0]
    (ax,) = build_figure(reports).axes
    (bar,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    y = bar.lines[0].get_ydata()[0]
    (segment,) = bar.lines[2][0].get_segments()
    lo, hi = sorted(p[1] for p in segment)
    assert lo <= y <= hi and y < -12.0
    assert main(["plot", str(tmp_path), "-o", str(tmp_path / "p.png")]) == 0


def test_a_name_the_font_cannot_draw_is_one_line_not_a_warning_per_glyph(tmp_path):
    """In its own process (pytest keeps warnings off stderr): a CJK model name printed a
    multi-line UserWarning per missing glyph."""
    import os
    import subprocess

    write(measured(model="synthetic:模型-1.1b", params_b=1.1), tmp_path / "r")
    done = subprocess.run(
        [sys.executable, "-m", "ecocompute", "plot", str(tmp_path / "r"), "-o",
         str(tmp_path / "p.png")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "UserWarning" not in done.stderr and "Glyph" not in done.stderr, done.stderr
    assert len([x for x in done.stderr.splitlines() if "font" in x]) == 1, done.stderr
