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

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol, Unpack

from ecocompute.core.stats import CI_METHOD, Summary, mean, summarise
from ecocompute.core.units import energy_per_token_mj, pct_change
from ecocompute.monitor.conditions import throttles_met
from ecocompute.report.conditions import conditions_of
from ecocompute.report.inputs import (
    FormatFacts,
    Measured,
    RawPrefill,
    RawTrial,
    WindowReadings,
)
from ecocompute.report.pairing import (
    FP16,
    between_compiles,
    estimate_pairs,
    paired_figures,
    pairs_of,
)
from ecocompute.report.phases import phases_of
from ecocompute.report.results_model import (
    Format,
    FormatStats,
    HeldFormatStats,
    HeldView,
    IdleWindow,
    PrefillWindow,
    Results,
    Trial,
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


def trial(**r: Unpack[RawTrial]) -> Trial:
    """A trial from its readings, with the figures that derive from them."""
    idle, prefill = r.get("idle_gpus_energy_joules"), r.get("prefill")
    figures = trial_figures(
        duration_s=r["duration_s"],
        tokens=r["tokens"],
        energy_joules=r["energy_joules"],
        counter_energy_joules=r["counter_energy_joules"],
        sampled_energy_joules=r["sampled_energy_joules"],
        idle_gpus_energy_joules=idle,
    )
    return Trial.model_construct(  # each field by name: mypy checks it against the model
        index=r["index"],
        pair=r["pair"],
        format=r["format"],
        tokens=r["tokens"],
        **_window(r),  # type: ignore[arg-type]
        slot=r.get("slot"),
        compile=r.get("compile"),
        idle_gpus_energy_joules=None if idle is None else list(idle),
        conditions=[
            c.model_copy(
                update={"throttles": list(throttles_met(c.throttled_s, c.clock_events_seen))}
            )
            for c in r.get("conditions", ())
        ],
        prefill=None if prefill is None else prefill_window(**_readings(prefill, PREFILL)),
        **figures._asdict(),
    )


class TrialFigures(NamedTuple):
    """The figures of a trial that derive from its readings (Trial's fields of these
    names)."""

    energy_per_token_mj: float
    avg_power_watts: float
    throughput_tokens_per_s: float
    sampled_vs_counter_pct: float | None
    held_energy_joules: float | None
    held_energy_per_token_mj: float | None


def trial_figures(
    *,
    duration_s: float,
    tokens: int,
    energy_joules: float,
    counter_energy_joules: float | None,
    sampled_energy_joules: float,
    idle_gpus_energy_joules: Sequence[float] | None,
) -> TrialFigures:
    """The figures of a trial that derive from its readings: trial() builds them into
    the model; a reader's rounding bounds (report/compare.py) read them under moved
    readings without one."""
    counter = counter_energy_joules
    held = (
        None
        if idle_gpus_energy_joules is None
        else energy_joules + math.fsum(idle_gpus_energy_joules)
    )
    return TrialFigures(
        energy_per_token_mj=energy_per_token_mj(energy_joules, tokens),
        avg_power_watts=energy_joules / duration_s,
        throughput_tokens_per_s=tokens / duration_s,
        sampled_vs_counter_pct=None
        if not counter
        else (sampled_energy_joules - counter) / counter * 100.0,
        held_energy_joules=held,
        held_energy_per_token_mj=None if held is None else energy_per_token_mj(held, tokens),
    )


def _window(r: WindowReadings) -> WindowReadings:
    """The meter readings a Trial and a PrefillWindow share, each by name (mypy checks the
    keys against each model; energy_source is a str here, the models' a Literal), the
    per-GPU list copied."""
    return {
        "duration_s": r["duration_s"],
        "energy_joules": r["energy_joules"],
        "energy_source": r["energy_source"],
        "counter_energy_joules": r["counter_energy_joules"],
        "sampled_energy_joules": r["sampled_energy_joules"],
        "samples": r["samples"],
        "dropped_samples": r["dropped_samples"],
        "per_gpu_energy_joules": list(r["per_gpu_energy_joules"]),
    }


def prefill_window(**r: Unpack[RawPrefill]) -> PrefillWindow:
    """A prefill window from its readings, with the figures that derive from them:
    energy per prompt token over every prefill of the window."""
    tokens = r["prefills"] * r["prompt_tokens"]
    energy_j, duration_s = r["energy_joules"], r["duration_s"]
    return PrefillWindow.model_construct(
        prefills=r["prefills"],
        prompt_tokens=r["prompt_tokens"],
        **_window(r),  # type: ignore[arg-type]
        energy_per_prompt_token_mj=energy_per_token_mj(energy_j, tokens),
        avg_power_watts=energy_j / duration_s,
        prompt_tokens_per_s=tokens / duration_s,
    )


# the raw fields of each model: what derive.trial and derive.prefill_window take
PREFILL, TRIAL = tuple(RawPrefill.__annotations__), tuple(RawTrial.__annotations__)


def _readings(model: Trial | PrefillWindow, fields: tuple[str, ...]) -> dict[str, Any]:
    """A model's own raw readings."""
    return {name: getattr(model, name) for name in fields}


def readings_of(t: Trial) -> dict[str, Any]:
    """A trial's own raw readings, as trial() takes them."""
    return _readings(t, TRIAL)


# -- the facts a report's figures derive from, besides its trials ---------------------


def measured_inputs(
    results: Results,
    precision: Format,
    batch_size: int,
    bandwidth_gbs: float | None,
    prompt_tokens: int | None = None,
    new_tokens: int | None = None,
) -> Measured:
    """A report's own raw records and facts, as derive_results takes them, and the
    interval its compiles were pooled with."""
    compiles = results.between_compiles
    return Measured(
        precision=precision,
        trials=tuple(trial(**readings_of(t)) for t in results.trials),  # derived again
        facts={
            fmt: FormatFacts(s.format, s.library, tuple(s.nvml_indices), s.weights_mib)
            for fmt, s in results.per_format.items()
        },
        idle_window=results.idle_window,
        batch_size=batch_size,
        bandwidth_gbs=bandwidth_gbs,
        held_nvml_indices=tuple(results.held_gpus.nvml_indices) if results.held_gpus else (),
        prompt_tokens=prompt_tokens,
        new_tokens=new_tokens,
        compiles_floor=compiles is None or compiles.interval_se is not None,
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
    return math.fsum(idle_by_gpu[i] for i in gpus)


class TrialReadings(Protocol):
    """What a format's statistics read of each of its trials (a Trial, or the moved
    readings of one that report/compare.py bounds a rounding with)."""

    @property
    def energy_joules(self) -> float: ...
    @property
    def duration_s(self) -> float: ...
    @property
    def tokens(self) -> int: ...
    @property
    def sampled_energy_joules(self) -> float: ...
    @property
    def energy_per_token_mj(self) -> float: ...


# FormatStats' fields that FormatFigures works out, each by its own name (the rest are
# the format's facts)
STATISTICS = tuple(
    name
    for name in FormatStats.model_fields
    if name not in ("format", "library", "nvml_indices", "weights_mib")
)


class FormatFigures:
    """A format's statistics from its trials, each worked out when first read: format_stats
    reads them all, and report/compare.py only those a rounding bound is needed for (the
    same arithmetic, so the same figures to the bit)."""

    def __init__(self, trials: Sequence[TrialReadings], facts: FormatFacts, m: Measured):
        self.trials, self.facts, self.m = trials, facts, m

    @functools.cached_property
    def _summary(self) -> Summary:
        return summarise([t.energy_per_token_mj for t in self.trials])

    @property
    def energy_per_token_mj(self) -> float:
        return self._summary.mean

    @property
    def energy_per_token_mj_sd(self) -> float | None:
        return self._summary.sd

    @property
    def cv_pct(self) -> float | None:
        return self._summary.cv_pct

    @functools.cached_property
    def total_energy_joules(self) -> float:
        return math.fsum(t.energy_joules for t in self.trials)

    @functools.cached_property
    def total_duration_s(self) -> float:
        return math.fsum(t.duration_s for t in self.trials)

    @functools.cached_property
    def tokens_generated(self) -> int:
        return sum(t.tokens for t in self.trials)

    @functools.cached_property
    def idle_power_watts(self) -> float | None:
        return _idle_of(self.facts.nvml_indices, idle_by_gpu_w(self.m.idle_window))

    @functools.cached_property
    def energy_above_idle_per_token_mj(self) -> float | None:
        idle_w = self.idle_power_watts
        if idle_w is None:
            return None
        return mean(
            energy_per_token_mj(t.energy_joules - idle_w * t.duration_s, t.tokens)
            for t in self.trials
        )

    @functools.cached_property
    def idle_share_pct(self) -> float | None:
        idle_w, total_j = self.idle_power_watts, self.total_energy_joules
        if idle_w is None or not total_j > 0:
            return None
        return 100.0 * idle_w * self.total_duration_s / total_j

    @functools.cached_property
    def throughput_tokens_per_s(self) -> float:
        return self.tokens_generated / self.total_duration_s

    @functools.cached_property
    def avg_power_watts(self) -> float:
        return self.total_energy_joules / self.total_duration_s

    @functools.cached_property
    def bandwidth_limit_tokens_per_s(self) -> float | None:
        m, weights_mib = self.m, self.facts.weights_mib
        if m.batch_size == 1 and weights_mib and m.bandwidth_gbs:
            return m.bandwidth_gbs * 1e9 / (weights_mib * 2**20)
        return None

    @functools.cached_property
    def of_bandwidth_limit_pct(self) -> float | None:
        limit = self.bandwidth_limit_tokens_per_s
        return None if limit is None else 100.0 * self.throughput_tokens_per_s / limit

    @functools.cached_property
    def sampled_energy_per_token_mj(self) -> float:
        return mean(energy_per_token_mj(t.sampled_energy_joules, t.tokens) for t in self.trials)

    @property
    def n_trials(self) -> int:
        return len(self.trials)

    def stats(self) -> FormatStats:
        facts = self.facts
        return FormatStats.model_construct(
            format=facts.format,
            library=facts.library,
            nvml_indices=list(facts.nvml_indices),
            weights_mib=facts.weights_mib,
            **{name: getattr(self, name) for name in STATISTICS},
        )

    def figure(self, field: str) -> object:
        """One statistic by its FormatStats field name (None: not one of them)."""
        return getattr(self, field) if field in STATISTICS else getattr(self.stats(), field, None)


def format_stats(trials: Sequence[TrialReadings], facts: FormatFacts, m: Measured) -> FormatStats:
    return FormatFigures(trials, facts, m).stats()


def held_view(m: Measured, formats: Mapping[Format, list[Trial]]) -> HeldView | None:
    if not m.held_nvml_indices:
        return None
    idle_by_gpu = idle_by_gpu_w(m.idle_window)
    per: dict[Format, HeldFormatStats] = {}
    for fmt, trials in formats.items():
        idle_gpus = [i for i in m.held_nvml_indices if i not in m.facts[fmt].nvml_indices]
        idle_j = [math.fsum(t.idle_gpus_energy_joules or ()) for t in trials]
        per[fmt] = HeldFormatStats.model_construct(
            n_trials=len(trials),
            idle_nvml_indices=idle_gpus,
            energy_per_token_mj=mean(t.held_energy_per_token_mj or 0.0 for t in trials),
            total_energy_joules=math.fsum(t.held_energy_joules or 0.0 for t in trials),
            idle_gpus_energy_per_token_mj=mean(
                energy_per_token_mj(j, t.tokens) for j, t in zip(idle_j, trials, strict=True)
            ),
            idle_gpus_power_watts=math.fsum(idle_j) / math.fsum(t.duration_s for t in trials),
            idle_gpus_idle_window_watts=_idle_of(idle_gpus, idle_by_gpu),
        )
    pairs = pairs_of(m.trials, m.precision, lambda t: t.held_energy_per_token_mj)
    return HeldView.model_construct(
        nvml_indices=list(m.held_nvml_indices),
        definition=HELD_DEFINITION,
        summary_leads_with="used_gpus",
        summary_lead_reason=HELD_LEAD_REASON,
        per_format=per,
        energy_per_token_mj=per[m.precision].energy_per_token_mj,
        fp16_energy_per_token_mj=per[FP16].energy_per_token_mj,
        **paired_figures(pairs, between_compiles(m.trials, pairs, m.compiles_floor)),
    )


# -- the whole results block ---------------------------------------------------------------


def derive_results(m: Measured, note: str) -> Results:
    """A measured report's results: its raw records and everything derived from them."""
    formats = by_format(m.trials)
    per = {fmt: format_stats(ts, m.facts[fmt], m) for fmt, ts in formats.items()}
    target, fp16 = per[m.precision], per[FP16]
    quantized = m.precision != FP16
    pairs = pairs_of(m.trials, m.precision, lambda t: t.energy_per_token_mj) if quantized else []
    compiles = between_compiles(m.trials, pairs, m.compiles_floor) if quantized else None
    delta, ci, n, verdict = (
        estimate_pairs(pairs, compiles) if quantized else (None, None, None, None)
    )
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
        ci_method=None if not quantized else compiles.model if compiles else CI_METHOD,
        n_pairs=n,
        verdict=verdict,  # type: ignore[arg-type]
        total_energy_joules=target.total_energy_joules,
        tokens_generated=target.tokens_generated,
        avg_power_watts=target.avg_power_watts,
        throughput_tokens_per_s=target.throughput_tokens_per_s,
        idle_power_watts=None
        if idle is None
        else math.fsum(idle.energy_joules_by_gpu) / idle.duration_s,
        vs_fp16_above_idle_pct=above,
        sampled_vs_counter_pct=mean(vs) if vs else None,
        sampled_vs_counter_max_abs_pct=max(abs(x) for x in vs) if vs else None,
        dropped_samples=sum(t.dropped_samples for t in m.trials),
        per_format=per,
        pairs=pairs,
        held_gpus=held_view(m, formats),
        conditions=conditions_of(formats),
        between_compiles=compiles,
        phases=phases_of(m, formats),
    )
