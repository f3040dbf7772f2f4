"""`ecocompute aggregate`: many reports into one table (and a CSV).

Reports are grouped by what they are: measured, illustrative or derived (never the
same row), card, model, size, format, software fingerprint and protocol (new tokens per
run and batch size: a 32-token smoke run and a 256-token run are different workloads).
Per group: the number of GPU units (groups.py: two reports of one unit are one), mean,
standard deviation and CV of energy per token and of the delta vs FP16 across reports,
and a 95% interval for the delta: one unit's own, or the random-effects pool over the
units whose reports give an interval (the others left out, and said); over reports that
name no unit, a Student-t interval over their deltas. A figure that was not measured is
not replicated by copies of it: identical derived files are one row of n = 1, without
an interval.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ecocompute.boundary.atomic import write_text_atomic
from ecocompute.boundary.user_paths import check_not_an_input, check_output_file
from ecocompute.core.printable import printable
from ecocompute.errors import RunError
from ecocompute.pooling.groups import KIND_WORDS, Group, _cv, _mean, _sd, group_reports
from ecocompute.pooling.units import (
    LEFT_OUT,
    UNITS_FOOTNOTE,
    UnitPool,
    _num,
    pool_units,
    render_units,
)
from ecocompute.results.collect import Invalid, Report, read_reports
from ecocompute.results.identity import REPEATED


@dataclass(frozen=True)
class TableRow:
    """One group as the CSV has it: the table's figures at full precision (energies in
    millijoules per token, deltas in percent vs FP16; None where a figure does not
    exist: a spread of one report, an interval of a figure that was not measured)."""

    kind: str
    card: str
    model: str
    params_b: float | None
    precision: str
    software: str
    protocol: str
    basis: str
    n_reports: int
    n_pairs: int | None
    energy_per_token_mj_mean: float | None
    energy_per_token_mj_std: float | None
    energy_per_token_cv_pct: float | None
    trial_cv_pct_mean: float | None
    fp16_energy_per_token_mj_mean: float | None
    vs_fp16_pct_mean: float | None
    vs_fp16_pct_std: float | None
    vs_fp16_cv_pct: float | None
    vs_fp16_ci95_lo_pct: float | None
    vs_fp16_ci95_hi_pct: float | None
    vs_fp16_pi95_lo_pct: float | None
    vs_fp16_pi95_hi_pct: float | None
    n_units: int | None
    n_files: int

    @classmethod
    def of(cls, g: Group) -> TableRow:
        e, f, d = g.energy(), g.fp16_energy(), g.delta()
        ci, pi = g.delta_ci95(), g.prediction_interval()
        units = g.unit_estimates()
        return cls(
            kind=g.kind,
            card=g.card,
            model=g.model,
            params_b=g.params_b,
            precision=g.precision,
            software=g.fingerprint,
            protocol=g.protocol,
            basis=g.bases,
            n_reports=g.n,
            n_pairs=g.trials,
            energy_per_token_mj_mean=_mean(e),
            energy_per_token_mj_std=_sd(e),
            energy_per_token_cv_pct=_cv(e),
            trial_cv_pct_mean=_mean(g.trial_cv()),
            fp16_energy_per_token_mj_mean=_mean(f),
            vs_fp16_pct_mean=g.pooled_delta(),
            vs_fp16_pct_std=_sd(d),
            vs_fp16_cv_pct=_cv(d),
            vs_fp16_ci95_lo_pct=ci[0] if ci else None,
            vs_fp16_ci95_hi_pct=ci[1] if ci else None,
            vs_fp16_pi95_lo_pct=pi[0] if pi else None,
            vs_fp16_pi95_hi_pct=pi[1] if pi else None,
            n_units=None if units is None else len(units),
            n_files=len(g.reports),
        )


COLUMNS = tuple(f.name for f in dataclasses.fields(TableRow))


@dataclass(frozen=True)
class Table:
    """aggregate's answer: the groups, in the table's order, and (asked for) each
    measured group of a quantized format pooled across its GPU units."""

    groups: tuple[Group, ...]
    units: tuple[UnitPool, ...] | None = None

    def rows(self) -> list[TableRow]:
        return [TableRow.of(g) for g in self.groups]


def aggregate(reports: Sequence[Report], *, units: bool = False) -> Table:
    """The reports grouped (see the module's docstring); units: pooled across units too."""
    groups = tuple(group_reports(reports))
    return Table(groups, tuple(pool_units(groups)) if units else None)


def read_reports_for(
    paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str] | None = None
) -> tuple[list[Report], list[Invalid]]:
    """The reports under paths, and the files that are not valid ones, for a command that
    writes `output` from them: output must be a file name that can be written (checked
    before reading) and none of the files read (checked after). Raises InputError."""
    if output is not None:
        check_output_file("output", output)  # a folder or unusable name: exit 2 now
    reports, invalid = read_reports(paths)
    if output is not None:  # what is written must not replace a report it is made from
        read = [r.path for r in reports] + [bad.path for bad in invalid]
        check_not_an_input("output", output, read)
    return reports, invalid


def csv_text(rows: Sequence[TableRow]) -> str:
    """The rows as CSV. Raises RunError on a non-finite number (a cell would read "nan"
    or "inf", which no reader should take for a figure)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in rows:
        cells = dataclasses.astuple(row)
        for column, value in zip(COLUMNS, cells, strict=True):
            if isinstance(value, float) and not math.isfinite(value):
                raise RunError(f"the table's {column} came out as {value}: nothing was written")
        writer.writerow("" if v is None else v for v in cells)
    return buffer.getvalue()


def write_csv(table: Table, path: str | os.PathLike[str]) -> Path:
    """The table as CSV at path, written atomically. Raises RunError."""
    return write_text_atomic(Path(path), csv_text(table.rows()))


def render_table(table: Table) -> str:
    """The human table: one block per card and software stack, one line per group, the
    footnote, and the units where they were asked for."""
    text = _group_lines(table.groups) + "\n" + FOOTNOTE
    if table.units:
        text += "\n\nAcross units\n" + render_units(table.units) + "\n" + UNITS_FOOTNOTE
    return text


def _group_lines(groups: Sequence[Group]) -> str:
    lines: list[str] = []
    width = max([16, *(len(g.protocol) for g in groups)])
    model_width = max([28, *(len(g.model) for g in groups)])  # names whole, never cut
    fmt_width = max([4, *(len(g.precision) for g in groups)])  # INT8-torchao whole
    size_width = max([7, *(len(_num(g.params_b, ".3g")) for g in groups)])  # 1.23e+03
    header = (
        f"{'model':<{model_width}} {'size B':>{size_width}} {'fmt':<{fmt_width}} "
        f"{'protocol':<{width}} {'n':>2} "
        f"{'pairs':>5} {'mJ/token':>9} {'sd':>7} {'CV%':>5} {'trCV%':>5}  {'vs FP16':>8} "
        f"{'sd':>6} {'CV%':>6} {'95% CI':>17}  basis"
    )
    current: tuple[str, ...] | None = None
    for g in groups:
        block = (g.kind, g.card, g.fingerprint, g.origin)
        if block != current:
            if lines:
                lines.append("")
            what = KIND_WORDS[g.kind]
            if g.origin != "ecocompute":
                what += f" ({g.origin}: single runs, n = 1, no interval)"
            lines.append(f"{g.card}  |  {g.fingerprint}  |  {what}")
            lines.append(header)
            current = block
        e, d = g.energy(), g.delta()
        ci, pi, pooled = g.delta_ci95(), g.prediction_interval(), g.pooled_delta()
        ci_text = f"{ci[0]:+.1f} .. {ci[1]:+.1f}%" if ci else "-"
        delta = "-" if pooled is None else f"{pooled:+.1f}%"
        new_unit = f"  a new unit {pi[0]:+.1f} .. {pi[1]:+.1f}%" if pi else ""
        lines.append(
            f"{g.model:<{model_width}} {_num(g.params_b, '.3g'):>{size_width}} "
            f"{g.precision:<{fmt_width}} {g.protocol:<{width}} {g.n:>2} {_num(g.trials, 'd'):>5} "
            f"{_num(_mean(e), ',.1f'):>9} {_num(_sd(e), '.1f'):>7} {_num(_cv(e), '.1f'):>5} "
            f"{_num(_mean(g.trial_cv()), '.1f'):>5}  "
            f"{delta:>8} {_num(_sd(d), '.1f'):>6} {_num(_cv(d), '.1f'):>6} "
            f"{ci_text:>17}  {g.bases}"
            + (f" ({len(g.reports)} identical files: one figure)" if g.copies else "")
            + new_unit
            + (f"  ({g.left_out} report(s) left out: {LEFT_OUT})" if g.left_out else "")
        )
    return "\n".join(lines)


def render_invalid(invalid: Sequence[Invalid]) -> str:
    repeated = sum(bad.problems[0].startswith(REPEATED) for bad in invalid)
    if repeated:
        what = f"{len(invalid) - repeated} invalid, {repeated} the same report again"
        lines = [f"skipped {len(invalid)} file(s) ({what}):"]
    else:
        lines = [f"skipped {len(invalid)} invalid file(s):"]
    for bad in invalid:
        first = bad.problems[0]
        more = f" (+{len(bad.problems) - 1} more)" if len(bad.problems) > 1 else ""
        lines.append(f"  {printable(bad.path)}: {printable(first)}{more}")
    return "\n".join(lines)


FOOTNOTE = (
    "\nn: the GPU units in the row (told apart by NVML UUID; two reports of one unit are "
    "one), or reports where they do not say; pairs: paired trials over those reports; sd "
    "and CV are across reports (blank for one); trCV%: trial-to-trial CV within a report "
    "(mean over the row's reports); vs FP16 and 95% CI: one unit's own paired interval "
    "(its sessions pooled, where it has several), or "
    "over units a random-effects pool (REML; modified Hartung-Knapp, t on n-1), or a t interval "
    "over reports without units; 'a new unit': the 95% prediction interval for a unit not "
    "yet measured (3 units or more; --units gives each unit). A figure that was not "
    "measured (derived, illustrative) is one figure however many files hold it: n = 1, "
    "no interval."
)
