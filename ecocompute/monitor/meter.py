"""Measured windows: energy of the GPUs a model occupies between two synchronize()s.

The energy counter is read at the window's edges only (a read costs ~4 ms on some
hosts); the sampler runs in the background the whole time, and its integral over the
same window is computed after the window closes. Nothing but the measured callable
runs between the edges.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ecocompute.core.units import mj_to_j, mw_to_w
from ecocompute.errors import MeasurementRefused
from ecocompute.monitor.conditions import WindowConditions, window_conditions
from ecocompute.monitor.counter_edges import (
    MAX_WAIT_PERIODS,
    rate_between,
    step_period_s,
    value_after_step,
    value_before_step,
    wait_for_step,
)
from ecocompute.monitor.sampler import PowerSampler
from ecocompute.telemetry.base import (
    EdgeState,
    GpuTelemetry,
    TelemetryNotSupported,
    TelemetryReadError,
)

T = TypeVar("T")

# How a meter read the counter at window edges, most precise first.
INTERPOLATED = "interpolated between counter steps"
PLAIN_READS = "plain reads"
NO_COUNTER = "no counter"
EDGE_MODES = (INTERPOLATED, PLAIN_READS, NO_COUNTER)


@dataclass(frozen=True)
class EdgesRecord:
    mode: str  # one of EDGE_MODES
    step_period_ms: float | None  # the slowest counter's period between steps
    fallback_edges: int  # edges where no step was found in time (a plain read instead)

    @classmethod
    def least_precise(cls, records: Sequence[EdgesRecord]) -> EdgesRecord:
        """The least precise meter's mode, with every meter's fallback edges counted."""
        worst = max(records, key=lambda r: EDGE_MODES.index(r.mode))
        return cls(worst.mode, worst.step_period_ms, sum(r.fallback_edges for r in records))


@dataclass(frozen=True)
class WindowEdges:
    """What a window's two edges read: times, counter values (None without a counter)
    and each GPU's state just outside each edge."""

    t0: float
    t1: float
    e0: list[float] | None
    e1: list[float] | None
    s0: tuple[EdgeState, ...] = ()
    s1: tuple[EdgeState, ...] = ()


# A window's sampled energy stands only if at least this share of the reads due in it
# succeeded; below it the measurement is refused (reads "keep failing").
MIN_VALID_SAMPLE_FRACTION = 0.5
log = logging.getLogger(__name__)
# A counter stepping faster than this is read plainly: its staleness is negligible.
MIN_STEP_PERIOD_S = 0.005
CALIBRATION_S = 1.5  # how long calibrate() polls a counter for its steps


@dataclass(frozen=True)
class WindowReading:
    start_s: float
    end_s: float
    counter_j: float | None  # summed over the GPUs; None without an energy counter
    sampled_j: float  # summed integral of the sampled power
    per_gpu_j: tuple[float, ...]  # by the primary source
    samples: int
    dropped: int
    # each GPU's state over the window (temperatures, clocks, throttling), in the order
    # of per_gpu_j; empty where nothing was read (a stand-in without such telemetry)
    conditions: tuple[WindowConditions, ...] = ()

    @property
    def throttles(self) -> tuple[str, ...]:
        """Every throttle reason some GPU of the window met."""
        seen: dict[str, None] = {}
        for c in self.conditions:
            for reason in c.throttles:
                seen.setdefault(reason, None)
        return tuple(seen)

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def energy_j(self) -> float:
        """The primary figure: the counter where there is one, else the samples."""
        return self.counter_j if self.counter_j is not None else self.sampled_j

    @property
    def sampled_vs_counter_pct(self) -> float | None:
        if self.counter_j is None or self.counter_j == 0:
            return None
        return (self.sampled_j - self.counter_j) / self.counter_j * 100.0


class EnergyMeter:
    """Reads windows on a fixed set of telemetry devices (the ones a model occupies)."""

    def __init__(
        self,
        telemetry: GpuTelemetry,
        indices: Sequence[int],
        sampler: PowerSampler,
        synchronize: Callable[[], None],
        *,
        use_counter: bool,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.telemetry = telemetry
        self.indices = tuple(indices)
        self.sampler = sampler
        self.synchronize = synchronize
        self.use_counter = use_counter
        self.clock = clock
        # Seconds between the counter's steps per device; None: plain edge reads.
        self.step_periods_s: dict[int, float] | None = None
        self.edge_fallbacks = 0  # edges where no step was found in time (plain read used)
        limits = {i: telemetry.power_limit_mw(i) for i in self.indices}
        self.power_limits_w = {i: None if mw is None else mw_to_w(mw) for i, mw in limits.items()}

    def edges_record(self) -> EdgesRecord:
        """How the counter was read at window edges, for the report."""
        if not self.use_counter:
            return EdgesRecord(NO_COUNTER, None, 0)
        if self.step_periods_s is None:
            return EdgesRecord(PLAIN_READS, None, 0)
        period_ms = max(self.step_periods_s.values()) * 1000.0
        return EdgesRecord(INTERPOLATED, period_ms, self.edge_fallbacks)

    def _read_mj(self, index: int) -> float:
        try:
            return float(self.telemetry.energy_mj(index))
        except (TelemetryReadError, TelemetryNotSupported) as exc:
            raise MeasurementRefused(f"energy counter read failed: {exc}") from None

    def calibrate(self) -> None:
        """Find how often each counter steps (outside any window). Leaves plain edge
        reads in place where a counter does not step regularly; a counter that never
        moved while its GPU drew power is not used (the sampler's energy is, labelled)."""
        if not self.use_counter:
            return
        periods = {}
        for i in self.indices:
            before = self._read_mj(i)
            period = step_period_s(self._poller(i), self.clock, timeout_s=CALIBRATION_S)
            if period is None and self._read_mj(i) == before and self._drawing(i):
                log.warning(
                    "GPU %d's energy counter did not move in the calibration's %.1f s while "
                    "the GPU drew power: energy comes from the power sampler",
                    i,
                    CALIBRATION_S,
                )
                self.use_counter = False
                return
            if period is None or period < MIN_STEP_PERIOD_S:
                return  # no regular steps, or a counter that moves on every read
            periods[i] = period
        self.step_periods_s = periods

    def _drawing(self, index: int) -> bool:
        try:
            return self.telemetry.power_mw(index) > 0
        except (TelemetryReadError, TelemetryNotSupported):
            return False  # unknown: the counter stays, as it was

    def _poller(self, index: int) -> Callable[[], float | None]:
        """A counter read for polling around an edge: one read that fails is skipped
        (None), as the sampler skips one; the edge falls back to a plain read, which
        refuses, only if the counter stays unreadable for the whole wait."""

        def poll() -> float | None:
            try:
                return float(self.telemetry.energy_mj(index))
            except TelemetryReadError:
                return None
            except TelemetryNotSupported as exc:
                raise MeasurementRefused(f"energy counter read failed: {exc}") from None

        return poll

    def _open(self) -> tuple[list[float] | None, float]:
        """Opening edge: (counter values, t0). With located steps the window opens right
        after a step on every device, so each value is at most one read old."""
        periods = self.step_periods_s
        if not self.use_counter or periods is None:
            values = [self._read_mj(i) for i in self.indices] if self.use_counter else None
            return values, self.clock()
        steps = {
            i: wait_for_step(self._poller(i), self.clock, MAX_WAIT_PERIODS * periods[i])
            for i in self.indices
        }
        t0 = self.clock()
        values = []
        for i, step in steps.items():
            if step is None:
                self.edge_fallbacks += 1
                values.append(self._read_mj(i))
            else:
                values.append(value_after_step(step, t0, periods[i]))
        return values, t0

    def _close(self, t1: float) -> list[float] | None:
        """Closing edge at t1: the next two steps give the idle rate, and the value at t1
        is found by going back from the first of them."""
        periods = self.step_periods_s
        if not self.use_counter or periods is None:
            return [self._read_mj(i) for i in self.indices] if self.use_counter else None
        values = []
        for i in self.indices:
            timeout_s = MAX_WAIT_PERIODS * periods[i]
            first = wait_for_step(self._poller(i), self.clock, timeout_s)
            second = wait_for_step(self._poller(i), self.clock, timeout_s) if first else None
            if first is None or second is None:
                self.edge_fallbacks += 1
                values.append(self._read_mj(i))
            else:
                rate = rate_between(first, second)
                values.append(value_before_step(first, t1, rate, periods[i]))
        return values

    def run(self, work: Callable[[], T]) -> tuple[T, WindowEdges]:
        """Run work() between two synchronized edges; return the edge readings.

        Between t0 and t1 only work() runs; the counter's steps are located before t0
        and after t1, and each GPU's state is read before the opening edge and after the
        closing one.
        """
        self.synchronize()
        s0 = self._states()
        e0, t0 = self._open()
        result = work()
        self.synchronize()
        t1 = self.clock()
        e1 = self._close(t1)
        return result, WindowEdges(t0, t1, e0, e1, s0, self._states())

    def _states(self) -> tuple[EdgeState, ...]:
        return tuple(self.telemetry.edge_state(i) for i in self.indices)

    def window(self, work: Callable[[], T]) -> tuple[T, WindowReading]:
        """Run work() in a measured window (call while the sampler runs)."""
        result, edges = self.run(work)
        return result, self.reading(edges)

    def idle(self, seconds: float, sleep: Callable[[float], None] = time.sleep) -> WindowReading:
        """A window with nothing running (models resident), for idle power."""
        _, edges = self.run(lambda: sleep(seconds))
        return self.reading(edges)

    def reading(self, edges: WindowEdges, only: Sequence[int] | None = None) -> WindowReading:
        """Turn edge readings and the sampler's trace into a checked WindowReading: of
        every GPU this meter reads, or of `only` those (NVML indices, a subset: the same
        window's reading split between the GPUs a model occupies and the others)."""
        t0, t1, e0, e1 = edges.t0, edges.t1, edges.e0, edges.e1
        indices = self.indices if only is None else tuple(only)
        at = [self.indices.index(i) for i in indices]
        if only is not None:
            e0 = None if e0 is None else [e0[k] for k in at]
            e1 = None if e1 is None else [e1[k] for k in at]
        samples = dropped = 0
        sampled_per_gpu = []
        for i in indices:
            ok, bad = self.sampler.traces[i].counts_between(t0, t1)
            samples += ok
            dropped += bad
            due = (t1 - t0) * self.sampler.rate_hz
            trace = self.sampler.traces[i]
            if not trace.times_s or (due >= 2 and ok < MIN_VALID_SAMPLE_FRACTION * due):
                why = trace.last_error or "the sampler fell behind"
                raise MeasurementRefused(
                    f"power reads kept failing on GPU {i}: {ok} of ~{due:.0f} reads due in a "
                    f"{t1 - t0:.2f} s window succeeded ({why})"
                )
            sampled_per_gpu.append(self.sampler.energy_j(i, t0, t1))
        counter_per_gpu: list[float] | None = None
        if e0 is not None and e1 is not None:
            counter_per_gpu = [mj_to_j(b - a) for a, b in zip(e0, e1, strict=True)]
            if any(x < 0 for x in counter_per_gpu):
                raise MeasurementRefused("energy counter went backwards (driver reloaded?)")
        per_gpu = tuple(counter_per_gpu if counter_per_gpu is not None else sampled_per_gpu)
        return WindowReading(
            start_s=t0,
            end_s=t1,
            counter_j=None if counter_per_gpu is None else sum(counter_per_gpu),
            sampled_j=sum(sampled_per_gpu),
            per_gpu_j=per_gpu,
            samples=samples,
            dropped=dropped,
            conditions=self._conditions(edges, indices, at, per_gpu),
        )

    def _conditions(
        self,
        edges: WindowEdges,
        indices: Sequence[int],
        at: Sequence[int],
        per_gpu_j: Sequence[float],
    ) -> tuple[WindowConditions, ...]:
        if not edges.s0 or not edges.s1:
            return ()
        out = []
        for i, k, energy_j in zip(indices, at, per_gpu_j, strict=True):
            trace = self.sampler.traces[i]
            out.append(
                window_conditions(
                    i,
                    edges.s0[k],
                    edges.s1[k],
                    trace.clocks_between(edges.t0, edges.t1),
                    trace.powers_between(edges.t0, edges.t1),
                    energy_j,
                    edges.t1 - edges.t0,
                    self.power_limits_w.get(i),
                )
            )
        return tuple(out)
