"""The GPUs' state over a report's measured windows, derived from its trials'
conditions: the windows that ran throttled and why, power against the limit,
temperatures, mean clocks (report/derive.py's results.conditions)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping

from ecocompute.monitor.conditions import throttle_words
from ecocompute.report.results_model import (
    Conditions,
    Format,
    FormatConditions,
    Throttle,
    Trial,
)


def _known(values: Iterable[float | None]) -> list[float]:
    return [v for v in values if v is not None]


def _mean(values: Iterable[float | None]) -> float | None:
    known = _known(values)
    return statistics.fmean(known) if known else None


def _range(values: Iterable[float | None]) -> list[float] | None:
    known = _known(values)
    return [min(known), max(known)] if known else None


def conditions_of(formats: Mapping[Format, list[Trial]]) -> Conditions | None:
    """Per format: the windows that ran throttled and why, power against the limit,
    temperatures, mean clocks. None where no window read conditions."""
    if not any(t.conditions for ts in formats.values() for t in ts):
        return None
    per: dict[Format, FormatConditions] = {}
    seen: dict[Throttle, None] = {}
    for fmt, trials in formats.items():
        throttled = [t for t in trials if any(c.throttles for c in t.conditions)]
        reasons = dict.fromkeys(r for t in throttled for c in t.conditions for r in c.throttles)
        seen.update(reasons)
        cs = [c for t in trials for c in t.conditions]
        per[fmt] = FormatConditions.model_construct(
            windows=len(trials),
            throttled_windows=len(throttled),
            throttled_trials=[t.index for t in throttled],
            throttles=list(reasons),
            power_of_limit_pct_max=max(_known(c.power_of_limit_pct_max for c in cs), default=None),
            power_of_limit_pct_mean=_mean(c.power_of_limit_pct_mean for c in cs),
            temperature_c_range=_range(x for c in cs for x in c.temperature_c),
            memory_temperature_c_range=_range(x for c in cs for x in c.memory_temperature_c),
            sm_clock_mhz_mean=_mean(c.sm_clock_mhz_mean for c in cs),
            memory_clock_mhz_mean=_mean(c.memory_clock_mhz_mean for c in cs),
        )
    return Conditions.model_construct(
        windows=sum(c.windows for c in per.values()),
        throttled_windows=sum(c.throttled_windows for c in per.values()),
        throttles=list(seen),
        per_format=per,
        note=throttled_note(per),
    )


def throttled_note(per: Mapping[Format, FormatConditions]) -> str:
    parts = [
        f"{fmt} {c.throttled_windows} of {c.windows} ({throttle_words(c.throttles)})"
        for fmt, c in per.items()
        if c.throttled_windows
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
