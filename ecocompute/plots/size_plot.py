"""`ecocompute plot`: energy delta vs FP16 against model size, one card, with the
published fitted curve and the user's points on it.

One panel per quantized format. In each: the site's curve of the card's arch class
(solid over the sizes it was fitted on, dashed beyond), and every curve that gave one
of the derived points shown, as their reports record it (a borrowed curve only there,
and labelled so: never under points it did not give); the Ada NF4 curve for context
where the card is not Ada; a zero line labelled break-even; the user's points with 95%
intervals (filled where a point pools n >= 2 units, hollow where n = 1, each series
its own colour however many), derived points as grey crosses and illustrative ones as
grey pluses; and, after a sweep, the user's own fit with its crossover. matplotlib is
imported inside the functions and drawn through its Agg canvas, so it works headless
and never touches pyplot's global state.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from ecocompute.errors import InputError
from ecocompute.plots.axes import draw_break_even, dress_axes, format_order, series_color
from ecocompute.plots.files import require_matplotlib, text_as_written, write_figure
from ecocompute.pooling.groups import DERIVED_WORDS, Group, group_reports
from ecocompute.published.figures import (
    ORIGIN_PUBLISHED,
    DeltaCurve,
    curve_for,
    delta_pct,
)
from ecocompute.published.site_curves import curve_cards
from ecocompute.report.labels import card_with_arch
from ecocompute.results.collect import Report


@dataclass(frozen=True)
class FitLine:
    """A sweep's own fitted curve, drawn over the points: dE%(N) = A - S x/(1+x),
    x = N/Nstar, and its crossover (billions of parameters) with its 95% interval (None
    where open)."""

    a_pct: float
    s_pct: float
    nstar_b: float
    n_points: int
    crossover_b: float | None = None
    crossover_status: str = ""
    crossover_ci95_b: tuple[float | None, float | None] = (None, None)


CONTEXT_ARCH = "ada"  # the published headline curve, drawn for context on other cards
# every quantized format, a panel each (INT4 and FP8 have no published curve: their
# panels hold the points and say so)
PUBLISHED_FORMATS = ("NF4", "INT8")  # the formats the published dataset measured
NOTE_WIDTH = 70  # characters per line of a note in the legend
TITLE_WIDTH = 110  # characters per line of the title at fontsize 9, per column of panels
_MARKERS = ("o", "s", "D", "^", "v", "P")


PANEL_HEIGHT_IN = 6.0  # the panel, its title and the figure's title
LEGEND_LINE_IN = 0.17  # one legend line at fontsize 7, with its spacing


def left_out(r: Report) -> str | None:
    """Why a report is no point of the plot (FP16, no figure, no size), or None."""
    if not r.quantized:
        return "FP16 has no delta vs FP16 to plot"
    if r.delta_pct is None:
        return f"no delta vs FP16 (basis {r.basis}: no figure)"
    return None if r.params_b else "no model size"


def plottable(reports: Sequence[Report], card: str | None = None) -> list[Report]:
    """The quantized reports with a size and a delta, of one card (InputError if the
    reports span several cards and none was chosen, or there is none, saying why)."""
    points = [r for r in reports if left_out(r) is None]
    if card is not None:
        # a card named exactly is that card; else a measured card whose name holds it
        # ("RTX 5090": NVIDIA GeForce RTX 5090, not also the no-GPU label that names the
        # RTX 5090 as its published card); else any label that holds it
        name = card.lower()
        exact = [r for r in points if r.card.lower() == name]
        held = [r for r in points if name in r.card.lower()]
        points = exact or [r for r in held if r.kind != "derived"] or held
        if not points:
            raise InputError("card", card, "no plottable report of that card")
    cards = sorted({r.card for r in points})
    if len(cards) > 1:
        raise InputError(
            "card",
            card if card is not None else "not given",
            "the reports come from several cards (" + "; ".join(cards) + "); pass --card "
            "with one of them, as written here",
        )
    if not points:
        whys = "; ".join(sorted({why for r in reports if (why := left_out(r)) is not None}))
        raise InputError(
            "PATH",
            None,
            "no plottable report: needs quantized reports (NF4, INT8, INT4 or FP8) with a "
            "size and a delta vs FP16"
            + (f"; every report read was left out: {whys}" if whys else ""),
        )
    return points


def _curve_label(curve: DeltaCurve, arch: str, gave: Sequence[float] = ()) -> str:
    lo, hi = curve.fitted_range_b
    sizes = sorted(set(gave))
    points = f"the derived point{'s' if len(sizes) > 1 else ''} at " + ", ".join(
        f"{x:.3g}B" for x in sizes
    )
    if curve.origin != ORIGIN_PUBLISHED:
        return (
            f"this project's own {curve.arch} {curve.precision} fit, {lo:g}-{hi:g}B "
            f"(not published): the curve of {points}"
        )
    cards = curve_cards(curve)
    card = f" ({cards})" if cards else ""
    text = f"published {curve.arch} {curve.precision} fit{card}, fitted {lo:g}-{hi:g}B"
    if curve.borrowed_from:
        text += f"; BORROWED for {arch}, not measured on {arch}: it gave {points}"
    return text


def _curves_of(arch: str, fmt: str, mine: Sequence[Group]) -> list[tuple[DeltaCurve, list[float]]]:
    """The curves a panel draws, each with the sizes of the derived points it gave: the
    class's own published curve (no sizes: drawn across the panel), and every curve that
    gave one of its derived points (as the report records it)."""
    own = curve_for(arch, fmt)
    curves: list[tuple[DeltaCurve, list[float]]] = (
        [(own, [])] if own is not None and own.borrowed_from is None else []
    )
    for g in mine:
        made = g.reports[0].curve if g.kind == "derived" else None
        if made is None or g.params_b is None:
            continue
        same = [sizes for c, sizes in curves if _key(c) == _key(made)]
        if same:
            same[0].append(g.params_b)
        else:
            curves.append((made, [g.params_b]))
    return curves


def _stretch(
    gave: Sequence[float], mine: Sequence[Group], span: tuple[float, float]
) -> list[tuple[float, float]]:
    """Where a curve that gave derived points is drawn: around each run of its points,
    out to halfway (on the log axis) to the nearest point it did not give, else to the
    panel's edge: never under points it did not give."""
    others = sorted({g.params_b for g in mine if g.params_b and g.params_b not in gave})
    edges: list[float | None] = [None, *others, None]
    spans = []
    for below, above in pairwise(edges):
        run = [x for x in gave if (below or 0) < x < (above or math.inf)]
        if run:
            spans.append(
                (
                    math.sqrt(min(run) * below) if below else span[0],
                    math.sqrt(max(run) * above) if above else span[1],
                )
            )
    return spans


def _key(c: DeltaCurve) -> tuple[object, ...]:
    return (c.origin, c.arch, c.precision, c.a_pct, c.s_pct, c.nstar_b)


def _draw_curve(
    ax: Any,
    curve: DeltaCurve,
    spans: Sequence[tuple[float, float]],
    label: str,
    color: str,
    alpha: float,
) -> None:
    """Solid over the fitted range, dashed beyond it (extrapolation), over each span; the
    label on the solid piece, else (none drawn) on the first piece drawn."""
    import numpy as np

    lo, hi = curve.fitted_range_b
    pieces = [
        piece
        for start, end in spans
        for piece in (
            (start, min(lo, end), "--"),
            (max(lo, start), min(hi, end), "-"),
            (max(hi, start), end, "--"),
        )
        if piece[1] > piece[0]
    ]
    labelled = next((p for p in pieces if p[2] == "-"), pieces[0] if pieces else None)
    for a, b, style in pieces:
        xs = np.geomspace(a, b, 100)
        ax.plot(
            xs,
            [curve.delta_pct(float(x)) for x in xs],
            linestyle=style,
            color=color,
            alpha=alpha,
            linewidth=2 if style == "-" else 1.5,
            label=label if (a, b, style) == labelled else None,
            gid=f"{curve.origin}-{curve.arch}-{curve.precision}-"
            + ("fitted" if style == "-" else "beyond"),
        )


def _point_label(g: Group, several_stacks: bool) -> str:
    size = f"{g.params_b:.3g}B" if g.params_b else "?"
    text = f"{g.model} {size}, {g.protocol}, n={g.n}"
    if g.kind != "measured":
        text = f"{g.kind.upper()} (not measured): {text}"
    if g.copies:
        text += f" ({len(g.reports)} identical files)"
    if g.origin != "ecocompute":
        text += f" ({g.origin})"
    if several_stacks:
        text += f" [{g.fingerprint}]"
    return text


def build_figure(
    reports: Sequence[Report],
    *,
    card: str | None = None,
    fits: Mapping[str, FitLine] | None = None,
) -> Any:
    """The figure (matplotlib.figure.Figure) for one card's reports.

    fits: {precision: a sweep's own fit}, drawn as the user's curve.
    Raises InputError when nothing can be plotted, RunError without matplotlib.
    """
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points = plottable(reports, card)
    groups = group_reports(points)
    # the four formats in their order, then any other a report names (INT8-torchao,
    # INT8 at another outlier threshold): a format of its own, never dropped
    formats = sorted({g.precision for g in groups}, key=format_order)
    arch = points[0].arch
    stacks = sorted({g.fingerprint for g in groups})

    cols = min(2, len(formats))  # two panels a row: four in one row would be 30 inches
    rows = -(-len(formats) // cols)
    fig = Figure(figsize=(7.5 * cols, 7.2 * rows), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.subplots(rows, cols, squeeze=False).ravel()
    for spare in grid[len(formats) :]:
        spare.remove()  # an odd panel out: no empty axes beside it
    axes = list(grid[: len(formats)])
    for ax, fmt in zip(axes, formats, strict=True):
        panel = [g for g in groups if g.precision == fmt]
        _draw_panel(ax, fmt, panel, arch, (fits or {}).get(fmt), stacks)
    # each line wrapped to the figure's width: one panel's is 7.5 inches
    title = _title(points, groups, arch, stacks).split("\n")
    fig.suptitle("\n".join(textwrap.fill(t, TITLE_WIDTH * cols) for t in title), fontsize=9)
    _room_for_legends(fig, axes, cols)
    return fig


def _room_for_legends(fig: Any, axes: Sequence[Any], cols: int) -> None:
    """A figure tall enough for every row of panels and the longest legend below each:
    constrained layout makes room below a panel only within the figure's height."""

    def lines(ax: Any) -> int:  # every panel has a legend (dress_axes)
        return sum(t.get_text().count("\n") + 1 for t in ax.get_legend().get_texts())

    rows = [axes[i : i + cols] for i in range(0, len(axes), cols)]
    needed = sum(PANEL_HEIGHT_IN + LEGEND_LINE_IN * max(map(lines, row)) for row in rows)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, max(height, needed))
    fig.get_layout_engine().set(h_pad=0.12)  # the legend's frame clear of the edge


def _draw_panel(
    ax: Any,
    fmt: str,
    mine: Sequence[Group],
    arch: str,
    fit: FitLine | None,
    stacks: Sequence[str],
) -> None:
    """One format's panel: the published curve (and Ada's for context), the user's fit,
    break-even, the points."""
    curves = _curves_of(arch, fmt, mine)
    context = curve_for(CONTEXT_ARCH, fmt) if arch != CONTEXT_ARCH else None
    ranges = [g.params_b for g in mine if g.params_b]
    for c in (*(c for c, _ in curves), context):
        if c is not None:
            ranges.extend(c.fitted_range_b)
    span = (min(ranges) / 1.6, max(ranges) * 1.6)
    for i, (curve, gave) in enumerate(curves):
        color = "#444444" if i == 0 else "#7f7f7f"
        where = _stretch(gave, mine, span) if gave else [span]
        _draw_curve(ax, curve, where, _curve_label(curve, arch, gave), color, 0.9)
    if not any(c.arch == arch for c, _ in curves):
        lender = curve_for(arch, fmt)
        if fmt not in PUBLISHED_FORMATS:
            note = (
                f"no published {fmt} curve: the published dataset measured bitsandbytes "
                "NF4 and LLM.int8() only"
            )
        else:
            note = f"no published {fmt} curve measured on {arch}"
        if lender is not None and all(_key(lender) != _key(c) for c, _ in curves):
            note += f" (the site borrows {lender.arch}'s: not drawn under points it did not give)"
        # in the legend, wrapped: on the axes it would sit on the points and the labels
        ax.plot([], [], " ", label=textwrap.fill(note, NOTE_WIDTH), gid="no-curve-note")
    if context is not None:
        label = _curve_label(context, CONTEXT_ARCH) + " (context: another arch)"
        _draw_curve(ax, context, [span], label, "#e69f00", 0.7)
    if fit is not None:
        _draw_fit(ax, fit, span)
    draw_break_even(ax, fmt)
    several = len(stacks) > 1
    for i, g in enumerate(mine):
        _draw_point(ax, g, i, _point_label(g, several), list(stacks).index(g.fingerprint))
    dress_axes(ax, fmt, span)


def _title(
    points: Sequence[Report], groups: Sequence[Group], arch: str, stacks: Sequence[str]
) -> str:
    software = (
        points[0].software_title
        if len(stacks) == 1
        else f"{len(stacks)} software stacks (see legend)"
    )
    kinds = {g.kind for g in groups}
    if kinds == {"measured"}:
        what = "measured GPU-package energy (NVML), not wall power"
    elif kinds == {"derived"}:
        what = DERIVED_WORDS
    elif "measured" not in kinds:
        what = "nothing measured: " + " and ".join(sorted(k.upper() for k in kinds)) + " points"
    else:
        what = (
            "measured (NVML GPU-package energy) and "
            + " and ".join(sorted(k for k in kinds if k != "measured"))
            + " points"
        )
    card = card_with_arch(points[0].card, arch)
    if "measured" not in kinds:  # no bars to explain: derived and illustrative are marks
        return f"{card}\n{software}\n{what}; x: derived, +: illustrative (no interval)"
    bars = "bars: 95% CI (one unit's own, else the pooled mean's)"
    return f"{card}\n{software}\n{what}; filled: n >= 2 units; {bars}"


def _draw_point(ax: Any, g: Group, i: int, label: str, stack: int) -> None:
    # the figure the aggregate table gives, at the centre of its own interval: over units
    # the pooled estimate, over reports their mean
    mean = g.pooled_delta()
    if mean is None or g.params_b is None:
        return
    if g.kind != "measured":  # derived: x; illustrative: +; grey, never a series colour
        mark = "x" if g.kind == "derived" else "+"
        ax.plot([g.params_b], [mean], mark, color="grey", markersize=8, label=label, gid=g.kind)
        return
    color = series_color(i)
    ci = g.delta_ci95()
    # (a report's own interval holds its figure; max() keeps a rounding's hair off it)
    yerr = None if ci is None else [[max(0.0, mean - ci[0])], [max(0.0, ci[1] - mean)]]
    ax.errorbar(
        [g.params_b],
        [mean],
        yerr=yerr,
        fmt=_MARKERS[stack % len(_MARKERS)],
        color=color,
        markersize=8,
        markerfacecolor=color if g.n >= 2 else "none",
        markeredgewidth=1.6,
        capsize=4,
        label=label,
        gid=f"point-n{g.n}",
    )


def _draw_fit(ax: Any, fit: FitLine, span: tuple[float, float]) -> None:
    import numpy as np

    xs = np.geomspace(span[0], span[1], 200)
    ax.plot(
        xs,
        [delta_pct(float(x), fit.a_pct, fit.s_pct, fit.nstar_b) for x in xs],
        linestyle=":",
        color="#1f77b4",
        linewidth=2,
        label=f"your fit: A={fit.a_pct:.1f}, S={fit.s_pct:.1f}, N*={fit.nstar_b:.3g}B "
        f"({fit.n_points} points)",
        gid="user-fit",
    )
    if fit.crossover_b is not None:
        lo, hi = fit.crossover_ci95_b
        ax.axvline(
            fit.crossover_b,
            color="#1f77b4",
            linewidth=1,
            linestyle="-.",
            label=f"your crossover {fit.crossover_b:.3g}B ({fit.crossover_status})",
            gid="user-crossover",
        )
        left = lo if lo is not None else span[0]
        right = hi if hi is not None else span[1]
        ax.axvspan(left, right, color="#1f77b4", alpha=0.08, gid="user-crossover-ci")


def plot_reports(
    reports: Sequence[Report],
    path: str | os.PathLike[str],
    *,
    card: str | None = None,
    fits: Mapping[str, FitLine] | None = None,
) -> Path:
    """Draw and write the picture (PNG, or SVG by its name); returns the file written.
    Names are text, not markup: a model name holding `$` (matplotlib's mathtext) or a
    user's matplotlibrc with usetex is drawn as written. Raises InputError (nothing to
    plot, several cards), RunError (no matplotlib, or the file cannot be written)."""
    require_matplotlib()
    with text_as_written():
        return write_figure(build_figure(reports, card=card, fits=fits), path)
