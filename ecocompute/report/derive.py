"""Every figure a measured report derives, from what it measured: pure functions of its
trials' readings, its idle window and the facts of its formats, unrounded.

The builder (report/build.py) makes the raw records of a run and derives the rest here;
a reader (report/checks.py) takes the raw records back out of a report and derives them
again: the same functions on the same floats give the same bits, so a report is checked
exactly. The statistics are core/stats.py's: per-format mean, sample sd and CV of energy
per token; the paired delta of each round's format trial against its FP16 trial, its
Student t 95% interval and the verdict.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ecocompute.core.meta import pool
from ecocompute.core.stats import (
    estimate_delta,
    paired_deltas_pct,
    summarise,
    t_interval,
    verdict_for,
)
from ecocompute.core.units import energy_per_token_mj, pct_change
from ecocompute.monitor.conditions import MIN_THROTTLED_S, throttle_words
from ecocompute.report.results_model import (
    CI_METHOD,
    CI_METHOD_COMPILES,
    BetweenCompiles,
    CompileDelta,
    Conditions,
    Format,
    FormatConditions,
    FormatStats,
    HeldFormatStats,
    HeldView,
    IdleWindow,
    Pair,
    Results,
    Throttle,
    Trial,
    WindowConditions,
)

FP16: Format = "FP16"
# A compile whose pairs agree exactly (a stand-in, or rounding) has no spread; the
# random-effects pool needs a positive variance per estimate
MIN_SE_PCT = 1e-9
THROTTLE_ORDER: tuple[Throttle, ...] = (
    "power_cap",
    "hw_slowdown",
    "sw_thermal",
    "hw_thermal",
    "hw_power_brake",
)
HELD_DEFINITION = (
    "Energy per token of every GPU the session's models held (nvml_indices), over each "
    "trial's own window: the GPUs its format occupies plus those it left idle (held by "
    "the other formats' weights), all read by NVML in the same window. A format that "
    "needs fewer GPUs is charged the idle draw of the GPUs it freed, as if they stayed "
    "in the machine, powered, doing nothing. Pairs: each format's trial and its round's "
    "FP16 trial, as in the headline."
)
HELD_LEAD_REASON = (
    "The summary leads with the GPUs each model used: it is the report's headline, as "
    "in every report (comparable across reports, sweeps and aggregates), and the answer "
    "where a freed GPU serves other work or is not provisioned at all. This view is the "
    "conservative bound, for a freed GPU that stays powered and idle beside the model; "
    "where the two verdicts differ, the summary says so."
)


# -- one trial ----------------------------------------------------------------------


def window_throttles(c: WindowConditions) -> list[Throttle]:
    """The throttle reasons a window met: a counter that moved, or a read that showed it."""
    met = {r for r, s in c.throttled_s.items() if s >= MIN_THROTTLED_S} | set(c.clock_events_seen)
    return [r for r in THROTTLE_ORDER if r in met]


def trial(
    *,
    index: int,
    pair: int | None,
    format: Format,
    duration_s: float,
    tokens: int,
    energy_joules: float,
    energy_source: str,
    counter_energy_joules: float | None,
    sampled_energy_joules: float,
    samples: int,
    dropped_samples: int,
    per_gpu_energy_joules: Sequence[float],
    slot: int | None = None,
    idle_gpus_energy_joules: Sequence[float] | None = None,
    conditions: Sequence[WindowConditions] = (),
    compile: int | None = None,
) -> Trial:
    """A trial from its readings, with the figures that derive from them."""
    counter = counter_energy_joules
    held = None if idle_gpus_energy_joules is None else energy_joules + sum(idle_gpus_energy_joules)
    return Trial.model_construct(
        index=index,
        pair=pair,
        format=format,
        duration_s=duration_s,
        tokens=tokens,
        energy_joules=energy_joules,
        energy_source=energy_source,  # type: ignore[arg-type]
        counter_energy_joules=counter,
        sampled_energy_joules=sampled_energy_joules,
        samples=samples,
        dropped_samples=dropped_samples,
        per_gpu_energy_joules=list(per_gpu_energy_joules),
        slot=slot,
        compile=compile,
        idle_gpus_energy_joules=None
        if idle_gpus_energy_joules is None
        else list(idle_gpus_energy_joules),
        conditions=[c.model_copy(update={"throttles": window_throttles(c)}) for c in conditions],
        energy_per_token_mj=energy_per_token_mj(energy_joules, tokens),
        avg_power_watts=energy_joules / duration_s,
        throughput_tokens_per_s=tokens / duration_s,
        sampled_vs_counter_pct=None
        if not counter
        else (sampled_energy_joules - counter) / counter * 100.0,
        held_energy_joules=held,
        held_energy_per_token_mj=None if held is None else energy_per_token_mj(held, tokens),
    )


def rederived(t: Trial) -> Trial:
    """The same trial derived again from its own readings (a reader's check)."""
    return trial(
        index=t.index,
        pair=t.pair,
        format=t.format,
        duration_s=t.duration_s,
        tokens=t.tokens,
        energy_joules=t.energy_joules,
        energy_source=t.energy_source,
        counter_energy_joules=t.counter_energy_joules,
        sampled_energy_joules=t.sampled_energy_joules,
        samples=t.samples,
        dropped_samples=t.dropped_samples,
        per_gpu_energy_joules=t.per_gpu_energy_joules,
        slot=t.slot,
        idle_gpus_energy_joules=t.idle_gpus_energy_joules,
        conditions=t.conditions,
        compile=t.compile,
    )


# -- the facts a report's figures derive from, besides its trials ---------------------


@dataclass(frozen=True)
class FormatFacts:
    """One format of a measured report, as its per_format entry names it."""

    format: str  # its key (INT8-torchao where not the default library)
    library: str
    nvml_indices: tuple[int, ...]
    weights_mib: float | None = None


@dataclass(frozen=True)
class Measured:
    """Everything a measured report's results derive from."""

    precision: Format  # the report's own format (the headline's)
    trials: tuple[Trial, ...]
    facts: Mapping[Format, FormatFacts]
    idle_window: IdleWindow | None
    batch_size: int
    bandwidth_gbs: float | None
    held_nvml_indices: tuple[int, ...] = ()  # every GPU the session held, where the formats' differ


def measured_inputs(
    results: Results, precision: Format, batch_size: int, bandwidth_gbs: float | None
) -> Measured:
    """A report's own raw records and facts, as derive_results takes them."""
    return Measured(
        precision=precision,
        trials=tuple(rederived(t) for t in results.trials),
        facts={
            fmt: FormatFacts(s.format, s.library, tuple(s.nvml_indices), s.weights_mib)
            for fmt, s in results.per_format.items()
        },
        idle_window=results.idle_window,
        batch_size=batch_size,
        bandwidth_gbs=bandwidth_gbs,
        held_nvml_indices=tuple(results.held_gpus.nvml_indices) if results.held_gpus else (),
    )


# -- per format, pairs, the headline ----------------------------------------------------


def by_format(trials: Sequence[Trial]) -> dict[Format, list[Trial]]:
    out: dict[Format, list[Trial]] = {}
    for t in trials:
        out.setdefault(t.format, []).append(t)
    return out


def idle_by_gpu_w(window: IdleWindow | None) -> dict[int, float] | None:
    if window is None:
        return None
    return {
        i: j / window.duration_s
        for i, j in zip(window.nvml_indices, window.energy_joules_by_gpu, strict=True)
    }


def _idle_of(gpus: Sequence[int], idle_by_gpu: Mapping[int, float] | None) -> float | None:
    if idle_by_gpu is None or any(i not in idle_by_gpu for i in gpus):
        return None
    return sum((idle_by_gpu[i] for i in gpus), 0.0)


def format_stats(trials: Sequence[Trial], facts: FormatFacts, m: Measured) -> FormatStats:
    s = summarise([t.energy_per_token_mj for t in trials])
    total_j = sum(t.energy_joules for t in trials)
    total_s = sum(t.duration_s for t in trials)
    tokens = sum(t.tokens for t in trials)
    idle_w = _idle_of(facts.nvml_indices, idle_by_gpu_w(m.idle_window))
    above = share = None
    if idle_w is not None:
        above = statistics.fmean(
            energy_per_token_mj(t.energy_joules - idle_w * t.duration_s, t.tokens) for t in trials
        )
        share = 100.0 * idle_w * total_s / total_j if total_j > 0 else None
    throughput = tokens / total_s
    limit = pct = None
    if m.batch_size == 1 and facts.weights_mib and m.bandwidth_gbs:
        limit = m.bandwidth_gbs * 1e9 / (facts.weights_mib * 2**20)
        pct = 100.0 * throughput / limit
    return FormatStats.model_construct(
        format=facts.format,
        library=facts.library,
        nvml_indices=list(facts.nvml_indices),
        weights_mib=facts.weights_mib,
        n_trials=len(trials),
        energy_per_token_mj=s.mean,
        energy_per_token_mj_sd=s.sd,
        cv_pct=s.cv_pct,
        throughput_tokens_per_s=throughput,
        avg_power_watts=total_j / total_s,
        total_energy_joules=total_j,
        tokens_generated=tokens,
        sampled_energy_per_token_mj=statistics.fmean(
            energy_per_token_mj(t.sampled_energy_joules, t.tokens) for t in trials
        ),
        idle_power_watts=idle_w,
        energy_above_idle_per_token_mj=above,
        idle_share_pct=share,
        bandwidth_limit_tokens_per_s=limit,
        of_bandwidth_limit_pct=pct,
    )


def rounds_paired(trials: Sequence[Trial], precision: Format) -> list[tuple[Trial, Trial]]:
    """(FP16 trial, the format's trial) of every round that has both, in round order."""
    fp16 = {t.pair: t for t in trials if t.format == FP16 and t.pair is not None}
    quant = {t.pair: t for t in trials if t.format == precision and t.pair is not None}
    return [(fp16[k], quant[k]) for k in sorted(fp16) if k in quant]


def pairs_of(
    trials: Sequence[Trial], precision: Format, per_token: Callable[[Trial], float | None]
) -> list[Pair]:
    pairs = []
    for f, q in rounds_paired(trials, precision):
        fv, qv = per_token(f), per_token(q)
        if fv is None or qv is None:
            continue
        (delta,) = paired_deltas_pct([fv], [qv])
        pairs.append(
            Pair.model_construct(
                pair=f.pair or 0,
                fp16_energy_per_token_mj=fv,
                energy_per_token_mj=qv,
                delta_pct=delta,
            )
        )
    return pairs


def _estimate(
    pairs: Sequence[Pair], compiles: BetweenCompiles | None = None
) -> tuple[float | None, list[float] | None, int | None, str | None]:
    """The paired delta, its interval, pairs and verdict; over compiles, the pooled one."""
    if not pairs:
        return None, None, None, None
    if compiles is not None:
        lo, hi = compiles.ci95_pct
        return compiles.delta_pct, [lo, hi], len(pairs), verdict_for((lo, hi))
    est = estimate_delta([p.delta_pct for p in pairs])
    ci = None if est.ci95_pct is None else list(est.ci95_pct)
    return est.mean_pct, ci, est.n_pairs, est.verdict


def between_compiles(trials: Sequence[Trial], pairs: Sequence[Pair]) -> BetweenCompiles | None:
    """--compiles N: each compile's paired delta (its own rounds), pooled by random
    effects (core/meta.py: REML tau^2, HKSJ interval on N - 1 degrees of freedom). None
    for one compile, or where a compile has fewer than two pairs (no standard error)."""
    compile_of = {t.pair: t.compile for t in trials if t.pair is not None and t.format == FP16}
    by_compile: dict[int, list[float]] = {}
    for p in pairs:
        k = compile_of.get(p.pair)
        if k is None:
            return None
        by_compile.setdefault(k, []).append(p.delta_pct)
    if len(by_compile) < 2 or any(len(d) < 2 for d in by_compile.values()):
        return None
    per = []
    for k in sorted(by_compile):
        s = summarise(by_compile[k])
        ci = t_interval(s)
        assert ci is not None and s.sd is not None  # n >= 2
        per.append(
            CompileDelta.model_construct(
                compile=k,
                n_pairs=s.n,
                delta_pct=s.mean,
                se_pct=s.sd / math.sqrt(s.n),
                ci95_pct=list(ci),
            )
        )
    ys = [c.delta_pct for c in per]
    vs = [max(c.se_pct, MIN_SE_PCT) ** 2 for c in per]
    pooled = pool(ys, vs)
    assert pooled.ci95 is not None  # k >= 2
    within = estimate_delta([p.delta_pct for p in pairs]).ci95_pct
    return BetweenCompiles.model_construct(
        compiles=len(per),
        model=CI_METHOD_COMPILES,
        per_compile=per,
        delta_pct=pooled.mu,
        ci95_pct=list(pooled.ci95),
        between_compile_sd_pts=pooled.tau,
        i2_pct=pooled.i2_pct,
        within_compile_ci95_pct=None if within is None else list(within),
    )


def held_view(m: Measured, formats: Mapping[Format, list[Trial]]) -> HeldView | None:
    if not m.held_nvml_indices:
        return None
    idle_by_gpu = idle_by_gpu_w(m.idle_window)
    per: dict[Format, HeldFormatStats] = {}
    for fmt, trials in formats.items():
        idle_gpus = [i for i in m.held_nvml_indices if i not in m.facts[fmt].nvml_indices]
        idle_j = [sum(t.idle_gpus_energy_joules or ()) for t in trials]
        per[fmt] = HeldFormatStats.model_construct(
            n_trials=len(trials),
            idle_nvml_indices=idle_gpus,
            energy_per_token_mj=statistics.fmean(t.held_energy_per_token_mj or 0.0 for t in trials),
            total_energy_joules=sum(t.held_energy_joules or 0.0 for t in trials),
            idle_gpus_energy_per_token_mj=statistics.fmean(
                energy_per_token_mj(j, t.tokens) for j, t in zip(idle_j, trials, strict=True)
            ),
            idle_gpus_power_watts=sum(idle_j) / sum(t.duration_s for t in trials),
            idle_gpus_idle_window_watts=_idle_of(idle_gpus, idle_by_gpu),
        )
    pairs = pairs_of(m.trials, m.precision, lambda t: t.held_energy_per_token_mj)
    delta, ci, n, verdict = _estimate(pairs, between_compiles(m.trials, pairs))
    return HeldView.model_construct(
        nvml_indices=list(m.held_nvml_indices),
        definition=HELD_DEFINITION,
        summary_leads_with="used_gpus",
        summary_lead_reason=HELD_LEAD_REASON,
        per_format=per,
        energy_per_token_mj=per[m.precision].energy_per_token_mj,
        fp16_energy_per_token_mj=per[FP16].energy_per_token_mj,
        vs_fp16_energy_pct=delta,
        vs_fp16_ci95_pct=ci,
        n_pairs=n,
        verdict=verdict,  # type: ignore[arg-type]
        pairs=pairs,
    )


# -- the GPUs' state -----------------------------------------------------------------------


def _known(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def conditions_of(formats: Mapping[Format, list[Trial]]) -> Conditions | None:
    """Per format: the windows that ran throttled and why, power against the limit,
    temperatures, mean clocks. None where no window read conditions."""
    if not any(t.conditions for ts in formats.values() for t in ts):
        return None
    per: dict[Format, FormatConditions] = {}
    seen: dict[Throttle, None] = {}
    for fmt, trials in formats.items():
        throttled = [t for t in trials if any(c.throttles for c in t.conditions)]
        reasons: dict[Throttle, None] = {}
        for t in throttled:
            for c in t.conditions:
                for r in c.throttles:
                    reasons.setdefault(r, None)
                    seen.setdefault(r, None)
        cs = [c for t in trials for c in t.conditions]
        temps = _known(x for c in cs for x in c.temperature_c)
        mem_temps = _known(x for c in cs for x in c.memory_temperature_c)
        peaks = _known(c.power_of_limit_pct_max for c in cs)
        means = _known(c.power_of_limit_pct_mean for c in cs)
        sm = _known(c.sm_clock_mhz_mean for c in cs)
        mem = _known(c.memory_clock_mhz_mean for c in cs)
        per[fmt] = FormatConditions.model_construct(
            windows=len(trials),
            throttled_windows=len(throttled),
            throttled_trials=[t.index for t in throttled],
            throttles=list(reasons),
            power_of_limit_pct_max=max(peaks) if peaks else None,
            power_of_limit_pct_mean=statistics.fmean(means) if means else None,
            temperature_c_range=[min(temps), max(temps)] if temps else None,
            memory_temperature_c_range=[min(mem_temps), max(mem_temps)] if mem_temps else None,
            sm_clock_mhz_mean=statistics.fmean(sm) if sm else None,
            memory_clock_mhz_mean=statistics.fmean(mem) if mem else None,
        )
    return Conditions.model_construct(
        windows=sum(c.windows for c in per.values()),
        throttled_windows=sum(c.throttled_windows for c in per.values()),
        throttles=list(seen),
        per_format=per,
        note=throttled_note(per),
    )


def throttled_note(per: Mapping[Format, FormatConditions]) -> str:
    parts = [
        f"{fmt} {c.throttled_windows} of {c.windows} ({throttle_words(c.throttles)})"
        for fmt, c in per.items()
        if c.throttled_windows
    ]
    if not parts:
        return (
            "No measured window met the power cap or a thermal or hardware slowdown "
            "(NVML's clock-event counters and reasons)."
        )
    return (
        "Windows that ran throttled: "
        + "; ".join(parts)
        + ". The figures include them; trials[].conditions says which and by how much."
    )


# -- the whole results block ---------------------------------------------------------------


def derive_results(m: Measured, note: str) -> Results:
    """A measured report's results: its raw records and everything derived from them."""
    formats = by_format(m.trials)
    per = {fmt: format_stats(ts, m.facts[fmt], m) for fmt, ts in formats.items()}
    target, fp16 = per[m.precision], per[FP16]
    quantized = m.precision != FP16
    pairs = pairs_of(m.trials, m.precision, lambda t: t.energy_per_token_mj) if quantized else []
    compiles = between_compiles(m.trials, pairs) if quantized else None
    delta, ci, n, verdict = _estimate(pairs, compiles) if quantized else (None, None, None, None)
    vs = [t.sampled_vs_counter_pct for t in m.trials if t.sampled_vs_counter_pct is not None]
    above = None
    qa, fa = target.energy_above_idle_per_token_mj, fp16.energy_above_idle_per_token_mj
    if quantized and qa is not None and fa is not None and fa > 0:
        above = pct_change(qa, fa)
    idle = m.idle_window
    return Results.model_construct(
        basis="measured",
        note=note,
        trials=list(m.trials),
        idle_window=idle,
        energy_per_token_mj=target.energy_per_token_mj,
        fp16_energy_per_token_mj=fp16.energy_per_token_mj,
        vs_fp16_energy_pct=0.0 if delta is None else round(delta, 1),
        vs_fp16_energy_pct_exact=0.0 if delta is None else delta,
        vs_fp16_ci95_pct=ci,
        ci_method=None if not quantized else CI_METHOD_COMPILES if compiles else CI_METHOD,
        n_pairs=n,
        verdict=verdict,  # type: ignore[arg-type]
        total_energy_joules=target.total_energy_joules,
        tokens_generated=target.tokens_generated,
        avg_power_watts=target.avg_power_watts,
        throughput_tokens_per_s=target.throughput_tokens_per_s,
        idle_power_watts=None if idle is None else sum(idle.energy_joules_by_gpu) / idle.duration_s,
        vs_fp16_above_idle_pct=above,
        sampled_vs_counter_pct=statistics.fmean(vs) if vs else None,
        sampled_vs_counter_max_abs_pct=max(abs(x) for x in vs) if vs else None,
        dropped_samples=sum(t.dropped_samples for t in m.trials),
        per_format=per,
        pairs=pairs,
        held_gpus=held_view(m, formats),
        conditions=conditions_of(formats),
        between_compiles=compiles,
    )
