"""The sweep's human summary on stdout, rendered from sweep.json's document itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ecocompute.report.labels import card_with_arch


def card_text(doc: dict[str, Any]) -> str:
    return card_with_arch(doc["card"] or "no card", doc["gpu_arch"])


def render(doc: dict[str, Any], path: Path) -> str:
    """The human summary on stdout, from the document itself."""
    axis = bool(doc.get("batch_axis"))
    lines = [
        f"EcoCompute sweep: {card_text(doc)}"
        + (f", {doc['software']}" if doc["software"] else "")
        + (f", {doc['protocol']}" if doc["protocol"] else ""),
        f"  {'model':<30} {'batch' if axis else 'size B':>7} {'fmt':<4} {'vs FP16':>8} "
        f"{'95% CI':>17}  {'verdict':<12} basis",
    ]
    for run in doc["runs"]:
        if run["status"] != "ok":
            lines.append(
                f"  {run['model_name']:<30} {'':>7} {run['precision']:<4} FAILED: {run['error']}"
            )
            continue
        ci = run.get("vs_fp16_ci95_pct")
        ci_text = f"{ci[0]:+.1f} .. {ci[1]:+.1f}%" if ci else "-"
        delta = run.get("vs_fp16_energy_pct")
        size = run.get("batch_size") if axis else run.get("params_b")
        lines.append(
            f"  {run['model_name'][:30]:<30} {'-' if size is None else format(size, '.3g'):>7} "
            f"{run['precision']:<4} {'-' if delta is None else format(delta, '+.1f') + '%':>8} "
            f"{ci_text:>17}  {run.get('verdict') or '-':<12} {run.get('basis')}"
        )
    for fit in doc["fits"]:
        fmt = fit["precision"]
        if fit["status"] != "fitted":
            lines.append(f"  {fmt} fit: skipped: {fit['reason']}")
        else:
            p = fit["parameters"]
            lines.append(
                f"  {fmt} fit: A={p['A']:.2f}, S={p['S']:.2f}, N*={p['Nstar']:.4g}B over "
                f"{fit['n_points']} points (dof {fit['dof']}; {fit['weighting']})"
            )
            cross = fit["crossover"]
            ci = cross.get("ci95_b")
            ci_text = (
                "95% CI " + " .. ".join("beyond" if v is None else f"{v:.3g}B" for v in ci)
                if ci
                else (cross.get("ci_note") or "no interval")
            )
            if cross["params_b"] is not None:
                lines.append(
                    f"  {fmt} crossover: {cross['params_b']:.3g}B ({cross['status']}); {ci_text}"
                )
            else:
                lines.append(f"  {fmt} crossover: {cross['note']}; {ci_text}")
            for note in fit["notes"]:
                lines.append(f"    note: {note}")
        pub = fit.get("published_curve") or {}
        if pub.get("note"):
            lines.append(f"  published: {pub['note']}")
    lines.extend(axis_lines(doc))
    lines.append(f"  sweep      {path}")
    lines.append(
        f"  plot       {path.parent / doc['plot']}"
        if doc["plot"]
        else f"  plot       {doc.get('plot_note', 'none')}"
    )
    return "\n".join(lines)


def axis_lines(doc: dict[str, Any]) -> list[str]:
    """The batch axis: each format's crossover, then the map in words."""
    lines = []
    for entry in doc.get("batch_axis") or []:
        cross = entry["crossover"]
        where = (
            f"crosses zero at batch {cross['batch_size']:.3g}"
            if cross["batch_size"] is not None
            else (cross.get("note") or "no crossover")
        )
        ci = f" (95% CI {cross['ci95_text']})" if cross.get("ci95_text") else ""
        lines.append(f"  {entry['precision']:<4} {entry['model_name']}: {where}{ci}")
    if doc.get("map"):
        lines.append("  map        " + "; ".join(doc["map"]))
    return lines
