"""Reading an energy counter that only moves in steps at the edges of a window.

NVML's energy counter advances in steps (about every 100 ms on an H200), so a plain
read at a window's edge can be up to one step stale: at ~140 W that is up to 14 J per
edge, a few percent of a 5 s decode window. Here the counter's steps are located in
time by polling it just outside the window, and its value at the exact edge time is
interpolated between the steps on either side. All of this happens before the window
opens or after it closes.
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_WAIT_PERIODS = 3.0  # give up on finding a step after this many periods


@dataclass(frozen=True)
class Step:
    """The counter moved from previous_mj to value_mj at about time_s."""

    time_s: float
    value_mj: float
    previous_mj: float


def wait_for_step(
    read_mj: Callable[[], float | None],
    clock: Callable[[], float],
    timeout_s: float,
    pause: Callable[[], None] = lambda: time.sleep(0.0005),
) -> Step | None:
    """Poll until the counter changes; the step time is the midpoint of the last read
    that saw the old value and the first that saw the new one. A read that fails (None)
    is skipped. None on timeout."""
    previous = read_mj()
    t_previous = clock()
    deadline = t_previous + timeout_s
    while True:
        pause()
        value = read_mj()
        now = clock()
        if value is not None and previous is not None and value != previous:
            return Step((t_previous + now) / 2.0, value, previous)
        if now > deadline:
            return None
        if value is not None:  # the last read that saw the old value
            previous, t_previous = value, now


def step_period_s(
    read_mj: Callable[[], float | None],
    clock: Callable[[], float],
    *,
    steps: int = 4,
    timeout_s: float = 1.5,
) -> float | None:
    """Median time between counter steps, or None if it does not step regularly."""
    times: list[float] = []
    deadline = clock() + timeout_s
    while len(times) < steps and clock() < deadline:
        step = wait_for_step(read_mj, clock, max(0.0, deadline - clock()))
        if step is None:
            break
        times.append(step.time_s)
    if len(times) < 3:
        return None
    return statistics.median(b - a for a, b in itertools.pairwise(times))


def value_after_step(step: Step, t: float, period_s: float) -> float:
    """Counter value at t shortly after a step, extending the step's rate."""
    rate = (step.value_mj - step.previous_mj) / period_s
    return step.value_mj + rate * max(0.0, t - step.time_s)


def value_before_step(step: Step, t: float, rate_mj_per_s: float, period_s: float) -> float:
    """Counter value at t, before a step, going back from the step at the rate measured
    after it (the GPU is idle once a window has closed). Never below the value before
    the step where the step is the first after t (within one period of it); a later
    step's previous value is itself later than t (the GPUs' steps are waited for one
    GPU after another), so it bounds nothing there."""
    value = step.value_mj - rate_mj_per_s * max(0.0, step.time_s - t)
    return max(step.previous_mj, value) if step.time_s - t <= period_s else value


def rate_between(first: Step, second: Step) -> float:
    """Counter rate in mJ/s between two steps."""
    return (second.value_mj - first.value_mj) / (second.time_s - first.time_s)
