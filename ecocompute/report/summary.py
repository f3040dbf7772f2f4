"""The human summary printed on stdout after energy.json is written.

Rendered from the report itself, so the summary can never say more than the file.
"""

from __future__ import annotations

from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.published.figures import is_project_card
from ecocompute.report.held_summary import held_lines
from ecocompute.report.labels import card_with_arch, formats_on_gpus, local_gpu
from ecocompute.report.software import stack_in_words
from ecocompute.report.unit_summary import unit_lines

_BASIS_WORDS = {
    "measured": "measured on this machine with NVML",
    "interpolated": "derived from the published dataset, inside its measured range "
    "(not measured here)",
    "extrapolated": "derived from the published dataset, outside its measured range or "
    "borrowed from another architecture (not measured here)",
    "unavailable": "no figure: the published dataset has no curve for this combination",
}


def basis_words(basis: str, reference_card: str | None) -> str:
    words = _BASIS_WORDS[basis]
    if is_project_card(reference_card):  # Hopper: this project's H200 figures, not published
        words = words.replace("the published dataset", "this project's own measurements")
    return words


def _mj(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.1f} mJ/token"


def render(report: dict[str, Any], path: str) -> str:
    sut, work, res = report["system_under_test"], report["workload"], report["results"]
    basis = res["basis"]
    lines = [
        "EcoCompute energy estimate",
        f"  model      {work['model_name']} ({size_words(work)})",
        f"  card       {card_with_arch(local_gpu(report), sut['gpu_arch'])}",
        *unit_lines(report),
    ]
    if res.get("reference_card"):
        whose = "this project's" if is_project_card(res["reference_card"]) else "published"
        lines.append(f"  data from  {whose} {res['reference_card']} measurements")
    lines.append(
        "  format     FP16 alone"
        if work["precision"] == Precision.FP16
        else f"  format     {work['precision']} vs FP16"
    )
    lines.append(f"  FP16       {_mj(res['fp16_energy_per_token_mj'])}")
    if work["precision"] != Precision.FP16:
        lines.append(f"  {work['precision']:<10} {_mj(res['energy_per_token_mj'])}")
        delta = res["vs_fp16_energy_pct"]
        if delta is None:
            lines.append("  delta      n/a (no figure is claimed)")
        else:
            ci = res.get("vs_fp16_ci95_pct")
            ci_text = f"  (95% CI {ci[0]:+.1f}% .. {ci[1]:+.1f}%)" if ci else ""
            lines.append(f"  delta      {delta:+.1f}% energy per token vs FP16{ci_text}")
    if res.get("verdict"):
        lines.append(f"  verdict    {_verdict_words(work['precision'], res)}")
    lines.append(f"  basis      {basis}: {basis_words(basis, res.get('reference_card'))}")
    why = report["measurement_source"]
    if basis == "measured":
        why = f"{why}: NVML read this machine's GPU during the run ({_trials(res)})"
    elif report.get("measurement_source_reason"):
        why = f"{why}: {report['measurement_source_reason']}"
    lines.append(f"  why        {why}")
    decode = report["measurement"].get("decode") or {}
    if basis != "measured" and decode.get("note"):
        asked = decode.get("requested_regime")
        prefix = f"--decode {asked} asked for, but " if asked else ""
        lines.append(f"  decode     {prefix}{decode['note']}")
    if basis == "measured" and res.get("trials"):
        lines.extend(_where_the_energy_goes(work["precision"], res))
        lines.append(f"  protocol   {protocol_words(report['measurement'])}")
        if decode.get("per_format") and decode.get("compile_s") is not None:
            lines.append(f"  compile    {compile_words(decode)}")
        lines.append(f"  check      {_cross_check(res)}")
        gpus = _gpus_by_format(res)
        if gpus:
            lines.append(f"  gpus       {gpus}")
        lines.extend(held_lines(work["precision"], res))
    arch_source = sut.get("gpu_arch_source", "")
    if "pass --gpu_arch" in arch_source:
        lines.append(f"  note       {arch_source}")
    if work.get("weights") in ("pretrained", "synthetic"):
        lines.append(f"  weights    {work['weights']}{_weights_caveat(work)}")
    lines.append(f"  software   {software_words(report['software'])}")
    lines.append("  scope      GPU-package energy only (not wall power); not a certified result")
    lines.extend(_site_lines(report))
    lines.append(f"  report     {path}")
    return "\n".join(lines)


def _site_lines(report: dict[str, Any]) -> list[str]:
    """--prefetch's prediction and --share's link, where the report holds them."""
    lines = []
    predicted = (report["provenance"].get("prefetch") or {}).get("predicted_vs_fp16_pct")
    if predicted is not None:
        lines.append(f"  site said  {predicted:+.1f}% vs FP16 (its estimator, before the run)")
    if report.get("share_url"):
        lines.append(f"  share      {report['share_url']}")
        lines.append("             (also in share_url.txt; the point is in the link; nothing sent)")
    return lines


def _where_the_energy_goes(precision: str, res: dict[str, Any]) -> list[str]:
    """Each format's idle share and energy above idle, and the delta above idle beside
    the total delta: at batch 1 most of a token's energy can be the GPU idling."""
    per = res.get("per_format") or {}
    lines = []
    for fmt, stats in per.items():
        share, above = stats.get("idle_share_pct"), stats.get("energy_above_idle_per_token_mj")
        if share is None or above is None:
            continue
        lines.append(
            f"  idle       {fmt}: {share:.0f}% of its energy is idle power; "
            f"above idle {above:,.1f} mJ/token"
        )
    above_delta, total = res.get("vs_fp16_above_idle_pct"), res.get("vs_fp16_energy_pct")
    if precision != Precision.FP16 and above_delta is not None and total is not None:
        lines.append(
            f"  above idle {precision} {above_delta:+.1f}% vs FP16 in energy above idle "
            f"(total: {total:+.1f}%)"
        )
    return lines


def protocol_words(measurement: dict[str, Any]) -> str:
    regime = (measurement.get("decode") or {}).get("regime", "eager")
    stopping = measurement.get("stopping")
    if not stopping:
        return f"{regime} decode"
    text = f"{regime} decode; {stopping['rounds']} rounds ({stopping['rule']}"
    if stopping.get("target_ci_pts") is not None and stopping["rule"] == "ci_target":
        text += f", target +-{stopping['target_ci_pts']:g} pts"
    return f"{text}): stopped on {stopping['stopped_because']}"


def compile_words(decode: dict[str, Any]) -> str:
    """Each format's compile of the compiled regime, and whether inductor's cache held it."""
    per = decode["per_format"]
    each = ", ".join(
        f"{fmt} {d['compile_s']:.1f} s (inductor cache {d.get('inductor_cache', 'unknown')})"
        for fmt, d in per.items()
        if isinstance(d.get("compile_s"), (int, float))
    )
    mode = (decode.get("compiler") or {}).get("mode", "")
    return f"{each}; torch.compile {mode}, before any measured window".replace("  ", " ")


def size_words(work: dict[str, Any]) -> str:
    size = work.get("params_b")
    return "size unknown" if size is None else f"{size:g}B params"


def _trials(res: dict[str, Any]) -> str:
    per = res.get("per_format") or {}
    return ", ".join(f"{p} n={s['n_trials']}" for p, s in per.items())


def _cross_check(res: dict[str, Any]) -> str:
    """How the 10 Hz power sampler agreed with the energy counter, window by window."""
    windows = len(res["trials"])
    dropped = res.get("dropped_samples") or 0
    reads = f"{dropped} read{'s' if dropped != 1 else ''} dropped"
    if res.get("sampled_vs_counter_max_abs_pct") is None:
        return f"no energy counter: energy is the 10 Hz power sampler's alone; {reads}"
    return (
        f"10 Hz sampler vs energy counter: mean {res['sampled_vs_counter_pct']:+.2f}%, "
        f"largest {res['sampled_vs_counter_max_abs_pct']:.2f}% over {windows} windows; {reads}"
    )


def _gpus_by_format(res: dict[str, Any]) -> str | None:
    """Where the formats occupy different GPUs, which; None where they share them."""
    per = res.get("per_format") or {}
    sets = {fmt: stats.get("nvml_indices") for fmt, stats in per.items()}
    if None in sets.values() or len({tuple(v) for v in sets.values()}) < 2:
        return None
    return f"{formats_on_gpus(sets)} (NVML index): each format's energy sums every GPU it occupies"


def _verdict_words(precision: str, res: dict[str, Any]) -> str:
    n = res.get("n_pairs")
    verdict = res["verdict"]
    if verdict == "saves":
        return f"saves: {precision} spends less energy per token than FP16 ({n} pairs, CI below 0)"
    if verdict == "costs":
        return f"costs: {precision} spends more energy per token than FP16 ({n} pairs, CI above 0)"
    return f"inconclusive: the 95% interval includes 0 ({n} pairs); more trials may decide"


def _weights_caveat(work: dict[str, Any]) -> str:
    if work["weights"] != "synthetic":
        return ""
    return " (random weights: INT8's outlier cost is understated, no perplexity)"


def software_words(sw: dict[str, Any]) -> str:
    text = ", ".join([f"python {sw['python']}", *stack_in_words(sw)])
    if sw.get("matches_reference_pins") is False:
        text += " (differs from the container image's pins: see software in the report)"
    return text
