"""The whole-run power trace (--power_trace): power of the session's GPUs from before the
first model loads to the end of the run, with the edges of its phases, so that a window
can be re-cut afterwards. The reported energy never comes from it.

It never adds a read inside the protocol: its own thread samples only between the
protocol's phases (loading, preparing, unloading) and is paused, before the call
returns, for every protocol phase (idle window, warm-ups, measured trials) and for the
quality probe. Inside a protocol phase the trace holds the protocol sampler's own reads
(the 10 Hz cross-check that runs there anyway), merged in afterwards; during the quality
probe it holds nothing (its edges are marked). So nothing runs inside a measured window
that the protocol does not run, and "samplers stopped" stays true for the probe.

Times are seconds on the host's monotonic clock; to_trace_s() puts them on the trace's
own clock (0 at its start). Several GPUs: each tick's powers are summed (the trace is
of the GPUs the session holds together).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ecocompute.monitor.sampler import DeviceTrace, _value_at
from ecocompute.telemetry.base import TelemetryNotSupported, TelemetryReadError


@dataclass(frozen=True)
class TraceRecord:
    """A stopped trace: samples (monotonic seconds, watts summed over its GPUs), the
    phase edges (monotonic seconds) and how it was read."""

    start_s: float
    end_s: float
    times_s: tuple[float, ...]
    powers_w: tuple[float, ...]
    marks: Mapping[str, float]
    rate_hz: float
    dropped: int
    nvml_indices: tuple[int, ...]
    from_protocol: int  # samples taken from the protocol's own sampler

    def to_trace_s(self, t: float) -> float:
        return max(0.0, t - self.start_s)


def summed(traces: Mapping[int, DeviceTrace], indices: Sequence[int]) -> list[tuple[float, float]]:
    """The protocol sampler's reads of several GPUs as one series: at each read of the
    first GPU, the sum of every GPU's power (the others interpolated at that time)."""
    if not indices or not traces[indices[0]].times_s:
        return []
    first = traces[indices[0]]
    out = []
    for t, p in zip(first.times_s, first.powers_w, strict=True):
        total = p
        for i in indices[1:]:
            other = traces[i]
            if not other.times_s:
                break
            total += _value_at(other.times_s, other.powers_w, t)
        else:
            out.append((t, total))
    return out


class WholeRunTrace:
    """The trace's sampler: a daemon thread reading read_power_w(i) for every index at
    rate_hz while not paused. pause() returns only once no read is in progress and none
    will start before resume()."""

    def __init__(
        self,
        read_power_w: Callable[[int], float],
        indices: Sequence[int],
        rate_hz: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rate_hz <= 0:
            raise ValueError("rate_hz must be positive")
        self._read = read_power_w
        self.indices = tuple(indices)
        self.rate_hz = rate_hz
        self._clock = clock
        self._samples: list[tuple[float, float]] = []
        self._from_protocol = 0
        self.marks: dict[str, float] = {}
        self.dropped = 0
        self._lock = threading.Lock()  # held for each read
        self._running = threading.Event()  # set: the thread may read
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_s: float | None = None
        self._end_s: float | None = None
        self._record: TraceRecord | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("trace already started")
        self._start_s = self._clock()
        self.marks["trace_start_s"] = self._start_s
        self._running.set()
        self._thread = threading.Thread(target=self._loop, name="ecocompute-trace", daemon=True)
        self._thread.start()

    def mark(self, name: str, *, last: bool = False) -> None:
        """A phase edge now: the first time it is marked, or (last) the latest."""
        now = self._clock()
        if last or name not in self.marks:
            self.marks[name] = now

    def pause(self) -> None:
        self._running.clear()
        with self._lock:  # waits out a read in progress; none starts until resume()
            pass

    def resume(self) -> None:
        if not self._stop.is_set():
            self._running.set()

    def add_protocol_samples(self, samples: Sequence[tuple[float, float]]) -> None:
        """The protocol sampler's reads over a phase the trace was paused for."""
        self._samples.extend(samples)
        self._from_protocol += len(samples)

    def stop(self) -> TraceRecord:
        """Stop the thread; the record (the same one when called again)."""
        if self._record is not None:
            return self._record
        self._stop.set()
        self._running.set()  # wake a paused thread so that it can end
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        self._end_s = self._clock()
        self.marks["trace_end_s"] = self._end_s
        ordered = sorted(self._samples)
        start = self._start_s if self._start_s is not None else self._end_s
        self._record = TraceRecord(
            start_s=start,
            end_s=self._end_s,
            times_s=tuple(t for t, _ in ordered),
            powers_w=tuple(p for _, p in ordered),
            marks=dict(self.marks),
            rate_hz=self.rate_hz,
            dropped=self.dropped,
            nvml_indices=self.indices,
            from_protocol=self._from_protocol,
        )
        return self._record

    def _loop(self) -> None:
        period_s = 1.0 / self.rate_hz
        t0 = self._clock()
        k = 0
        while not self._stop.is_set():
            if not self._running.is_set():
                self._running.wait()
                k = math.ceil((self._clock() - t0) / period_s)  # no burst after a pause
                continue
            due = t0 + k * period_s
            now = self._clock()
            if due > now:
                self._stop.wait(due - now)
                continue
            k = max(k + 1, math.floor((now - t0) / period_s) + 1)
            with self._lock:
                if self._running.is_set() and not self._stop.is_set():
                    self._read_once()

    def _read_once(self) -> None:
        total = 0.0
        try:
            for i in self.indices:
                total += self._read(i)
        except (TelemetryReadError, TelemetryNotSupported):
            self.dropped += 1
            return
        self._samples.append((self._clock(), total))
