"""What a measured report says of the state its GPUs were in: each trial's conditions
(temperatures at the edges, clocks, throttling, power against the limit), a summary per
format that names every window that ran throttled, and each GPU before the session."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.core.precision import Precision
from ecocompute.core.rounding import rounded
from ecocompute.monitor.conditions import WindowConditions, throttle_words
from ecocompute.task.protocol import GpuBefore
from ecocompute.task.trials import Trial


def conditions_record(c: WindowConditions) -> dict[str, Any]:
    """One GPU over one trial's window."""
    return {
        "nvml_index": c.nvml_index,
        "temperature_c": list(c.temperature_c),
        "memory_temperature_c": list(c.memory_temperature_c),
        "sm_clock_mhz_mean": rounded(c.sm_clock_mhz_mean, 1),
        "memory_clock_mhz_mean": rounded(c.memory_clock_mhz_mean, 1),
        "clock_samples": c.clock_samples,
        "clock_events_seen": list(c.clock_events_seen),
        "throttled_s": {k: round(v, 6) for k, v in c.throttled_s.items()},
        "power_of_limit_pct_mean": rounded(c.power_of_limit_pct_mean, 2),
        "power_of_limit_pct_max": rounded(c.power_of_limit_pct_max, 2),
        "throttles": list(c.throttles),
    }


def trial_conditions_fields(t: Trial) -> dict[str, Any]:
    """A trial record's conditions, where its window read any."""
    if not t.reading.conditions:
        return {}
    return {"conditions": [conditions_record(c) for c in t.reading.conditions]}


def conditions_block(by_format: Mapping[Precision, Sequence[Trial]]) -> dict[str, Any] | None:
    """Per format: how many windows ran throttled and why, the highest power against the
    limit, the temperatures and mean clocks. None where no window read conditions."""
    if not any(t.reading.conditions for ts in by_format.values() for t in ts):
        return None
    per_format = {}
    throttled_total = windows_total = 0
    reasons_all: dict[str, None] = {}
    for fmt, trials in by_format.items():
        throttled = [t for t in trials if t.reading.throttles]
        reasons: dict[str, None] = {}
        for t in throttled:
            for r in t.reading.throttles:
                reasons.setdefault(r, None)
                reasons_all.setdefault(r, None)
        conditions = [c for t in trials for c in t.reading.conditions]
        per_format[str(fmt)] = {
            "windows": len(trials),
            "throttled_windows": len(throttled),
            "throttled_trials": [t.index for t in throttled],
            "throttles": list(reasons),
            "power_of_limit_pct_max": rounded(
                _max(c.power_of_limit_pct_max for c in conditions), 2
            ),
            "power_of_limit_pct_mean": rounded(
                _mean(c.power_of_limit_pct_mean for c in conditions), 2
            ),
            "temperature_c_range": _range(t for c in conditions for t in c.temperature_c),
            "memory_temperature_c_range": _range(
                t for c in conditions for t in c.memory_temperature_c
            ),
            "sm_clock_mhz_mean": rounded(_mean(c.sm_clock_mhz_mean for c in conditions), 1),
            "memory_clock_mhz_mean": rounded(_mean(c.memory_clock_mhz_mean for c in conditions), 1),
        }
        throttled_total += len(throttled)
        windows_total += len(trials)
    return {
        "windows": windows_total,
        "throttled_windows": throttled_total,
        "throttles": list(reasons_all),
        "per_format": per_format,
        "note": throttled_note(per_format),
    }


def throttled_note(per_format: Mapping[str, Mapping[str, Any]]) -> str:
    """One sentence: no window was throttled, or which were and why; the figures include
    them (they are said here, never averaged in unseen)."""
    parts = [
        f"{fmt} {s['throttled_windows']} of {s['windows']} ({throttle_words(s['throttles'])})"
        for fmt, s in per_format.items()
        if s["throttled_windows"]
    ]
    if not parts:
        return (
            "No measured window met the power cap or a thermal or hardware slowdown "
            "(NVML's clock-event counters and reasons)."
        )
    return (
        "Windows that ran throttled: "
        + "; ".join(parts)
        + ". The figures include them; trials[].conditions says which and by how much."
    )


def before_session_record(before: GpuBefore | None) -> dict[str, Any] | None:
    if before is None:
        return None
    return {
        "idle_power_watts": round(before.idle_power_w, 3),
        "idle_seconds": round(before.idle_seconds, 3),
        "temperature_c": before.state.temperature_c,
        "memory_temperature_c": before.state.memory_temperature_c,
        "memory_used_mib": before.memory_used_mib,
    }


def _mean(values: Any) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known else None


def _max(values: Any) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def _range(values: Any) -> list[float] | None:
    known = [v for v in values if v is not None]
    return [min(known), max(known)] if known else None
