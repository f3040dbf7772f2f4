"""The power sampler: a thread reading power at a fixed rate, and the integration.

The k-th read is due at t0 + k / rate_hz on the monotonic clock, so no drift
accumulates; a tick the thread could not make in time is skipped (counted as late),
never made up in a burst. A read that fails is recorded as dropped: it adds no
sample, and the integral bridges the gap between its neighbours.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ecocompute.core.units import mw_to_w
from ecocompute.telemetry.base import (
    ClockSample,
    GpuTelemetry,
    TelemetryNotSupported,
    TelemetryReadError,
)


def integrate_trapezoid(
    times_s: Sequence[float], powers_w: Sequence[float], start_s: float, end_s: float
) -> float:
    """Energy in joules of the piecewise-linear power through the samples, over
    [start_s, end_s] exactly.

    Window edges are interpolated from the samples around them; where no sample lies
    before (after) the window, the nearest sample's power is held to the edge.
    Raises ValueError without samples or for an empty window.
    """
    if not times_s:
        raise ValueError("no power samples to integrate")
    if end_s <= start_s:
        raise ValueError(f"empty window [{start_s}, {end_s}]")
    pts_t = [start_s]
    pts_p = [_value_at(times_s, powers_w, start_s)]
    lo = bisect.bisect_right(times_s, start_s)
    hi = bisect.bisect_left(times_s, end_s)
    pts_t.extend(times_s[lo:hi])
    pts_p.extend(powers_w[lo:hi])
    pts_t.append(end_s)
    pts_p.append(_value_at(times_s, powers_w, end_s))
    return sum(
        (pts_t[i + 1] - pts_t[i]) * (pts_p[i + 1] + pts_p[i]) / 2.0 for i in range(len(pts_t) - 1)
    )


def _value_at(times_s: Sequence[float], powers_w: Sequence[float], t: float) -> float:
    i = bisect.bisect_left(times_s, t)
    if i < len(times_s) and times_s[i] == t:
        return powers_w[i]
    if i == 0:
        return powers_w[0]
    if i == len(times_s):
        return powers_w[-1]
    t0, t1 = times_s[i - 1], times_s[i]
    p0, p1 = powers_w[i - 1], powers_w[i]
    return p0 + (p1 - p0) * (t - t0) / (t1 - t0)


@dataclass
class DeviceTrace:
    """One device's reads: successful samples and the times of failed ones."""

    times_s: list[float] = field(default_factory=list)
    powers_w: list[float] = field(default_factory=list)
    dropped_times_s: list[float] = field(default_factory=list)
    last_error: str | None = None
    # clocks and clock-event reasons, read after power in the same tick, where offered
    clock_times_s: list[float] = field(default_factory=list)
    clocks: list[ClockSample] = field(default_factory=list)

    def clocks_between(self, start_s: float, end_s: float) -> list[ClockSample]:
        """The clock reads with start_s <= t <= end_s."""
        lo = bisect.bisect_left(self.clock_times_s, start_s)
        hi = bisect.bisect_right(self.clock_times_s, end_s)
        return self.clocks[lo:hi]

    def powers_between(self, start_s: float, end_s: float) -> list[float]:
        """The power samples (watts) with start_s <= t <= end_s."""
        lo = bisect.bisect_left(self.times_s, start_s)
        hi = bisect.bisect_right(self.times_s, end_s)
        return self.powers_w[lo:hi]

    def counts_between(self, start_s: float, end_s: float) -> tuple[int, int]:
        """(samples, dropped reads) with start_s <= t <= end_s."""
        ok = bisect.bisect_right(self.times_s, end_s) - bisect.bisect_left(self.times_s, start_s)
        bad = bisect.bisect_right(self.dropped_times_s, end_s) - bisect.bisect_left(
            self.dropped_times_s, start_s
        )
        return ok, bad


class PowerSampler:
    """Reads power of several devices at rate_hz in a daemon thread.

    read_power_w(index) returns watts or raises TelemetryReadError /
    TelemetryNotSupported (both count as a dropped read). read_clocks(index), where
    given, is read after power in the same tick and never raises (None: nothing read).
    Use as a context manager; read the traces only after stop().
    """

    def __init__(
        self,
        read_power_w: Callable[[int], float],
        indices: Sequence[int],
        rate_hz: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        read_clocks: Callable[[int], ClockSample | None] | None = None,
    ) -> None:
        if rate_hz <= 0:
            raise ValueError("rate_hz must be positive")
        self._read = read_power_w
        self._read_clocks = read_clocks
        self.indices = tuple(indices)
        self.rate_hz = rate_hz
        self._clock = clock
        self.traces = {i: DeviceTrace() for i in self.indices}
        self.late_ticks = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> PowerSampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("sampler already started")
        self._thread = threading.Thread(target=self.run, name="ecocompute-power", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def run(self, *, wait: Callable[[float], object] | None = None) -> None:
        """The sampling loop (the thread's body; tests drive it with a fake clock)."""
        wait = wait or self._stop.wait
        period_s = 1.0 / self.rate_hz
        t0 = self._clock()
        k = 0
        while not self._stop.is_set():
            due = t0 + k * period_s
            now = self._clock()
            if due > now:
                wait(due - now)
                if self._stop.is_set():
                    break
            elif now - due >= period_s:  # fell behind: skip to the next tick, no burst
                skipped = math.floor((now - due) / period_s)
                self.late_ticks += skipped
                k += skipped
                continue
            self.read_once()
            k += 1

    def read_once(self) -> None:
        for index in self.indices:
            trace = self.traces[index]
            try:
                watts = self._read(index)
                stamp = self._clock()
            except (TelemetryReadError, TelemetryNotSupported) as exc:
                trace.dropped_times_s.append(self._clock())
                trace.last_error = str(exc)
                continue
            trace.times_s.append(stamp)
            trace.powers_w.append(watts)
        if self._read_clocks is None:
            return
        for index in self.indices:
            sample = self._read_clocks(index)
            if sample is not None:
                trace = self.traces[index]
                trace.clock_times_s.append(self._clock())
                trace.clocks.append(sample)

    def energy_j(self, index: int, start_s: float, end_s: float) -> float:
        trace = self.traces[index]
        return integrate_trapezoid(trace.times_s, trace.powers_w, start_s, end_s)


# (telemetry, NVML indices, rate_hz) -> a sampler not yet started
SamplerOpener = Callable[[GpuTelemetry, Sequence[int], float], PowerSampler]


def open_power_sampler(
    telemetry: GpuTelemetry, indices: Sequence[int], rate_hz: float
) -> PowerSampler:
    """The sampler a measurement uses: power at rate_hz in its own thread, and beside each
    power read the clocks and the clock-event reasons (where the device offers them)."""
    return PowerSampler(
        lambda i: mw_to_w(telemetry.power_mw(i)),
        indices,
        rate_hz,
        read_clocks=telemetry.clock_sample,
    )
