"""The summary of a session of several formats: what they share (model, card, FP16,
protocol, software, scope) once, then one line per format, then every report's path.
Rendered from the reports themselves, so it can never say more than the files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ecocompute.report.held_summary import held_session_lines
from ecocompute.report.labels import card_with_arch, local_gpu
from ecocompute.report.summary import (
    basis_words,
    compile_words,
    protocol_words,
    size_words,
    software_words,
)
from ecocompute.report.unit_summary import throttle_line, unit_lines


def _format_line(report: dict[str, Any]) -> str:
    work, res = report["workload"], report["results"]
    fmt = str(work["precision"])
    stats = (res.get("per_format") or {}).get(fmt) or {}
    key = stats.get("format", fmt)
    energy = res.get("energy_per_token_mj")
    delta = res.get("vs_fp16_energy_pct")
    ci = res.get("vs_fp16_ci95_pct")
    cells = [
        f"  {key:<13}",
        f"{_mj(energy):>10}",
        f"{'-' if delta is None else format(delta, '+.1f') + '%':>8}",
        f"{_ci(ci):>17}",
        f"{res.get('verdict') or '-':<12}",
    ]
    throughput = stats.get("throughput_tokens_per_s")
    if throughput is not None:
        share = stats.get("of_bandwidth_limit_pct")
        cells.append(f"{throughput:>8,.0f}" + (f" ({share:.0f}%)" if share is not None else ""))
    quality = report.get("quality") or {}
    if quality.get("basis") == "measured" and quality.get("delta_vs_fp16_pct") is not None:
        cells.append(f"ppl {quality['value']:.2f} ({quality['delta_vs_fp16_pct']:+.1f}%)")
    note = (work.get("quantization") or {}).get("layers_skipped_note")
    line = " ".join(cells)
    return line + (f"\n  {'':<13} note: {note}" if note else "")


def _mj(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f}"


def _ci(ci: list[float] | None) -> str:
    return "-" if not ci else f"{ci[0]:+.1f} .. {ci[1]:+.1f}%"


def render_session(reports: Sequence[dict[str, Any]], paths: Sequence[str]) -> str:
    first = reports[0]
    sut, work, res = first["system_under_test"], first["workload"], first["results"]
    formats = ", ".join(str(r["workload"]["precision"]) for r in reports)
    lines = [
        "EcoCompute energy estimate: a session of several formats",
        f"  model      {work['model_name']} ({size_words(work)})",
        f"  card       {card_with_arch(local_gpu(first), sut['gpu_arch'])}",
        *[line for line in unit_lines(first) if not line.startswith("  throttle")],
        f"  formats    {formats}, each vs the same FP16 baseline",
        f"  FP16       {_mj(res.get('fp16_energy_per_token_mj'))} mJ/token" + _fp16_throughput(res),
        f"  basis      {res['basis']}: {basis_words(res['basis'], res.get('reference_card'))}",
    ]
    if res["basis"] == "measured":
        lines.append(f"  protocol   {protocol_words(first['measurement'])}")
        decodes = [r["measurement"].get("decode") or {} for r in reports]
        per = {fmt: d for decode in decodes for fmt, d in (decode.get("per_format") or {}).items()}
        if per and decodes[0].get("compile_s") is not None:
            lines.append(f"  compile    {compile_words({**decodes[0], 'per_format': per})}")
    header = (
        f"  {'format':<13} {'mJ/token':>10} {'vs FP16':>8} {'95% CI':>17} {'verdict':<12} tok/s"
    )
    if any(r["results"].get("per_format") for r in reports):
        header += " (of bandwidth limit)"
    lines.append(header)
    lines.extend(_format_line(r) for r in reports)
    lines.extend(held_session_lines(reports))
    throttle = _session_throttle(reports)
    if throttle:
        lines.append(f"  throttle   {throttle}")
    if work.get("weights") in ("pretrained", "synthetic"):
        lines.append(f"  weights    {work['weights']}")
    lines.append(f"  software   {software_words(first['software'])}")
    lines.append("  scope      GPU-package energy only (not wall power); not a certified result")
    lines.extend(f"  report     {path}" for path in paths)
    return "\n".join(lines)


def _session_throttle(reports: Sequence[dict[str, Any]]) -> str | None:
    """Every format's windows (FP16's once), as one throttle line."""
    per: dict[str, Any] = {}
    for r in reports:
        conditions = r["results"].get("conditions")
        if r["results"].get("basis") != "measured" or not conditions:
            continue
        for fmt, stats in conditions["per_format"].items():
            per.setdefault(fmt, stats)
    if not per:
        return None
    throttled = sum(s["throttled_windows"] for s in per.values())
    return throttle_line({"per_format": per, "throttled_windows": throttled})


def _fp16_throughput(res: dict[str, Any]) -> str:
    stats = (res.get("per_format") or {}).get("FP16") or {}
    throughput = stats.get("throughput_tokens_per_s")
    if throughput is None:
        return ""
    share = stats.get("of_bandwidth_limit_pct")
    limit = f", {share:.0f}% of the bandwidth limit" if share is not None else ""
    return f", {throughput:,.0f} tok/s{limit}"
