"""The summary of a session of several formats: what they share once, then a line per
format, the held-GPU view, every report's path (summary/report.py renders one report)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.report.labels import format_label, gpu_list
from ecocompute.report.model import Report
from ecocompute.report.results_model import FormatConditions, Results
from ecocompute.summary.report import (
    HELD_LEAD,
    _mj,
    as_report,
    basis_words,
    closing_lines,
    context_lines,
    freed_words,
    opening_lines,
    phase_lines,
    reference_units_lines,
    run_lines,
    throttle_line,
    why_no_figure,
)


def render_session(documents: Sequence[Report | Mapping[str, Any]], paths: Sequence[str]) -> str:
    """What the formats share (model, card, FP16, protocol, software, scope) once, then
    one line per format, then every report's path."""
    reports = [as_report(r) for r in documents]
    first = reports[0]
    # FP16 is the session's: any format's report that holds it (a format without a
    # figure holds none, and the session's FP16 is not that format's to lose)
    res = next(
        (r.results for r in reports if r.results.fp16_energy_per_token_mj is not None),
        first.results,
    )
    lines = [
        "EcoCompute energy estimate: a session of several formats",
        *opening_lines(reports, session=True),
        f"  formats    {', '.join(format_label(r) for r in reports)}, each vs the same "
        "FP16 baseline",
        f"  FP16       {_mj(res.fp16_energy_per_token_mj, '')} mJ/token" + _fp16_throughput(res),
        *session_basis_lines(reports),
    ]
    if first.results.basis == "measured":
        lines.extend(run_lines(reports))
    width = max([13, *(len(format_label(r)) for r in reports)])  # INT8 (threshold 0) whole
    header = (
        f"  {'format':<{width}} {'mJ/token':>10} {'vs FP16':>8} {'95% CI':>17} "
        f"{'verdict':<12} tok/s"
    )
    if any(r.results.per_format for r in reports):
        header += " (of bandwidth limit)"
    lines.append(header)
    lines.extend(_format_line(r, width) for r in reports)
    if any(r.results.phases is not None for r in reports):  # --phases apart
        lines.append("  window     the figures above are the decode window's; the phases below")
    session = first.measurement.session
    refused = (session.refused if session is not None else None) or {}
    lines.extend(
        f"  refused    {fmt}: not measured, no report: {why}" for fmt, why in refused.items()
    )
    lines.extend(
        f"  no figure  {format_label(r)}: {why}"
        for r in reports
        for why in [why_no_figure(r)]
        if why
    )
    for r in reports:
        lines.extend(reference_units_lines(r, r.workload.precision))
        lines.extend(phase_lines(r.workload.precision, r.results, r.workload.precision))
    lines.extend(held_session_lines(reports))
    per: dict[str, FormatConditions] = {}  # every format's windows (FP16's once)
    for r in reports:
        if r.measured and r.results.conditions is not None:
            for fmt, c in r.results.conditions.per_format.items():
                per.setdefault(fmt, c)
    if per:
        lines.append(f"  throttle   {throttle_line(per)}")
    lines.extend(context_lines(first, reports))
    lines.extend(closing_lines(first, reports))
    lines.extend(f"  report     {path}" for path in paths)
    return "\n".join(lines)


def session_basis_lines(reports: Sequence[Report]) -> list[str]:
    """One basis line where every format has the same basis; else one per basis, naming
    its formats (a session's formats can differ: NF4 interpolated, INT4 unavailable)."""
    by_basis: dict[tuple[str, str], list[Report]] = {}
    for r in reports:  # one basis in other words too: a borrowed curve's
        by_basis.setdefault((r.results.basis, basis_words(r.results)), []).append(r)
    if len(by_basis) == 1:
        ((basis, words),) = by_basis
        return [f"  basis      {basis}: {words}"]
    lines = []
    for i, ((basis, words), group) in enumerate(by_basis.items()):
        names = ", ".join(format_label(r) for r in group)
        lines.append(f"  {'basis' if i == 0 else '':<10} {names} {basis}: {words}")
    return lines


def _format_line(report: Report, width: int = 13) -> str:
    work, res = report.workload, report.results
    stats = res.per_format.get(work.precision)
    cells = [
        f"  {format_label(report):<{width}}",
        f"{_mj(res.energy_per_token_mj, ''):>10}",
        *_delta_cells(res.vs_fp16_energy_pct, res.vs_fp16_ci95_pct, res.verdict),
    ]
    if stats is not None:
        share = stats.of_bandwidth_limit_pct
        cells.append(
            f"{stats.throughput_tokens_per_s:>8,.0f}"
            + (f" ({share:.0f}%)" if share is not None else "")
        )
    q = report.quality
    if q is not None and q.basis == "measured" and q.delta_vs_fp16_pct is not None and q.value:
        cells.append(f"ppl {q.value:.2f} ({q.delta_vs_fp16_pct:+.1f}%)")
    note = (
        (work.quantization.model_extra or {}).get("layers_skipped_note")
        if work.quantization
        else None
    )
    line = " ".join(cells)
    return line + (f"\n  {'':<13} note: {note}" if note else "")


def _delta_cells(delta: float | None, ci: Sequence[float] | None, verdict: str | None) -> list[str]:
    """A format's vs FP16, 95% CI and verdict columns (its own view's or the held one's)."""
    return [
        f"{'-' if delta is None else format(delta, '+.1f') + '%':>8}",
        f"{'-' if not ci else f'{ci[0]:+.1f} .. {ci[1]:+.1f}%':>17}",
        f"{verdict or '-':<12}",
    ]


def _fp16_throughput(res: Results) -> str:
    stats = res.per_format.get("FP16")
    if stats is None:
        return ""
    share = stats.of_bandwidth_limit_pct
    limit = f", {share:.0f}% of the bandwidth limit" if share is not None else ""
    return f", {stats.throughput_tokens_per_s:,.0f} tok/s{limit}"


def held_session_lines(reports: Sequence[Report]) -> list[str]:
    """A session's lines for the view of every GPU it held: one row per format."""
    with_view = [(r, h) for r in reports if (h := r.results.held_gpus) is not None]
    if not with_view:
        return []
    first_res = with_view[0][0].results
    fp16 = first_res.per_format.get("FP16")
    fp16_gpus = [] if fp16 is None else fp16.nvml_indices
    lines = [
        f"  lead       {HELD_LEAD}",
        f"  gpus       FP16 used {len(fp16_gpus)} GPU{'s' if len(fp16_gpus) != 1 else ''} "
        f"({gpu_list(fp16_gpus)})",
        f"  held       every GPU the session held ({gpu_list(with_view[0][1].nvml_indices)}), "
        "each format charged the",
        "             idle draw of the GPUs it freed:",
    ]
    for report, held in with_view:
        fmt = report.workload.precision
        cells = _delta_cells(held.vs_fp16_energy_pct, held.vs_fp16_ci95_pct, held.verdict)
        lines.append(" ".join([f"  {fmt:<13}", f"{held.energy_per_token_mj:>10,.1f}", *cells]))
        freed = freed_words(fmt, report.results)
        lines.append(f"  {'':<13} {freed or fmt + ' used every GPU of the session'}")
        verdict = report.results.verdict
        if verdict and held.verdict and verdict != held.verdict:
            lines.append(f"  {'':<13} the views differ: {verdict} on the GPUs it used")
    return lines
