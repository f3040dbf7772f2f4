"""The energy counter moves in ~100 ms steps; window edges are interpolated between steps."""

from __future__ import annotations

import time

import pytest

from ecocompute.monitor.counter_edges import (
    Step,
    rate_between,
    step_period_s,
    value_after_step,
    value_before_step,
    wait_for_step,
)
from ecocompute.monitor.meter import EnergyMeter

from ..fakes import FakeTelemetry, ScheduledSampler


class SteppingCounter:
    """A counter that steps every period_s on a fake clock advanced by each read."""

    def __init__(self, power_w: float, period_s: float, read_cost_s: float = 0.002) -> None:
        self.t = 0.0
        self.power_w, self.period_s, self.read_cost_s = power_w, period_s, read_cost_s

    def clock(self) -> float:
        return self.t

    def read_mj(self) -> float:
        self.t += self.read_cost_s
        steps = int(self.t / self.period_s)
        return steps * self.period_s * self.power_w * 1000.0


def test_wait_for_step_locates_the_step_within_one_read():
    counter = SteppingCounter(power_w=150.0, period_s=0.1)
    counter.t = 0.031
    step = wait_for_step(counter.read_mj, counter.clock, 1.0, pause=lambda: None)
    assert step is not None
    assert step.time_s == pytest.approx(0.1, abs=counter.read_cost_s)
    assert step.value_mj - step.previous_mj == pytest.approx(150.0 * 0.1 * 1000)


def test_wait_for_step_gives_up_on_a_frozen_counter():
    counter = SteppingCounter(power_w=0.0, period_s=0.1)
    assert wait_for_step(counter.read_mj, counter.clock, 0.3, pause=lambda: None) is None


def test_step_period_is_measured():
    counter = SteppingCounter(power_w=120.0, period_s=0.1003)
    assert step_period_s(counter.read_mj, counter.clock) == pytest.approx(0.1003, abs=0.002)


def test_interpolation_between_steps():
    step = Step(time_s=10.0, value_mj=2000.0, previous_mj=1000.0)  # 1000 mJ per 0.1 s
    after = Step(time_s=10.1, value_mj=2500.0, previous_mj=2000.0)  # idle: 5000 mJ/s
    assert rate_between(step, after) == pytest.approx(5000.0)
    assert value_before_step(step, 9.95, 5000.0, 0.1) == pytest.approx(1750.0)
    # the first step after t: never below the value before it
    assert value_before_step(step, 9.93, 10_000.0, 0.1) == pytest.approx(1300.0)
    assert value_before_step(step, 9.93, 20_000.0, 0.1) == pytest.approx(1000.0)
    # a step found two periods after t: its previous value is later than t, no floor
    assert value_before_step(step, 9.8, 5000.0, 0.1) == pytest.approx(1000.0)
    assert value_before_step(step, 9.75, 5000.0, 0.1) == pytest.approx(750.0)
    assert value_after_step(step, 10.02, 0.1) == pytest.approx(2200.0)


def test_meter_window_energy_is_accurate_despite_counter_steps():
    """200 W while working, 100 W otherwise; counter steps every 100 ms. A plain edge read
    can be off by up to a step (10-20 J here); the interpolated edges are not."""
    busy: list[list[float]] = []  # [start, end] of each work() call, on the monotonic clock

    def power_w(t: float) -> float:
        return 200.0 if any(a <= t < (b if b else float("inf")) for a, b in busy) else 100.0

    telemetry = FakeTelemetry(power_w=power_w, counter_step_s=0.1)

    def work():
        busy.append([time.monotonic(), 0.0])
        time.sleep(0.55)
        busy[-1][1] = time.monotonic()

    with ScheduledSampler(telemetry, [0], 50.0) as sampler:  # never late, whatever the load
        meter = EnergyMeter(telemetry, [0], sampler, lambda: None, use_counter=True)
        meter.calibrate()
        assert meter.step_periods_s == {0: pytest.approx(0.1, abs=0.01)}
        readings = [meter.window(work)[1] for _ in range(4)]
    for r in readings:
        truth_j = 200.0 * r.duration_s
        assert r.counter_j == pytest.approx(truth_j, rel=0.03)
    assert meter.edges_record().mode == "interpolated between counter steps"


def test_every_gpu_of_a_meter_over_several_is_metered_alike():
    """The closing edge waits for each GPU's steps one GPU after another, so the second
    GPU's first step comes 2-3 periods after the window closed; its value before that
    step (later than the close) once floored that GPU's edge, adding 1-2 periods of
    energy: +20% on a 0.5 s window at 100 W (a review, 2026-12-04)."""
    from ..fakes import fake_devices

    telemetry = FakeTelemetry(devices=fake_devices(2), power_w=lambda t: 100.0, counter_step_s=0.1)
    with ScheduledSampler(telemetry, [0, 1], 50.0) as sampler:
        meter = EnergyMeter(telemetry, [0, 1], sampler, lambda: None, use_counter=True)
        meter.calibrate()
        readings = [meter.window(lambda: time.sleep(0.5))[1] for _ in range(3)]
    for r in readings:
        truth_j = 100.0 * r.duration_s
        assert tuple(r.per_gpu_j) == (pytest.approx(truth_j, rel=0.03),) * 2, (r.per_gpu_j, truth_j)
    assert meter.edge_fallbacks == 0


def test_a_poll_that_fails_is_skipped_not_taken_for_a_step():
    """One failed read among the ~500 a second that polling makes refused the whole
    measurement (a review, 2026-12-05); a failed poll (None) is skipped, and the step is
    still timed between the last read of the old value and the first of the new."""
    counter = SteppingCounter(power_w=150.0, period_s=0.1)
    counter.t = 0.031
    reads = iter(range(1000))

    def flaky() -> float | None:
        value = counter.read_mj()
        return None if next(reads) in (0, 5, 40) else value  # the first read fails too

    step = wait_for_step(flaky, counter.clock, 1.0, pause=lambda: None)
    assert step is not None and step.time_s == pytest.approx(0.1, abs=2 * counter.read_cost_s)
    assert step.value_mj - step.previous_mj == pytest.approx(150.0 * 0.1 * 1000)
    unreadable = lambda: [counter.read_mj(), None][1]  # noqa: E731 - time passes, no value
    always = wait_for_step(unreadable, counter.clock, 0.3, pause=lambda: None)
    assert always is None  # never readable: the edge falls back to a plain read


def test_a_counter_that_never_moves_while_the_gpu_draws_power_is_not_used():
    """A counter NVML calls supported but which never moved gave 0 J windows and an
    internal error (a review, 2026-12-05): the meter uses the sampler, and says so."""

    class Frozen(FakeTelemetry):
        def energy_mj(self, index: int) -> int:
            super().energy_mj(index)
            return 123_456_789

    telemetry = Frozen(power_w=lambda t: 100.0)
    with ScheduledSampler(telemetry, [0], 50.0) as sampler:
        meter = EnergyMeter(telemetry, [0], sampler, lambda: None, use_counter=True)
        meter.calibrate()
        reading = meter.window(lambda: time.sleep(0.3))[1]
    assert meter.use_counter is False and meter.edges_record().mode == "no counter"
    assert reading.counter_j is None and reading.energy_j == pytest.approx(30.0, rel=0.15)
    # a counter that moves, however slowly, is kept (plain reads where it has no period)
    slow = FakeTelemetry(power_w=lambda t: 100.0, counter_step_s=0.8)
    with ScheduledSampler(slow, [0], 50.0) as sampler:
        kept = EnergyMeter(slow, [0], sampler, lambda: None, use_counter=True)
        kept.calibrate()
    assert kept.use_counter is True
