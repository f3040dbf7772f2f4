"""Reports of one card model across its units: each unit's own estimate (groups.py), the
pooled delta by a random-effects model, the spread between units and a prediction
interval for a unit not yet measured; and the same per value of a recorded property (the
board part, the VBIOS) where that property separates the units.

Only measured reports of one card, model, format, software stack and protocol (tokens,
batch size, regime, GPU count) are pooled together, as aggregate groups them. The
statistics: core/meta.py.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import StatisticsError, correlation

from ecocompute.core.meta import RandomEffects, spread_words
from ecocompute.pooling.groups import Group, UnitEstimate, pool_estimates, unit_estimates
from ecocompute.results.collect import Report

LEAVE_ONE_OUT_FROM = 4  # units; three left give a prediction interval
CORRELATION_FROM = 5  # units that record idle power and FP16's energy: a correlation said
PROPERTIES = ("board_part", "vbios", "host_cpu")  # recorded properties that may separate units
LEFT_OUT = "no GPU UUID or no interval to weigh"  # why a report is in no unit's estimate
PROPERTY_WORDS = {"board_part": "board part", "vbios": "VBIOS", "host_cpu": "host CPU"}


@dataclass(frozen=True)
class Subgroup:
    """The units that share one value of a recorded property, pooled."""

    prop: str
    value: str
    units: tuple[UnitEstimate, ...]
    pooled: RandomEffects


@dataclass(frozen=True)
class UnitPool:
    """One aggregate group (a card model, model, format, software, protocol) across its
    units."""

    group: Group
    units: tuple[UnitEstimate, ...]
    pooled: RandomEffects | None  # None with no unit
    subgroups: Mapping[str, tuple[Subgroup, ...]]  # property -> its values' pools
    unplaced: tuple[Report, ...]  # reports without a UUID or without an interval
    # the pool without each unit in turn (from 4 units: 3 left give a prediction
    # interval), the unit whose leaving moves the pooled delta most first
    leave_one_out: tuple[tuple[UnitEstimate, RandomEffects], ...] = ()

    def idle_correlation(self) -> tuple[int, float, float] | None:
        """(units, r with FP16's energy per token, r with the delta): Pearson's r between
        each unit's idle power before the session and its FP16 energy per token, and its
        delta, over the units that record both (from CORRELATION_FROM units; None where
        fewer, or where either does not vary). On twelve H100 units FP16's energy followed
        idle power at r 0.82 (docs/units.md): a warmer, leakier chip is dearer."""
        known = [
            (u.idle_before_w, u.fp16_energy_per_token_mj, u.delta_pct)
            for u in self.units
            if u.idle_before_w is not None and u.fp16_energy_per_token_mj is not None
        ]
        if len(known) < CORRELATION_FROM:
            return None
        idle, fp16, delta = (list(column) for column in zip(*known, strict=True))
        try:
            return len(known), correlation(idle, fp16), correlation(idle, delta)
        except StatisticsError:  # a column that does not vary
            return None

    @property
    def separated_by(self) -> list[str]:
        """Properties whose values split the units into groups whose 95% intervals do
        not overlap (each value with at least two units)."""
        found = []
        for prop, groups in self.subgroups.items():
            if len(groups) < 2 or any(g.pooled.ci95 is None for g in groups):
                continue
            spans = sorted(g.pooled.ci95 for g in groups if g.pooled.ci95 is not None)
            if all(a[1] < b[0] for a, b in itertools.pairwise(spans)):
                found.append(prop)
        return found


def pool_units(groups: Sequence[Group]) -> list[UnitPool]:
    """Every measured group of quantized reports (aggregate's groups), pooled across its
    units."""
    pools = []
    for group in groups:
        if group.kind != "measured" or group.precision == "FP16":
            continue
        units, unplaced = unit_estimates(group.reports)
        pooled = pool_estimates(units) if units else None
        subgroups = {}
        for prop in PROPERTIES:
            values = {u.get(prop) for u in units}
            if None in values or len(values) < 2:
                continue  # not recorded for every unit, or the same for all
            subgroups[prop] = tuple(
                Subgroup(prop, value, members, pool_estimates(members))
                for value in sorted(v for v in values if v is not None)
                for members in [tuple(u for u in units if u.get(prop) == value)]
            )
        left = () if pooled is None else leave_one_out(units, pooled)
        pools.append(UnitPool(group, tuple(units), pooled, subgroups, tuple(unplaced), left))
    return pools


def leave_one_out(
    units: Sequence[UnitEstimate], whole: RandomEffects
) -> tuple[tuple[UnitEstimate, RandomEffects], ...]:
    """The pool without each unit in turn (an influence check: whether one unit carries
    the pooled delta or the spread), the one whose leaving moves whole's delta most
    first; none under four units."""
    if len(units) < LEAVE_ONE_OUT_FROM:
        return ()
    left = [(u, pool_estimates([o for o in units if o is not u])) for u in units]
    return tuple(sorted(left, key=lambda pair: -abs(pair[1].mu - whole.mu)))


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _r(r: float, n: int) -> str:
    """Pearson's r over n units with its 95% interval by Fisher's z (n >= 4)."""
    if abs(r) >= 1.0 - 1e-12:
        return f"{r:+.2f}"
    half = 1.959963984540054 / math.sqrt(n - 3)
    lo, hi = math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)
    return f"{r:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def _ci(ci: tuple[float, float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:+.1f}, {ci[1]:+.1f}]"


def render_units(pools: Sequence[UnitPool]) -> str:
    """The per-unit tables, the pooled lines and the per-property lines."""
    lines: list[str] = []
    for p in pools:
        g = p.group
        if lines:
            lines.append("")
        lines.append(
            f"{g.card} | {g.model} | {g.precision} vs FP16 | {g.protocol} | {g.fingerprint}"
        )
        lines.append(
            f"  {'unit':<14} {'board part':<20} {'VBIOS':<15} {'idle W':>6} {'FP16 mJ':>8} "
            f"{'tok/s':>5} {'n':>2} {'vs FP16':>8} {'95% CI (this unit)':>18}  host CPU"
        )
        for u in p.units:
            lines.append(
                f"  {u.tail:<14} {u.board_part or '-':<20} {u.vbios or '-':<15} "
                f"{_num(u.idle_before_w, '.0f'):>6} {_num(u.fp16_energy_per_token_mj, ',.0f'):>8} "
                f"{_num(u.fp16_tokens_per_s, '.1f'):>5} {len(u.reports):>2} "
                f"{u.delta_pct:>+7.2f}% {_ci(u.ci95_pct):>18}  {u.host_cpu or '-'}"
            )
        if p.pooled is not None:
            lines.append("  " + pooled_words(p.pooled, "card model"))
        if p.leave_one_out:
            unit, without = p.leave_one_out[0]
            lines.append(
                f"  without {unit.tail} (the unit that moves the pool most): "
                + pooled_words(without, "")
            )
        for prop, groups in p.subgroups.items():
            for s in groups:
                lines.append(f"  {PROPERTY_WORDS[prop]} {s.value}: " + pooled_words(s.pooled, ""))
            if prop in p.separated_by:
                lines.append(
                    f"  the {PROPERTY_WORDS[prop]} separates the units: its groups' intervals "
                    "do not overlap"
                )
        if (follows := p.idle_correlation()) is not None:
            n, r_fp16, r_delta = follows
            lines.append(
                f"  idle power before the session, across {n} units: Pearson r "
                f"{_r(r_fp16, n)} with FP16's energy per token, {_r(r_delta, n)} with the "
                "delta (95% intervals by Fisher's z; a correlation across these units, not a "
                "cause)"
            )
        if p.unplaced:
            lines.append(f"  ({len(p.unplaced)} report(s) left out: {LEFT_OUT})")
    return "\n".join(lines)


def pooled_words(r: RandomEffects, what: str) -> str:
    """ "pooled over 8 units: -14.4% [-17.2, -11.6]; between-unit sd 3.0 points;
    a new unit: [-22.3, -6.5]"; one unit is no pool: its figure is that card's, and one
    unit measures no spread between units (not a spread of 0); nor does a between-unit
    variance estimated at 0, where the units' own errors cover their scatter (then, from
    three units, the spread they cannot rule out is said)."""
    if r.k == 1:
        return f"one unit: {r.mu:+.2f}%, that card's; no spread between units measured"
    of = f" ({what})" if what else ""
    text = f"pooled over {r.k} units{of}: {r.mu:+.2f}%"
    if r.ci95 is not None:
        text += f" {_ci(r.ci95)}"
    text += f"; {spread_words(r.tau, None if r.spread_detected else r.tau_upper, 2)}"
    if r.pi95 is not None:
        text += f"; a unit not yet measured: {_ci(r.pi95)} (95% prediction)"
    return text


UNITS_FOOTNOTE = (
    "\nEach unit is one GPU (NVML UUID); several reports of one unit are combined into its "
    "one estimate, never counted as more units. Pooled: a random-effects model (REML "
    "between-unit variance, its 95% interval by the Q-profile; Hartung-Knapp interval, t on "
    "k-1 degrees of freedom; prediction interval for a unit not yet measured with the "
    "between-unit variance drawn from its confidence distribution), docs/units.md. "
    "A report's own interval holds for its unit only."
)
