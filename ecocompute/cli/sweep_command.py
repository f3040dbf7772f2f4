"""`sweep`: one session per model and batch size, then the fits; on Dask with the
[fleet] extra."""

from __future__ import annotations

import argparse
import functools
from pathlib import Path

from ecocompute.boundary.printing import print_after_write
from ecocompute.boundary.progress import Progress
from ecocompute.cli.flags import (
    add_run_flags,
    parameters_file_flag,
    recorded_command,
    run_flags_given,
)
from ecocompute.errors import InputError, RunError

SWEEP_DIR = "outputs/sweep"
DEFAULT_PRECISIONS = "NF4"


# -- sweep ---------------------------------------------------------------------------


def add_sweep(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="energy_estimate over several models, then fit the crossover on this card",
        description="Run one energy_estimate per model (one session of its formats; each "
        "report in <output_dir>/<model>-<format>/energy.json for one format, "
        "<output_dir>/<model>/<format>/energy.json for several, the folder ending -b<N> "
        "per batch size of --batch_sizes), fit dE%(N) = A - S x/(1+x), "
        "x = N/Nstar to this card's measured points (derived points are never fitted), "
        "and report the crossover size where dE% = 0 with a bootstrap 95% interval, in "
        "<output_dir>/sweep.json plus sweep.png. Other flags pass through to every run.",
    )
    p.add_argument(
        "--models",
        metavar="M1,M2,...",
        default=None,
        help="models (Hugging Face ids, folders or synthetic:<preset>), comma-separated",
    )
    p.add_argument(
        "--precisions",
        metavar="NF4,INT4,...",
        default=DEFAULT_PRECISIONS,
        help="quantized formats, comma-separated: NF4, INT8, INT4, FP8; several are "
        f"measured in one session per point against one FP16 baseline (default: "
        f"{DEFAULT_PRECISIONS})",
    )
    p.add_argument(
        "--batch_sizes",
        "--batch-sizes",
        metavar="1,4,16,64",
        default=None,
        help="the batch axis: one session per model and batch size, then per format the "
        "delta against the batch size and where it crosses zero (default: --batch_size)",
    )
    p.add_argument(
        "--prompt_tokens",
        "--prompt-tokens",
        dest="prompt_lengths",
        metavar="128,1024,4096",
        default=None,
        help="the prompt-length axis: the sweep once per length, its points and its "
        "sweep.json under <output_dir>/p<length>/ (lengths are never pooled); one length "
        "is that run parameter for every point",
    )
    parameters_file_flag(p, "YAML parameters shared by every run (flags override)")
    p.add_argument(
        "--fit_only",
        "--fit-only",
        action="store_true",
        help="run nothing: fit the reports already under --output_dir (e.g. "
        "written by sweeps on several GPUs into one folder), or under --reports",
    )
    p.add_argument(
        "--reports",
        nargs="+",
        metavar="PATH",
        default=None,
        help="with --fit_only: fit the reports under these files and folders instead of "
        "--output_dir's (sweep.json and sweep.png still go to --output_dir)",
    )
    p.add_argument(
        "--output_dir",
        "--output-dir",
        metavar="DIR",
        default=SWEEP_DIR,
        help=f"folder for the runs' reports, sweep.json and sweep.png (default: {SWEEP_DIR})",
    )
    _add_fleet_flags(p)
    add_run_flags(p, skip=("model_name", "params_b", "precision", "output_dir", "prompt_tokens"))
    p.set_defaults(handler=_cmd_sweep)


def _add_fleet_flags(p: argparse.ArgumentParser) -> None:
    """The sweep on Dask (the [fleet] extra; docs/fleet.md)."""
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the points on the workers of this Dask scheduler (e.g. tcp://host:8786), "
        "one point per GPU at a time; needs ecocompute[fleet]",
    )
    where.add_argument(
        "--local_cluster",
        "--local-cluster",
        action="store_true",
        help="start a Dask cluster here, one worker per visible GPU, and run the points on "
        "it; needs ecocompute[fleet]",
    )
    p.add_argument(
        "--one_per_host",
        "--one-per-host",
        action="store_true",
        help="with --scheduler/--local_cluster: at most one point per host at a time (eager "
        "decode is host-bound: a busy neighbour disturbs the measurement)",
    )
    p.add_argument(
        "--every_gpu",
        "--every-gpu",
        action="store_true",
        help="with --scheduler/--local_cluster: run each point once on every GPU worker "
        "connected, each report under <point>/<worker>/ (each GPU a unit: `aggregate "
        "--units` pools them; docs/units.md)",
    )
    p.add_argument("--workers", type=int, default=None, help=argparse.SUPPRESS)  # tests


def _cmd_sweep(args: argparse.Namespace) -> int:
    """The sweep, then its summary; exit 3 when sweep.json was written but the summary
    could not be printed, 1 when a point failed (sweep.json is written either way)."""
    from ecocompute.fleet.options import options_from_flags
    from ecocompute.sweeps.document import SWEEP_NAME
    from ecocompute.sweeps.plan import (
        prompt_folder,
        split_batches,
        split_list,
        split_prompt_lengths,
    )
    from ecocompute.sweeps.render import render

    fleet = options_from_flags(
        scheduler=args.scheduler,
        local_cluster=args.local_cluster,
        one_per_host=args.one_per_host,
        every_gpu=args.every_gpu,
        workers=args.workers,
        fit_only=args.fit_only,
    )
    # A sweep writes each point's report as it goes: a failure after the first one
    # must not say that nothing was written.
    from ecocompute.sweeps.document import sweep_leaves

    args.written_so_far = sweep_leaves(args.output_dir)
    if not args.fit_only:  # an interrupt says what stands, from the folder, as a failure
        # does (a fleet's sweep.json, which lists the cancelled points too, may not be
        # written: an interrupt after the last point, or points of two cards)
        args.after_interrupt = lambda name: f"interrupted by {name}: {args.written_so_far()}"
    if args.reports and not args.fit_only:
        raise InputError("reports", args.reports, "only with --fit_only")
    if args.fit_only:  # a fit runs nothing: a flag for the runs would be silently unused
        given = run_flags_given(args, leave_out=("output_dir", "quiet"))
        given |= {n: getattr(args, n) for n in ("models", "batch_sizes", "parameters_file")}
        given["precisions"] = None if args.precisions == DEFAULT_PRECISIONS else args.precisions
        name = next((n for n, v in given.items() if v is not None), None)
        if name is not None:
            raise InputError(name, given[name], "only without --fit_only (a fit runs nothing)")
    models = None if args.fit_only else split_list("models", args.models)
    precisions = split_list("precisions", args.precisions)
    batch_sizes = split_batches(args.batch_sizes)
    progress, command = Progress(bool(args.quiet)), recorded_command()
    shared = run_flags_given(args, leave_out=("output_dir",))
    lengths = split_prompt_lengths(args.prompt_lengths)
    if lengths is not None and len(lengths) > 1:
        folders = [prompt_folder(n) for n in lengths]
        args.written_so_far = sweep_leaves(args.output_dir, folders)
    if lengths is not None and (models is None or fleet is not None):
        why = "a prompt-length axis runs here, not with --fit_only or the fleet"
        raise InputError("prompt_tokens", args.prompt_lengths, why)
    if lengths is not None and len(lengths) == 1:
        shared["prompt_tokens"], lengths = str(lengths[0]), None
    from ecocompute.sweeps.sweep import fit_reports, prompt_sweep, sweep

    out, root = args.output_dir, Path(args.output_dir)
    if models is None:
        done = {root: fit_reports(out, reports=args.reports, progress=progress, command=command)}
    elif lengths is not None:
        by_length = prompt_sweep(
            models,
            precisions,
            out,
            lengths,
            options=shared,
            parameters_file=args.parameters_file,
            batch_sizes=batch_sizes,
            progress=progress,
            command=command,
        )
        done = {root / prompt_folder(n): one for n, one in by_length.items()}
    else:
        run = sweep
        if fleet is not None:
            from ecocompute.fleet.sweep import fleet_sweep

            run = functools.partial(fleet_sweep, fleet=fleet)
        done = {
            root: run(
                models,
                precisions,
                out,
                options=shared,
                parameters_file=args.parameters_file,
                batch_sizes=batch_sizes,
                progress=progress,
                command=command,
            )
        }
    for folder, one in done.items():
        path = folder / SWEEP_NAME
        status = print_after_write(render(one, path), [str(path)])
        if status:
            return status
    failed = sum(len(one.failed) for one in done.values())
    total = sum(len(one.runs) for one in done.values())
    if failed and lengths is not None:
        raise RunError(f"{failed} of {total} run(s) failed (see each p<length>/{SWEEP_NAME})")
    if failed:
        why = f"(see {root / SWEEP_NAME}); the others were fitted"
        raise RunError(f"{failed} of {total} run(s) failed {why}")
    return 0
