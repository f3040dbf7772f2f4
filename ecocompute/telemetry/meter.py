"""Measured windows: energy of the GPUs a model occupies between two synchronize()s.

The energy counter is read at the window's edges only (a read costs ~4 ms on some
hosts); the sampler runs in the background the whole time, and its integral over the
same window is computed after the window closes. Nothing but the measured callable
runs between the edges.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ecocompute.errors import MeasurementRefused
from ecocompute.telemetry.base import GpuTelemetry, TelemetryNotSupported, TelemetryReadError
from ecocompute.telemetry.sampler import PowerSampler
from ecocompute.units import mj_to_j

T = TypeVar("T")

# A window's sampled energy stands only if at least this share of the reads due in it
# succeeded; below it the measurement is refused (reads "keep failing").
MIN_VALID_SAMPLE_FRACTION = 0.5


@dataclass(frozen=True)
class WindowReading:
    start_s: float
    end_s: float
    counter_j: float | None  # summed over the GPUs; None without an energy counter
    sampled_j: float  # summed integral of the sampled power
    per_gpu_j: tuple[float, ...]  # by the primary source
    samples: int
    dropped: int

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

    def _counters_mj(self) -> list[int] | None:
        if not self.use_counter:
            return None
        try:
            return [self.telemetry.energy_mj(i) for i in self.indices]
        except (TelemetryReadError, TelemetryNotSupported) as exc:
            raise MeasurementRefused(f"energy counter read failed: {exc}") from None

    def run(
        self, work: Callable[[], T]
    ) -> tuple[T, float, float, list[int] | None, list[int] | None]:
        """Run work() between two synchronized edges; return raw edge readings."""
        self.synchronize()
        e0 = self._counters_mj()
        t0 = self.clock()
        result = work()
        self.synchronize()
        t1 = self.clock()
        e1 = self._counters_mj()
        return result, t0, t1, e0, e1

    def measure(self, work: Callable[[], T]) -> tuple[T, WindowReading]:
        """Run work() in a measured window (call while the sampler runs)."""
        result, t0, t1, e0, e1 = self.run(work)
        return result, self.reading(t0, t1, e0, e1)

    def idle(self, seconds: float, sleep: Callable[[float], None] = time.sleep) -> WindowReading:
        """A window with nothing running (models resident), for idle power."""
        _, t0, t1, e0, e1 = self.run(lambda: sleep(seconds))
        return self.reading(t0, t1, e0, e1)

    def reading(
        self, t0: float, t1: float, e0: list[int] | None, e1: list[int] | None
    ) -> WindowReading:
        """Turn edge readings and the sampler's trace into a checked WindowReading."""
        samples = dropped = 0
        sampled_per_gpu = []
        for i in self.indices:
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
        return WindowReading(
            start_s=t0,
            end_s=t1,
            counter_j=None if counter_per_gpu is None else sum(counter_per_gpu),
            sampled_j=sum(sampled_per_gpu),
            per_gpu_j=tuple(counter_per_gpu if counter_per_gpu is not None else sampled_per_gpu),
            samples=samples,
            dropped=dropped,
        )
