"""A sweep's Sweep (sweep.json) made from its point records and the reports they name, with
its plot."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ecocompute import __version__
from ecocompute.errors import InputError, RunError
from ecocompute.plots.axes import format_order
from ecocompute.plots.size_plot import FitLine, plot_reports
from ecocompute.report.build import SCOPE, utc_now
from ecocompute.report.labels import uuid_tail
from ecocompute.report.references import EAGER_NOTE
from ecocompute.results.collect import Report, read_one
from ecocompute.sweeps import fits as sweep_fits  # missing_fit_stack at call time (tests)
from ecocompute.sweeps.document import OK, PLOT_NAME, Fit, RunRecord, Sweep
from ecocompute.sweeps.fits import batch_axis, fit_entry, no_batch_axis_note, skipped_fit
from ecocompute.sweeps.plan import SWEEP_FORMATS
from ecocompute.sweeps.records import relative


def one_of(values: set[str], what: str, whose: str = "the measured reports") -> str | None:
    if len(values) > 1:
        raise InputError(
            what,
            "; ".join(sorted(values)),
            f"{whose} disagree; a sweep fits one card, one software stack and "
            "one protocol: fit them separately",
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
    read = [read_one(output_dir / rec.report) for rec in records if rec.status == OK and rec.report]
    reports = [one for one in read if isinstance(one, Report)]
    measured = [r for r in reports if r.measured and r.quantized]
    batches = sorted({r.batch_size for r in reports})
    card = one_of({r.card for r in measured}, "card")
    software = one_of({r.fingerprint for r in measured}, "software")
    protocol = one_of({across_batches(r.protocol, batches) for r in measured}, "protocol")
    if not measured:  # the derived points' protocol, where they agree on one
        derived = {across_batches(r.protocol, batches) for r in reports}
        protocol = next(iter(derived)) if len(derived) == 1 else None
    # one card class for every point, derived ones too: a derived point of another class
    # was summarised (and its curve drawn) under the measured card's, or the first's
    arch = one_of({r.arch for r in reports}, "gpu_arch", "the reports")
    if not measured and reports:
        card = one_of({r.card for r in reports}, "card", "the derived reports")

    formats = sorted({r.precision for r in reports if r.quantized}, key=SWEEP_FORMATS.index)
    # a fit per format as tables name it: INT8 from torchao, or at another outlier
    # threshold, is another kernel, never one curve with LLM.int8()
    labels = {r.format_label: r.precision for r in reports if r.quantized}
    labels = {label: labels[label] for label in sorted(labels, key=format_order)}
    if len(batches) > 1:
        axis = batch_axis(reports, output_dir, formats, n_boot)
        fits = [skipped_fit(f, label, arch, batches, bool(axis)) for label, f in labels.items()]
    else:
        axis, missing = [], sweep_fits.missing_fit_stack()
        fits = [fit_entry(label, reports, output_dir, arch, missing, n_boot) for label in labels]
    notes = {
        "decode_note": decode_note(reports),
        "units_note": units_note(measured),
        "batch_axis_note": (
            no_batch_axis_note(reports, batches) if len(batches) > 1 and not axis else None
        ),
    }
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
            **{name: note for name, note in notes.items() if note},  # none set as null
        }
    )
    return sweep, reports


def units_note(measured: Sequence[Report]) -> str | None:
    """Which unit measured which points, where more than one did: each interval holds for
    its unit, so a delta's change between points of two units, and a crossover between
    them, holds the units' difference too (docs/units.md). None for one unit."""
    points: dict[str, set[tuple[str, int]]] = {}
    for r in measured:
        if r.unit:
            points.setdefault(r.unit, set()).add((r.model, r.batch_size))
    if len(points) < 2:
        return None
    gpus = {g for unit in points for g in unit.split("+")}
    tails_differ = len({uuid_tail(g) for g in gpus}) == len(gpus)

    def name(unit: str) -> str:  # UUID tails, or whole UUIDs where two tails are alike
        return "+".join(f"...{uuid_tail(g)}" for g in unit.split("+")) if tails_differ else unit

    listed = "; ".join(
        f"{name(u)}: {', '.join(f'{model} b{batch}' for model, batch in sorted(w))}"
        for u, w in sorted(points.items())
    )
    return (
        f"the points were measured on {len(points)} units ({listed}): each interval holds "
        "for its unit, and a change between points of two units holds the units' "
        "difference too"
    )


def decode_note(reports: Sequence[Report]) -> str | None:
    """The regime the points fell back to, where they answer another than the one asked
    for (the published figures are eager's), and what the run asked of a derived point
    that no published figure follows (--prompt_tokens, --phases apart: the published
    figures are of one prompt, whole windows); None where every point is as asked."""
    fell, dropped = set(), set()
    for r in reports:
        decode = r.decode
        if decode is None:
            continue
        if decode.requested_regime and decode.requested_regime != decode.regime:
            fell.add((decode.requested_regime, decode.regime, decode.note))
        elif not r.measured and (decode.note or "").startswith(f"{EAGER_NOTE}; "):
            dropped.add((decode.note or "").removeprefix(f"{EAGER_NOTE}; "))
    words = [
        f"--decode {asked} asked for, but the points are {got}'s" + (f": {why}" if why else "")
        for asked, got, why in sorted(fell, key=str)
    ]
    return "; ".join([*words, *sorted(dropped)]) or None


def with_plot(sweep: Sweep, reports: Sequence[Report], output_dir: Path) -> Sweep:
    """The sweep with its plot drawn (sweep.png beside sweep.json); a missing matplotlib
    or nothing to plot is a note, not a failure (the numbers are in sweep.json)."""
    if "matplotlib" in sweep_fits.missing_fit_stack():
        note = "no plot: matplotlib is not installed (pip install 'ecocompute[plot]')"
        return sweep.model_copy(update={"plot_note": note})
    if sweep.batch_axis_note:  # a size plot of several batch sizes would mislead
        note = "no plot: the sweep has no batch axis (batch_axis_note says why)"
        return sweep.model_copy(update={"plot_note": note})
    try:
        if sweep.batch_axis:
            from ecocompute.plots.batch_plot import Crossing, plot_batch_axis

            crossings = {
                (e.model_name, e.precision): Crossing(
                    c.batch_size, lo, hi, c.ci95_text or "not drawn"
                )
                for e in sweep.batch_axis
                for c in [e.crossover]
                for lo, hi in [c.ci95 or (None, None)]
                if c.batch_size is not None
            }
            path = plot_batch_axis(reports, output_dir / PLOT_NAME, crossings)
        else:
            lines: dict[str, FitLine] = {
                f.format_label or f.precision: line for f in sweep.fits if (line := _fit_line(f))
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
