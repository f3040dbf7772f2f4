"""The trial protocol's pieces: warm-ups, then rounds of one measured decode per format.

Each trial is one decode between the two synchronized edges of an EnergyMeter window;
counting tokens, statistics and progress happen after the window closes.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

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


class PhasedDecode(Decode, Protocol):
    """A decode whose prefill and decode steps run apart (the graphs regimes)."""

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens of one prefill, over the batch."""

    @property
    def batch(self) -> int: ...

    def run_prefills(self, count: int) -> None:
        """`count` prefills back to back; the last leaves the state run_decode() needs."""

    def run_decode(self) -> Any:
        """The decode steps after the last prefill; output as run()'s."""


# A prefill window holds at most this many prefills (a tiny model's prompt of a few
# tokens prefills in well under a millisecond).
MAX_PREFILLS = 10_000
PREFILL_TIMINGS = 3  # prefills timed (outside any window) to choose a window's count


def prefills_for(one_prefill_s: float, window_s: float, most: int = MAX_PREFILLS) -> int:
    """How many prefills fill a window of at least window_s seconds, one taking
    one_prefill_s: at least 1, at most `most`."""
    if one_prefill_s <= 0:
        return most
    return max(1, min(most, math.ceil(window_s / one_prefill_s)))


def time_prefill(arm: Arm, clock: Callable[[], float]) -> float:
    """Seconds of one prefill between two synchronizes, the median of a few, outside
    every measured window (the sampler runs, nothing is read)."""
    decode = cast(PhasedDecode, arm.decode)
    seconds = []
    for _ in range(PREFILL_TIMINGS):
        arm.meter.synchronize()
        t0 = clock()
        decode.run_prefills(1)
        arm.meter.synchronize()
        seconds.append(clock() - t0)
    return statistics.median(seconds)


@dataclass(frozen=True)
class PrefillReading:
    """A trial's prefill window: `prefills` prefills of prompt_tokens each (over the
    batch), read on the GPUs its format occupies."""

    reading: WindowReading
    prefills: int
    prompt_tokens: int

    @property
    def energy_per_prompt_token_mj(self) -> float:
        return energy_per_token_mj(self.reading.energy_j, self.prefills * self.prompt_tokens)


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
    # The phases apart: the prefill window just before this trial's decode window, which
    # then holds the decode steps alone (tokens: those they generated).
    prefill: PrefillReading | None = None
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


def phased_trial(
    arm: Arm,
    expected_tokens: int,
    index: int,
    pair: int | None,
    slot: int | None,
    prefills: int,
) -> Trial:
    """The phases apart: a prefill window of `prefills` prefills, then a decode window of
    the decode steps continuing from the last of them. Between the two, only the meter's
    edges (nothing runs on the GPU)."""
    check_interrupt()  # a safe point: between trials, never inside a window
    decode = cast(PhasedDecode, arm.decode)
    _, prefill_edges = arm.meter.run(lambda: decode.run_prefills(prefills))
    output, edges = arm.meter.run(decode.run_decode)
    prefill = PrefillReading(
        arm.meter.reading(prefill_edges, arm.gpus), prefills, decode.prompt_tokens
    )
    reading = arm.meter.reading(edges, arm.gpus)
    idle = arm.left_idle
    left_idle = arm.meter.reading(edges, idle) if idle else None
    tokens = decode.new_tokens(output)
    if tokens != expected_tokens:
        raise RunError(
            f"{arm.precision} decode produced {tokens} new tokens, expected {expected_tokens}; "
            "the protocol cannot compare the formats"
        )
    in_window = tokens - decode.batch  # the prefill chose each row's first new token
    return Trial(index, pair, arm.precision, in_window, reading, slot, left_idle, prefill)


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
    prefills: Mapping[Precision, int] | None = None,
) -> list[Trial]:
    """One trial per arm, in the order given (FP16, then the quantized format(s)); with
    rotated, each trial records its place in the round; with prefills (the phases
    apart), each trial is a prefill window of that format's count and a decode window."""
    if prefills:
        return [
            phased_trial(
                arm,
                expected_tokens,
                first_index + k,
                pair,
                k if rotated else None,
                prefills[arm.precision],
            )
            for k, arm in enumerate(arms)
        ]
    return [
        measured_trial(arm, expected_tokens, first_index + k, pair, k if rotated else None)
        for k, arm in enumerate(arms)
    ]
