"""How a sweep runs on a Dask fleet, as the command line asks for it (--scheduler,
--local_cluster, --one_per_host): the options, checked."""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass

from ecocompute.errors import InputError
from ecocompute.fleet.cluster import require_distributed

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
    if scheduler is not None:  # '' too: an address left empty is not "run here"
        scheduler = check_scheduler(scheduler)
    fleet = scheduler is not None or local_cluster
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


SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")  # distributed's networked transports
_ADDRESS = "expected a Dask scheduler's address such as tcp://host:8786"


def check_scheduler(address: str) -> str:
    """--scheduler: a Dask scheduler's address ([tcp|tls|ws|wss|ucx]://host:port, or
    host:port), checked before anything runs as --api_base is: a user name or password
    (user:pw@) is refused and never echoed (the line shows *** in its place), and so is
    a query or fragment; the port must be 1..65535 (a lookup of port 99999 would wait
    for the connect timeout). Returns the address as given. Raises InputError."""
    if not address:
        raise InputError("scheduler", address, _ADDRESS)
    scheme, sep, rest = address.rpartition("://") if "://" in address else ("", "", address)
    if "@" in rest:  # refused first, and shown without them: stderr must not hold them
        shown = f"{scheme}{sep}***@{rest.rsplit('@', 1)[1]}"
        raise InputError(
            "scheduler",
            shown,
            "must not carry a user name or password (user:pw@): stderr and the sweep's "
            "records would show them; Dask's tls:// takes credentials from its configuration",
        )
    if any(c.isspace() or not c.isprintable() for c in address):
        raise InputError("scheduler", address, _ADDRESS + ", without spaces")
    if scheme and scheme not in SCHEMES:
        raise InputError("scheduler", address, f"{_ADDRESS}; schemes: {', '.join(SCHEMES)}")
    if "?" in address or "#" in address or "/" in rest:
        raise InputError("scheduler", address, _ADDRESS + ", without a path, query or fragment")
    try:
        parts = urllib.parse.urlsplit(f"tcp://{rest}")
        port, host = parts.port, parts.hostname
    except ValueError:  # a port that is no number, or out of range; a broken [ipv6]
        port, host = None, None
    if not host or port is None or not 1 <= port <= 65535:
        raise InputError("scheduler", address, _ADDRESS + " (host:port, port 1..65535)")
    return address
