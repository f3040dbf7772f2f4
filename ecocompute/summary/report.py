"""The human summary of one report (printed on stdout after energy.json is written),
rendered from the report model itself, so a summary can never say more than the file.
Pure functions: text in, nothing printed here (summary/session.py: a session's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.monitor.conditions import throttle_words
from ecocompute.params.run_params import COMPILE_MODE, NEAR_TIE_STD_FRACTION
from ecocompute.published.figures import is_project_card
from ecocompute.report.decode_model import Decode, FormatDecode
from ecocompute.report.labels import (
    NO_FIGURE_LEAD,
    card_with_arch,
    format_label,
    formats_on_gpus,
    gpu_list,
    local_gpu,
    uuid_tail,
)
from ecocompute.report.model import Measurement, Report, Software, Workload
from ecocompute.report.references import beside_unit, software_departures, units_disagreement
from ecocompute.report.results_model import (
    BetweenCompiles,
    Format,
    FormatConditions,
    Results,
)
from ecocompute.report.software import stack_in_words

_BASIS_WORDS = {
    "measured": "measured on this machine with NVML",
    "interpolated": "derived from the published dataset, inside its measured range "
    "(not measured here)",
    "extrapolated": "derived from the published dataset, outside its measured range or "
    "borrowed from another architecture (not measured here)",
    "unavailable": "no figure is claimed",
}
SCOPE = "  scope      GPU-package energy only (not wall power); not a certified result"
HELD_LEAD = "the figures above: the GPUs each model used; 'held' below adds the GPUs a format freed"


def weights_lines(work: Workload, reports: Sequence[Report] = ()) -> list[str]:
    """What the weights were, with what that costs the figures: random (LLM.int8()'s
    outliers understated, where one of reports is LLM.int8(); no perplexity), or
    pretrained but converted (not the original release)."""
    if work.weights == "synthetic":
        outliers = any(  # LLM.int8() with its outlier columns (a threshold above 0)
            r.workload.precision == "INT8"
            and r.workload.library in (None, "bitsandbytes")
            and r.workload.llm_int8_threshold != 0
            for r in reports
        )
        caveat = "LLM.int8()'s outlier cost is understated, " if outliers else ""
        return [f"  weights    synthetic (random weights: {caveat}no perplexity)"]
    if work.weights == "pretrained":
        caveat = " (converted from GGUF: not the original weights; workload.weights_note)"
        return [f"  weights    pretrained{caveat if work.weights_converted else ''}"]
    return []


def basis_words(res: Results) -> str:
    words = _BASIS_WORDS[res.basis]
    if not is_project_card(res.reference_card):
        return words
    lender = borrowed_from(res)
    if lender is not None:  # Hopper's FP16 is ours, its delta another class's published curve
        return (
            f"FP16 derived from this project's own measurements, the delta from {lender}'s "
            "published curve, borrowed from another architecture (not measured here)"
        )
    return words.replace("the published dataset", "this project's own measurements")


def borrowed_from(res: Results) -> str | None:
    """The arch class whose published curve a derived figure borrows, or None."""
    curve = res.reference_curve
    return None if curve is None else curve.borrowed_from


def why_no_figure(report: Report) -> str | None:
    """Why an unavailable report has no figure, as its note says it; None unless the
    basis is unavailable."""
    res = report.results
    if res.basis != "unavailable":
        return None
    lead = f"{NO_FIGURE_LEAD} ({report.measurement_source_reason}): "
    note = (res.note or "").strip().removeprefix(lead)
    asked = report.measurement.decode.requested_regime
    if asked:  # the decode line says it
        note = note.split(f" --decode {asked} was asked for", 1)[0]
    return note.rstrip(".") or None


def context_lines(report: Report, session: Sequence[Report] = ()) -> list[str]:
    """What a derived report says of where its figure came from and why: the why,
    decode and note lines (a measured report's why names its trials: in a session,
    every format's, FP16's once)."""
    why = report.measurement_source or ""
    if report.measured:
        per = {
            format_label(r) if p == r.workload.precision else p: s
            for r in (session or [report])
            for p, s in r.results.per_format.items()
        }
        trials = ", ".join(f"{p} n={s.n_trials}" for p, s in per.items())
        why = f"{why}: NVML read this machine's GPU during the run ({trials})"
    elif report.measurement_source_reason:
        why = f"{why}: {report.measurement_source_reason}"
    lines = [f"  why        {why}"]
    decode = report.measurement.decode
    if not report.measured and decode.note:
        asked = decode.requested_regime
        prefix = f"--decode {asked} asked for, but " if asked else ""
        lines.append(f"  decode     {prefix}{decode.note}")
    for r in session or [report]:  # what the units measured in the regime asked for
        units = r.results.regime_units
        if units is not None:
            lines.append(f"  regime     {units.regime_words(r.results.vs_fp16_energy_pct_exact)}")
    return lines


def closing_lines(report: Report, reports: Sequence[Report] = ()) -> list[str]:
    """The arch class's note (where it was not detected), the weights, the software and
    the scope: a session's are its first report's, the weights' caveat its formats'."""
    source = report.system_under_test.gpu_arch_source or ""
    sw = report.software
    return [
        *([f"  note       {source}"] if "pass --gpu_arch" in source else []),
        *weights_lines(report.workload, reports or [report]),
        *([f"  software   {software_words(sw, report.measured)}"] if sw is not None else []),
        SCOPE,
    ]


def data_from_line(reports: Sequence[Report]) -> list[str]:
    """Whose measurements the derived figures come from (the first report that names a
    reference card); none for measured reports."""
    card = next((r.results.reference_card for r in reports if r.results.reference_card), None)
    if card is None:
        return []
    whose = "this project's" if is_project_card(card) else "published"
    lenders = sorted({b for r in reports if (b := borrowed_from(r.results)) is not None})
    lent = f" and {', '.join(lenders)}'s published curve (borrowed)" if lenders else ""
    return [f"  data from  {whose} {card} measurements{lent}"]


def _mj(value: float | None, unit: str = " mJ/token") -> str:
    return "n/a" if value is None else f"{value:,.1f}{unit}"


def _ci(ci: Sequence[float] | None, gap: str = "  ") -> str:
    return f"{gap}(95% CI {ci[0]:+.1f}% .. {ci[1]:+.1f}%)" if ci else ""


def opening_lines(reports: Sequence[Report], session: bool = False) -> list[str]:
    """The model, the card, the unit measured and whose data the figures are from: a
    session's are its first report's (its unit lines as a session gives them)."""
    first, work = reports[0], reports[0].workload
    size = "size unknown" if work.params_b is None else f"{work.params_b:g}B params"
    return [
        f"  model      {work.model_name} ({size})",
        f"  card       {card_with_arch(local_gpu(first), first.system_under_test.gpu_arch)}",
        *unit_lines(first, session),
        *data_from_line(reports),
    ]


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
    work, res = report.workload, report.results
    lines = ["EcoCompute energy estimate", *opening_lines([report])]
    fp16_alone, label = work.precision == "FP16", format_label(report)
    lines.append("  format     FP16 alone" if fp16_alone else f"  format     {label} vs FP16")
    lines.append(f"  FP16       {_mj(res.fp16_energy_per_token_mj)}")
    if not fp16_alone:
        lines.append(f"  {label:<10} {_mj(res.energy_per_token_mj)}")
        if res.vs_fp16_energy_pct is None:
            lines.append("  delta      n/a (no figure is claimed)")
        else:
            window = " (the decode window)" if res.phases is not None else ""
            lines.append(
                f"  delta      {res.vs_fp16_energy_pct:+.1f}% energy per token vs FP16{window}"
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
    lines.extend(reference_units_lines(report))
    if res.verdict:
        lines.append(f"  verdict    {verdict_words(label, res)}")
    lines.append(f"  basis      {res.basis}: {basis_words(res)}")
    no_figure = why_no_figure(report)
    if no_figure:
        lines.append(f"  no figure  {no_figure}")
    lines.extend(context_lines(report))
    if report.measured and res.trials:
        lines.extend(phase_lines(work.precision, res))
        lines.extend(energy_lines(work.precision, res, label))
        lines.extend(run_lines([report]))
        lines.append(f"  check      {cross_check(res, report.measurement.sample_rate_hz)}")
        sets = {fmt: s.nvml_indices for fmt, s in res.per_format.items()}
        if len({tuple(v) for v in sets.values()}) > 1:  # the formats occupy different GPUs
            lines.append(
                f"  gpus       {formats_on_gpus(sets)} (NVML index): each format's energy "
                "sums every GPU it occupies"
            )
        lines.extend(held_lines(work.precision, res))
    lines.extend(closing_lines(report))
    lines.extend(site_lines(report))
    lines.append(f"  report     {path}")
    return "\n".join(lines)


def reference_units_lines(report: Report, label: str = "") -> list[str]:
    """A derived figure's between-unit spread, and a caution where the figure lies outside
    it at the units' own size; beside a measured unit, where that unit lies among the
    units (label: the format, in a session's summary)."""
    units, res = report.results.reference_units, report.results
    if units is None:
        return []
    lines = [f"  units      {units.words()}"]  # it names the format
    delta, lead = res.vs_fp16_energy_pct_exact, f"{label}: " if label else ""
    if report.measured:  # beside this unit's own figure
        if delta is None:
            return lines
        own = res.vs_fp16_ci95_pct
        stack = software_departures(report.system_under_test.gpu_arch, report.software)
        idle_w = report.system_under_test.idle_before_w
        beside, outside = beside_unit(
            units, delta, own, res.fp16_energy_per_token_mj, stack, idle_w=idle_w
        )
        key = "caution" if outside else "this unit"
        lines.append(f"  {key:<10} {lead}{beside}")
        return lines
    apart = None if delta is None else units_disagreement(units, delta, report.workload.params_b)
    if apart is not None:
        lines.append(f"  caution    {lead}{apart}")
    return lines


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


def phase_lines(precision: str, res: Results, label: str = "") -> list[str]:
    """With the phases apart: each phase's figure and delta, the workload's, and which
    phase decides it (the headline above is the decode window's)."""
    phases = res.phases
    if phases is None:
        return []
    work = phases.workload
    rows = [
        ("prefill", phases.prefill, "mJ/prompt token"),
        ("decode", phases.decode, "mJ/token"),
        (f"{work.prompt_tokens} in, {work.new_tokens} out", work, "mJ/token"),
    ]
    lines = []
    for name, figure, unit in rows:
        mine = figure.per_format.get(precision)  # type: ignore[call-overload]
        figure_mj = _mj(mine.energy_per_token_mj if mine else None, " " + unit)
        text = f"  {label or 'phase':<10} {name}: {figure_mj}"
        if figure.vs_fp16_energy_pct is not None:
            text += f", {figure.vs_fp16_energy_pct:+.1f}% vs FP16" + _ci(figure.vs_fp16_ci95_pct)
            text += f" ({figure.verdict})" if figure.verdict else ""
        lines.append(text)
    if work.decided_by is not None:
        lines.append(
            f"  {label or 'decides':<10} decided by the {work.decided_by}: {work.decided_note}"
        )
    return lines


def energy_lines(precision: str, res: Results, label: str = "") -> list[str]:
    """Each format's idle share and energy above idle, and the delta above idle beside
    the total delta: at batch 1 most of a token's energy can be the GPU idling. label:
    the format as tables name it (INT8-torchao), where not its precision."""
    label = label or precision
    lines = [
        f"  idle       {label if fmt == precision else fmt}: {s.idle_share_pct:.0f}% of its "
        "energy is idle power; "
        f"above idle {s.energy_above_idle_per_token_mj:,.1f} mJ/token"
        for fmt, s in res.per_format.items()
        if s.idle_share_pct is not None and s.energy_above_idle_per_token_mj is not None
    ]
    above, total = res.vs_fp16_above_idle_pct, res.vs_fp16_energy_pct
    if precision != "FP16" and above is not None and total is not None:
        lines.append(
            f"  above idle {label} {above:+.1f}% vs FP16 in energy above idle "
            f"(total: {total:+.1f}%)"
        )
    return lines


def protocol_words(measurement: Measurement) -> str:
    regime = measurement.decode.regime + " decode"
    fractions = {
        float(d.token_check["near_tie_std"])
        for d in (measurement.decode.per_format or {}).values()
        if d.token_check and d.token_check.get("near_tie_std") is not None
    } - {NEAR_TIE_STD_FRACTION}
    if fractions:  # the token check's near tie was not the default (--near_tie_std)
        regime += f" (token check's near tie widened to {max(fractions):g} of the logits' spread)"
    stopping = measurement.stopping
    if stopping is None:
        return regime
    text = f"{regime}; {stopping.rounds} rounds ({stopping.rule}"
    if stopping.target_ci_pts is not None and stopping.rule == "ci_target":
        text += f", target +-{stopping.target_ci_pts:g} pts"
    return f"{text}): stopped on {stopping.stopped_because}"


STEAL_SAID_PCT = 1.0  # a hypervisor's share below this is not worth a line
ONE_COMPILE_SCOPE = (
    "the intervals hold for this compile's kernels, not the next compile's "
    "(--compiles 2 or more spans compiles; docs/units.md)"
)
# What makes one max-autotune compile's kernels another's (docs/validation/h200-compile-mode,
# docs/validation/h100-compile-mode)
TIMED_KERNELS = (
    "max-autotune keeps the kernels it timed fastest at each compile (on two H200s and eight "
    "H100s its FP16 step spent 8-25% more a token than --compile_mode default's, which "
    "times none; at 7B batch 1 default's NF4 agreed within 1.2 points over twelve H100s, "
    "max-autotune's spread over 9 on eight; on H200s default's units still split by board; "
    "docs/units.md)"
)


def run_lines(reports: Sequence[Report]) -> list[str]:
    """How a measured run went: its protocol, its host, its compile (a session's formats
    share the first report's, each format's compile its own report's) and each format's
    compiles."""
    first = reports[0].measurement
    lines = [f"  protocol   {protocol_words(first)}"]
    # other guests of a shared host took a share of its CPU while the formats were measured
    steal = first.timing.measure_cpu_steal_pct if first.timing else None
    if steal is not None and steal >= STEAL_SAID_PCT:
        lines.append(
            f"  host       {steal:.1f}% of the host's CPU time went to other guests while "
            "measuring (a shared host; eager decoding's speed follows the host's)"
        )
    per = {fmt: d for r in reports for fmt, d in (r.measurement.decode.per_format or {}).items()}
    if per and first.decode.compile_s is not None:
        lines.append(f"  compile    {compile_words(first.decode, per)}")
    lines.extend(
        f"  compiles   {compiles_words(r.workload.precision, r.results.between_compiles)}"
        for r in reports
        if r.results.between_compiles is not None
    )
    return lines


def compile_words(decode: Decode, per_format: Mapping[Format, FormatDecode]) -> str:
    """Each format's compile of the compiled regime, and whether inductor's cache held it."""
    each = ", ".join(
        f"{fmt} {d.compile_s:.1f} s (inductor cache {d.inductor_cache or 'unknown'})"
        for fmt, d in per_format.items()
        if d.compile_s is not None
    )
    mode = decode.compiler.mode if decode.compiler else ""
    words = f"{each}; torch.compile {mode}, before any measured window".replace("  ", " ")
    if not decode.compiles:  # one compile: its draw of kernels is part of every figure
        words += f"; one compile: {ONE_COMPILE_SCOPE}"
        if decode.compiler is not None and decode.compiler.mode == COMPILE_MODE:
            words += f"; {TIMED_KERNELS}"
    else:  # per_format holds the first compile's (decode.compile_note)
        words = f"the first of {len(decode.compiles)} compiles: {words}"
        if decode.compile_s is not None:
            words += f"; {decode.compile_s:.1f} s of compiling over all of them"
    return words


def cross_check(res: Results, rate_hz: float) -> str:
    """How the power sampler (at the run's rate) agreed with the energy counter, window
    by window."""
    dropped = res.dropped_samples or 0
    reads = f"{dropped} read{'s' if dropped != 1 else ''} dropped"
    if res.sampled_vs_counter_max_abs_pct is None or res.sampled_vs_counter_pct is None:
        return f"no energy counter: energy is the {rate_hz:g} Hz power sampler's alone; {reads}"
    return (
        f"{rate_hz:g} Hz sampler vs energy counter: mean {res.sampled_vs_counter_pct:+.2f}%, "
        f"largest {res.sampled_vs_counter_max_abs_pct:.2f}% over {len(res.trials)} windows; "
        f"{reads}"
    )


def verdict_words(precision: str, res: Results) -> str:
    n = res.n_pairs
    if res.verdict == "saves":
        return f"saves: {precision} spends less energy per token than FP16 ({n} pairs, CI below 0)"
    if res.verdict == "costs":
        return f"costs: {precision} spends more energy per token than FP16 ({n} pairs, CI above 0)"
    return f"inconclusive: the 95% interval includes 0 ({n} pairs); more trials may decide"


def software_words(sw: Software, measured: bool) -> str:
    """The stack in words, and where a measurement's differs from the image's pins, so;
    a derived figure ran no kernels: its stack's pins change nothing in it."""
    python = [f"python {sw.python}"] if sw.python else []
    text = ", ".join([*python, *stack_in_words(sw.packages or {}, sw.nvidia_driver)])
    if measured and sw.matches_reference_pins is False:
        text += " (differs from the container image's pins: see software in the report)"
    return text


# -- the unit and the state it was in ---------------------------------------------------


def unit_lines(report: Report, session: bool = False) -> list[str]:
    """Which unit of the card was measured (its interval holds for that card, not the
    card model: docs/units.md), every window that ran throttled (a session says every
    format's later) and the temperatures (a session's are its first report's windows,
    which the line says); none unless measured."""
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
    if report.results.conditions is not None and not session:
        lines.append(f"  throttle   {throttle_line(report.results.conditions.per_format)}")
    th = report.thermal
    if th is not None and th.basis == "measured" and th.temperature_peak_c is not None:
        steady = (
            f"steady at {th.temperature_steady_c:.0f} C over the last half"
            if th.steady_state_reached and th.temperature_steady_c is not None
            else "not steady over the last half (still warming or cooling)"
        )
        whose = f"FP16's and {report.workload.precision}'s windows; each report holds its own"
        lines.append(
            f"  thermal    {th.temperature_start_c:.0f} C to {th.temperature_end_c:.0f} C, "
            f"peak {th.temperature_peak_c:.0f} C; {steady}" + (f" ({whose})" if session else "")
        )
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


def compiles_words(precision: str, bc: BetweenCompiles) -> str:
    """'NF4 over 2 compiles, each from an empty cache: -31.3% [-31.6, -31.1], -29.9% [...];
    between-compile SD 1.0 pts; the interval above spans compiles (one compile's
    pairs alone: [-31.2, -30.0])'."""
    each = ", ".join(
        f"{c.delta_pct:+.1f}% [{c.ci95_pct[0]:+.1f}, {c.ci95_pct[1]:+.1f}]" for c in bc.per_compile
    )
    within = bc.within_compile_ci95_pct
    alone = (
        ""
        if within is None
        else f" (all pairs as one compile: [{within[0]:+.1f}, {within[1]:+.1f}])"
    )
    return (
        f"{precision} over {bc.compiles} compiles, each from an empty cache: {each}; "
        f"between-compile SD {bc.between_compile_sd_pts:.1f} pts; the delta's interval spans "
        f"compiles{alone}"
    )


def held_lines(precision: str, res: Results) -> list[str]:
    held = res.held_gpus
    if held is None:
        return []
    delta = held.vs_fp16_energy_pct
    shown = "n/a" if delta is None else f"{delta:+.1f}%" + _ci(held.vs_fp16_ci95_pct, " ")
    lines = [f"  lead       {HELD_LEAD}"]
    lines.extend(f"  freed      {w}" for w in [freed_words(precision, res)] if w)
    lines.append(
        f"  held       every GPU the session held ({gpu_list(held.nvml_indices)}): "
        f"{precision} {held.energy_per_token_mj:,.1f} vs FP16 "
        f"{held.fp16_energy_per_token_mj:,.1f} mJ/token, {shown}"
        f": {held.verdict or 'n/a'}"
    )
    if res.verdict and held.verdict and res.verdict != held.verdict:
        lines.append(
            f"  views      differ: {res.verdict} on the GPUs each model used, "
            f"{held.verdict} on every GPU the session held"
        )
    return lines
