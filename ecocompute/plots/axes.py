"""The fixed furniture of a plot panel: log size axis, limits, labels, the break-even
line and the saves/costs sides (size_plot.py draws the curves and points on it)."""

from __future__ import annotations

import re
from typing import Any

from ecocompute.core.precision import Precision

LEGEND_WRAP_CHARS = 80  # at fontsize 7, about the width of a 7.5-inch panel

FORMATS = tuple(str(p) for p in Precision if p.quantized)  # NF4, INT8, INT4, FP8


def format_order(label: str) -> tuple[int, str]:
    """A sort key for a format as tables name it: by its precision's place (INT8
    (threshold 0) and INT8-torchao beside INT8), then by name."""
    precision = re.split(r"[- ]", label)[0]
    return (FORMATS.index(precision) if precision in FORMATS else len(FORMATS), label)


_SIZE_TICKS = (
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5,
    7, 10, 14, 20, 30, 50, 70, 100, 200, 400,
)  # fmt: skip


def dress_axes(ax: Any, fmt: str, span: tuple[float, float]) -> None:
    ax.set_xscale("log")
    ax.set_xlim(*span)
    ticks = [t for t in _SIZE_TICKS if span[0] <= t <= span[1]]
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
    ax.set_xticks([], minor=True)
    shade_sides(ax, 0.12)
    ax.set_xlabel("model size (billions of parameters, log scale)")
    ax.set_ylabel(f"{fmt} energy per token vs FP16 (%)")
    ax.set_title(f"{fmt} vs FP16")
    ax.grid(True, which="both", alpha=0.25)
    handles, labels = ax.get_legend_handles_labels()
    # long labels (a card, a software stack) wrapped to the panel's width, so that the
    # legend below the panel stays inside the figure (constrained layout makes room
    # below, never beside)
    wrapped = [wrap_label(label) for label in labels]
    ax.legend(
        handles, wrapped, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=1
    )


def wrap_label(label: str, width: int = LEGEND_WRAP_CHARS) -> str:
    """A legend label in lines of about width characters, broken only before a
    parenthesis or a bracket (each note of a label stays whole on its line)."""
    if len(label) <= width:
        return label
    parts = re.split(r" (?=[(\[])", label)
    lines = [parts[0]]
    for part in parts[1:]:
        if len(lines[-1]) + 1 + len(part) <= width:
            lines[-1] += " " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def draw_break_even(ax: Any, fmt: str) -> None:
    ax.axhline(0.0, color="black", linewidth=1.2, label="break-even (0%)", gid="break-even")
    # in the margin right of the axes: inside, it would sit on a point's error bar
    ax.annotate(
        "break-even",
        xy=(1.0, 0.0),
        xycoords=("axes fraction", "data"),
        xytext=(4, 0),
        textcoords="offset points",
        ha="left",
        va="center",
        fontsize=9,
        fontweight="bold",
        annotation_clip=False,
        gid="break-even-label",
    )
    label_sides(ax, f"{fmt} ")


def shade_sides(ax: Any, pad: float, gids: tuple[str | None, str | None] = (None, None)) -> None:
    """The y limits widened by pad (a fraction of their span) so that break-even and both
    sides are in view, then each side shaded whole: costs red above 0, saves green below."""
    low, high = ax.get_ylim()
    margin = pad * (high - low)
    ax.set_ylim(min(low, -margin), max(high, margin))
    ax.axhspan(0.0, ax.get_ylim()[1], color="#d62728", alpha=0.04, zorder=0, gid=gids[0])
    ax.axhspan(ax.get_ylim()[0], 0.0, color="#2ca02c", alpha=0.06, zorder=0, gid=gids[1])


def label_sides(ax: Any, subject: str) -> None:
    """Each side named in its corner: "above 0: <subject>costs energy" top left, and
    "below 0: <subject>saves energy" bottom left."""
    for word, y, where, color, va in (
        ("costs", 0.99, "above", "#b22222", "top"),
        ("saves", 0.01, "below", "#2e7d32", "bottom"),
    ):
        text = f"{where} 0: {subject}{word} energy"
        ax.text(0.01, y, text, transform=ax.transAxes, fontsize=8, color=color, va=va,
                gid=f"{word}-label")  # fmt: skip


COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
_GOLDEN = 0.618033988749895


def series_color(i: int) -> str:
    """The i-th series' colour: six hand-picked ones, then as many more as needed, each
    new one a hue step of the golden ratio from the last (none repeats, none is grey,
    the colour of derived points)."""
    if i < len(COLORS):
        return COLORS[i]
    import colorsys

    hue = (0.11 + (i - len(COLORS)) * _GOLDEN) % 1.0
    lightness = (0.38, 0.50, 0.30)[(i - len(COLORS)) % 3]
    r, g, b = colorsys.hls_to_rgb(hue, lightness, 0.75)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"
