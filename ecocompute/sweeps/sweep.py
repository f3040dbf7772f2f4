"""`ecocompute sweep`: one energy_estimate per model and format, then a fit of the
published curve's form to this card's own measured points, and the crossover size.

Layout under the output folder (one point is one session: a model at one batch size,
every format asked for against one FP16 baseline):
  <model-slug>-<precision>/energy.json   one format: one report per point
  <model-slug>/<format>/energy.json      several formats: one session, a report each
  ...-b<batch>                           with --batch_sizes, each batch size's point
  sweep.json                             the summary (schema/sweep.schema.json)
  sweep.png                              the plot (with the fit), when matplotlib exists

With --batch_sizes the points of one model share its loaded models (results/resident.py)
and the summary adds the batch axis: per format, the delta against the batch size and
the batch size where it crosses zero (results/batch_axis.py), and the map in words.

Only measured points are fitted: a report derived from the published dataset (a
--dry_run, or a run that fell back) is the published curve itself, so fitting it would
be circular; such a sweep says the fit was skipped and why. `--fit_only` reads the
reports already under the output folder (e.g. written by two sweeps run side by side
on two GPUs) and fits those without running anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ecocompute.boundary.printing import print_after_write
from ecocompute.boundary.progress import Progress, quiet_library_progress_bars
from ecocompute.errors import EcoComputeError, InputError, RunError
from ecocompute.report.write import REPORT_NAME
from ecocompute.sweeps import fits as sweep_fits  # missing_fit_stack at call time (tests)
from ecocompute.sweeps.plan import Plan, plan, split_list
from ecocompute.sweeps.render import render
from ecocompute.sweeps.run import existing_records, run_sweep
from ecocompute.sweeps.summary import PLOT_NAME, SWEEP_NAME, add_plot, summarise, write_sweep
from ecocompute.task.machine import Machine

if TYPE_CHECKING:
    from ecocompute.fleet.options import FleetOptions


def _run_on_fleet(
    the_plan: Plan,
    fleet: FleetOptions,
    progress: Progress,
    command: list[str] | None,
    n_boot: int | None,
) -> list[dict[str, Any]]:
    """The fleet's records; on Ctrl-C / SIGTERM, sweep.json with what finished (no plot),
    then the interrupt again (exit 130 / 143)."""
    from ecocompute.fleet.client import FleetInterrupted, run_fleet

    try:
        return run_fleet(the_plan.output_dir, the_plan.runs, fleet, progress)
    except FleetInterrupted as stop:
        kept = sum(r["status"] == "ok" for r in stop.records)
        try:
            doc, _ = summarise(stop.records, the_plan.output_dir, command=command, n_boot=n_boot)
            doc["plot_note"] = "no plot: the sweep was interrupted"
            written = f"; {write_sweep(doc, the_plan.output_dir)}"
        except EcoComputeError as exc:  # the interrupt is what the exit status must say
            written = f"; no {SWEEP_NAME}: {exc}"
        progress(f"sweep interrupted: {kept} of {len(stop.records)} point(s) finished{written}")
        raise stop.interrupt from None


def sweep(
    models: Sequence[str] | None,
    precisions: Sequence[str],
    flags: Mapping[str, object],
    output_dir: str,
    *,
    parameters_file: str | None = None,
    fit_only: bool = False,
    progress: Progress | None = None,
    command: list[str] | None = None,
    machine: Machine | None = None,
    n_boot: int | None = None,
    out: Any = None,
    fleet: FleetOptions | None = None,
    reports_from: Sequence[str] | None = None,
    batch_sizes: Sequence[int] | None = None,
) -> int:
    """The whole command: run (unless fit_only), fit, plot, write sweep.json, summarise.
    Returns 0, or 3 when sweep.json was written but its summary could not be printed;
    raises RunError (exit 1) when a run failed (sweep.json is written either way).
    fleet: run the points on Dask workers (results/fleet.py) instead of one after
    another here; on Ctrl-C it writes sweep.json with the finished and cancelled
    points, then re-raises."""
    from ecocompute.params import check_output_dir

    if flags.get("quiet"):
        quiet_library_progress_bars()
    progress = progress or Progress(bool(flags.get("quiet")))
    root = check_output_dir(output_dir)
    missing = sweep_fits.missing_fit_stack()
    if missing:
        progress(
            f"{', '.join(missing)} not installed: the fit and/or plot will be skipped "
            "(pip install 'ecocompute[plot]'; `sweep --fit_only` can fit later)"
        )
    if fit_only:
        if not root.is_dir() and not reports_from:
            raise InputError("output_dir", output_dir, "does not exist; nothing to fit")
        root.mkdir(parents=True, exist_ok=True)
        records, skipped = existing_records(root, reports_from)
        for line in skipped:
            progress(f"skipped invalid report {line}")
        if not records:
            raise InputError("output_dir", output_dir, f"holds no valid {REPORT_NAME} to fit")
    else:
        the_plan = plan(
            split_list("models", ",".join(models or [])),
            precisions,
            flags,
            output_dir,
            parameters_file,
            batch_sizes=batch_sizes,
            sessions=fleet is None,  # the fleet spreads each format over its own GPU
        )
        if fleet is None:
            records = run_sweep(the_plan, progress, machine=machine, command=command)
        else:
            records = _run_on_fleet(the_plan, fleet, progress, command, n_boot)
    doc, reports = summarise(records, root, command=command, n_boot=n_boot)
    add_plot(doc, reports, root, PLOT_NAME)
    text = render(doc, root / SWEEP_NAME)  # rendered before the write: only printing after
    path = write_sweep(doc, root)
    status = print_after_write(text, [str(path)], out)
    if status:
        return status
    failed = [r for r in records if r["status"] != "ok"]
    if failed:
        raise RunError(
            f"{len(failed)} of {len(records)} run(s) failed (see {path}); the others were fitted"
        )
    return 0
