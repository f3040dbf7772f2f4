"""Sums in a report are correctly rounded (math.fsum), so a report written under one Python
reads back exactly under another. Python 3.12's sum() compensates and 3.11's does not: an
H200 report written under 3.12 once failed its own re-derivation when read under 3.11."""

from __future__ import annotations

import math

from ecocompute.report import derive

from ..made_reports import made_trial

# Ten readings whose left-to-right float sum is not the correctly rounded sum.
TENTHS = [0.1] * 10


def test_the_readings_are_ones_a_plain_sum_rounds_differently():
    total = 0.0
    for x in TENTHS:
        total += x
    assert total != math.fsum(TENTHS)


def test_a_formats_totals_are_the_correctly_rounded_sums():
    trials = [made_trial(k, None, "FP16", [e], e, 4) for k, e in enumerate(TENTHS)]
    facts = derive.FormatFacts("FP16", "torch", (0,))
    stats = derive.format_stats(
        trials, facts, derive.Measured("FP16", tuple(trials), {}, None, 1, None)
    )
    assert stats.total_energy_joules == math.fsum(TENTHS) == 1.0
    assert stats.avg_power_watts == 1.0
