"""The summary's lines for a session whose formats occupy different GPUs: how many GPUs
each format used, what the GPUs it freed drew idle, and the view of every GPU the
session held (results.held_gpus) beside the headline's, with which one leads and why.
Rendered from the reports themselves, like every summary line."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.report.labels import gpu_list

LEAD = "the figures above: the GPUs each model used; 'held' below adds the GPUs a format freed"


def _held(res: Mapping[str, Any]) -> Mapping[str, Any] | None:
    held = res.get("held_gpus")
    return held if isinstance(held, Mapping) else None


def _delta(block: Mapping[str, Any], key: str) -> str:
    delta, ci = block.get(key), block.get("vs_fp16_ci95_pct")
    if delta is None:
        return "n/a"
    text = f"{delta:+.1f}%"
    return text + (f" (95% CI {ci[0]:+.1f}% .. {ci[1]:+.1f}%)" if ci else "")


def freed_words(fmt: str, res: Mapping[str, Any]) -> str | None:
    """ "NF4 used 1 GPU of the session's 2, leaving GPU 0 idle: 95.1 W during its trials
    (idle window 94.8 W)"; None where it left none idle."""
    held = _held(res)
    own = ((res.get("per_format") or {}).get(fmt) or {}).get("nvml_indices")
    stats = ((held or {}).get("per_format") or {}).get(fmt) or {}
    idle = stats.get("idle_nvml_indices")
    if held is None or not idle or own is None:
        return None
    text = (
        f"{fmt} used {len(own)} GPU{'s' if len(own) != 1 else ''} of the session's "
        f"{len(held['nvml_indices'])}, leaving {gpu_list(idle)} idle: "
        f"{stats['idle_gpus_power_watts']:,.1f} W during its trials"
    )
    window = stats.get("idle_gpus_idle_window_watts")
    return text + ("" if window is None else f" (idle window {window:,.1f} W)")


def held_lines(precision: str, res: Mapping[str, Any]) -> list[str]:
    """A report's lines for the view of every GPU the session held (none without it)."""
    held = _held(res)
    if held is None:
        return []
    lines = [f"  lead       {LEAD}"]  # the gpus line above names each format's GPUs
    lines.extend(f"  freed      {w}" for w in [freed_words(precision, res)] if w)
    lines.append(
        f"  held       every GPU the session held ({gpu_list(held['nvml_indices'])}): "
        f"{precision} {held['energy_per_token_mj']:,.1f} vs FP16 "
        f"{held['fp16_energy_per_token_mj']:,.1f} mJ/token, {_delta(held, 'vs_fp16_energy_pct')}"
        f": {held.get('verdict') or 'n/a'}"
    )
    if res.get("verdict") and held.get("verdict") and res["verdict"] != held["verdict"]:
        lines.append(
            f"  views      differ: {res['verdict']} on the GPUs each model used, "
            f"{held['verdict']} on every GPU the session held"
        )
    return lines


def held_session_lines(reports: Sequence[Mapping[str, Any]]) -> list[str]:
    """A session's lines for this view: one row per format, as the table above."""
    helds = [(r, _held(r["results"])) for r in reports]
    if all(h is None for _, h in helds):
        return []
    first = next(r for r, h in helds if h is not None)["results"]
    lines = [f"  lead       {LEAD}", f"  gpus       FP16 {_fp16_gpus(first)}"]
    gpus = gpu_list(_held(first)["nvml_indices"])  # type: ignore[index]
    lines.append(f"  held       every GPU the session held ({gpus}), each format charged the")
    lines.append("             idle draw of the GPUs it freed:")
    for report, held in helds:
        fmt = str(report["workload"]["precision"])
        if held is None:
            continue
        ci = held.get("vs_fp16_ci95_pct")
        delta = held.get("vs_fp16_energy_pct")
        cells = [
            f"  {fmt:<13}",
            f"{held['energy_per_token_mj']:>10,.1f}",
            f"{'-' if delta is None else format(delta, '+.1f') + '%':>8}",
            f"{'-' if not ci else f'{ci[0]:+.1f} .. {ci[1]:+.1f}%':>17}",
            f"{held.get('verdict') or '-':<12}",
        ]
        lines.append(" ".join(cells))
        freed = freed_words(fmt, report["results"])
        lines.append(f"  {'':<13} {freed or fmt + ' used every GPU of the session'}")
        verdict = report["results"].get("verdict")
        if verdict and held.get("verdict") and verdict != held["verdict"]:
            lines.append(f"  {'':<13} the views differ: {verdict} on the GPUs it used")
    return lines


def _fp16_gpus(res: Mapping[str, Any]) -> str:
    gpus = ((res.get("per_format") or {}).get("FP16") or {}).get("nvml_indices") or []
    return f"used {len(gpus)} GPU{'s' if len(gpus) != 1 else ''} ({gpu_list(gpus)})"
