"""One phase of the protocol, with the power sampler running throughout: calibrate each
format's meter, read idle power (models resident), warm up, then rounds of trials.

A run has one phase when every format fits on the GPUs together (trials interleaved
FP16, Q, FP16, Q ...; with several formats, every model once per round in an order
rotated from round to round), or two (all FP16 trials, then all quantized ones).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ecocompute.boundary.interrupts import check as check_interrupt
from ecocompute.boundary.progress import Progress
from ecocompute.core.precision import Precision
from ecocompute.core.stats import DeltaEstimate, estimate_delta, paired_deltas_pct
from ecocompute.core.units import mj_to_j, mw_to_w
from ecocompute.monitor.meter import EnergyMeter, WindowReading
from ecocompute.monitor.sampler import PowerSampler, SamplerOpener, open_power_sampler
from ecocompute.task.trials import (
    Arm,
    Decode,
    Trial,
    prefills_for,
    round_order,
    rounds_paired,
    run_round,
    time_prefill,
    warm_up,
)
from ecocompute.telemetry.base import (
    Capabilities,
    EdgeState,
    GpuTelemetry,
    TelemetryNotSupported,
    TelemetryReadError,
)

# Seconds of idle power read on each GPU before any model of the session is loaded (or
# --idle_seconds, where that is shorter): how the unit idles, for telling units apart.
BEFORE_SESSION_IDLE_S = 2.0


@dataclass(frozen=True)
class Instruments:
    """What reads the GPUs: NVML, the accelerator's synchronize, each GPU's capabilities."""

    telemetry: GpuTelemetry
    synchronize: Callable[[], None]
    caps: Mapping[int, Capabilities]
    sample_rate_hz: float
    open_sampler: SamplerOpener = open_power_sampler

    def sampler(self, indices: Sequence[int]) -> PowerSampler:
        """Power at the protocol's rate, and beside each power read the clocks and the
        clock-event reasons (where the device offers them)."""
        return self.open_sampler(self.telemetry, indices, self.sample_rate_hz)

    def meter(self, indices: Sequence[int], sampler: PowerSampler) -> EnergyMeter:
        """A meter over these GPUs (NVML indices), not yet calibrated."""
        return EnergyMeter(
            self.telemetry,
            indices,
            sampler,
            self.synchronize,
            use_counter=all(self.caps[i].energy_counter for i in indices),
        )


@dataclass(frozen=True)
class Resident:
    """A format loaded on the GPUs, ready to decode."""

    precision: Precision
    decode: Decode
    nvml_indices: tuple[int, ...]  # the GPUs its weights occupy


@dataclass(frozen=True)
class IdleWindow:
    """Idle power with the models resident, read on every GPU of the phase."""

    reading: WindowReading
    nvml_indices: tuple[int, ...]

    @property
    def power_w(self) -> float:
        return self.reading.energy_j / self.reading.duration_s


@dataclass(frozen=True)
class GpuBefore:
    """One GPU before the session's models were loaded: its idle power and its state."""

    nvml_index: int
    idle_power_w: float
    idle_seconds: float
    state: EdgeState
    memory_used_mib: int | None = None  # what was already on it (other processes, or a
    # sweep's models kept resident from its previous point)


def read_before_session(
    instruments: Instruments,
    indices: Sequence[int],
    seconds: float,
    progress: Progress,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[int, GpuBefore]:
    """Idle power of each GPU over `seconds` and its temperatures, before the session
    loads anything (nothing of this run is on the GPUs yet): the energy counter's
    difference where every GPU has one, else the mean of power reads across the window.
    A figure beside the measurement: a GPU whose reads fail is left out, never a reason
    to stop the run. Empty for 0 seconds."""
    if seconds <= 0:
        return {}
    progress(f"idle power before loading: {seconds:g} s")
    tel = instruments.telemetry
    counter = all(instruments.caps[i].energy_counter for i in indices)
    states = {i: tel.edge_state(i) for i in indices}
    start: dict[int, float] = {}
    powers: dict[int, list[float]] = {i: [] for i in indices}
    t0 = clock()
    for i in indices:
        with contextlib.suppress(TelemetryReadError, TelemetryNotSupported):
            if counter:
                start[i] = float(tel.energy_mj(i))
            else:
                powers[i].append(mw_to_w(tel.power_mw(i)))
    steps = 1 if counter else 5
    for _ in range(steps):
        sleep(seconds / steps)
        if not counter:
            for i in indices:
                with contextlib.suppress(TelemetryReadError, TelemetryNotSupported):
                    powers[i].append(mw_to_w(tel.power_mw(i)))
    before = {}
    for i in indices:
        watts = None
        duration_s = clock() - t0
        if counter and i in start:
            with contextlib.suppress(TelemetryReadError, TelemetryNotSupported):
                watts = mj_to_j(float(tel.energy_mj(i)) - start[i]) / duration_s
        elif powers[i]:
            watts = statistics.fmean(powers[i])
        if watts is None or watts < 0 or duration_s <= 0:
            continue
        memory = tel.memory_mib(i)
        used = None if memory is None else memory[1] - memory[0]
        state = EdgeState(states[i].temperature_c, states[i].memory_temperature_c)
        before[i] = GpuBefore(i, watts, duration_s, state, used)
    return before


@dataclass(frozen=True)
class Stopping:
    """When a phase stops: after `rounds` rounds (fixed), or, with target_pts, once the
    paired delta's 95% interval is at most target_pts on each side, never before
    `rounds` and never after max_rounds rounds or max_s seconds of trials. It looks at
    the interval's width only, never at the verdict."""

    rounds: int
    target_pts: float | None = None
    max_rounds: int | None = None
    max_s: float | None = None

    @property
    def rule(self) -> str:
        return "fixed" if self.target_pts is None else "ci_target"

    def why_stop(self, trials: Sequence[Trial], done: int, elapsed_s: float) -> str | None:
        """Why to stop after `done` rounds, or None to run another."""
        if done < self.rounds:
            return None
        if self.target_pts is None:
            return "fixed number of rounds"
        half = half_width_pts(trials)
        if half is not None and half <= self.target_pts:
            return f"95% interval half-width {half:.2f} <= target {self.target_pts:g} points"
        if self.max_rounds is not None and done >= self.max_rounds:
            return f"max_rounds {self.max_rounds} reached before the target"
        if self.max_s is not None and elapsed_s >= self.max_s:
            return f"max_minutes {self.max_s / 60:g} reached before the target"
        return None


@dataclass(frozen=True)
class StoppingRecord:
    rule: str  # fixed | ci_target
    target_ci_pts: float | None
    rounds: int
    stopped_because: str


@dataclass(frozen=True)
class PhaseResult:
    trials: tuple[Trial, ...]
    meters: dict[Precision, EnergyMeter]  # each format's meter
    idle: IdleWindow | None
    stopping: StoppingRecord
    gpus: dict[Precision, tuple[int, ...]] = field(default_factory=dict)  # its weights' GPUs
    held: tuple[int, ...] = ()  # every GPU the phase held, where the formats' differ
    # the phases apart: each format's prefills per prefill window, and one prefill's
    # seconds it was chosen from (timed before the rounds, outside every window)
    prefills: dict[Precision, int] = field(default_factory=dict)
    prefill_s: dict[Precision, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PhasePlan:
    stopping: Stopping
    expected_tokens: int  # new tokens per decode, over the batch
    warmup: int
    idle_seconds: float  # 0: no idle window in this phase
    first_index: int = 0  # trial numbering continues across phases
    paired: bool = True  # number trials by round (a quantized run's pairs)
    rotate: bool = False  # several formats: rotate each round's order by one place
    # the phases apart: each trial's prefill window lasts at least this long (None: one
    # window per trial over the prefill and the decode)
    prefill_window_s: float | None = None


def run_phase(
    instruments: Instruments,
    residents: Sequence[Resident],
    plan: PhasePlan,
    progress: Progress,
    clock: Callable[[], float] = time.monotonic,
) -> PhaseResult:
    """Sampler on for the idle window, warm-ups and trials; off on return.

    Where the formats occupy different GPUs, every format's windows read every GPU of
    the phase: each trial keeps its own GPUs' energy, and beside it that of the GPUs it
    left idle (held by the other formats' weights), read over the same window."""
    check_interrupt()  # a safe point: the formats loaded, nothing measured yet
    indices = sorted({i for r in residents for i in r.nvml_indices})
    spread = len({r.nvml_indices for r in residents}) > 1
    with instruments.sampler(indices) as sampler:
        arms = [
            Arm(
                r.precision,
                r.decode,
                instruments.meter(indices if spread else r.nvml_indices, sampler),
                r.nvml_indices,
            )
            for r in residents
        ]
        for arm in arms:
            arm.meter.calibrate()
        idle = None
        if plan.idle_seconds > 0:
            meter = _meter_over(arms, indices, instruments, sampler)
            progress(f"idle power: {plan.idle_seconds:g} s with the model(s) resident")
            idle = IdleWindow(meter.idle(plan.idle_seconds), tuple(indices))
            progress(f"idle: {idle.power_w:.1f} W")
        warm_up(arms, plan.warmup, progress)
        prefill_s: dict[Precision, float] = {}
        prefills: dict[Precision, int] = {}
        if plan.prefill_window_s is not None:
            for arm in arms:
                prefill_s[arm.precision] = time_prefill(arm, clock)
                prefills[arm.precision] = prefills_for(
                    prefill_s[arm.precision], plan.prefill_window_s
                )
                progress(
                    f"{arm.precision}: {prefills[arm.precision]} prefill(s) per prefill window "
                    f"(one takes {prefill_s[arm.precision] * 1000:.1f} ms)"
                )
        trials, record = _rounds(arms, plan, progress, clock, prefills)
    meters = {arm.precision: arm.meter for arm in arms}
    gpus = {arm.precision: arm.gpus for arm in arms}
    held = tuple(indices) if spread else ()
    return PhaseResult(tuple(trials), meters, idle, record, gpus, held, prefills, prefill_s)


def _rounds(
    arms: Sequence[Arm],
    plan: PhasePlan,
    progress: Progress,
    clock: Callable[[], float],
    prefills: Mapping[Precision, int] | None = None,
) -> tuple[list[Trial], StoppingRecord]:
    """Rounds of one trial per arm until the stopping rule says why to stop."""
    rule = plan.stopping
    trials: list[Trial] = []
    t0 = clock()
    done = 0
    while True:
        pair = done if plan.paired else None
        trials += run_round(
            round_order(arms, done, plan.rotate),
            plan.expected_tokens,
            plan.first_index + len(trials),
            pair,
            rotated=plan.rotate,
            prefills=prefills,
        )
        done += 1
        progress(round_line(done, rule, trials, len(arms)))
        why = rule.why_stop(trials, done, clock() - t0)
        if why is not None:
            return trials, StoppingRecord(rule.rule, rule.target_pts, done, why)


def _meter_over(
    arms: Sequence[Arm], indices: Sequence[int], instruments: Instruments, sampler: PowerSampler
) -> EnergyMeter:
    """A calibrated meter over every GPU of the phase, for idle power: each format then
    subtracts the idle of the GPUs it occupies. An arm's own meter when one already
    covers them all (the usual case: one GPU)."""
    for arm in arms:
        if arm.meter.indices == tuple(indices):
            return arm.meter
    meter = instruments.meter(indices, sampler)
    meter.calibrate()
    return meter


def quantized_formats(trials: Sequence[Trial]) -> list[Precision]:
    """The quantized formats among the trials, in order of first appearance."""
    seen: dict[Precision, None] = {}
    for t in trials:
        if t.precision.quantized:
            seen.setdefault(t.precision, None)
    return list(seen)


def _decode_per_token(t: Trial) -> float:
    return t.energy_per_token_mj


def _prefill_per_token(t: Trial) -> float:
    if t.prefill is None:
        raise ValueError("a trial without a prefill window")
    return t.prefill.energy_per_prompt_token_mj


def paired_estimate(
    trials: Sequence[Trial],
    precision: Precision,
    per_token: Callable[[Trial], float] = _decode_per_token,
) -> DeltaEstimate | None:
    """The running paired delta of `precision` vs FP16 over the trials so far, paired by
    round: of the trial's (decode) window, or of per_token (its prefill window)."""
    pairs = rounds_paired(trials, precision)
    if not pairs:
        return None
    fp16, quant = ([per_token(t) for t in side] for side in zip(*pairs, strict=True))
    return estimate_delta(paired_deltas_pct(fp16, quant))


def half_width_pts(trials: Sequence[Trial]) -> float | None:
    """The widest 95% half-width among the formats' paired deltas (None until every
    format has an interval): a session stops on its least precise format, and with the
    phases apart on its least precise phase."""
    phases = [_decode_per_token]
    if trials and all(t.prefill is not None for t in trials):
        phases.append(_prefill_per_token)
    widths = []
    for precision in quantized_formats(trials):
        for per_token in phases:
            est = paired_estimate(trials, precision, per_token)
            if est is None or est.ci95_pct is None:
                return None
            widths.append((est.ci95_pct[1] - est.ci95_pct[0]) / 2.0)
    return max(widths) if widths else None


def round_line(done: int, rule: Stopping, trials: Sequence[Trial], per_round: int) -> str:
    latest = sorted(trials[-per_round:], key=lambda t: not t.precision.quantized, reverse=True)
    parts = [f"{t.precision} {t.energy_per_token_mj:,.0f} mJ/tok" for t in latest]
    of = f"/{rule.rounds}" if rule.target_pts is None else f" (min {rule.rounds})"
    line = f"round {done}{of}: " + ", ".join(parts)
    formats = quantized_formats(trials)
    if len(formats) > 1:
        return line + "; running " + "; ".join(_running(trials, f, rule, True) for f in formats)
    if formats:
        line += "; " + _running(trials, formats[0], rule, False)
    return line


def _running(trials: Sequence[Trial], precision: Precision, rule: Stopping, short: bool) -> str:
    est = paired_estimate(trials, precision)
    if est is None:
        return f"{precision} -"
    if short:
        text = f"{precision} {est.mean_pct:+.1f}%"
        if est.ci95_pct is not None:
            text += f" +-{(est.ci95_pct[1] - est.ci95_pct[0]) / 2:.1f}"
        return text
    text = f"running delta {est.mean_pct:+.1f}%"
    if est.ci95_pct is not None:
        lo, hi = est.ci95_pct
        text += f" (95% CI {lo:+.1f}..{hi:+.1f}%, +-{(hi - lo) / 2:.1f} pts"
        text += ")" if rule.target_pts is None else f" vs target +-{rule.target_pts:g})"
    return text
