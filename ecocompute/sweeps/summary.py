"""A sweep's Sweep (sweep.json) made from its point records and the reports they name, with
its plot."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ecocompute import __version__
from ecocompute.errors import InputError, RunError
from ecocompute.plots.size_plot import FitLine, plot_reports
from ecocompute.report.build import SCOPE, utc_now
from ecocompute.results.collect import Report, read_one
from ecocompute.sweeps import fits as sweep_fits  # missing_fit_stack at call time (tests)
from ecocompute.sweeps.document import OK, PLOT_NAME, Fit, RunRecord, Sweep
from ecocompute.sweeps.fits import batch_axis, fit_entry, skipped_fit
from ecocompute.sweeps.plan import SWEEP_FORMATS
from ecocompute.sweeps.records import relative


def one_of(values: set[str], what: str) -> str | None:
    if len(values) > 1:
        raise InputError(
            what,
            None,
            f"the measured reports disagree ({'; '.join(sorted(values))}); a sweep fits one "
            "card, one software stack and one protocol: fit them separately",
        )
    return next(iter(values), None)


def across_batches(protocol: str, batches: Sequence[int]) -> str:
    """The protocol with the batch size left out where the sweep has a batch axis."""
    if len(batches) < 2:
        return protocol
    return re.sub(r"batch \d+", "batch " + ",".join(map(str, batches)), protocol)


def summarise(
    records: Sequence[RunRecord],
    output_dir: Path,
    *,
    command: Sequence[str] | None = None,
    n_boot: int | None = None,
) -> tuple[Sweep, list[Report]]:
    """The sweep (not yet written, no plot yet) and the reports it was built from.
    Raises InputError where the measured reports are of several cards, software stacks
    or protocols."""
    reports = []
    for rec in records:
        if rec.status == OK and rec.report:
            one = read_one(output_dir / rec.report)
            if isinstance(one, Report):
                reports.append(one)
    measured = [r for r in reports if r.measured and r.quantized]
    batches = sorted({r.batch_size for r in reports})
    card = one_of({r.card for r in measured}, "card")
    software = one_of({r.fingerprint for r in measured}, "software")
    protocol = one_of({across_batches(r.protocol, batches) for r in measured}, "protocol")
    arch = measured[0].arch if measured else (reports[0].arch if reports else None)
    if not measured and reports:
        card = reports[0].card

    missing = sweep_fits.missing_fit_stack()
    formats = sorted({r.precision for r in reports if r.quantized}, key=SWEEP_FORMATS.index)
    fits: list[Fit]
    if len(batches) > 1:
        fits = [skipped_fit(fmt, arch, batches) for fmt in formats]
    else:
        fits = [fit_entry(fmt, reports, output_dir, arch, missing, n_boot) for fmt in formats]
    axis = batch_axis(reports, output_dir, formats, n_boot) if len(batches) > 1 else []
    sweep = Sweep.model_validate(
        {
            "timestamp_utc": utc_now(),
            "tool": f"ecocompute {__version__}",
            **({"command": list(command)} if command else {}),
            "card": card,
            "gpu_arch": arch,
            "software": software,
            "protocol": protocol,
            "scope": SCOPE,
            "runs": list(records),
            "fits": fits,
            "plot": None,
            **({"batch_axis": axis, "map": [entry.map for entry in axis]} if axis else {}),
        }
    )
    return sweep, reports


def with_plot(sweep: Sweep, reports: Sequence[Report], output_dir: Path) -> Sweep:
    """The sweep with its plot drawn (sweep.png beside sweep.json); a missing matplotlib
    or nothing to plot is a note, not a failure (the numbers are in sweep.json)."""
    if "matplotlib" in sweep_fits.missing_fit_stack():
        note = "no plot: matplotlib is not installed (pip install 'ecocompute[plot]')"
        return sweep.model_copy(update={"plot_note": note})
    try:
        if sweep.batch_axis:
            from ecocompute.plots.batch_plot import plot_batch_axis

            path = plot_batch_axis(reports, output_dir / PLOT_NAME)
        else:
            lines: dict[str, FitLine] = {
                f.precision: line for f in sweep.fits if (line := _fit_line(f))
            }
            path = plot_reports(reports, output_dir / PLOT_NAME, fits=lines)
    except (InputError, RunError) as exc:  # an unwritable sweep.png costs no sweep.json
        return sweep.model_copy(update={"plot_note": f"no plot: {exc}"})
    return sweep.model_copy(update={"plot": relative(path, output_dir)})


def _fit_line(fit: Fit) -> FitLine | None:
    """What the plot draws of a fitted curve."""
    p, cross = fit.parameters, fit.crossover
    if not fit.fitted or p is None or cross is None:
        return None
    ci = cross.ci95_b or [None, None]
    return FitLine(
        p.A, p.S, p.Nstar, fit.n_points or 0, cross.params_b, cross.status, (ci[0], ci[1])
    )
