"""aggregate's groups: reports of one kind (measured, illustrative, derived), card,
model, size, format, software fingerprint and protocol, and what a group says across
its reports and, where the reports name them, its GPU units: each unit's estimate
here, the pool across units in units.py.

A report's interval holds for the unit that measured it. Units are told apart by their
GPUs' NVML UUIDs: two reports of one unit (a rerun, another session) are combined into
that unit's one estimate (inverse-variance, since they share its true value; widened
where they disagree beyond their errors, with a t interval: core/meta.py's within_unit),
never counted as two units. The statistics: core/meta.py."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ecocompute.core.meta import RandomEffects, pool, within_unit
from ecocompute.core.stats import CONFIDENCE, Summary, summarise_known, t_interval, t_quantile
from ecocompute.report.labels import unit_tail
from ecocompute.results.collect import Report
from ecocompute.results.record import ILLUSTRATIVE

# a derived report's figure is the site's anchors at a measured size, a fitted curve (the
# site's, one it borrows for another class, or this project's own for Hopper), or this
# project's own reports: each report names its source (results.reference_*, its note)
DERIVED_WORDS = (
    "DERIVED from published anchors or fitted curves (or this project's own figures: "
    "each report names its source), nothing measured here"
)
KIND_ORDER = {"measured": 0, "illustrative": 1, "derived": 2}
KIND_WORDS = {
    "measured": "measured",
    "illustrative": "ILLUSTRATIVE: the reports say they are not a real measurement",
    "derived": DERIVED_WORDS,
}


@dataclass(frozen=True)
class UnitEstimate:
    """One unit's delta: from its one report, or its reports combined."""

    unit: str  # NVML UUID(s)
    board_part: str | None
    vbios: str | None
    idle_before_w: float | None
    host_cpu: str | None
    reports: tuple[Report, ...]
    delta_pct: float
    se_pct: float
    df: float  # the Student t degrees of freedom of its interval

    @property
    def tail(self) -> str:
        return unit_tail(self.unit)

    @property
    def ci95_pct(self) -> tuple[float, float]:
        """The unit's own interval: its single report's, or the combination's (Student t
        on df, from the combined standard error, where several reports were combined)."""
        if len(self.reports) == 1 and self.reports[0].ci95_pct is not None:
            return self.reports[0].ci95_pct
        half = t_quantile(0.5 + CONFIDENCE / 2.0, self.df) * self.se_pct
        return self.delta_pct - half, self.delta_pct + half

    @property
    def fp16_energy_per_token_mj(self) -> float | None:
        return _average(r.fp16_energy_per_token_mj for r in self.reports)

    @property
    def fp16_tokens_per_s(self) -> float | None:
        """FP16's decode speed on this unit: in eager it is the host's speed."""
        return _average(r.fp16_throughput_tokens_per_s for r in self.reports)

    def get(self, prop: str) -> str | None:
        value = getattr(self, prop)
        return value if isinstance(value, str) else None


def unit_estimates(reports: Sequence[Report]) -> tuple[list[UnitEstimate], list[Report]]:
    """Each unit's estimate from the measured reports that name it and give an interval
    (the others are returned apart)."""
    by_unit: dict[str, list[tuple[Report, float, float, int]]] = {}
    unplaced = []
    for r in reports:
        if r.unit is None or r.delta_pct is None or r.delta_se_pct is None or r.interval_df is None:
            unplaced.append(r)
            continue
        by_unit.setdefault(r.unit, []).append((r, r.delta_pct, r.delta_se_pct, r.interval_df))
    units = []
    for unit, placed in by_unit.items():
        rs = [p[0] for p in placed]
        delta, se, df = within_unit(
            [p[1] for p in placed], [p[2] ** 2 for p in placed], [p[3] for p in placed]
        )
        units.append(
            UnitEstimate(
                unit=unit,
                board_part=_one(r.board_part for r in rs),
                vbios=_one(r.vbios for r in rs),
                idle_before_w=_average(r.idle_before_w for r in rs),
                host_cpu=_one(r.host_cpu for r in rs),
                reports=tuple(rs),
                delta_pct=delta,
                se_pct=se,
                df=df,
            )
        )
    units.sort(key=lambda u: (u.board_part or "~", u.delta_pct))
    return units, unplaced


def pool_estimates(units: Sequence[UnitEstimate]) -> RandomEffects:
    return pool([u.delta_pct for u in units], [u.se_pct**2 for u in units])


def _one(values: Iterable[str | None]) -> str | None:
    """The value the reports of one unit give (joined where they disagree)."""
    known = {v for v in values if v}
    return "+".join(sorted(known)) if known else None


def _average(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / len(known) if known else None


@dataclass(frozen=True)
class Group:
    kind: str  # measured | illustrative | derived
    card: str
    arch: str
    model: str
    params_b: float | None
    precision: str
    fingerprint: str
    protocol: str
    reports: tuple[Report, ...]

    def unit_estimates(self) -> list[UnitEstimate] | None:
        """A measured group's units (reports of one unit combined) from the reports that
        name their GPUs' UUIDs and give an interval (the others: left_out); None where
        no report can be placed so."""
        return self._units

    @functools.cached_property
    def _units(self) -> list[UnitEstimate] | None:  # worked out once: every column reads it
        if self.kind != "measured" or self.precision == "FP16":
            return None
        units, _ = unit_estimates(self.reports)
        return units or None

    @functools.cached_property
    def _pool(self) -> RandomEffects | None:
        """The random-effects pool over two units or more, worked out once."""
        units = self._units
        return None if units is None or len(units) < 2 else pool_estimates(units)

    @property
    def left_out(self) -> int:
        """Reports left out of the pool over units (no UUID, or no interval to weigh)."""
        units = self.unit_estimates()
        return 0 if units is None else len(self.reports) - sum(len(u.reports) for u in units)

    @property
    def independent(self) -> tuple[Report, ...]:
        """The reports that count as replications: every measured one; of figures that
        were not measured (derived, illustrative), one: copies of a figure replicate
        nothing (the group holds only identical figures)."""
        return self.reports if self.kind == "measured" else self.reports[:1]

    @property
    def n(self) -> int:
        """Independent estimates: the units pooled where reports can be placed so; else
        the units the reports name (two reports of one unit are one), a report that
        names none counting as one."""
        units = self.unit_estimates()
        if units is not None:
            return len(units)
        return len({r.unit or str(r.path) for r in self.independent})

    @property
    def copies(self) -> int:
        """Files in the group beyond the independent ones (identical figures)."""
        return len(self.reports) - len(self.independent)

    @property
    def origin(self) -> str:
        """Who wrote the reports (ours, or the published container's, by format)."""
        return self.reports[0].origin

    @property
    def bases(self) -> str:
        """The reports' bases; an illustrative report's is never passed on as "measured"
        (the published container's example says basis measured, and that it is not)."""
        return "+".join(
            sorted(
                {
                    "illustrative (not a real measurement)" if r.kind == ILLUSTRATIVE else r.basis
                    for r in self.reports
                }
            )
        )

    def energy(self) -> Summary | None:
        return summarise_known([r.energy_per_token_mj for r in self.independent])

    def fp16_energy(self) -> Summary | None:
        return summarise_known([r.fp16_energy_per_token_mj for r in self.independent])

    def delta(self) -> Summary | None:
        return summarise_known([r.delta_pct for r in self.independent])

    def trial_cv(self) -> Summary | None:
        """Within-report, trial-to-trial CV of the format's energy per token (mean over
        reports): the repeatability a single report shows."""
        return summarise_known([r.trial_cv_pct for r in self.independent])

    def delta_ci95(self) -> tuple[float, float] | None:
        """The 95% interval of the delta (see the module's docstring)."""
        units = self.unit_estimates()
        if units is not None:
            return units[0].ci95_pct if self._pool is None else self._pool.ci95
        if len(self.independent) == 1:
            return self.reports[0].ci95_pct
        d = self.delta()
        # over reports only where each is its own unit: a unit's sessions replicate no card;
        # never from deltas that agree to the last digit (a spread of zero is rounding)
        return None if d is None or self.n < len(self.independent) or d.sd == 0 else t_interval(d)

    def pooled_delta(self) -> float | None:
        """The delta the row gives: over units, the random-effects mean; else the mean
        of the reports."""
        units = self.unit_estimates()
        if units is not None:
            return units[0].delta_pct if self._pool is None else self._pool.mu
        d = self.delta()
        return None if d is None else d.mean

    def prediction_interval(self) -> tuple[float, float] | None:
        """For a unit not yet measured (three units or more)."""
        units = self.unit_estimates()
        return None if units is None or len(units) < 3 or self._pool is None else self._pool.pi95

    @property
    def trials(self) -> int | None:
        counts = [r.n_pairs for r in self.independent]
        return None if any(c is None for c in counts) else sum(c for c in counts if c)


def _mean(s: Summary | None) -> float | None:
    return None if s is None else s.mean


def _sd(s: Summary | None) -> float | None:
    return None if s is None else s.sd


def _cv(s: Summary | None) -> float | None:
    return None if s is None else s.cv_pct


def group_reports(reports: Sequence[Report]) -> list[Group]:
    buckets: dict[tuple[Any, ...], list[Report]] = {}
    for r in reports:
        # the format as tables name it: INT8 from torchao never pools with LLM.int8()
        what = (r.kind, r.card, r.arch, r.model, r.params_b, r.format_label)
        key = (*what, r.fingerprint, r.protocol)
        # a figure that was not measured pools only with identical copies of itself
        figure = (
            () if r.measured else (r.energy_per_token_mj, r.fp16_energy_per_token_mj, r.delta_pct)
        )
        buckets.setdefault((r.origin, *key, *figure), []).append(r)
    groups = [
        Group(
            r.kind,
            r.card,
            r.arch,
            r.model,
            r.params_b,
            r.format_label,
            r.fingerprint,
            r.protocol,
            tuple(rs),
        )
        for rs in buckets.values()
        for r in rs[:1]
    ]
    groups.sort(
        key=lambda g: (
            KIND_ORDER[g.kind],
            g.origin != "ecocompute",
            g.card,
            g.precision,
            g.params_b if g.params_b is not None else math.inf,
            g.model,
            natural_key(g.protocol),  # batch 1, 4, 16, 64: numbers as numbers
            g.fingerprint,
            -len(g.reports),
        )
    )
    return groups


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """A sort key that orders the numbers in a text by value ("batch 4" before "batch
    16"), the rest as text."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", text) if part
    )
