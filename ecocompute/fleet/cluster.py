"""Where a fleet sweep's points run: a Dask scheduler someone started (--scheduler) or a
cluster of this host's GPUs started here (--local_cluster), one worker per GPU.

Dask distributed is an optional extra ([fleet]); it is imported only inside functions,
so the sequential sweep never needs it.

Why not dask-cuda's LocalCUDACluster: it gives each worker a *rotated* list of every
GPU (CUDA_VISIBLE_DEVICES=1,0 for the second of two), so a model larger than one GPU's
share (--max_gpu_memory_gib) would spill onto a neighbour's GPU mid-measurement. Here
each worker sees exactly one GPU, declares the resource GPU=1, and every point asks for
GPU=1, so a GPU never runs two measurements at once; and the [fleet] extra stays one
package (no RAPIDS stack).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from importlib.util import find_spec
from typing import Any

from ecocompute.errors import EcoComputeError, InputError, RunError, TelemetryUnavailable
from ecocompute.fleet import worker_setup
from ecocompute.fleet.point import placement

log = logging.getLogger(__name__)

GPU_RESOURCE = "GPU"
INSTALL_HINT = "pip install 'ecocompute[fleet]'"
CONNECT_TIMEOUT_S = 30.0
WORKERS_TIMEOUT_S = 120.0


class FleetExtraMissing(InputError):
    """A fleet flag was given and Dask distributed is not installed (exit 2)."""

    def __init__(self, flag: str) -> None:
        self.field, self.value = flag, None
        self.allowed = f"needs Dask distributed: {INSTALL_HINT}"
        EcoComputeError.__init__(
            self, f"{flag} needs Dask distributed, which is not installed: {INSTALL_HINT}"
        )


def require_distributed(flag: str) -> None:
    if find_spec("distributed") is None:
        raise FleetExtraMissing(flag)


def visible_gpus(workers: int | None = None, environ: dict[str, str] | None = None) -> list[str]:
    """The GPUs --local_cluster starts a worker for, as CUDA_VISIBLE_DEVICES values:
    CUDA_VISIBLE_DEVICES' own list if it is set, else NVML's devices 0..n-1. workers N
    (for tests, or to use only the first N): N workers on "0".."N-1" without asking
    NVML. Raises InputError when there is none."""
    env = os.environ if environ is None else environ
    if workers is not None:
        if workers < 1:
            raise InputError("workers", workers, "must be 1 or more")
        return [str(i) for i in range(workers)]
    listed = env.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        gpus = [g.strip() for g in listed.split(",") if g.strip()]
        if not gpus:
            raise InputError(
                "local_cluster", None, "CUDA_VISIBLE_DEVICES is empty: it hides every GPU"
            )
        return gpus
    count = _nvml_count()
    if count == 0:
        raise InputError(
            "local_cluster", None, "starts one worker per GPU, and NVML lists no GPU here"
        )
    return [str(i) for i in range(count)]


def _nvml_count() -> int:
    from ecocompute.telemetry.nvml import open_nvml

    try:
        telemetry = open_nvml()
    except TelemetryUnavailable as exc:
        raise InputError(
            "local_cluster",
            None,
            f"starts one worker per GPU, and {exc.reason}; use --scheduler to reach GPUs elsewhere",
        ) from None
    try:
        return len(telemetry.devices())
    finally:
        telemetry.close()


def local_cluster(gpus: tuple[str, ...], threads_per_worker: int = 1, quiet: bool = False) -> Any:
    """A Dask cluster on this host: a scheduler on 127.0.0.1 and one worker process
    (under a nanny, which restarts it if it dies; threads_per_worker threads: the GPU
    resource, not the thread count, serialises) per GPU, pinned to it through
    CUDA_VISIBLE_DEVICES and declaring GPU=1, each in a process group of its own
    (worker_setup.py: a Ctrl-C at the terminal must not kill the workers).

    allowed_failures 0: Dask would otherwise re-run a point whose worker died up to 3
    times on its own; here the first loss comes back to the client, which records it
    and retries once (fleet.py)."""
    from distributed import Nanny, Scheduler, SpecCluster

    scheduler = {
        "cls": Scheduler,
        "options": {"host": "127.0.0.1", "dashboard": False, "allowed_failures": 0},
    }
    workers = {
        f"gpu{gpu}": {
            "cls": Nanny,
            "options": {
                "host": "127.0.0.1",
                "nthreads": threads_per_worker,
                "resources": {GPU_RESOURCE: 1},
                "env": {"CUDA_VISIBLE_DEVICES": gpu},
                # The measurement runs in a child process; the worker's own memory
                # is small, and Dask's memory manager must not pause or kill it.
                "memory_limit": 0,
                "dashboard": False,
                "silence_logs": _dask_log_level(quiet),
                # out of the terminal's process group: a Ctrl-C there reaches the
                # client alone, which cancels the points (fleet/worker_setup.py)
                "preload": [worker_setup.__name__],
            },
        }
        for gpu in gpus
    }
    return SpecCluster(
        workers=workers,
        scheduler=scheduler,
        silence_logs=_dask_log_level(quiet),
        name="ecocompute-local",
    )


def _dask_log_level(quiet: bool) -> int:
    """Dask logs every connection at INFO; the sweep's own progress lines say what
    matters. Warnings (a worker restarted) stay, unless --quiet; --verbose shows all."""
    if logging.getLogger("ecocompute").isEnabledFor(logging.DEBUG):
        return logging.DEBUG
    return logging.ERROR if quiet else logging.WARNING


@contextlib.contextmanager
def open_client(scheduler: str | None, local_gpus: tuple[str, ...], quiet: bool) -> Iterator[Any]:
    """A Dask client to the scheduler, or, without one, to a local cluster over
    local_gpus (CUDA_VISIBLE_DEVICES values, one worker each) started (and closed on the
    way out, whatever stops the block) here. Raises RunError when the scheduler cannot
    be reached or no worker with a GPU joins."""
    from distributed import Client

    with contextlib.ExitStack() as stack:
        logger = logging.getLogger("distributed")
        stack.callback(logger.setLevel, logger.level)  # as it was, on the way out
        logger.setLevel(_dask_log_level(quiet))
        if not scheduler:
            cluster = stack.enter_context(local_cluster(local_gpus, quiet=quiet))
            client = stack.enter_context(Client(cluster))
            _wait_for_workers(client, len(local_gpus), "the local cluster")
        else:
            try:
                client = stack.enter_context(Client(scheduler, timeout=CONNECT_TIMEOUT_S))
            except (OSError, TimeoutError) as exc:
                raise RunError(
                    f"could not reach the Dask scheduler at {scheduler}: {exc}; start "
                    "one with `dask scheduler` (docs/fleet.md); nothing was run"
                ) from None
            _wait_for_workers(client, 1, f"the scheduler at {scheduler}")
        yield client


def _wait_for_workers(client: Any, n: int, what: str) -> None:
    try:
        client.wait_for_workers(n, timeout=WORKERS_TIMEOUT_S)
    except TimeoutError:
        raise RunError(
            f"no {n} worker(s) joined {what} within {WORKERS_TIMEOUT_S:.0f} s; start one per "
            "GPU (docs/fleet.md); nothing was run"
        ) from None
    named = gpu_workers(client)
    if not named:
        raise RunError(
            f"no worker of {what} declares the {GPU_RESOURCE} resource, so no point could "
            f'ever start; start each worker with --resources "{GPU_RESOURCE}=1" '
            "(docs/fleet.md); nothing was run"
        )
    placed = client.run(placement, workers=list(named))  # run on each worker
    shared = shared_gpus({named.get(a, a): (p.host, p.gpu) for a, p in placed.items()})
    if shared:
        raise RunError(
            f"two workers of {what} could measure on one GPU at once: {shared}; give each "
            "worker one GPU of its own (CUDA_VISIBLE_DEVICES=<that GPU>, docs/fleet.md); "
            "nothing was run"
        )


def shared_gpus(placements: dict[str, tuple[str, str | None]]) -> str | None:
    """Where two GPU workers of one host would see a GPU in common (a GPU never runs two
    measurements at once, docs/fleet.md): words naming the first such pair, else None.
    A worker without CUDA_VISIBLE_DEVICES sees every GPU of its host. Entries are
    compared as written (an index and the same GPU's UUID are not matched)."""
    seen: dict[str, list[tuple[str, frozenset[str] | None, str]]] = {}
    for address, (host, listed) in sorted(placements.items()):
        gpus = None if listed is None else frozenset(g.strip() for g in listed.split(","))
        for other, their, their_listed in seen.get(host, []):
            if gpus is None or their is None or gpus & their:
                return (
                    f"{other} (CUDA_VISIBLE_DEVICES {their_listed}) and {address} "
                    f"(CUDA_VISIBLE_DEVICES {listed or 'unset: every GPU'}) on {host}"
                )
        seen.setdefault(host, []).append((address, gpus, listed or "unset: every GPU"))
    return None


def gpu_workers(client: Any) -> dict[str, str]:
    """address -> name of the connected workers that declare a GPU."""
    info = client.scheduler_info(n_workers=-1)["workers"]
    return {
        address: str(w.get("name", address))
        for address, w in info.items()
        if (w.get("resources") or {}).get(GPU_RESOURCE)
    }
