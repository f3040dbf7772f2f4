"""The results of a report, typed: what was measured (each trial's window, as it was read)
and what the report derives from it (per-format figures, pairs, the interval, the
verdict), in one model.

A trial holds its raw readings (duration, tokens, energies, samples, the GPUs' state);
every other figure in results is derived from the trials by report/derive.py, unrounded,
so that a report is checked by deriving it again, exactly (report/checks.py). Units are
in the names: _s seconds, _joules, _mj millijoules, _watts, _pct percent.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from ecocompute.core.meta import spread_words
from ecocompute.published.curves import DeltaCurve

Format = Literal["FP16", "NF4", "INT8", "INT4", "FP8"]
Verdict = Literal["saves", "costs", "inconclusive"]
Throttle = Literal["power_cap", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"]
ClockEvent = Literal[
    "gpu_idle",
    "applications_clocks",
    "power_cap",
    "hw_slowdown",
    "sync_boost",
    "sw_thermal",
    "hw_thermal",
    "hw_power_brake",
    "display_clocks",
]
NonNegative = Annotated[float, Field(ge=0)]
Index = Annotated[int, Field(ge=0)]
Interval = Annotated[list[float], Field(min_length=2, max_length=2)]
MaybePair = Annotated[list[float | None], Field(min_length=2, max_length=2)]


def _no_pair() -> list[float | None]:
    return [None, None]


T = TypeVar("T")


class _LeftOut:
    """OrAbsent's mark on a field (the schema does not see it)."""


_LEFT_OUT = _LeftOut()
OrAbsent = Annotated[T | None, _LEFT_OUT]  # a T, or no key at all where it is None


class Strict(BaseModel):
    """Every model of a report: no field it does not name, no NaN or infinity, immutable.
    Fields typed OrAbsent (OMIT_NULL) are left out of the file where they hold nothing
    (the published format types them as strings or booleans where present: null is
    refused); OMIT_EVERY_NULL leaves out every field whose default is None."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)
    OMIT_NULL: ClassVar[tuple[str, ...]] = ()
    OMIT_EVERY_NULL: ClassVar[bool] = False

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: object) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        left_out = tuple(
            name
            for name, f in cls.model_fields.items()
            if _LEFT_OUT in f.metadata or (cls.OMIT_EVERY_NULL and f.default is None)
        )
        if left_out:
            cls.OMIT_NULL = left_out

    @model_serializer(mode="wrap")
    def _without_nulls(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.OMIT_NULL and isinstance(data, dict):
            for name in self.OMIT_NULL:
                if data.get(name, 0) is None:
                    del data[name]
        return data


class WindowConditions(Strict):
    """One GPU over one trial's window: temperatures just outside its edges, the clocks
    and clock-event reasons the sampler read beside power, NVML's cumulative throttle
    counters over the window, power against the enforced limit."""

    nvml_index: Index
    temperature_c: MaybePair = Field(
        default_factory=_no_pair,
        description="GPU temperature just before the window opened and just after it closed",
    )
    memory_temperature_c: MaybePair = Field(default_factory=_no_pair)
    sm_clock_mhz_mean: float | None = None
    memory_clock_mhz_mean: float | None = None
    clock_samples: Index = 0
    clock_events_seen: list[ClockEvent] = Field(
        default_factory=list, description="every clock-event reason some read showed"
    )
    throttled_s: dict[str, NonNegative] = Field(
        default_factory=dict,
        description="seconds the clocks were held down per reason over the window, from "
        "NVML's cumulative clock-event counters read at its edges",
    )
    power_of_limit_pct_mean: float | None = Field(
        None, description="the window's mean power as a share of the enforced limit"
    )
    power_of_limit_pct_max: float | None = Field(
        None, description="the highest power sample in the window as a share of the limit"
    )
    throttles: list[Throttle] = Field(
        default_factory=list,
        description="the throttle reasons this window met: a counter that moved or a read "
        "that showed it",
    )


class PrefillWindow(Strict):
    """A trial's prefill window (--phases apart): `prefills` prefills of the prompt, back
    to back, between two synchronized edges, just before the trial's decode window
    (the last prefill leaves the cache the decode continues from). Raw readings, and the
    figures that derive from them."""

    prefills: Annotated[int, Field(ge=1)] = Field(
        description="prefills in the window: as many as fill --prefill_window_s"
    )
    prompt_tokens: Annotated[int, Field(ge=1)] = Field(
        description="prompt tokens of one prefill, over the batch"
    )
    duration_s: Annotated[float, Field(gt=0)]
    energy_joules: NonNegative
    energy_source: Literal["nvml_energy_counter", "sampled_power"]
    counter_energy_joules: NonNegative | None = None
    sampled_energy_joules: NonNegative
    samples: Index
    dropped_samples: Index
    per_gpu_energy_joules: list[NonNegative]
    # derived
    energy_per_prompt_token_mj: NonNegative
    avg_power_watts: NonNegative
    prompt_tokens_per_s: NonNegative


class Trial(Strict):
    """One measured decode: its window as the meter read it (raw), and the figures of it
    that derive from those readings (energy per token, power, throughput). With the
    phases apart, its window is the decode's alone (tokens: those the decode steps
    generated, the prefill's first token not among them) and `prefill` the window
    before it."""

    index: Index
    pair: Index | None = Field(None, description="its round (None: FP16 measured alone)")
    format: Format
    duration_s: Annotated[float, Field(gt=0)]
    tokens: Annotated[int, Field(ge=1)]
    energy_joules: NonNegative = Field(
        description="the primary figure: the counter's, else the samples'"
    )
    energy_source: Literal["nvml_energy_counter", "sampled_power"]
    counter_energy_joules: NonNegative | None = None
    sampled_energy_joules: NonNegative
    samples: Index
    dropped_samples: Index
    per_gpu_energy_joules: list[NonNegative] = Field(
        description="by the primary source, one per GPU its format occupies"
    )
    slot: OrAbsent[Index] = Field(None, description="its place in a rotated round (sessions)")
    compile: OrAbsent[Index] = Field(
        None, description="--compiles N: the compile it ran under, from 0 (None: one compile)"
    )
    idle_gpus_energy_joules: OrAbsent[list[NonNegative]] = Field(
        None,
        description="a session whose formats occupy different GPUs: the energy, over this "
        "window, of each GPU it held that this format does not occupy "
        "(results.held_gpus.per_format.<format>.idle_nvml_indices, in that order)",
    )
    conditions: list[WindowConditions] = Field(default_factory=list)
    prefill: OrAbsent[PrefillWindow] = None
    # derived from the readings above (report/derive.py)
    energy_per_token_mj: NonNegative
    avg_power_watts: NonNegative
    throughput_tokens_per_s: NonNegative
    sampled_vs_counter_pct: float | None = None
    held_energy_joules: OrAbsent[NonNegative] = None
    held_energy_per_token_mj: OrAbsent[NonNegative] = None


class IdleWindow(Strict):
    """Idle power with the models resident, read on every GPU of the session (raw)."""

    duration_s: Annotated[float, Field(gt=0)]
    nvml_indices: list[Index]
    energy_joules_by_gpu: list[NonNegative] = Field(description="in nvml_indices' order")


class FormatStats(Strict):
    """One format's trials, summarised (derived), with the facts of the format itself."""

    format: str = Field(
        description="the format's key: the precision, with the library where not its default"
    )
    library: str
    nvml_indices: list[Index] = Field(description="the GPUs its weights occupy")
    weights_mib: NonNegative | None = Field(
        None, description="the model's parameters and buffers as stored (packed data, scales)"
    )
    # derived
    n_trials: Annotated[int, Field(ge=1)]
    energy_per_token_mj: NonNegative
    energy_per_token_mj_sd: NonNegative | None
    cv_pct: float | None
    throughput_tokens_per_s: NonNegative
    avg_power_watts: NonNegative
    total_energy_joules: NonNegative
    tokens_generated: Index
    sampled_energy_per_token_mj: NonNegative
    idle_power_watts: NonNegative | None = None
    energy_above_idle_per_token_mj: float | None = None
    idle_share_pct: float | None = None
    bandwidth_limit_tokens_per_s: NonNegative | None = Field(
        None,
        description="batch 1: the card's peak memory bandwidth over weights_mib, tokens per "
        "second if every token read the weights once and nothing else",
    )
    of_bandwidth_limit_pct: NonNegative | None = None


class Pair(Strict):
    pair: Index
    fp16_energy_per_token_mj: NonNegative
    energy_per_token_mj: NonNegative
    delta_pct: float


class HeldFormatStats(Strict):
    n_trials: Annotated[int, Field(ge=1)]
    idle_nvml_indices: list[Index]
    energy_per_token_mj: NonNegative
    total_energy_joules: NonNegative
    idle_gpus_energy_per_token_mj: NonNegative
    idle_gpus_power_watts: NonNegative
    idle_gpus_idle_window_watts: NonNegative | None


class HeldView(Strict):
    """A session whose formats occupy different GPUs: energy per token of every GPU the
    session held, each trial's idle GPUs counted against its format (derived)."""

    nvml_indices: list[Index]
    definition: str
    summary_leads_with: Literal["used_gpus", "held_gpus"]
    summary_lead_reason: str
    per_format: dict[Format, HeldFormatStats]
    energy_per_token_mj: NonNegative
    fp16_energy_per_token_mj: NonNegative
    vs_fp16_energy_pct: float | None
    vs_fp16_ci95_pct: Interval | None
    n_pairs: Index | None
    verdict: Verdict | None
    pairs: list[Pair]


class FormatConditions(Strict):
    windows: Index
    throttled_windows: Index
    throttled_trials: list[Index]
    throttles: list[Throttle]
    power_of_limit_pct_max: float | None
    power_of_limit_pct_mean: float | None
    temperature_c_range: Interval | None
    memory_temperature_c_range: Interval | None
    sm_clock_mhz_mean: float | None
    memory_clock_mhz_mean: float | None


class Conditions(Strict):
    """The GPUs' state over the measured windows (derived from the trials' conditions):
    every window that ran throttled is counted and named; the figures include them."""

    windows: Index
    throttled_windows: Index
    throttles: list[Throttle]
    per_format: dict[Format, FormatConditions]
    note: str


class ReferenceCurve(Strict):
    """A derived report: the fitted curve that gave its delta vs FP16."""

    source: str
    origin: Literal["published", "project"]
    arch: str
    precision: str
    A: float
    S: float
    Nstar: Annotated[float, Field(gt=0)]
    fitted_range_b: Interval
    s_cap_pct: float | None
    borrowed_from: str | None
    capped: bool

    def delta_curve(self) -> DeltaCurve:
        """The curve itself, to evaluate at another size (published/curves.py)."""
        return DeltaCurve(
            arch=self.arch,
            precision=self.precision,
            a_pct=self.A,
            s_pct=self.S,
            nstar_b=self.Nstar,
            fitted_range_b=(self.fitted_range_b[0], self.fitted_range_b[1]),
            borrowed_from=self.borrowed_from,
            origin=self.origin,
            s_cap_pct=self.s_cap_pct,
        )


class PhaseFormat(Strict):
    """One format's figure in one phase, over its trials (derived)."""

    n_trials: Annotated[int, Field(ge=1)]
    energy_per_token_mj: NonNegative = Field(
        description="mean over its trials: per prompt token (prefill), per generated token "
        "(decode), per generated token of the stated workload (workload)"
    )
    energy_per_token_mj_sd: NonNegative | None
    cv_pct: float | None
    tokens_per_s: NonNegative | None = None
    prefills_per_window: list[int] | None = Field(
        None, description="prefill: the distinct counts of prefills per window its trials held"
    )


class PhaseFigure(Strict):
    """One phase (or the workload) across the formats: each format's mean and the paired
    delta of the report's format against its round's FP16 trial, with its own interval."""

    unit: OrAbsent[str] = None
    per_format: dict[Format, PhaseFormat]
    vs_fp16_energy_pct: float | None
    vs_fp16_ci95_pct: Interval | None
    n_pairs: Index | None
    verdict: Verdict | None
    pairs: list[Pair]


class WorkloadFigure(PhaseFigure):
    """The combined figure for the stated workload, from each trial's two phases."""

    prompt_tokens: Annotated[int, Field(ge=1)] = Field(description="per sequence (row)")
    new_tokens: Annotated[int, Field(ge=1)] = Field(description="per sequence (row)")
    definition: str
    decided_by: Literal["prefill", "decode"] | None = Field(
        description="the phase that carries the larger share of the workload's energy "
        "difference against FP16 (None for FP16 alone)"
    )
    prefill_share_of_difference_pct: float | None
    decided_note: str


class Phases(Strict):
    """--phases apart: the prefill and the decode measured in windows of their own."""

    scope: str
    prefill: PhaseFigure
    decode: PhaseFigure
    workload: WorkloadFigure


class ReferenceAnchorPoint(Strict):
    gpu: str
    model: str
    delta_pct: float
    n: Index | None


class ReferenceAnchors(Strict):
    """A derived report at a size the published dataset measured: its delta is the mean
    of the site's anchors there (not the curve's value), with the site's band."""

    source: str
    arch: str
    precision: str
    params_b: float
    points: Annotated[list[ReferenceAnchorPoint], Field(min_length=1)]
    band_pct: Interval = Field(
        description="the site's band: 1.96 sigma, sigma the larger of half the fit's "
        "residual spread (at least 1 pt) and half the anchors' spread"
    )


class ReferenceUnits(Strict):
    """How a format's delta varied between GPU units of a card model, where this project
    measured that (one model, batch size and regime; `aggregate --units`): beside a
    derived figure from those measurements, or beside a measured report's own unit at
    the units' size, batch size, tokens per run and regime. Neither figure is a unit's
    promise: a unit not yet measured may lie anywhere in pi95_pct there."""

    source: str = Field(description="the reports' folder in the EcoCompute repository")
    card: str
    regime: str
    model_name: str
    params_b: float
    batch_size: Index
    tokens_per_run: Index
    compile_notes: OrAbsent[list[str]] = Field(
        None,
        description="how the units' compile departed from the compiled regime's own "
        "(max-autotune, the whole step for its batch size), e.g. 'mode default'",
    )
    precision: str
    n_units: Annotated[int, Field(ge=2)]
    n_pairs: Index
    pooled_pct: float = Field(description="random-effects pool (REML) over the units")
    ci95_pct: Interval = Field(description="Hartung-Knapp interval, t on n_units - 1")
    between_unit_sd_pts: NonNegative
    between_unit_sd_upper_pts: OrAbsent[NonNegative] = Field(
        None,
        description="where three units or more cannot tell their spread from none (its "
        "95% Q-profile interval reaches 0): that interval's upper end, the most spread "
        "they cannot rule out",
    )
    pi95_pct: Interval | None = Field(
        None,
        description="95% prediction interval for a unit not yet measured (from three "
        "units; the between-unit variance drawn from its confidence distribution)",
    )
    fp16_energy_per_token_mj_range: Interval | None = Field(
        None,
        description="the lowest and highest FP16 energy per token of the units' reports: "
        "the absolute figure moves with the unit and its host even where the delta holds",
    )
    fp16_energy_per_token_mj_pi95: OrAbsent[Interval] = Field(
        None,
        description="95% prediction interval for a unit not yet measured's FP16 energy per "
        "token, on the log scale (t on n_units - 1; from three units)",
    )
    idle_before_w_range: OrAbsent[Interval] = Field(
        None,
        description="the lowest and highest idle power of the units' GPUs before their "
        "sessions (system_under_test.gpus[].before_session), where every unit records it",
    )
    idle_fp16_energy_r: OrAbsent[Annotated[float, Field(ge=-1, le=1)]] = Field(
        None,
        description="Pearson's r between the units' idle power before the session and "
        "their FP16 energy per token (from five units): a correlation across them, not a "
        "cause",
    )

    def words(self) -> str:
        """The spread in one line (the note and the summary's units line)."""
        lo, hi = self.ci95_pct
        pi, fp16 = self.pi95_pct, self.fp16_energy_per_token_mj_range
        new = "" if pi is None else f", a unit not yet measured [{pi[0]:+.1f}, {pi[1]:+.1f}]"
        absolute = "" if fp16 is None else f"; FP16 on them {fp16[0]:,.0f}-{fp16[1]:,.0f} mJ/token"
        regime = ", ".join([self.regime, *(self.compile_notes or ())])
        sd = spread_words(self.between_unit_sd_pts, self.between_unit_sd_upper_pts, 1)
        return (
            f"{self.precision} over {self.n_units} {self.card} units ({regime}, "
            f"{self.model_name}, batch {self.batch_size}, {self.tokens_per_run} tokens a run; "
            f"{self.source}): pooled "
            f"{self.pooled_pct:+.1f}% [{lo:+.1f}, {hi:+.1f}], {sd}{new}{absolute}"
        )

    def band(self) -> tuple[str, tuple[float, float]]:
        """The interval another unit's figure is judged by, and its name: the prediction
        interval for a unit not yet measured, else (fewer than three units) the pool's."""
        lo, hi = self.pi95_pct or self.ci95_pct
        return ("prediction" if self.pi95_pct else "pooled") + " interval", (lo, hi)

    def regime_words(self, delta_pct: float | None) -> str:
        """What the units measured in the regime asked for, beside an eager figure (or
        none): the note's sentence and the summary's regime line. The figure stands for
        the card model, so it is set beside the units' pooled interval (as
        references.units_disagreement does), not beside one new unit's."""
        lo, hi = self.ci95_pct
        if delta_pct is None:
            beside = "no eager figure stands beside it"
        elif lo <= delta_pct <= hi:
            beside = f"the eager figure ({delta_pct:+.1f}%) lies inside their pooled interval"
        else:
            side = "below" if delta_pct < lo else "above"
            beside = (
                f"the eager figure ({delta_pct:+.1f}%) lies {side} their pooled interval "
                f"[{lo:+.1f}, {hi:+.1f}] and does not answer for the {self.regime} regime"
            )
        return f"In the {self.regime} regime this project measured {self.words()}; {beside}"


class CompileDelta(Strict):
    """One compile's paired delta vs FP16 (its rounds only)."""

    compile: Index
    n_pairs: Annotated[int, Field(ge=2)]
    delta_pct: float
    se_pct: NonNegative
    ci95_pct: Interval


class BetweenCompiles(Strict):
    """--compiles N: the delta over N compiles of every format, each from an empty cache.
    The headline delta and its interval are this model's (pooled; between-compile
    variance included); within_compile_ci95_pct is the paired interval of every pair as
    if one compile had run, for comparison."""

    compiles: Annotated[int, Field(ge=2)]
    model: str
    interval_se: OrAbsent[Literal["max(hksj, classic)"]] = Field(
        None,
        description="the standard error ci95_pct uses: the larger of the Hartung-Knapp-"
        "Sidik-Jonkman and the classic random-effects one (Roever, Knapp and Friede 2015). "
        "Absent (reports before 2026-12-05): the HKSJ one alone, which shrinks to nothing "
        "where the compiles' means agree, however noisy each is",
    )
    per_compile: list[CompileDelta]
    delta_pct: float
    ci95_pct: Interval
    between_compile_sd_pts: NonNegative
    i2_pct: NonNegative | None = None
    within_compile_ci95_pct: Interval | None = None


class Results(Strict):
    """A measured report's trials and what derives from them, or a derived report's
    figure (no trials). The headline is the report's own format against FP16."""

    basis: Literal["measured", "interpolated", "extrapolated", "unavailable"]
    note: str | None = None
    fallback_reason: (
        Literal[
            "no_gpu",
            "nvml_unavailable",
            "power_unsupported",
            "dry_run",
            "measurement_failed",
            "stack_missing",
        ]
        | None
    ) = None
    reference_card: str | None = None
    reference_curve: OrAbsent[ReferenceCurve] = None
    reference_anchors: OrAbsent[ReferenceAnchors] = None
    reference_units: OrAbsent[ReferenceUnits] = Field(
        None,
        description="this project's units of the card model: beside a derived figure from "
        "their measurements, or beside a measured unit of that card at their regime, size, "
        "batch size and tokens per run (its own trials give its figures; this block gives "
        "the spread)",
    )
    regime_units: OrAbsent[ReferenceUnits] = Field(
        None,
        description="--decode graphs or compiled on the no-GPU path: the format's delta "
        "across this project's units of the card in that regime, at its size and batch "
        "size (the figure itself is eager's: no published figure covers the regime)",
    )
    # what was measured (raw)
    trials: list[Trial] = Field(default_factory=list)
    idle_window: OrAbsent[IdleWindow] = None
    # derived (measured: from the trials; derived reports: from the curve)
    energy_per_token_mj: NonNegative | None
    fp16_energy_per_token_mj: NonNegative | None = None
    vs_fp16_energy_pct: float | None = Field(
        None, description="one decimal, as the published format"
    )
    vs_fp16_energy_pct_exact: float | None = Field(
        None, description="the same delta unrounded: what every tool here reads"
    )
    vs_fp16_ci95_pct: Interval | None = None
    ci_method: OrAbsent[str] = None
    n_pairs: OrAbsent[Index] = None
    verdict: Verdict | None = None
    total_energy_joules: NonNegative | None = None
    tokens_generated: Index = 0
    avg_power_watts: NonNegative | None = None
    throughput_tokens_per_s: NonNegative | None = None
    idle_power_watts: OrAbsent[NonNegative] = None
    vs_fp16_above_idle_pct: OrAbsent[float] = None
    sampled_vs_counter_pct: OrAbsent[float] = None
    sampled_vs_counter_max_abs_pct: OrAbsent[NonNegative] = None
    dropped_samples: OrAbsent[Index] = None
    per_format: dict[Format, FormatStats] = Field(default_factory=dict)
    pairs: list[Pair] = Field(default_factory=list)
    held_gpus: OrAbsent[HeldView] = None
    conditions: OrAbsent[Conditions] = None
    between_compiles: OrAbsent[BetweenCompiles] = None
    phases: OrAbsent[Phases] = Field(
        None,
        description="--phases apart: the headline is the decode window's; here the "
        "prefill's, the decode's and the stated workload's, each with its own delta",
    )
