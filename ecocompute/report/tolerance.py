"""The writer's rounding, as the checks of a report's arithmetic carry it (the consistency
modules: report/consistency*.py).

A report's figures are rounded as report/trial_results.py writes them: energies per
token, watts, tokens per second, percentages and interval bounds to 3 decimals, joules
and seconds of a trial to 4. A figure derived from others is recomputed from the
rounded figures it derives from, over every value they may have had before their
rounding (interval arithmetic), and must lie within that range widened by its own
rounding. A report our writer made always passes; a figure changed by more than its
rounding does not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.report.schema import PUBLISHED_FORMATS

HALF_MJ = 0.0005  # energies per token: 3 decimals
HALF_J = 0.00005  # a trial's joules: 4 decimals
HALF_S = 0.00005  # a trial's seconds: 4 decimals
HALF_3DP = 0.0005  # watts, tokens per second, percentages: 3 decimals
HALF_PCT = 0.0005  # measured deltas and interval bounds: 3 decimals
HALF_DERIVED_PCT = 0.005  # a derived report's delta in format 1.2: 2 decimals
HALF_ONE_DECIMAL = 0.05  # the headline delta of formats 1.1 and 1.3 (and 1.1's energies)
SLACK = 1e-9  # float arithmetic on top of the rounding


def number(value: Any) -> float | None:
    """A JSON number as a float; None for anything else (true/false included)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def numbers_of(rows: Sequence[Mapping[str, Any]], key: str) -> list[float] | None:
    """Every row's number at key; None when one of them holds no number."""
    values = [number(row.get(key)) for row in rows]
    return None if None in values else [v for v in values if v is not None]


def close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance + SLACK * max(1.0, abs(a), abs(b))


def within(value: float, low: float, high: float, half: float) -> bool:
    """Whether value, rounded by +-half, can be a number in [low, high]."""
    slack = SLACK * max(1.0, abs(low), abs(high))
    return low - half - slack <= value <= high + half + slack


def quotient_range(
    numerator: float, numerator_half: float, denominator: float, denominator_half: float
) -> tuple[float, float] | None:
    """[low, high] of n / d over n within +-numerator_half and d within
    +-denominator_half; None when d may be zero or below."""
    d_lo, d_hi = denominator - denominator_half, denominator + denominator_half
    if d_lo <= 0:
        return None
    n_lo, n_hi = numerator - numerator_half, numerator + numerator_half
    quotients = (n_lo / d_lo, n_lo / d_hi, n_hi / d_lo, n_hi / d_hi)
    return min(quotients), max(quotients)


def pct_range(value: float, base: float, half: float) -> tuple[float, float]:
    """The percent change of value vs base over every pair of numbers that round to
    them (each within +-half); base - half must be positive."""
    lo_base, hi_base = max(base - half, 1e-300), base + half
    lo_value, hi_value = max(value - half, 0.0), value + half
    return 100.0 * (lo_value / hi_base - 1.0), 100.0 * (hi_value / lo_base - 1.0)


FORMAT_12 = "ecocompute-energy/1.2"
DELTA_3DP = "vs_fp16_energy_pct_3dp"


def delta_fields(doc: Mapping[str, Any]) -> list[tuple[str, float]]:
    """The report's headline delta fields, each with half of its rounding: one decimal
    in formats 1.1 and 1.3 (with the 3-decimal one beside it in 1.3), 3 (measured) or 2
    (derived) in 1.2."""
    results = doc.get("results") or {}
    if doc.get("schema_version") == FORMAT_12:
        half = HALF_PCT if results.get("basis") == "measured" else HALF_DERIVED_PCT
    else:
        half = HALF_ONE_DECIMAL
    fields = [("vs_fp16_energy_pct", half)]
    if DELTA_3DP in results and doc.get("schema_version") not in PUBLISHED_FORMATS:
        fields.append((DELTA_3DP, HALF_PCT))  # ours: never read from a published report
    return fields
