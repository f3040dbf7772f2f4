"""A sweep on the fleet: the sequential sweep's plan (one point per format, so that each
format of a model may run on a GPU of its own), its points on Dask workers (client.py),
then the same fit, plot and sweep.json (sweeps/sweep.py), returned as the same Sweep."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ecocompute.boundary.progress import Progress
from ecocompute.errors import EcoComputeError, InputError, RunError
from ecocompute.fleet.client import FleetInterrupted
from ecocompute.fleet.options import FleetOptions
from ecocompute.params import RunParams
from ecocompute.sweeps.document import OK, SWEEP_NAME, RunRecord, Sweep, write_sweep
from ecocompute.sweeps.plan import Plan, options_of, plan
from ecocompute.sweeps.summary import summarise
from ecocompute.sweeps.sweep import finish, folder_held, open_folder


def fleet_sweep(
    models: Sequence[str],
    precisions: Sequence[str],
    output_dir: str | os.PathLike[str],
    fleet: FleetOptions,
    *,
    options: RunParams | Mapping[str, object] | None = None,
    parameters_file: str | None = None,
    batch_sizes: Sequence[int] | None = None,
    progress: Progress | None = None,
    command: Sequence[str] | None = None,
    n_boot: int | None = None,
) -> Sweep:
    """sweeps.sweep() with the points on the fleet (arguments as there). A point that
    fails is recorded and retried once where its worker was lost (client.py). On Ctrl-C
    or SIGTERM, sweep.json says which points finished and which were cancelled, then
    the interrupt is raised again. Raises FleetExtraMissing, InputError, RunError."""
    shared = options_of(options)
    progress = progress or Progress(bool(shared.get("quiet")))
    root = open_folder(output_dir, progress)
    the_plan = plan(
        models,
        precisions,
        shared,
        output_dir,
        parameters_file,
        batch_sizes=batch_sizes,
        sessions=False,  # the fleet spreads each format over its own GPU
    )
    with folder_held(root, progress, (root,)):  # one sweep at a time into a folder
        records = run_on_fleet(the_plan, fleet, progress, command, n_boot)
        try:
            return finish(records, root, command=command, n_boot=n_boot)
        except InputError as exc:  # found once the points ran (workers of two cards): not
            kept = sum(r.status == OK for r in records)  # bad input, and their reports stand
            raise RunError(
                f"{exc}; the {kept} point(s) that finished keep their energy.json under "
                f"{root}, but no {SWEEP_NAME} summarises them: give the fleet workers of one "
                "card and software stack, or compare them with `ecocompute aggregate "
                f"--units {root}`"
            ) from None


def run_on_fleet(
    the_plan: Plan,
    fleet: FleetOptions,
    progress: Progress,
    command: Sequence[str] | None,
    n_boot: int | None,
) -> list[RunRecord]:
    """The fleet's records; on Ctrl-C / SIGTERM, sweep.json with what finished (no plot),
    then the interrupt again (exit 130 / 143)."""
    from ecocompute.fleet.client import run_fleet

    try:
        return run_fleet(the_plan.output_dir, the_plan.runs, fleet, progress)
    except FleetInterrupted as stop:
        kept = sum(r.status == OK for r in stop.records)
        try:
            summary, _ = summarise(
                stop.records, the_plan.output_dir, command=command, n_boot=n_boot
            )
            summary = summary.model_copy(update={"plot_note": "no plot: the sweep was interrupted"})
            written = f"; {write_sweep(summary, the_plan.output_dir)}"
        except EcoComputeError as exc:  # the interrupt is what the exit status must say
            written = f"; no {SWEEP_NAME}: {exc}"
        progress(f"sweep interrupted: {kept} of {len(stop.records)} point(s) finished{written}")
        raise stop.interrupt from None
