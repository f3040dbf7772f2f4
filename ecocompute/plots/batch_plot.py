"""The batch axis drawn: delta vs FP16 against the batch size (log2 axis), one line per
model and format with its 95% intervals, the break-even line, and in the title the
card, the model(s), the regime and the weights. Needs matplotlib (ecocompute[plot])."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.errors import InputError
from ecocompute.plots.axes import COLORS, format_order, label_sides, shade_sides
from ecocompute.plots.files import require_matplotlib, text_as_written, write_figure
from ecocompute.report.labels import card_with_arch
from ecocompute.results.collect import Report

# Distinct colours and markers, enough for every format of a session and then some:
# a line's identity never repeats within one figure (colour x marker).
_COLORS = (*COLORS, "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")  # the series' six first
_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")


def _title(reports: Sequence[Report]) -> str:
    cards = sorted({card_with_arch(r.card, r.arch) for r in reports})
    models = sorted({r.model for r in reports})
    regimes = sorted({r.regime for r in reports})
    weights = sorted({r.weights or "?" for r in reports})
    phased = any("phases apart" in r.protocol for r in reports)
    window = " (the decode window; prefill apart)" if phased else ""
    compiled = sorted({note for r in reports for note in r.compile_notes})
    how = f" ({', '.join(compiled)})" if compiled else ""
    return (
        f"{'; '.join(cards)} - {', '.join(models)}\n"
        f"{'/'.join(regimes)} decode{how}{window}, {'/'.join(weights)} weights, "
        "GPU-package energy"
    )


@dataclass(frozen=True)
class Crossing:
    """Where a line crosses zero (batch size), with its 95% interval; None: open end."""

    batch_size: float
    low: float | None
    high: float | None
    text: str  # the interval in words, e.g. "1.29 .. 1.35" or "beyond 64"


def build_batch_figure(
    reports: Sequence[Report], crossings: Mapping[tuple[str, str], Crossing] | None = None
) -> Any:
    """The figure (matplotlib.figure.Figure, off pyplot's global state, as size_plot.py's).
    crossings: {(model, format): where its line crosses zero}, marked on the zero line
    with its interval."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # the measured quantized reports with a delta, by (model, format as tables name it:
    # INT8-torchao apart from LLM.int8())
    lines: dict[tuple[str, str], list[Report]] = {}
    for r in reports:
        if r.measured and r.quantized and r.delta_pct is not None:
            lines.setdefault((r.model, r.format_label), []).append(r)
    if not lines:
        raise InputError("reports", None, "no measured report with a delta to plot")
    cards = {r.card for rs in lines.values() for r in rs}
    if len(cards) > 1:
        raise InputError("card", None, "the reports come from several cards; plot one card")
    fig = Figure(figsize=(8, 5.5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    batches: set[int] = set()
    one_model = len({m for m, _ in lines}) == 1
    order = sorted(lines, key=lambda key: (key[0], *format_order(key[1])))
    for k, key in enumerate(order):  # by model, then NF4, INT8, INT4, FP8; numbers
        model, fmt = key
        rs = sorted(lines[key], key=lambda r: r.batch_size)
        xs = [r.batch_size for r in rs]
        ys = [float(r.delta_pct or 0.0) for r in rs]
        lo = [y - (r.ci95_pct[0] if r.ci95_pct else y) for r, y in zip(rs, ys, strict=True)]
        hi = [(r.ci95_pct[1] if r.ci95_pct else y) - y for r, y in zip(rs, ys, strict=True)]
        batches.update(xs)
        color = _COLORS[k % len(_COLORS)]
        label = fmt if one_model else f"{fmt} ({model})"
        ax.errorbar(
            xs,
            ys,
            yerr=[lo, hi],
            color=color,
            marker=_MARKERS[(k // len(_COLORS)) % len(_MARKERS)],
            capsize=3,
            label=label,
            gid=f"batch-line-{fmt}",
        )
        crossing = (crossings or {}).get(key)
        if crossing is not None:
            _draw_crossing(ax, crossing, label, color, (min(xs), max(xs)), fmt)
    ax.axhline(0.0, color="black", linewidth=1.2, label="break-even (0%)", gid="break-even")
    ax.set_xscale("log", base=2)
    ticks = sorted(batches)
    ax.set_xticks(ticks, [str(b) for b in ticks])
    ax.set_xticks([], minor=True)
    ax.set_xlim(ticks[0] / 1.4, ticks[-1] * 1.4)
    ax.set_xlabel("batch size (sequences decoded at once, log2 axis)")
    ax.set_ylabel("energy per token vs FP16 (%), 95% interval")
    shade_sides(ax, 0.08, gids=("costs", "saves"))
    label_sides(ax, "")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=2)
    ax.set_title(_title([r for rs in lines.values() for r in rs]), fontsize=9)
    fig.tight_layout()
    return fig


def _draw_crossing(
    ax: Any, c: Crossing, label: str, color: str, measured: tuple[int, int], fmt: str
) -> None:
    """The crossover on the zero line, its 95% interval as a bar along it; an open end
    runs to the edge of the sizes measured."""
    low = c.low if c.low is not None else measured[0]
    high = c.high if c.high is not None else measured[1]
    ax.errorbar(
        [c.batch_size],
        [0.0],
        xerr=[[max(c.batch_size - low, 0.0)], [max(high - c.batch_size, 0.0)]],
        fmt="|",
        color=color,
        markersize=14,
        markeredgewidth=2.5,
        elinewidth=4,
        alpha=0.8,
        capsize=0,
        label=f"{label} crosses zero at {c.batch_size:.3g} (95% CI {c.text})",
        gid=f"crossover-{fmt}",
    )


def plot_batch_axis(
    reports: Sequence[Report],
    path: str | os.PathLike[str],
    crossings: Mapping[tuple[str, str], Crossing] | None = None,
) -> Path:
    """Draw the batch axis of these reports into path (PNG, or SVG by its name); names
    are drawn as written."""
    with text_as_written():
        return write_figure(build_batch_figure(reports, crossings), path)
