"""`plot --power_trace REPORT`: a report's whole-run power trace (power_trace.csv beside
it) against time, each phase's edge a labelled line, each measured trial's window
shaded by its format, the legend inside the figure. Needs matplotlib."""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.boundary.user_paths import regular_file
from ecocompute.errors import InputError
from ecocompute.plots.axes import series_color
from ecocompute.plots.files import require_matplotlib, text_as_written, write_figure
from ecocompute.report.files import read_document
from ecocompute.report.read import parse_report
from ecocompute.report.write import REPORT_NAME

MAX_TRACE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class TraceSeries:
    times_s: tuple[float, ...]
    powers_w: tuple[float, ...]


def read_trace_csv(path: Path) -> TraceSeries:
    """t_s,power_w rows (finite numbers, time not decreasing). Raises InputError."""
    st = regular_file("power_trace", path, "the CSV file the report names")  # never a FIFO
    try:
        if st.st_size > MAX_TRACE_BYTES:
            raise InputError("power_trace", str(path), f"larger than {MAX_TRACE_BYTES} bytes")
        with path.open(newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("power_trace", str(path), f"cannot be read ({exc})") from None
    if not rows or rows[0] != ["t_s", "power_w"]:
        raise InputError("power_trace", str(path), "its first line is not t_s,power_w")
    times: list[float] = []
    powers: list[float] = []
    for n, row in enumerate(rows[1:], start=2):
        try:
            t, w = (float(v) for v in row)
        except ValueError:
            raise InputError("power_trace", str(path), f"line {n} is not two numbers") from None
        if not (math.isfinite(t) and math.isfinite(w)) or (times and t < times[-1]):
            raise InputError("power_trace", str(path), f"line {n}: time goes back or not finite")
        times.append(t)
        powers.append(w)
    return TraceSeries(tuple(times), tuple(powers))


def _edges(phases: dict[str, float], series: TraceSeries) -> list[tuple[float, list[str]]]:
    """The phases' edges to draw, edges closer than 1% of the trace's span as one line
    with their names together (the shaded windows show the measure edges)."""
    span = max(series.times_s[-1] if series.times_s else 0.0, max(phases.values(), default=0))
    near = span / 100.0
    groups: list[tuple[float, list[str]]] = []
    for name, t in sorted(phases.items(), key=lambda kv: kv[1]):
        if name in ("measure_start_s", "measure_end_s", "warmup_end_s"):
            continue
        label = name.removesuffix("_s")
        if groups and t - groups[-1][0] <= near:
            groups[-1][1].append(label)
        else:
            groups.append((t, [label]))
    return groups


def build_trace_figure(report_path: str | os.PathLike[str]) -> Any:
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(report_path)
    path = path / REPORT_NAME if path.is_dir() else path
    document, problems = read_document(path)
    report, problems = parse_report(document) if document is not None else (None, problems)
    if report is None:
        raise InputError("report", str(path), "not a valid report: " + "; ".join(problems[:3]))
    if not report.measured:
        raise InputError(
            "report",
            str(path),
            "a derived figure has no power trace: only a measured run on a GPU records one",
        )
    if report.power_trace is None or not report.power_trace.files:
        raise InputError("report", str(path), "holds no power_trace (run with --power_trace)")
    block, first = report.power_trace, report.power_trace.files[0]
    series = read_trace_csv(path.parent / first.file)
    fig = Figure(figsize=(10, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot(series.times_s, series.powers_w, color="#333333", linewidth=0.8, label="power")
    windows = [(f"{w.format} trial windows", w.start_s, w.end_s) for w in block.windows or []]
    edges = first.phases or {}
    if not windows and "measure_start_s" in edges and "measure_end_s" in edges:
        # the published container's 1.3 names no trial windows: its one measured window
        what = f"{first.precision or 'the'} measured window"
        windows = [(what, edges["measure_start_s"], edges["measure_end_s"])]
    colors: dict[str, str] = {}
    for what, start_s, end_s in windows:
        new = what not in colors
        color = colors.setdefault(what, series_color(len(colors)))
        label = what if new else None
        ax.axvspan(start_s, end_s, color=color, alpha=0.25, linewidth=0, label=label)
    for t, names in _edges(edges, series):
        ax.axvline(t, color="#888888", linestyle=":", linewidth=0.8)
        ax.annotate(
            ", ".join(names), (t, 1.0), xycoords=("data", "axes fraction"),
            rotation=90, va="top", ha="right", fontsize=7, color="#555555",
        )  # fmt: skip
    ax.set_xlabel("seconds since the trace started")
    ax.set_ylabel("GPU-package power, W (NVML)")
    shaded = "; shaded: the measured windows" if windows else "; no measured window recorded"
    title = f"{report.system_under_test.gpu} - {report.workload.model_name}"
    ax.set_title(title + "\nwhole-run power trace" + shaded, fontsize=10)
    ax.legend(loc="lower right", fontsize=8, framealpha=0.9)  # inside the axes
    return fig


def plot_power_trace(report_path: str | os.PathLike[str], path: str | os.PathLike[str]) -> Path:
    with text_as_written():
        return write_figure(build_trace_figure(report_path), path)
