"""The published format's `thermal` block (its 1.2 and 1.3; Protocol v1.1 section 4.6),
derived from a measured report's trials: the temperatures NVML read at every window's
edges, the warm-up count and the order the arms ran in. A reader derives it again from
the same trials (report/checks.py), as every other derived figure.

What the fields mean here:
- mode `steady`: the protocol measures after its warm-ups, never from a cooled card;
  cooldown_s 0 (no cooldown is enforced);
- temperature_start_c / temperature_end_c: the hottest GPU of the trial just before the
  first measured window opened / just after the last one closed;
- temperature_peak_c: the highest of every window's edge temperatures;
- steady_state_reached: the windows of the last half of the trials span at most
  STEADY_SPAN_C; then temperature_steady_c is their mean edge temperature, else null;
- arm_order: `counterbalanced` where the order rotated from round to round, else
  `fixed`, with the order said in the note;
- basis `unavailable` where no window read a temperature (then every temperature is null).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ecocompute.report.model import Thermal
from ecocompute.report.results_model import Trial

STEADY_SPAN_C = 2.0
"""The most the last half of the windows' edge temperatures may span to count as steady."""

_FIXED = {
    "interleaved": "fixed: FP16 then the quantized format in every pair, the pairs back to "
    "back, so drift falls on both arms",
    "alternating blocks": "fixed: every FP16 trial, then every quantized trial (the two did "
    "not fit on the GPUs together); drift between the blocks is not cancelled",
    "single format": "fixed: one arm (FP16 alone)",
}


def _edges(t: Trial) -> tuple[float | None, float | None]:
    """The hottest GPU's temperature at the window's opening and closing edge."""
    opened = [c.temperature_c[0] for c in t.conditions if c.temperature_c[0] is not None]
    closed = [c.temperature_c[1] for c in t.conditions if c.temperature_c[1] is not None]
    return (max(opened) if opened else None, max(closed) if closed else None)


def thermal_of(trials: Sequence[Trial], warmup: int | None, order: str | None) -> Thermal:
    """The thermal block of a measured run of these trials."""
    ordered = sorted(trials, key=lambda t: t.index)
    edges = [_edges(t) for t in ordered]
    known = [x for pair in edges for x in pair if x is not None]
    arm_order = "counterbalanced" if order == "rotated" else "fixed"
    order_words = (
        "counterbalanced: every format measured once per round, the order rotated by one "
        "place from round to round"
        if arm_order == "counterbalanced"
        else _FIXED.get(order or "", "fixed")
    )
    tail = [x for pair in edges[len(edges) // 2 :] for x in pair if x is not None]
    steady = bool(tail) and max(tail) - min(tail) <= STEADY_SPAN_C
    if known:
        note = (
            "GPU temperature (NVML, the hottest GPU of the trial) just outside each measured "
            f"window's edges, after {warmup or 0} warm-up(s) per format and no enforced "
            "cooldown; steady: the last half of the trials' windows within "
            f"{STEADY_SPAN_C:g} C, their mean. Arm order {order_words}."
        )
    else:
        note = f"NVML read no GPU temperature at the windows' edges. Arm order {order_words}."
    return Thermal(
        mode="steady",
        basis="measured" if known else "unavailable",
        warmup_runs=warmup,
        cooldown_s=0.0,
        temperature_start_c=edges[0][0] if known else None,
        temperature_steady_c=math.fsum(tail) / len(tail) if steady else None,
        temperature_end_c=edges[-1][1] if known else None,
        temperature_peak_c=max(known, default=None),
        steady_state_reached=steady if known else None,
        arm_order=arm_order,
        note=note,
    )
