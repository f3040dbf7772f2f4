"""The human summary of a report (printed on stdout after energy.json is written), and of
a session of several formats: rendered from the report model itself, so a summary can
never say more than the file. Pure functions: text in, nothing printed here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.monitor.conditions import throttle_words
from ecocompute.published.figures import is_project_card
from ecocompute.report.labels import card_with_arch, formats_on_gpus, gpu_list
from ecocompute.report.model import Measurement, Report, Software, Workload
from ecocompute.report.results_model import Conditions, FormatConditions, HeldView, Results
from ecocompute.report.software import stack_in_words

_BASIS_WORDS = {
    "measured": "measured on this machine with NVML",
    "interpolated": "derived from the published dataset, inside its measured range "
    "(not measured here)",
    "extrapolated": "derived from the published dataset, outside its measured range or "
    "borrowed from another architecture (not measured here)",
    "unavailable": "no figure: the published dataset has no curve for this combination",
}
SCOPE = "  scope      GPU-package energy only (not wall power); not a certified result"
HELD_LEAD = "the figures above: the GPUs each model used; 'held' below adds the GPUs a format freed"
UUID_TAIL = 12  # characters of the UUID's last group: enough to tell units apart


def basis_words(basis: str, reference_card: str | None) -> str:
    words = _BASIS_WORDS[basis]
    if is_project_card(reference_card):  # Hopper: this project's H200 figures, not published
        words = words.replace("the published dataset", "this project's own measurements")
    return words


def local_gpu(report: Report) -> str | None:
    """The GPU of the machine that wrote the report, None when it had none (a derived
    report's gpu field then holds a phrase: its local_accelerator_count says so)."""
    sut = report.system_under_test
    local = sut.local_accelerator_count
    if local is None and "no local GPU" in (report.measurement_source or ""):
        local = 0 if not report.measured else None
    return None if local == 0 else sut.gpu


def _mj(value: float | None, unit: str = " mJ/token") -> str:
    return "n/a" if value is None else f"{value:,.1f}{unit}"


def _ci(ci: Sequence[float] | None) -> str:
    return f"  (95% CI {ci[0]:+.1f}% .. {ci[1]:+.1f}%)" if ci else ""


def size_words(work: Workload) -> str:
    return "size unknown" if work.params_b is None else f"{work.params_b:g}B params"


def as_report(report: Report | Mapping[str, Any]) -> Report:
    """The model of a report given as its JSON document (of any format this tool reads),
    or the model itself."""
    if isinstance(report, Report):
        return report
    if report.get("ecocompute_format") is not None:
        return Report.model_validate(dict(report))
    from ecocompute.report.legacy import upgraded

    return upgraded(report)


def render(document: Report | Mapping[str, Any], path: str) -> str:
    report = as_report(document)
    sut, work, res = report.system_under_test, report.workload, report.results
    lines = [
        "EcoCompute energy estimate",
        f"  model      {work.model_name} ({size_words(work)})",
        f"  card       {card_with_arch(local_gpu(report), sut.gpu_arch)}",
        *unit_lines(report),
    ]
    if res.reference_card:
        whose = "this project's" if is_project_card(res.reference_card) else "published"
        lines.append(f"  data from  {whose} {res.reference_card} measurements")
    fp16_alone = work.precision == "FP16"
    lines.append(
        "  format     FP16 alone" if fp16_alone else f"  format     {work.precision} vs FP16"
    )
    lines.append(f"  FP16       {_mj(res.fp16_energy_per_token_mj)}")
    if not fp16_alone:
        lines.append(f"  {work.precision:<10} {_mj(res.energy_per_token_mj)}")
        if res.vs_fp16_energy_pct is None:
            lines.append("  delta      n/a (no figure is claimed)")
        else:
            lines.append(
                f"  delta      {res.vs_fp16_energy_pct:+.1f}% energy per token vs FP16"
                + _ci(res.vs_fp16_ci95_pct)
            )
        anchors = res.reference_anchors
        if anchors is not None:
            lines.append(
                f"  figure     the site's figure at a measured size: the mean of its "
                f"{len(anchors.points)} anchor(s) at {anchors.params_b:g}B "
                f"({', '.join(f'{pt.gpu} {pt.delta_pct:+.1f}%' for pt in anchors.points)}), "
                f"its band [{anchors.band_pct[0]:+.1f}, {anchors.band_pct[1]:+.1f}]"
            )
        elif res.reference_curve is not None and work.params_b is not None:
            lines.append(
                f"  figure     the fitted {res.reference_curve.arch} curve at "
                f"{work.params_b:g}B (no anchor measured at this size)"
            )
    if res.verdict:
        lines.append(f"  verdict    {verdict_words(work.precision, res)}")
    lines.append(f"  basis      {res.basis}: {basis_words(res.basis, res.reference_card)}")
    why = report.measurement_source or ""
    if report.measured:
        trials = ", ".join(f"{p} n={s.n_trials}" for p, s in res.per_format.items())
        why = f"{why}: NVML read this machine's GPU during the run ({trials})"
    elif report.measurement_source_reason:
        why = f"{why}: {report.measurement_source_reason}"
    lines.append(f"  why        {why}")
    decode = report.measurement.decode
    if not report.measured and decode.note:
        asked = decode.requested_regime
        prefix = f"--decode {asked} asked for, but " if asked else ""
        lines.append(f"  decode     {prefix}{decode.note}")
    if report.measured and res.trials:
        lines.extend(energy_lines(work.precision, res))
        lines.append(f"  protocol   {protocol_words(report.measurement)}")
        if decode.per_format and decode.compile_s is not None:
            lines.append(f"  compile    {compile_words(report.measurement)}")
        lines.append(f"  check      {cross_check(res)}")
        gpus = gpus_by_format(res)
        if gpus:
            lines.append(f"  gpus       {gpus}")
        lines.extend(held_lines(work.precision, res))
    if "pass --gpu_arch" in (sut.gpu_arch_source or ""):
        lines.append(f"  note       {sut.gpu_arch_source}")
    if work.weights in ("pretrained", "synthetic"):
        caveat = (
            " (random weights: INT8's outlier cost is understated, no perplexity)"
            if work.weights == "synthetic"
            else ""
        )
        lines.append(f"  weights    {work.weights}{caveat}")
    if report.software is not None:
        lines.append(f"  software   {software_words(report.software)}")
    lines.append(SCOPE)
    lines.extend(site_lines(report))
    lines.append(f"  report     {path}")
    return "\n".join(lines)


def site_lines(report: Report) -> list[str]:
    """--prefetch's prediction and --share's link, where the report holds them."""
    lines = []
    prefetch = report.provenance.prefetch if report.provenance else None
    if prefetch is not None and prefetch.predicted_vs_fp16_pct is not None:
        site = prefetch.answer
        band = ""
        if site is not None and site.ci95_pct is not None:
            band = f" [{site.ci95_pct[0]:+.1f}, {site.ci95_pct[1]:+.1f}]"
        basis = f", basis {site.basis}" if site is not None and site.basis else ""
        anchors = f", {len(site.anchors)} anchors" if site is not None and site.anchors else ""
        lines.append(
            f"  site said  {prefetch.predicted_vs_fp16_pct:+.1f}%{band} vs FP16 (its "
            f"estimator, before the run{basis}{anchors})"
        )
    if report.share_url:
        lines.append(f"  share      {report.share_url}")
        lines.append("             (also in share_url.txt; the point is in the link; nothing sent)")
    return lines


def energy_lines(precision: str, res: Results) -> list[str]:
    """Each format's idle share and energy above idle, and the delta above idle beside
    the total delta: at batch 1 most of a token's energy can be the GPU idling."""
    lines = [
        f"  idle       {fmt}: {s.idle_share_pct:.0f}% of its energy is idle power; "
        f"above idle {s.energy_above_idle_per_token_mj:,.1f} mJ/token"
        for fmt, s in res.per_format.items()
        if s.idle_share_pct is not None and s.energy_above_idle_per_token_mj is not None
    ]
    above, total = res.vs_fp16_above_idle_pct, res.vs_fp16_energy_pct
    if precision != "FP16" and above is not None and total is not None:
        lines.append(
            f"  above idle {precision} {above:+.1f}% vs FP16 in energy above idle "
            f"(total: {total:+.1f}%)"
        )
    return lines


def protocol_words(measurement: Measurement) -> str:
    regime = measurement.decode.regime
    stopping = measurement.stopping
    if stopping is None:
        return f"{regime} decode"
    text = f"{regime} decode; {stopping.rounds} rounds ({stopping.rule}"
    if stopping.target_ci_pts is not None and stopping.rule == "ci_target":
        text += f", target +-{stopping.target_ci_pts:g} pts"
    return f"{text}): stopped on {stopping.stopped_because}"


def compile_words(measurement: Measurement) -> str:
    """Each format's compile of the compiled regime, and whether inductor's cache held it."""
    decode = measurement.decode
    each = ", ".join(
        f"{fmt} {d.compile_s:.1f} s (inductor cache {d.inductor_cache or 'unknown'})"
        for fmt, d in (decode.per_format or {}).items()
        if d.compile_s is not None
    )
    mode = decode.compiler.mode if decode.compiler else ""
    return f"{each}; torch.compile {mode}, before any measured window".replace("  ", " ")


def cross_check(res: Results) -> str:
    """How the 10 Hz power sampler agreed with the energy counter, window by window."""
    dropped = res.dropped_samples or 0
    reads = f"{dropped} read{'s' if dropped != 1 else ''} dropped"
    if res.sampled_vs_counter_max_abs_pct is None or res.sampled_vs_counter_pct is None:
        return f"no energy counter: energy is the 10 Hz power sampler's alone; {reads}"
    return (
        f"10 Hz sampler vs energy counter: mean {res.sampled_vs_counter_pct:+.2f}%, "
        f"largest {res.sampled_vs_counter_max_abs_pct:.2f}% over {len(res.trials)} windows; "
        f"{reads}"
    )


def gpus_by_format(res: Results) -> str | None:
    """Where the formats occupy different GPUs, which; None where they share them."""
    sets = {fmt: s.nvml_indices for fmt, s in res.per_format.items()}
    if len({tuple(v) for v in sets.values()}) < 2:
        return None
    return f"{formats_on_gpus(sets)} (NVML index): each format's energy sums every GPU it occupies"


def verdict_words(precision: str, res: Results) -> str:
    n = res.n_pairs
    if res.verdict == "saves":
        return f"saves: {precision} spends less energy per token than FP16 ({n} pairs, CI below 0)"
    if res.verdict == "costs":
        return f"costs: {precision} spends more energy per token than FP16 ({n} pairs, CI above 0)"
    return f"inconclusive: the 95% interval includes 0 ({n} pairs); more trials may decide"


def software_words(sw: Software) -> str:
    python = [f"python {sw.python}"] if sw.python else []
    text = ", ".join([*python, *stack_in_words(sw.packages or {}, sw.nvidia_driver)])
    if sw.matches_reference_pins is False:
        text += " (differs from the container image's pins: see software in the report)"
    return text


# -- the unit and the state it was in ---------------------------------------------------


def uuid_tail(uuid: str | None) -> str | None:
    """ "GPU-1af0ae31-...-bebcef2e2e82" -> "bebcef2e2e82" """
    return None if not uuid else uuid.rsplit("-", 1)[-1][-UUID_TAIL:]


def unit_lines(report: Report) -> list[str]:
    """Which unit of the card was measured (its interval holds for that card, not the
    card model: docs/units.md), and every window that ran throttled; none unless
    measured."""
    if not report.measured:
        return []
    lines = []
    gpus = report.system_under_test.gpus
    if gpus:
        units = []
        for g in gpus:
            details = []
            if g.board_part_number:
                details.append(f"board {g.board_part_number}")
            if g.vbios_version:
                details.append(f"VBIOS {g.vbios_version}")
            b = g.before_session
            if b is not None:
                idle = f"idle {b.idle_power_watts:.0f} W before loading"
                if b.temperature_c is not None:
                    idle += f" at {b.temperature_c:.0f} C"
                details.append(idle)
            units.append(
                f"...{uuid_tail(g.uuid)}" + (f" ({', '.join(details)})" if details else "")
            )
        lines.append(f"  unit       {'; '.join(units)}: figures for this card, not the card model")
    if report.results.conditions is not None:
        lines.append(f"  throttle   {throttle_line(report.results.conditions.per_format)}")
    return lines


def throttle_line(per: Mapping[Any, FormatConditions]) -> str:
    """How many windows ran throttled and why, or that none did; the highest power."""
    peaks = [c.power_of_limit_pct_max for c in per.values() if c.power_of_limit_pct_max]
    peak = f"; power at most {max(peaks):.0f}% of the limit" if peaks else ""
    if not any(c.throttled_windows for c in per.values()):
        return f"no window met the power cap or a slowdown{peak}"
    parts = [
        f"{fmt} {c.throttled_windows} of {c.windows} windows ({throttle_words(c.throttles)})"
        for fmt, c in per.items()
        if c.throttled_windows
    ]
    return "; ".join(parts) + f"{peak}; the figures include them"


# -- the view of every GPU a session held ---------------------------------------------------


def _held_delta(held: HeldView) -> str:
    if held.vs_fp16_energy_pct is None:
        return "n/a"
    return f"{held.vs_fp16_energy_pct:+.1f}%" + (
        f" (95% CI {held.vs_fp16_ci95_pct[0]:+.1f}% .. {held.vs_fp16_ci95_pct[1]:+.1f}%)"
        if held.vs_fp16_ci95_pct
        else ""
    )


def freed_words(fmt: str, res: Results) -> str | None:
    """ "NF4 used 1 GPU of the session's 2, leaving GPU 0 idle: 95.1 W during its trials
    (idle window 94.8 W)"; None where it left none idle."""
    held, own = res.held_gpus, res.per_format.get(fmt)  # type: ignore[call-overload]
    stats = None if held is None else held.per_format.get(fmt)  # type: ignore[call-overload]
    if held is None or own is None or stats is None or not stats.idle_nvml_indices:
        return None
    n = len(own.nvml_indices)
    text = (
        f"{fmt} used {n} GPU{'s' if n != 1 else ''} of the session's {len(held.nvml_indices)}, "
        f"leaving {gpu_list(stats.idle_nvml_indices)} idle: "
        f"{stats.idle_gpus_power_watts:,.1f} W during its trials"
    )
    window = stats.idle_gpus_idle_window_watts
    return text + ("" if window is None else f" (idle window {window:,.1f} W)")


def held_lines(precision: str, res: Results) -> list[str]:
    held = res.held_gpus
    if held is None:
        return []
    lines = [f"  lead       {HELD_LEAD}"]
    lines.extend(f"  freed      {w}" for w in [freed_words(precision, res)] if w)
    lines.append(
        f"  held       every GPU the session held ({gpu_list(held.nvml_indices)}): "
        f"{precision} {held.energy_per_token_mj:,.1f} vs FP16 "
        f"{held.fp16_energy_per_token_mj:,.1f} mJ/token, {_held_delta(held)}"
        f": {held.verdict or 'n/a'}"
    )
    if res.verdict and held.verdict and res.verdict != held.verdict:
        lines.append(
            f"  views      differ: {res.verdict} on the GPUs each model used, "
            f"{held.verdict} on every GPU the session held"
        )
    return lines


# -- a session of several formats -------------------------------------------------------


def render_session(documents: Sequence[Report | Mapping[str, Any]], paths: Sequence[str]) -> str:
    """What the formats share (model, card, FP16, protocol, software, scope) once, then
    one line per format, then every report's path."""
    reports = [as_report(r) for r in documents]
    first = reports[0]
    sut, work, res = first.system_under_test, first.workload, first.results
    lines = [
        "EcoCompute energy estimate: a session of several formats",
        f"  model      {work.model_name} ({size_words(work)})",
        f"  card       {card_with_arch(local_gpu(first), sut.gpu_arch)}",
        *[line for line in unit_lines(first) if not line.startswith("  throttle")],
        f"  formats    {', '.join(r.workload.precision for r in reports)}, each vs the same "
        "FP16 baseline",
        f"  FP16       {_mj(res.fp16_energy_per_token_mj, '')} mJ/token" + _fp16_throughput(res),
        f"  basis      {res.basis}: {basis_words(res.basis, res.reference_card)}",
    ]
    if res.basis == "measured":
        lines.append(f"  protocol   {protocol_words(first.measurement)}")
        per = {
            fmt: d for r in reports for fmt, d in (r.measurement.decode.per_format or {}).items()
        }
        if per and first.measurement.decode.compile_s is not None:
            merged = first.measurement.model_copy(
                update={"decode": first.measurement.decode.model_copy(update={"per_format": per})}
            )
            lines.append(f"  compile    {compile_words(merged)}")
    header = (
        f"  {'format':<13} {'mJ/token':>10} {'vs FP16':>8} {'95% CI':>17} {'verdict':<12} tok/s"
    )
    if any(r.results.per_format for r in reports):
        header += " (of bandwidth limit)"
    lines.append(header)
    lines.extend(_format_line(r) for r in reports)
    lines.extend(held_session_lines(reports))
    throttle = _session_throttle(reports)
    if throttle:
        lines.append(f"  throttle   {throttle}")
    if work.weights in ("pretrained", "synthetic"):
        lines.append(f"  weights    {work.weights}")
    if first.software is not None:
        lines.append(f"  software   {software_words(first.software)}")
    lines.append(SCOPE)
    lines.extend(f"  report     {path}" for path in paths)
    return "\n".join(lines)


def _format_line(report: Report) -> str:
    work, res = report.workload, report.results
    stats = res.per_format.get(work.precision)
    key = stats.format if stats else work.precision
    delta, ci = res.vs_fp16_energy_pct, res.vs_fp16_ci95_pct
    cells = [
        f"  {key:<13}",
        f"{_mj(res.energy_per_token_mj, ''):>10}",
        f"{'-' if delta is None else format(delta, '+.1f') + '%':>8}",
        f"{'-' if not ci else f'{ci[0]:+.1f} .. {ci[1]:+.1f}%':>17}",
        f"{res.verdict or '-':<12}",
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


def _fp16_throughput(res: Results) -> str:
    stats = res.per_format.get("FP16")
    if stats is None:
        return ""
    share = stats.of_bandwidth_limit_pct
    limit = f", {share:.0f}% of the bandwidth limit" if share is not None else ""
    return f", {stats.throughput_tokens_per_s:,.0f} tok/s{limit}"


def held_session_lines(reports: Sequence[Report]) -> list[str]:
    """A session's lines for the view of every GPU it held: one row per format."""
    helds = [(r, r.results.held_gpus) for r in reports]
    with_view = [(r, h) for r, h in helds if h is not None]
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
        ci = held.vs_fp16_ci95_pct
        delta = held.vs_fp16_energy_pct
        lines.append(
            " ".join(
                [
                    f"  {fmt:<13}",
                    f"{held.energy_per_token_mj:>10,.1f}",
                    f"{'-' if delta is None else format(delta, '+.1f') + '%':>8}",
                    f"{'-' if not ci else f'{ci[0]:+.1f} .. {ci[1]:+.1f}%':>17}",
                    f"{held.verdict or '-':<12}",
                ]
            )
        )
        freed = freed_words(fmt, report.results)
        lines.append(f"  {'':<13} {freed or fmt + ' used every GPU of the session'}")
        verdict = report.results.verdict
        if verdict and held.verdict and verdict != held.verdict:
            lines.append(f"  {'':<13} the views differ: {verdict} on the GPUs it used")
    return lines


def _session_throttle(reports: Sequence[Report]) -> str | None:
    """Every format's windows (FP16's once), as one throttle line."""
    per: dict[str, FormatConditions] = {}
    for r in reports:
        conditions: Conditions | None = r.results.conditions
        if r.measured and conditions is not None:
            for fmt, c in conditions.per_format.items():
                per.setdefault(fmt, c)
    return throttle_line(per) if per else None
