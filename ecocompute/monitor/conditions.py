"""What state a GPU was in during a measured window: temperatures at its edges, its
clocks, the clock-event (throttle) reasons it met, and its power against the limit.

Units of one card model differ, and so do the states one unit passes through (cold or
warm, at the power cap or not): a report records them per trial so that a window that
ran throttled is said, never averaged in unseen. Everything here is read outside the
window (the edges) or by the sampler thread that the protocol runs anyway; the figures
are computed after the window closes.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ecocompute.telemetry.base import (
    CLOCK_EVENT_BITS,
    THROTTLE_REASONS,
    ClockSample,
    EdgeState,
    clock_event_names,
)

NS_PER_S = 1e9
# A counter that moved by less than this over a window is read as not throttled: the
# counters tick in microseconds on some drivers, and one edge read may straddle a tick.
MIN_THROTTLED_S = 1e-3


@dataclass(frozen=True)
class WindowConditions:
    """One GPU over one window. None (or empty) wherever the device reported nothing."""

    nvml_index: int
    temperature_c: tuple[float | None, float | None] = (None, None)  # at open, at close
    memory_temperature_c: tuple[float | None, float | None] = (None, None)
    sm_clock_mhz_mean: float | None = None
    memory_clock_mhz_mean: float | None = None
    clock_samples: int = 0
    clock_events_seen: tuple[str, ...] = ()  # every reason some sample in the window showed
    throttled_s: Mapping[str, float] = field(default_factory=dict)  # counters, edge to edge
    power_limit_w: float | None = None
    power_of_limit_pct_mean: float | None = None  # the window's energy over its duration
    power_of_limit_pct_max: float | None = None  # the highest power sample in it

    @property
    def throttles(self) -> tuple[str, ...]:
        """The throttle reasons this window met (throttles_met)."""
        return throttles_met(self.throttled_s, self.clock_events_seen)


def throttles_met(throttled_s: Mapping[str, float], seen: Iterable[str]) -> tuple[str, ...]:
    """The throttle reasons a window met: a counter that moved (throttled_s, seconds by
    reason), or a sample that showed the reason (seen); in THROTTLE_REASONS order."""
    met = {r for r, s in throttled_s.items() if s >= MIN_THROTTLED_S} | set(seen)
    return tuple(r for r in THROTTLE_REASONS if r in met)


def window_conditions(
    index: int,
    start: EdgeState,
    end: EdgeState,
    clocks: Sequence[ClockSample],
    powers_w: Sequence[float],
    energy_j: float,
    duration_s: float,
    power_limit_w: float | None,
) -> WindowConditions:
    """The conditions of GPU `index` over a window, from its two edge states, the clock
    reads and power samples taken inside it, and its energy and duration."""
    sm = [c.sm_clock_mhz for c in clocks if c.sm_clock_mhz is not None]
    mem = [c.memory_clock_mhz for c in clocks if c.memory_clock_mhz is not None]
    seen = 0
    for c in clocks:
        if c.clock_events is not None:
            seen |= c.clock_events
    throttled = {
        reason: max(0.0, (end.throttle_ns[reason] - start.throttle_ns[reason]) / NS_PER_S)
        for reason in THROTTLE_REASONS
        if reason in start.throttle_ns and reason in end.throttle_ns
    }
    mean_pct = max_pct = None
    if power_limit_w and duration_s > 0:
        mean_pct = 100.0 * energy_j / duration_s / power_limit_w
        if powers_w:
            max_pct = 100.0 * max(powers_w) / power_limit_w
    return WindowConditions(
        nvml_index=index,
        temperature_c=(start.temperature_c, end.temperature_c),
        memory_temperature_c=(start.memory_temperature_c, end.memory_temperature_c),
        sm_clock_mhz_mean=statistics.fmean(sm) if sm else None,
        memory_clock_mhz_mean=statistics.fmean(mem) if mem else None,
        clock_samples=len(clocks),
        clock_events_seen=clock_event_names(seen),
        throttled_s=throttled,
        power_limit_w=power_limit_w,
        power_of_limit_pct_mean=mean_pct,
        power_of_limit_pct_max=max_pct,
    )


def throttle_words(reasons: Sequence[str]) -> str:
    """Reason names as a reader says them: "power cap", "thermal slowdown (hw)"."""
    words = {
        "power_cap": "the power cap",
        "hw_slowdown": "a hardware slowdown",
        "sw_thermal": "a thermal slowdown",
        "hw_thermal": "a hardware thermal slowdown",
        "hw_power_brake": "the power brake",
    }
    return ", ".join(words.get(r, r) for r in reasons)


__all__ = [
    "CLOCK_EVENT_BITS",
    "THROTTLE_REASONS",
    "WindowConditions",
    "throttle_words",
    "window_conditions",
]
