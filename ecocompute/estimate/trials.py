"""The trial protocol: warm-ups, then measured decode runs interleaved by format.

Each trial is one generate() call between two synchronized edges of an EnergyMeter
window; counting tokens, statistics and progress happen after the window closes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ecocompute.errors import RunError
from ecocompute.monitor.meter import EnergyMeter, WindowReading
from ecocompute.progress import Progress
from ecocompute.stats import estimate_delta, paired_deltas_pct
from ecocompute.units import energy_per_token_mj


@dataclass(frozen=True)
class Arm:
    """One format of the model, ready to decode."""

    precision: str
    generate: Callable[[], Any]  # one decode run; the only thing inside a window
    new_tokens: Callable[[Any], int]  # tokens generated, from generate()'s output
    meter: EnergyMeter  # reads the GPUs this format's model occupies


@dataclass(frozen=True)
class Trial:
    index: int
    pair: int | None
    precision: str
    tokens: int
    reading: WindowReading

    @property
    def energy_per_token_mj(self) -> float:
        return energy_per_token_mj(self.reading.energy_j, self.tokens)

    @property
    def throughput_tokens_per_s(self) -> float:
        return self.tokens / self.reading.duration_s


def warm_up(arms: Sequence[Arm], warmup: int, progress: Progress) -> None:
    for k in range(warmup):
        for arm in arms:
            progress(f"warm-up {k + 1}/{warmup} {arm.precision}")
            arm.generate()


def _measured(arm: Arm, expected_tokens: int, index: int, pair: int | None) -> Trial:
    output, reading = arm.meter.measure(arm.generate)
    tokens = arm.new_tokens(output)
    if tokens != expected_tokens:
        raise RunError(
            f"{arm.precision} decode produced {tokens} new tokens, expected {expected_tokens} "
            "(min_new_tokens should force them); the protocol cannot compare the formats"
        )
    return Trial(index, pair, arm.precision, tokens, reading)


def run_trials(
    arms: Sequence[Arm],
    iterations: int,
    expected_tokens: int,
    progress: Progress,
    *,
    trials: list[Trial],
    number_pairs: bool,
) -> None:
    """iterations rounds of one trial per arm, in the arms' order (FP16, Q, FP16, Q ...),
    appended to trials (which may hold an earlier block). Round k is pair k."""
    for k in range(iterations):
        for arm in arms:
            pair = k if number_pairs else None
            trials.append(_measured(arm, expected_tokens, len(trials), pair))
        progress(_round_line(k, iterations, trials, len(arms)))


def _round_line(k: int, iterations: int, trials: list[Trial], per_round: int) -> str:
    parts = [f"{t.precision} {t.energy_per_token_mj:,.0f} mJ/tok" for t in trials[-per_round:]]
    line = f"trial {k + 1}/{iterations}: " + ", ".join(parts)
    fp16 = [t.energy_per_token_mj for t in trials if t.precision == "FP16"]
    quant = [t.energy_per_token_mj for t in trials if t.precision != "FP16"]
    n = min(len(fp16), len(quant))
    if n:
        est = estimate_delta(paired_deltas_pct(fp16[:n], quant[:n]))
        line += f"; running delta {est.mean_pct:+.1f}%"
        if est.ci95_pct is not None:
            line += f" (95% CI {est.ci95_pct[0]:+.1f}..{est.ci95_pct[1]:+.1f}%)"
    return line
