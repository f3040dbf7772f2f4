"""One phase of the protocol, with the power sampler running throughout: calibrate each
format's meter, read idle power (models resident), warm up, then rounds of trials.

A run has one phase when every format fits on the GPUs together (trials interleaved
FP16, Q, FP16, Q ...), or two (all FP16 trials, then all quantized ones).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ecocompute.estimate.trials import Arm, Decode, Trial, run_round, warm_up
from ecocompute.monitor.meter import EnergyMeter, WindowReading
from ecocompute.monitor.sampler import PowerSampler
from ecocompute.precision import Precision
from ecocompute.progress import Progress
from ecocompute.stats import estimate_delta, paired_deltas_pct
from ecocompute.telemetry.base import Capabilities, GpuTelemetry
from ecocompute.units import mw_to_w


@dataclass(frozen=True)
class Instruments:
    """What reads the GPUs: NVML, the accelerator's synchronize, each GPU's capabilities."""

    telemetry: GpuTelemetry
    synchronize: Callable[[], None]
    caps: Mapping[int, Capabilities]
    sample_rate_hz: float

    def sampler(self, indices: Sequence[int]) -> PowerSampler:
        return PowerSampler(
            lambda i: mw_to_w(self.telemetry.power_mw(i)), indices, self.sample_rate_hz
        )

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

    def power_by_gpu_w(self) -> dict[int, float]:
        per_gpu = zip(self.nvml_indices, self.reading.per_gpu_j, strict=True)
        return {i: j / self.reading.duration_s for i, j in per_gpu}


@dataclass(frozen=True)
class PhaseResult:
    trials: tuple[Trial, ...]
    meters: dict[Precision, EnergyMeter]  # each format's meter, over its GPUs
    idle: IdleWindow | None


@dataclass(frozen=True)
class PhasePlan:
    rounds: int
    expected_tokens: int  # new tokens per decode, over the batch
    warmup: int
    idle_seconds: float  # 0: no idle window in this phase
    first_index: int = 0  # trial numbering continues across phases
    paired: bool = True  # number trials by round (a quantized run's pairs)


def run_phase(
    instruments: Instruments,
    residents: Sequence[Resident],
    plan: PhasePlan,
    progress: Progress,
) -> PhaseResult:
    """Sampler on for the idle window, warm-ups and trials; off on return."""
    indices = sorted({i for r in residents for i in r.nvml_indices})
    with instruments.sampler(indices) as sampler:
        arms = [
            Arm(r.precision, r.decode, instruments.meter(r.nvml_indices, sampler))
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
        trials: list[Trial] = []
        for k in range(plan.rounds):
            pair = k if plan.paired else None
            trials += run_round(arms, plan.expected_tokens, plan.first_index + len(trials), pair)
            progress(round_line(k, plan.rounds, trials, len(arms)))
    return PhaseResult(tuple(trials), {arm.precision: arm.meter for arm in arms}, idle)


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


def round_line(k: int, rounds: int, trials: Sequence[Trial], per_round: int) -> str:
    parts = [f"{t.precision} {t.energy_per_token_mj:,.0f} mJ/tok" for t in trials[-per_round:]]
    line = f"trial {k + 1}/{rounds}: " + ", ".join(parts)
    fp16 = [t.energy_per_token_mj for t in trials if not t.precision.quantized]
    quant = [t.energy_per_token_mj for t in trials if t.precision.quantized]
    n = min(len(fp16), len(quant))
    if n:
        est = estimate_delta(paired_deltas_pct(fp16[:n], quant[:n]))
        line += f"; running delta {est.mean_pct:+.1f}%"
        if est.ci95_pct is not None:
            line += f" (95% CI {est.ci95_pct[0]:+.1f}..{est.ci95_pct[1]:+.1f}%)"
    return line
