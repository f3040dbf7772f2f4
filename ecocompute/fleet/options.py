"""How a sweep runs on a Dask fleet, as the command line asks for it (--scheduler,
--local_cluster, --one_per_host): the options, checked, and where the points go."""

from __future__ import annotations

from dataclasses import dataclass

from ecocompute.errors import InputError
from ecocompute.fleet.cluster import (
    Where,
    require_distributed,
    visible_gpus,
)

MAX_SUBMISSIONS = 5  # losses of a worker before a point started are not attempts; bounded
POINT_CANCEL_GRACE_S = 20.0  # a point's process, after SIGINT, before SIGKILL
CANCEL_WAIT_S = 30.0  # after Ctrl-C, how long the client waits for running points to stop


@dataclass(frozen=True)
class FleetOptions:
    """How a sweep runs on Dask. scheduler: a running scheduler's address; else
    local_cluster starts one worker per visible GPU here (workers N: N workers on GPUs
    0..N-1 instead, e.g. for tests with fake GPUs). point_command: the argv that starts
    ecocompute's CLI on a worker (None: the worker's `python -m ecocompute`)."""

    scheduler: str | None = None
    local_cluster: bool = False
    one_per_host: bool = False
    every_gpu: bool = False  # each point once on every GPU worker (each GPU a unit)
    workers: int | None = None
    threads_per_worker: int = 1
    point_command: tuple[str, ...] | None = None
    cancel_wait_s: float = CANCEL_WAIT_S

    @property
    def flag(self) -> str:
        return "--scheduler" if self.scheduler else "--local_cluster"


def options_from_flags(
    *,
    scheduler: str | None,
    local_cluster: bool,
    one_per_host: bool,
    workers: int | None,
    fit_only: bool,
    every_gpu: bool = False,
) -> FleetOptions | None:
    """The sweep's fleet flags, checked together (InputError), or None for the
    sequential sweep. Checks that Dask is installed (FleetExtraMissing) before anything
    runs."""
    fleet = bool(scheduler) or local_cluster
    if not fleet:
        given_alone = (
            ("one_per_host", one_per_host),
            ("every_gpu", every_gpu),
            ("workers", workers is not None),
        )
        for name, given in given_alone:
            if given:
                raise InputError(name, None, "needs --scheduler or --local_cluster")
        return None
    if fit_only:
        raise InputError(
            "fit_only", None, "runs nothing, so it takes no --scheduler or --local_cluster"
        )
    if workers is not None and not local_cluster:
        raise InputError("workers", workers, "sets the size of --local_cluster only")
    options = FleetOptions(
        scheduler=scheduler or None,
        local_cluster=local_cluster,
        one_per_host=one_per_host,
        every_gpu=every_gpu,
        workers=workers,
    )
    require_distributed(options.flag)
    return options


def where_of(options: FleetOptions, quiet: bool) -> Where:
    if options.scheduler:
        return Where(scheduler=options.scheduler, quiet=quiet)
    gpus = tuple(visible_gpus(options.workers))
    return Where(local_gpus=gpus, threads_per_worker=options.threads_per_worker, quiet=quiet)
