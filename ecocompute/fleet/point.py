"""One sweep point on a Dask worker: `energy_estimate` in a process of its own, on the
worker's GPU, into a temp folder; the report's text comes back to the client.

This module is what the worker imports to run a point (the client sends run_point by
reference), so it imports nothing heavy and Dask only inside functions: run_point also
runs outside any worker (tests call it directly), where the worker-side parts (the
"started" event, cancellation, the per-host slot) are skipped.

What can go wrong is returned, never raised: a point whose process fails comes back as
a PointOutcome with its exit status and the last line of its stderr, so the client
decides (client.judge) whether it is retried. A worker that dies (killed, out of host
memory) returns nothing: the client sees Dask's KilledWorker instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.params import YAML_KEYS, RunParams
from ecocompute.report.write import REPORT_NAME

log = logging.getLogger(__name__)

PARAMETERS_NAME = "params.yaml"
POLL_S = 1.0  # how often a running point looks for a cancellation
HOST_SLOT_PREFIX = "ecocompute-host-slot-"  # one distributed Lock per host name
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


@dataclass(frozen=True)
class PointSpec:
    """What a worker needs to run one point (pickled to the worker).

    command: the argv that starts ecocompute's CLI, e.g. (python, -m, ecocompute); None
    means this worker's own Python with `-m ecocompute` (the client's interpreter path
    may not exist on another host). Tests give `python -m tests.cli_with_fakes`.
    """

    name: str  # the point's folder, e.g. synthetic-tiny-test-NF4
    attempt_key: str  # unique per submission: links "started" events to this attempt
    parameters_yaml: str
    switches: tuple[str, ...] = ()  # e.g. ("--dry_run", "--quiet")
    command: tuple[str, ...] | None = None
    topic: str | None = None  # Dask event topic for "started"
    cancel_event: str | None = None  # name of a Dask Event the client sets on Ctrl-C
    one_per_host: bool = False
    cancel_grace_s: float = 60.0  # after SIGINT, how long the point may take to stop


@dataclass(frozen=True)
class Placement:
    """Where a point ran: host name, CUDA_VISIBLE_DEVICES of the worker, worker id."""

    host: str
    gpu: str | None
    worker: str | None = None  # the worker's address
    worker_name: str | None = None


@dataclass(frozen=True)
class PointOutcome:
    """A point's process as it ended. returncode None: it was never started (cancelled
    first). Times are the worker's wall clock (Unix seconds) and its monotonic clock."""

    placement: Placement
    returncode: int | None
    report_text: str | None
    stderr_tail: str
    elapsed_s: float
    started_unix_s: float
    ended_unix_s: float
    cancelled: bool = False
    argv: tuple[str, ...] = ()


def parameters_yaml(params: RunParams) -> str:
    """The point's parameters as a parameters file (every YAML key; None left out, as
    "not given"). output_dir, dry_run and quiet are flags, not YAML keys."""
    import yaml

    values: JsonObject = {
        name: value.value if name == "precision" else value
        for name in YAML_KEYS
        if (value := getattr(params, name)) is not None
    }
    return yaml.safe_dump(values, sort_keys=False)


def switches_for(params: RunParams) -> tuple[str, ...]:
    """The flags a point passes besides the parameters file."""
    return tuple(
        flag for flag, on in (("--dry_run", params.dry_run), ("--quiet", params.quiet)) if on
    )


def run_point(spec: PointSpec) -> PointOutcome:
    """Run one point to its end on this worker and return what happened (never raises
    for a failed point; see the module docstring)."""
    place = placement()
    cancelled = cancel_check(spec.cancel_event)
    with host_slot(spec.one_per_host, place.host, cancelled) as got_slot:
        if not got_slot or cancelled():
            now = time.time()
            return PointOutcome(place, None, None, "not started", 0.0, now, now, cancelled=True)
        announce_start(spec, place)
        return _run_process(spec, place, cancelled)


def _run_process(spec: PointSpec, place: Placement, cancelled: Callable[[], bool]) -> PointOutcome:
    folder = Path(tempfile.mkdtemp(prefix=f"ecocompute-{spec.name[:40]}-"))
    try:
        parameters = folder / PARAMETERS_NAME
        parameters.write_text(spec.parameters_yaml, encoding="utf-8")
        output = folder / "out"
        base = list(spec.command) if spec.command else [sys.executable, "-m", "ecocompute"]
        argv = [*base, "energy_estimate", "--parameters_file", str(parameters)]
        argv += ["--output_dir", str(output), *spec.switches]
        stderr_path = folder / "stderr.txt"
        started_unix_s, t0 = time.time(), time.monotonic()
        with open(stderr_path, "wb") as err, open(folder / "stdout.txt", "wb") as out:
            # The worker's own working directory, so a relative model path means what
            # it means to the worker; CUDA_VISIBLE_DEVICES comes with the environment.
            proc = subprocess.Popen(
                argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, preexec_fn=_child_setup()
            )
            was_cancelled = _wait(proc, cancelled, spec.cancel_grace_s)
        elapsed_s = time.monotonic() - t0
        report = output / REPORT_NAME
        text = report.read_text(encoding="utf-8") if report.is_file() else None
        return PointOutcome(
            place,
            proc.returncode,
            text,
            last_line(stderr_path),
            round(elapsed_s, 3),
            round(started_unix_s, 3),
            round(started_unix_s + elapsed_s, 3),
            was_cancelled and proc.returncode != 0,
            tuple(argv),
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _wait(proc: subprocess.Popen[bytes], cancelled: Callable[[], bool], grace_s: float) -> bool:
    """Wait for the point's process; on a cancellation send it SIGINT (energy_estimate
    then unwinds and writes nothing), and SIGKILL after grace_s. True if cancelled."""
    while True:
        try:
            proc.wait(timeout=POLL_S)
            return False
        except subprocess.TimeoutExpired:
            pass
        if cancelled():
            break
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return True


def last_line(path: Path, limit: int = 400) -> str:
    """The last non-empty line of a text file (a failed run's one-line error)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 8192))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    return lines[-1][:limit] if lines else ""


def _child_setup() -> Callable[[], None]:
    """A preexec_fn for the point's process, run in the child before it starts:

    - SIGINT back to its default: a worker started from a shell's background job hands
      its children SIGINT ignored, and the cancellation relies on SIGINT;
    - on Linux, SIGTERM when the thread that started it ends, i.e. when its worker dies
      (prctl PR_SET_PDEATHSIG): otherwise a measurement orphaned by a killed worker would
      go on on the GPU while the restarted worker starts the next point there.

    prctl is looked up here, before the fork: the child of a threaded process should
    only make the call."""
    prctl = None
    if sys.platform.startswith("linux"):
        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
        except (OSError, AttributeError):
            prctl = None

    def setup() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)

    return setup


# -- the worker side of Dask (skipped outside a worker) --------------------------------


def _current_worker() -> Any | None:
    try:
        from distributed import get_worker
    except ImportError:
        return None
    try:
        return get_worker()
    except ValueError:  # not running on a worker
        return None


def placement() -> Placement:
    worker = _current_worker()
    return Placement(
        host=socket.gethostname(),
        gpu=os.environ.get("CUDA_VISIBLE_DEVICES"),
        worker=None if worker is None else str(worker.address),
        worker_name=None if worker is None else str(worker.name),
    )


def announce_start(spec: PointSpec, place: Placement) -> None:
    """Tell the client (through a Dask event) that this attempt has started: a worker
    lost before this was never running the point, so its retry is not counted."""
    worker = _current_worker()
    if worker is None or spec.topic is None:
        return
    worker.log_event(spec.topic, {"attempt_key": spec.attempt_key, **asdict(place)})


def cancel_check(event_name: str | None) -> Callable[[], bool]:
    """A function telling whether the client asked to cancel (a Dask Event); a scheduler
    that cannot be asked counts as no cancellation (the process is never left running
    because of it: a lost worker ends its point, see _child_setup)."""
    if event_name is None or _current_worker() is None:
        return lambda: False
    from distributed import Event

    event = Event(event_name)

    def is_set() -> bool:
        try:
            return bool(event.is_set())
        except Exception:  # a scheduler hiccup must not end a measurement
            log.debug("could not ask for cancellation", exc_info=True)
            return False

    return is_set


@contextlib.contextmanager
def host_slot(wanted: bool, host: str, cancelled: Callable[[], bool]) -> Iterator[bool]:
    """--one_per_host: hold this host's slot (a Dask Lock named after the host) while the
    point runs. Yields False when cancelled while waiting for it."""
    if not wanted or _current_worker() is None:
        yield True
        return
    from distributed import Lock

    lock = Lock(HOST_SLOT_PREFIX + host)
    while not lock.acquire(timeout=POLL_S):
        if cancelled():
            yield False
            return
    try:
        yield True
    finally:
        lock.release()


def placement_of(msg: dict[str, Any]) -> Placement:
    """Where an attempt runs, from its "started" event (announce_start)."""
    return Placement(**{f.name: msg[f.name] for f in fields(Placement)})


def describe_placement(place: Placement) -> str:
    """e.g. "host-a GPU 1 (worker gpu1)"."""
    gpu = "GPU ?" if place.gpu is None else f"GPU {place.gpu}"
    who = f" (worker {place.worker_name})" if place.worker_name else ""
    return f"{place.host} {gpu}{who}"
