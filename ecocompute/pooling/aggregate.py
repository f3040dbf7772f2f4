"""`ecocompute aggregate`: many reports into one table (and a CSV).

Reports are grouped by what they are: measured, illustrative or derived (never the
same row), card, model, size, format, software fingerprint and protocol (new tokens per
run and batch size: a 32-token smoke run and a 256-token run are different workloads).
Per group: the number of reports, mean, standard deviation and CV of energy per token
and of the delta vs FP16 across reports, and a 95% interval for the delta: with one
report, that report's own paired interval; with two or more, a Student-t interval over
the reports' deltas (between-session spread, which is what replication measures). A
figure that was not measured is not replicated by copies of it: identical derived
files are one row of n = 1, without an interval.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from ecocompute.boundary.printing import print_after_write
from ecocompute.boundary.user_paths import check_not_an_input, check_output_file
from ecocompute.core.printable import printable
from ecocompute.core.rounding import rounded
from ecocompute.errors import RunError
from ecocompute.pooling.groups import KIND_WORDS, Group, _cv, _mean, _sd, group_reports
from ecocompute.pooling.units import UNITS_FOOTNOTE, pool_units, render_units
from ecocompute.report.atomic import write_text_atomic
from ecocompute.results.collect import Invalid, Report, read_reports
from ecocompute.results.identity import REPEATED

COLUMNS = (
    "kind",
    "card",
    "model",
    "params_b",
    "precision",
    "software",
    "protocol",
    "basis",
    "n_reports",
    "n_pairs",
    "energy_per_token_mj_mean",
    "energy_per_token_mj_std",
    "energy_per_token_cv_pct",
    "trial_cv_pct_mean",
    "fp16_energy_per_token_mj_mean",
    "vs_fp16_pct_mean",
    "vs_fp16_pct_std",
    "vs_fp16_cv_pct",
    "vs_fp16_ci95_lo_pct",
    "vs_fp16_ci95_hi_pct",
    "vs_fp16_pi95_lo_pct",
    "vs_fp16_pi95_hi_pct",
    "n_units",
    "n_files",
)


def rows(groups: Sequence[Group]) -> list[dict[str, Any]]:
    out = []
    for g in groups:
        e, f, d = g.energy(), g.fp16_energy(), g.delta()
        ci, pi = g.delta_ci95(), g.prediction_interval()
        units = g.unit_estimates()
        out.append(
            {
                "kind": g.kind,
                "card": g.card,
                "model": g.model,
                "params_b": rounded(g.params_b, 4),
                "precision": g.precision,
                "software": g.fingerprint,
                "protocol": g.protocol,
                "basis": g.bases,
                "n_reports": g.n,
                "n_pairs": g.trials,
                "energy_per_token_mj_mean": rounded(_mean(e), 2),
                "energy_per_token_mj_std": rounded(_sd(e), 2),
                "energy_per_token_cv_pct": rounded(_cv(e), 2),
                "trial_cv_pct_mean": rounded(_mean(g.trial_cv()), 2),
                "fp16_energy_per_token_mj_mean": rounded(_mean(f), 2),
                "vs_fp16_pct_mean": rounded(g.pooled_delta(), 2),
                "vs_fp16_pct_std": rounded(_sd(d), 2),
                "vs_fp16_cv_pct": rounded(_cv(d), 2),
                "vs_fp16_ci95_lo_pct": rounded(ci[0], 2) if ci else None,
                "vs_fp16_ci95_hi_pct": rounded(ci[1], 2) if ci else None,
                "vs_fp16_pi95_lo_pct": rounded(pi[0], 2) if pi else None,
                "vs_fp16_pi95_hi_pct": rounded(pi[1], 2) if pi else None,
                "n_units": None if units is None else len(units),
                "n_files": len(g.reports),
            }
        )
    return out


def csv_text(table: Sequence[dict[str, Any]]) -> str:
    """The table as CSV. Raises RunError on a non-finite number (a cell would read
    "nan" or "inf", which no reader should take for a figure)."""
    for row in table:
        for column, value in row.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise RunError(f"the table's {column} came out as {value}: nothing was written")
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in table:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def render_table(groups: Sequence[Group]) -> str:
    """The human table: one block per card and software stack, one line per group."""
    lines: list[str] = []
    width = max([16, *(len(g.protocol) for g in groups)])
    header = (
        f"{'model':<28} {'size B':>7} {'fmt':<4} {'protocol':<{width}} {'n':>2} {'pairs':>5} "
        f"{'mJ/token':>9} {'sd':>7} {'CV%':>5} {'trCV%':>5}  {'vs FP16':>8} {'sd':>6} {'CV%':>6} "
        f"{'95% CI':>17}  basis"
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
            f"{g.model[:28]:<28} {_num(g.params_b, '.3g'):>7} {g.precision:<4} "
            f"{g.protocol:<{width}} {g.n:>2} {_num(g.trials, 'd'):>5} "
            f"{_num(_mean(e), ',.1f'):>9} {_num(_sd(e), '.1f'):>7} {_num(_cv(e), '.1f'):>5} "
            f"{_num(_mean(g.trial_cv()), '.1f'):>5}  "
            f"{delta:>8} {_num(_sd(d), '.1f'):>6} {_num(_cv(d), '.1f'):>6} "
            f"{ci_text:>17}  {g.bases}"
            + (f" ({len(g.reports)} identical files: one figure)" if g.copies else "")
            + new_unit
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


def aggregate(
    reports: Sequence[Report],
    invalid: Sequence[Invalid],
    out: TextIO,
    err: TextIO,
    csv_path: str | os.PathLike[str] | None = None,
    units: bool = False,
) -> int:
    """Print the table (stdout) and the skipped files (stderr); write the CSV if asked,
    before printing, so that a stdout that fails afterwards is told apart (exit 3: the
    CSV was written). 0 when at least one valid report was read, 1 when none was."""
    if invalid:
        print(render_invalid(invalid), file=err)
    if not reports:
        print("ecocompute: error: no valid energy.json report found", file=err)
        return 1
    groups = group_reports(reports)
    text = render_table(groups) + "\n" + FOOTNOTE
    if units:
        pools = pool_units(groups)
        if pools:
            text += "\n\nAcross units\n" + render_units(pools) + "\n" + UNITS_FOOTNOTE
    if csv_path is None:
        print(text, file=out)
        return 0
    target = write_text_atomic(Path(csv_path), csv_text(rows(groups)))
    print(f"wrote {target}", file=err)
    return print_after_write(text, [str(target)], out)


FOOTNOTE = (
    "\nn: the GPU units in the row (told apart by NVML UUID; two reports of one unit are "
    "one), or reports where they do not say; pairs: paired trials over those reports; sd "
    "and CV are across reports (blank for one); trCV%: trial-to-trial CV within a report "
    "(mean over the row's reports); vs FP16 and 95% CI: one unit's own paired interval, or "
    "over units a random-effects pool (REML; Hartung-Knapp, t on n-1), or a t interval "
    "over reports without units; 'a new unit': the 95% prediction interval for a unit not "
    "yet measured (3 units or more; --units gives each unit). A figure that was not "
    "measured (derived, illustrative) is one figure however many files hold it: n = 1, "
    "no interval."
)


def aggregate_paths(
    paths: Sequence[str],
    out: TextIO,
    err: TextIO,
    csv_path: str | os.PathLike[str] | None = None,
    units: bool = False,
) -> int:
    """`ecocompute aggregate`: read the reports under paths, then aggregate()."""
    if csv_path is not None:
        check_output_file("output", csv_path)  # a folder or unusable name: exit 2 now
    reports, invalid = read_reports(paths)
    if csv_path is not None:  # the table must not replace a report it summarises
        check_not_an_input("output", csv_path, [*(r.path for r in reports), *read_paths(invalid)])
    return aggregate(reports, invalid, out, err, csv_path, units)


def read_paths(invalid: Sequence[Invalid]) -> list[str]:
    """The files that were read and found invalid (an unreadable folder is not one)."""
    return [bad.path for bad in invalid]
