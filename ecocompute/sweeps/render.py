"""A sweep's human summary, rendered from the Sweep itself (the command line prints it)."""

from __future__ import annotations

from pathlib import Path

from ecocompute.report.labels import card_with_arch
from ecocompute.sweeps.document import OK, Fit, Sweep


def render(sweep: Sweep, path: Path) -> str:
    """The summary of a sweep whose sweep.json is at path."""
    # a batch column wherever the sweep is over several batch sizes, axis or not
    axis = bool(sweep.batch_axis) or len({r.batch_size for r in sweep.runs}) > 1
    # the format as tables name it (INT8 (threshold 0), INT8-torchao): another kernel
    w = max([4, *(len(r.format_label or r.precision) for r in sweep.runs)])
    lines = [
        f"EcoCompute sweep: {card_with_arch(sweep.card or 'no card', sweep.gpu_arch)}"
        + (f", {sweep.software}" if sweep.software else "")
        + (f", {sweep.protocol}" if sweep.protocol else ""),
        f"  {'model':<30} {'batch' if axis else 'size B':>7} {'fmt':<{w}} {'vs FP16':>8} "
        f"{'95% CI':>17}  {'verdict':<12} basis",
    ]
    for run in sweep.runs:
        fmt = run.format_label or run.precision
        size = run.batch_size if axis else run.params_b  # a failed run's batch too
        if run.status != OK:
            said = "" if size is None else format(size, ".3g")
            lines.append(f"  {run.model_name:<30} {said:>7} {fmt:<{w}} FAILED: {run.error}")
            continue
        ci = run.vs_fp16_ci95_pct
        ci_text = f"{ci[0]:+.1f} .. {ci[1]:+.1f}%" if ci else "-"
        delta = run.vs_fp16_energy_pct
        lines.append(
            f"  {run.model_name[:30]:<30} {'-' if size is None else format(size, '.3g'):>7} "
            f"{fmt:<{w}} {'-' if delta is None else format(delta, '+.1f') + '%':>8} "
            f"{ci_text:>17}  {run.verdict or '-':<12} {run.basis}"
        )
    if sweep.decode_note:
        lines.append(f"  decode     {sweep.decode_note}")
    if sweep.units_note:
        lines.append(f"  units      {sweep.units_note}")
    for fit in sweep.fits:
        lines.extend(fit_lines(fit))
    lines.extend(axis_lines(sweep))
    lines.append(f"  sweep      {path}")
    lines.append(
        f"  plot       {path.parent / sweep.plot}"
        if sweep.plot
        else f"  plot       {sweep.plot_note or 'none'}"
    )
    return "\n".join(lines)


def fit_lines(fit: Fit) -> list[str]:
    """One format's fit: its parameters and crossover, or why it was skipped."""
    fmt, p, cross = fit.format_label or fit.precision, fit.parameters, fit.crossover
    if not fit.fitted or p is None or cross is None:
        lines = [f"  {fmt} fit: skipped: {fit.reason}"]
    else:
        lines = [
            f"  {fmt} fit: A={p.A:.2f}, S={p.S:.2f}, N*={p.Nstar:.4g}B over "
            f"{fit.n_points} points (dof {fit.dof}; {fit.weighting})"
        ]
        ci = cross.ci95_b
        ci_text = (
            "95% CI " + " .. ".join("beyond" if v is None else f"{v:.3g}B" for v in ci)
            if ci
            else (cross.ci_note or "no interval")
        )
        where = cross.note if cross.params_b is None else f"{cross.params_b:.3g}B ({cross.status})"
        lines.append(f"  {fmt} crossover: {where}; {ci_text}")
        lines.extend(f"    note: {note}" for note in fit.notes or [])
    if fit.published_curve is not None and fit.published_curve.note:
        lines.append(f"  published: {fit.published_curve.note}")
    return lines


def axis_lines(sweep: Sweep) -> list[str]:
    """The batch axis: each format's crossover, then the map in words."""
    lines = []
    for entry in sweep.batch_axis or []:
        cross = entry.crossover
        where = (
            f"crosses zero at batch {cross.batch_size:.3g}"
            if cross.batch_size is not None
            else (cross.note or "no crossover")
        )
        said = cross.batch_size is None and cross.ci95_text and cross.ci95_text in where
        ci = f"95% CI {cross.ci95_text}" if cross.ci95_text and not said else ""
        if cross.batch_size is not None and cross.between_batch_sizes:
            lo, hi = cross.between_batch_sizes
            ci += f"{'; ' if ci else ''}interpolated between batch {lo:g} and {hi:g}"
        ci = f" ({ci})" if ci else ""
        lines.append(f"  {entry.precision:<4} {entry.model_name}: {where}{ci}")
    if sweep.map:
        lines.append("  map        " + "; ".join(sweep.map))
    if sweep.batch_axis_note:
        lines.append(f"  batch axis none: {sweep.batch_axis_note.removeprefix('no batch axis: ')}")
    return lines
