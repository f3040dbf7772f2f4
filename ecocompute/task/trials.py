"""The trial protocol's pieces: warm-ups, then rounds of one measured decode per format.

Each trial is one decode between the two synchronized edges of an EnergyMeter window;
counting tokens, statistics and progress happen after the window closes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ecocompute.boundary.interrupts import check as check_interrupt
from ecocompute.boundary.progress import Progress
from ecocompute.core.precision import Precision
from ecocompute.core.units import energy_per_token_mj
from ecocompute.errors import RunError
from ecocompute.monitor.meter import EnergyMeter, WindowReading


class Decode(Protocol):
    """One format's decode, ready to run (llm/decode.py builds it)."""

    def run(self) -> Any:
        """One decode run; the only thing inside a measured window."""

    def new_tokens(self, output: Any) -> int:
        """Tokens the run generated, from run()'s output."""


@dataclass(frozen=True)
class Arm:
    """One format of the model, ready to decode, and the meter over its GPUs; where the
    session's formats occupy different GPUs, the meter reads every GPU of the session
    in the same windows, and `gpus` names the ones this format occupies."""

    precision: Precision
    decode: Decode
    meter: EnergyMeter
    gpus: tuple[int, ...]  # NVML indices of its weights' GPUs (a subset of the meter's)

    @property
    def left_idle(self) -> tuple[int, ...]:
        """The session's GPUs this format does not occupy (idle in its windows)."""
        return tuple(i for i in self.meter.indices if i not in self.gpus)


@dataclass(frozen=True)
class Trial:
    index: int
    pair: int | None  # the round, for a quantized run; None when FP16 runs alone
    precision: Precision
    tokens: int
    reading: WindowReading  # the GPUs its format occupies
    slot: int | None = None  # its place in a rotated round (sessions of several formats)
    # The session's other GPUs in the same window: held by other formats' weights, idle
    # while this format decodes. None where the format occupies every GPU of the session.
    left_idle: WindowReading | None = None
    compile: int | None = None  # which compile it ran under (--compiles N), from 0

    @property
    def energy_per_token_mj(self) -> float:
        return energy_per_token_mj(self.reading.energy_j, self.tokens)

    @property
    def held_energy_j(self) -> float:
        """Energy of every GPU the session held, over this trial's window."""
        idle = 0.0 if self.left_idle is None else self.left_idle.energy_j
        return self.reading.energy_j + idle

    @property
    def held_energy_per_token_mj(self) -> float:
        return energy_per_token_mj(self.held_energy_j, self.tokens)

    @property
    def throughput_tokens_per_s(self) -> float:
        return self.tokens / self.reading.duration_s


def rounds_paired(trials: Sequence[Trial], precision: Precision) -> list[tuple[Trial, Trial]]:
    """(FP16 trial, `precision`'s trial) of every round that has both, in round order."""
    fp16 = {t.pair: t for t in trials if not t.precision.quantized and t.pair is not None}
    quant = {
        t.pair: t
        for t in trials
        if t.precision.quantized and t.precision is precision and t.pair is not None
    }
    return [(fp16[k], quant[k]) for k in sorted(fp16) if k in quant]


def warm_up(arms: Sequence[Arm], warmup: int, progress: Progress) -> None:
    for k in range(warmup):
        for arm in arms:
            check_interrupt()
            progress(f"warm-up {k + 1}/{warmup} {arm.precision}")
            arm.decode.run()


def measured_trial(
    arm: Arm, expected_tokens: int, index: int, pair: int | None, slot: int | None = None
) -> Trial:
    check_interrupt()  # a safe point: between trials, never inside a window
    output, edges = arm.meter.run(arm.decode.run)
    reading = arm.meter.reading(edges, arm.gpus)
    idle = arm.left_idle
    left_idle = arm.meter.reading(edges, idle) if idle else None
    tokens = arm.decode.new_tokens(output)
    if tokens != expected_tokens:
        raise RunError(
            f"{arm.precision} decode produced {tokens} new tokens, expected {expected_tokens} "
            "(min_new_tokens should force them); the protocol cannot compare the formats"
        )
    return Trial(index, pair, arm.precision, tokens, reading, slot, left_idle)


def round_order(arms: Sequence[Arm], done: int, rotate: bool) -> list[Arm]:
    """The arms in the order round `done` (0-based) measures them: as given, or, in a
    session of several formats, rotated by one place per round, so that over the rounds
    every format is measured in every place (first, after FP16, last ...)."""
    if not rotate or not arms:
        return list(arms)
    k = done % len(arms)
    return [*arms[k:], *arms[:k]]


def run_round(
    arms: Sequence[Arm],
    expected_tokens: int,
    first_index: int,
    pair: int | None,
    *,
    rotated: bool = False,
) -> list[Trial]:
    """One trial per arm, in the order given (FP16, then the quantized format(s)); with
    rotated, each trial records its place in the round."""
    return [
        measured_trial(arm, expected_tokens, first_index + k, pair, k if rotated else None)
        for k, arm in enumerate(arms)
    ]
