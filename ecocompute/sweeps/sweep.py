"""A sweep: one energy_estimate session per model (and batch size), every format asked
for against one FP16 baseline, then a fit of the published curve's form to this card's
own measured points and the crossover size; returned as a Sweep (sweep.json,
document.py). On Dask workers instead: fleet/sweep.py.

Layout under the output folder (one point is one session: a model at one batch size):
  <model-slug>-<precision>/energy.json   one format: one report per point
  <model-slug>/<format>/energy.json      several formats: one session, a report each
  ...-b<batch>                           with batch sizes, each batch size's point
  sweep.json                             the summary (schema/sweep.schema.json)
  sweep.png                              the plot (with the fit), when matplotlib exists

With batch sizes the points of one model share its loaded models (llm/resident.py) and
the summary adds the batch axis: per format, the delta against the batch size and the
batch size where it crosses zero (batch_axis.py), and the map in words.

Only measured points are fitted: a report derived from the published dataset (a dry
run, or a run that fell back) is the published curve itself, so fitting it would be
circular; such a sweep says the fit was skipped and why. fit_reports() fits the reports
already under a folder (e.g. written by two sweeps run side by side on two GPUs) without
running anything.

Nothing here prints or chooses an exit status: progress lines go to the Progress given
(stderr by default), and a point that fails is recorded in the Sweep (Sweep.failed).
"""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from ecocompute.boundary.atomic import write_mode
from ecocompute.boundary.progress import Progress, library_progress_bars_hidden
from ecocompute.errors import InputError
from ecocompute.params import RunParams, check_output_dir
from ecocompute.report.write import REPORT_NAME
from ecocompute.sweeps import fits as sweep_fits  # missing_fit_stack at call time (tests)
from ecocompute.sweeps.document import PLOT_NAME, SWEEP_NAME, RunRecord, Sweep, write_sweep
from ecocompute.sweeps.plan import Plan, options_of, plan, prompt_folder
from ecocompute.sweeps.run import existing_records, run_sweep
from ecocompute.sweeps.summary import summarise, with_plot
from ecocompute.task.machine import Machine


def sweep(
    models: Sequence[str] | str,
    precisions: Sequence[str] | str,
    output_dir: str | os.PathLike[str],
    *,
    options: RunParams | Mapping[str, object] | None = None,
    parameters_file: str | None = None,
    batch_sizes: Sequence[int] | None = None,
    progress: Progress | None = None,
    machine: Machine | None = None,
    command: Sequence[str] | None = None,
    n_boot: int | None = None,
) -> Sweep:
    """Run every point here, one after another, each report written under output_dir;
    then fit (or, with several batch sizes, the batch axis), plot, and write sweep.json.

    options: the run parameters every point shares, a RunParams or its fields by name
    (tokens=..., dry_run=..., quiet=...; model_name, precision and output_dir are the
    sweep's own); parameters_file: a YAML file under them. machine: the real one unless
    a test hands in stand-ins. command: the command line the reports record.
    Raises InputError before anything runs; RunError, ReportInvalid when sweep.json
    cannot be written (every finished point's report stands)."""
    shared = options_of(options)
    quiet = bool(shared.get("quiet"))
    progress = progress or Progress(quiet)
    root = open_folder(output_dir, progress)
    the_plan = plan(
        models, precisions, shared, output_dir, parameters_file, batch_sizes=batch_sizes
    )
    with folder_held(root, progress, (root,)), library_progress_bars_hidden(quiet):
        records = run_sweep(the_plan, progress, machine=machine, command=command)
        return finish(records, root, command=command, n_boot=n_boot)


def prompt_sweep(
    models: Sequence[str],
    precisions: Sequence[str],
    output_dir: str | os.PathLike[str],
    prompt_lengths: Sequence[int],
    *,
    options: RunParams | Mapping[str, object] | None = None,
    parameters_file: str | None = None,
    batch_sizes: Sequence[int] | None = None,
    progress: Progress | None = None,
    machine: Machine | None = None,
    command: Sequence[str] | None = None,
    n_boot: int | None = None,
) -> dict[int, Sweep]:
    """sweep --prompt_tokens 128,1024,...: the sweep above once per prompt length, its
    points and its sweep.json under <output_dir>/p<length>/ (prompt lengths are never
    pooled: each is its own batch axis), every point run in one pass so that a model's
    loaded formats serve every length. Raises InputError before anything runs (every
    length's plan is checked first)."""
    shared = options_of(options)
    if shared.get("prompt_tokens") is not None:
        raise InputError("prompt_tokens", shared["prompt_tokens"], "give one list to the sweep")
    quiet = bool(shared.get("quiet"))
    progress = progress or Progress(quiet)
    root = open_folder(output_dir, progress)
    plans = {
        n: plan(
            models,
            precisions,
            {**shared, "prompt_tokens": n},
            root / prompt_folder(n),
            parameters_file,
            batch_sizes=batch_sizes,
        )
        for n in prompt_lengths
    }
    whole = Plan(root, tuple(r for p in plans.values() for r in p.runs))
    folders = tuple(p.output_dir for p in plans.values())
    with folder_held(root, progress, folders), library_progress_bars_hidden(quiet):
        records = run_sweep(whole, progress, machine=machine, command=command)
        done = {}
        left = iter(records)  # in the plans' order
        for n, p in plans.items():
            count = sum(max(1, len(r.session_formats)) for r in p.runs)  # a record a format
            mine = [_under(r, prompt_folder(n)) for r in itertools.islice(left, count)]
            p.output_dir.mkdir(parents=True, exist_ok=True)
            done[n] = finish(mine, p.output_dir, command=command, n_boot=n_boot)
        return done


def _under(record: RunRecord, folder: str) -> RunRecord:
    """A record whose report path is relative to <root>/<folder>/ (its sweep.json)."""
    if record.report is None:
        return record
    path = Path(record.report)
    relative = path.relative_to(folder) if path.parts[:1] == (folder,) else path
    return record.model_copy(update={"report": relative.as_posix()})


def fit_reports(
    output_dir: str | os.PathLike[str],
    *,
    reports: Sequence[str | os.PathLike[str]] | None = None,
    progress: Progress | None = None,
    command: Sequence[str] | None = None,
    n_boot: int | None = None,
) -> Sweep:
    """Run nothing: fit the reports already under output_dir (or under `reports`, files
    and folders) and write sweep.json and its plot into output_dir. Invalid files are
    skipped (said on progress). Raises InputError when there is nothing to fit, or the
    measured reports are of several cards, software stacks or protocols."""
    progress = progress or Progress()
    root = open_folder(output_dir, progress)
    if not root.is_dir() and not reports:
        raise InputError("output_dir", str(output_dir), "does not exist; nothing to fit")
    made = not root.exists()
    try:
        with folder_held(root):  # makes the folder
            records, skipped = existing_records(root, reports)
            for line in skipped:
                progress(f"skipped invalid report {line}")
            if not records:
                field, given = (
                    ("reports", " ".join(os.fspath(r) for r in reports))
                    if reports
                    else ("output_dir", os.fspath(output_dir))
                )
                raise InputError(field, given, f"holds no valid {REPORT_NAME} to fit")
            return finish(records, root, command=command, n_boot=n_boot)
    except InputError:  # bad input leaves nothing, not even the folder it made
        if made:
            with contextlib.suppress(OSError):
                root.rmdir()  # only while empty
        raise


@contextlib.contextmanager
def folder_held(
    root: Path, progress: Progress | None = None, measured_again: Sequence[Path] = ()
) -> Iterator[None]:
    """One sweep at a time writes into a folder: two at once would each write sweep.json
    over reports the other replaced, and the last one would contradict the reports it
    names. An exclusive lock on the folder itself (flock; no lock file is left behind),
    held until sweep.json is written, and released by the system however the sweep
    ends. Raises InputError, before anything runs, while another sweep holds it. On a
    file system without locks, the sweep runs as before.

    measured_again: the folders whose points this sweep measures again; a sweep.json and
    sweep.png left there by an earlier sweep are removed once the lock is held (said on
    progress): an interrupted or failed sweep would leave them naming and drawing
    reports they no longer match."""
    root.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(
                "output_dir",
                str(root),
                "another sweep is writing into this folder now (two at once would leave a "
                "sweep.json that contradicts the reports it names): wait for it to finish, "
                "or give another folder",
            ) from None
        except OSError:  # no locks here (some network file systems): as before
            pass
        for folder in measured_again:  # its plot too: it drew the old reports' points
            for path in (folder / SWEEP_NAME, folder / PLOT_NAME):
                # absent, or not a file (write_mode refuses it at the end), or a link: the
                # link stays and the sweep writes through it (boundary/atomic.py)
                if path.is_symlink() or not path.is_file():
                    continue
                try:
                    path.unlink()
                except OSError:
                    continue  # rewritten at the end; the failure line says whether it was
                if progress is not None:
                    progress(f"removed the earlier {path}: this sweep measures its points again")
        yield
    finally:
        os.close(fd)


def open_folder(output_dir: str | os.PathLike[str], progress: Progress) -> Path:
    """The sweep's folder, checked before anything runs (InputError), and a word on what
    will be skipped for want of the [plot] extra."""
    root = check_output_dir(output_dir)  # as given: never str() of None or bytes
    missing = sweep_fits.missing_fit_stack()
    if missing:
        progress(
            f"{', '.join(missing)} not installed: the fit and/or plot will be skipped "
            "(pip install 'ecocompute[plot]'; `sweep --fit_only` can fit later)"
        )
    return root


def finish(
    records: Sequence[RunRecord],
    root: Path,
    *,
    command: Sequence[str] | None = None,
    n_boot: int | None = None,
) -> Sweep:
    """The points' records made into the Sweep: fitted, plotted, sweep.json written."""
    summary, reports = summarise(records, root, command=command, n_boot=n_boot)
    write_mode(root / SWEEP_NAME)  # a sweep.json that cannot be written (a folder): no plot
    summary = with_plot(summary, reports, root)
    write_sweep(summary, root)
    return summary
