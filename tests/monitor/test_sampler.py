"""The power sampler's schedule and integration, against analytic values (no threads)."""

from __future__ import annotations

import math

import pytest

from ecocompute.errors import MeasurementRefused
from ecocompute.monitor.meter import EnergyMeter, WindowEdges
from ecocompute.monitor.sampler import PowerSampler, integrate_trapezoid
from ecocompute.telemetry.base import TelemetryReadError

from ..fakes import FakeClock, FakeTelemetry, drive


def test_reads_stay_on_the_fixed_schedule_without_drift():
    clock = FakeClock()
    sampler = PowerSampler(lambda i: 100.0, [0], 10.0, clock=clock)
    t0 = clock.t
    times = drive(sampler, clock, reads=50, read_cost_s=lambda k: 0.007)
    assert [round(t - t0, 9) for t in times] == [round(k / 10.0, 9) for k in range(50)]
    assert sampler.late_ticks == 0


def test_a_stall_skips_ticks_instead_of_bursting():
    clock = FakeClock()
    sampler = PowerSampler(lambda i: 100.0, [0], 10.0, clock=clock)
    t0 = clock.t
    # the 5th read (due 0.4) stalls until 0.75: ticks 5 and 6 are skipped, tick 7 (due
    # 0.7) is read late at once, then the grid resumes; nothing is read twice to catch up
    times = drive(sampler, clock, reads=10, read_cost_s=lambda k: 0.35 if k == 5 else 0.001)
    offsets = [round(t - t0, 6) for t in times]
    assert offsets[:5] == [0.0, 0.1, 0.2, 0.3, 0.4]
    assert offsets[5] == pytest.approx(0.75, abs=1e-6)
    assert offsets[6:] == [0.8, 0.9, 1.0, 1.1]
    assert sampler.late_ticks == 2


def test_failed_reads_are_counted_as_dropped_not_samples():
    clock = FakeClock()

    def read(i: int) -> float:
        if 3 <= len(sampler.traces[0].times_s) + len(sampler.traces[0].dropped_times_s) < 6:
            raise TelemetryReadError("busy")
        return 120.0

    sampler = PowerSampler(read, [0], 10.0, clock=clock)
    drive(sampler, clock, reads=10)
    trace = sampler.traces[0]
    assert len(trace.times_s) == 7 and len(trace.dropped_times_s) == 3
    assert trace.last_error == "busy"


@pytest.mark.parametrize(
    ("power", "energy"),
    [
        (lambda t: 150.0, lambda a, b: 150.0 * (b - a)),  # constant
        (lambda t: 100.0 + 20.0 * t, lambda a, b: 100.0 * (b - a) + 10.0 * (b * b - a * a)),  # ramp
    ],
)
def test_trapezoid_is_exact_for_piecewise_linear_power(power, energy):
    times = [k * 0.1 for k in range(0, 101)]
    watts = [power(t) for t in times]
    # window edges between samples are interpolated, so the integral covers them exactly
    assert integrate_trapezoid(times, watts, 1.234, 7.891) == pytest.approx(energy(1.234, 7.891))


def test_step_in_power_is_within_one_sample_of_the_truth():
    times = [k * 0.1 for k in range(0, 101)]
    watts = [100.0 if t < 5.05 else 300.0 for t in times]
    truth = 100.0 * (5.05 - 2.0) + 300.0 * (8.0 - 5.05)
    # one sample interval straddles the step: error at most 0.1 s * 200 W / 2
    assert abs(integrate_trapezoid(times, watts, 2.0, 8.0) - truth) <= 0.1 * 200.0 / 2 + 1e-9


def test_window_edges_outside_the_samples_hold_the_nearest_value():
    assert integrate_trapezoid([1.0, 2.0], [100.0, 100.0], 0.5, 2.5) == pytest.approx(200.0)
    with pytest.raises(ValueError):
        integrate_trapezoid([], [], 0.0, 1.0)
    with pytest.raises(ValueError):
        integrate_trapezoid([1.0], [1.0], 2.0, 2.0)


def test_sine_power_integral_converges():
    times = [k * 0.1 for k in range(0, 301)]
    watts = [120.0 + 30.0 * math.sin(t) for t in times]
    truth = 120.0 * 25.0 + 30.0 * (math.cos(2.0) - math.cos(27.0))
    assert integrate_trapezoid(times, watts, 2.0, 27.0) == pytest.approx(truth, rel=1e-3)


def test_meter_refuses_when_most_reads_fail():
    clock = FakeClock()
    telemetry = FakeTelemetry(fail_read=lambda k: k % 4 != 0, clock=clock)
    sampler = PowerSampler(lambda i: telemetry.power_mw(i) / 1000, [0], 10.0, clock=clock)
    drive(sampler, clock, reads=60)
    meter = EnergyMeter(telemetry, [0], sampler, lambda: None, use_counter=False, clock=clock)
    with pytest.raises(MeasurementRefused, match="power reads kept failing"):
        meter.reading(WindowEdges(100.5, 105.5, None, None))


def test_meter_accepts_intermittent_drops_and_counts_them():
    clock = FakeClock()
    telemetry = FakeTelemetry(power_w=lambda t: 130.0, fail_read=lambda k: k % 5 == 0, clock=clock)
    sampler = PowerSampler(lambda i: telemetry.power_mw(i) / 1000, [0], 10.0, clock=clock)
    drive(sampler, clock, reads=60)
    meter = EnergyMeter(telemetry, [0], sampler, lambda: None, use_counter=False, clock=clock)
    reading = meter.reading(WindowEdges(100.5, 105.5, None, None))
    assert reading.dropped == 10
    assert reading.samples == 40
    assert reading.sampled_j == pytest.approx(130.0 * 5.0)


def test_the_window_opens_and_closes_on_a_synchronized_device():
    """Work queued on the GPU before the window would fall inside it: the meter waits
    for the device at both edges (deleting the opening wait passed every test)."""
    clock = FakeClock()
    telemetry = FakeTelemetry(power_w=lambda t: 130.0, clock=clock)
    sampler = PowerSampler(lambda i: telemetry.power_mw(i) / 1000, [0], 10.0, clock=clock)
    events: list[str] = []
    meter = EnergyMeter(
        telemetry, [0], sampler, lambda: events.append("sync"), use_counter=False, clock=clock
    )
    meter.run(lambda: events.append("work"))
    at = events.index("work")
    assert "sync" in events[:at] and events[at + 1 :] == ["sync"]


def test_a_counter_that_goes_backwards_refuses_the_window():
    clock = FakeClock()
    telemetry = FakeTelemetry(power_w=lambda t: 130.0, clock=clock)
    sampler = PowerSampler(lambda i: telemetry.power_mw(i) / 1000, [0], 10.0, clock=clock)
    drive(sampler, clock, reads=60)
    meter = EnergyMeter(telemetry, [0], sampler, lambda: None, use_counter=True, clock=clock)
    with pytest.raises(MeasurementRefused, match="energy counter went backwards"):
        meter.reading(WindowEdges(100.5, 105.5, (5_000_000,), (4_000_000,)))
