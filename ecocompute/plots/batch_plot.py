"""The batch axis drawn: delta vs FP16 against the batch size (log2 axis), one line per
model and format with its 95% intervals, the break-even line, and in the title the
card, the model(s), the regime and the weights. Needs matplotlib (ecocompute[plot])."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ecocompute.errors import InputError
from ecocompute.plots.files import require_matplotlib, text_as_written, write_figure
from ecocompute.report.labels import card_with_arch
from ecocompute.results.collect import Report

# Distinct colours and markers, enough for every format of a session and then some:
# a line's identity never repeats within one figure (colour x marker).
_COLORS = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
    "#17becf", "#bcbd22", "#7f7f7f",
)  # fmt: skip
_MARKERS = ("o", "s", "D", "^", "v", "P", "X", "*")


def batch_points(reports: Sequence[Report]) -> dict[tuple[str, str], list[Report]]:
    """The measured quantized reports with a delta, by (model, format)."""
    lines: dict[tuple[str, str], list[Report]] = {}
    for r in reports:
        if r.measured and r.quantized and r.delta_pct is not None:
            lines.setdefault((r.model, r.precision), []).append(r)
    return lines


def _title(reports: Sequence[Report]) -> str:
    cards = sorted({card_with_arch(r.card, r.arch) for r in reports})
    models = sorted({r.model for r in reports})
    regimes = sorted({r.regime for r in reports})
    weights = sorted({r.weights or "?" for r in reports})
    phased = any("phases apart" in r.protocol for r in reports)
    window = " (the decode window; prefill apart)" if phased else ""
    return (
        f"{'; '.join(cards)} - {', '.join(models)}\n"
        f"{'/'.join(regimes)} decode{window}, {'/'.join(weights)} weights, GPU-package energy"
    )


def build_batch_figure(reports: Sequence[Report]) -> Any:
    """The figure (matplotlib.figure.Figure, off pyplot's global state, as plot.py's)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    lines = batch_points(reports)
    if not lines:
        raise InputError("reports", None, "no measured report with a delta to plot")
    cards = {r.card for rs in lines.values() for r in rs}
    if len(cards) > 1:
        raise InputError("card", None, "the reports come from several cards; plot one card")
    fig = Figure(figsize=(8, 5))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    batches: set[int] = set()
    for k, ((model, fmt), rs) in enumerate(sorted(lines.items())):
        rs = sorted(rs, key=lambda r: r.batch_size)
        xs = [r.batch_size for r in rs]
        ys = [float(r.delta_pct or 0.0) for r in rs]
        lo = [y - (r.ci95_pct[0] if r.ci95_pct else y) for r, y in zip(rs, ys, strict=True)]
        hi = [(r.ci95_pct[1] if r.ci95_pct else y) - y for r, y in zip(rs, ys, strict=True)]
        batches.update(xs)
        label = fmt if len({m for m, _ in lines}) == 1 else f"{fmt} ({model})"
        ax.errorbar(
            xs,
            ys,
            yerr=[lo, hi],
            color=_COLORS[k % len(_COLORS)],
            marker=_MARKERS[(k // len(_COLORS)) % len(_MARKERS)],
            capsize=3,
            label=label,
            gid=f"batch-line-{fmt}",
        )
    ax.axhline(0.0, color="black", linewidth=1.2, label="break-even (0%)", gid="break-even")
    ax.set_xscale("log", base=2)
    ticks = sorted(batches)
    ax.set_xticks(ticks, [str(b) for b in ticks])
    ax.set_xlabel("batch size (sequences decoded at once, log2 axis)")
    ax.set_ylabel("energy per token vs FP16 (%), 95% interval")
    ax.axhspan(0.0, max(ax.get_ylim()[1], 1.0), color="#d62728", alpha=0.04, zorder=0)
    ax.axhspan(min(ax.get_ylim()[0], -1.0), 0.0, color="#2ca02c", alpha=0.06, zorder=0)
    ax.legend(fontsize=8)
    ax.set_title(_title([r for rs in lines.values() for r in rs]), fontsize=9)
    fig.tight_layout()
    return fig


def plot_batch_axis(reports: Sequence[Report], path: str | os.PathLike[str]) -> Path:
    """Draw the batch axis of these reports into path (PNG, or SVG by its name); names
    are drawn as written."""
    with text_as_written():
        return write_figure(build_batch_figure(reports), path)
