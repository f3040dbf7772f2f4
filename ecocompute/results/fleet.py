"""`ecocompute sweep --scheduler ADDRESS | --local_cluster`: the sweep's points spread
over GPUs on one or several hosts with Dask distributed (the [fleet] extra).

Dask is the engine: it places each point on a worker that has a GPU free (every
worker declares GPU=1, every point asks for GPU=1, so a GPU never runs two
measurements at once) and notices a worker that dies. Each point is one
`energy_estimate` process on its worker (fleet_point.py); the client here gathers the
reports into the sweep's folder, in the sequential sweep's layout, and the caller
(sweep.py) writes sweep.json and the fit exactly as the sequential sweep does.

Failures: a point whose worker died, or whose process ran out of memory or was
killed, is recorded with its reason and retried once, on another worker where one is
connected; a point refused as bad input (exit 2) or failing otherwise is not retried.
Ctrl-C (or SIGTERM) cancels the points not finished, keeps the finished ones' reports,
and raises FleetInterrupted carrying every record, so sweep.json can say so.
"""

from __future__ import annotations

import contextlib
import enum
import json
import signal
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ecocompute.errors import InputError, Interrupted, ReportInvalid, RunError
from ecocompute.interrupts import describe as describe_interrupt
from ecocompute.params import RunParams
from ecocompute.progress import Progress
from ecocompute.report.atomic import write_text_atomic
from ecocompute.report.checks import energy_report_problems
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.fleet_cluster import (
    GPU_RESOURCE,
    Where,
    gpu_workers,
    open_client,
    require_distributed,
    visible_gpus,
)
from ecocompute.results.fleet_point import (
    POLL_S,
    Placement,
    PointOutcome,
    PointSpec,
    describe_placement,
    parameters_yaml,
    run_point,
    switches_for,
)
from ecocompute.results.records import new_record, run_fields, written_record

MAX_ATTEMPTS = 2  # the first, and one retry
MAX_SUBMISSIONS = 5  # losses of a worker before a point started are not attempts; bounded
CANCEL_WAIT_S = 30.0  # after Ctrl-C, how long the client waits for running points to stop
POINT_CANCEL_GRACE_S = 20.0  # a point's process, after SIGINT, before SIGKILL


@dataclass(frozen=True)
class FleetOptions:
    """How a sweep runs on Dask. scheduler: a running scheduler's address; else
    local_cluster starts one worker per visible GPU here (workers N: N workers on GPUs
    0..N-1 instead, e.g. for tests with fake GPUs). point_command: the argv that starts
    ecocompute's CLI on a worker (None: the worker's `python -m ecocompute`)."""

    scheduler: str | None = None
    local_cluster: bool = False
    one_per_host: bool = False
    workers: int | None = None
    threads_per_worker: int = 1
    point_command: tuple[str, ...] | None = None
    cancel_wait_s: float = CANCEL_WAIT_S

    @property
    def flag(self) -> str:
        return "--scheduler" if self.scheduler else "--local_cluster"


class FleetInterrupted(BaseException):
    """Ctrl-C or SIGTERM stopped a fleet sweep: records holds every point (the finished
    ones, with their reports written, and the cancelled ones); interrupt is the original
    KeyboardInterrupt or errors.Interrupted, for the caller to re-raise."""

    def __init__(self, records: list[dict[str, Any]], interrupt: BaseException) -> None:
        super().__init__("interrupted")
        self.records = records
        self.interrupt = interrupt


class Verdict(enum.Enum):
    OK = "ok"
    RETRY = "retry"  # the worker died, the process ran out of memory or was killed
    FAILED = "failed"  # bad input, or a failure a second try would repeat
    CANCELLED = "cancelled"


def judge(outcome: PointOutcome) -> tuple[Verdict, str]:
    """What a point's process ending means, and the reason in one line."""
    rc, tail = outcome.returncode, outcome.stderr_tail
    if outcome.cancelled:
        return Verdict.CANCELLED, "cancelled"
    if rc == 0:
        if outcome.report_text is None:
            return Verdict.FAILED, "exited 0 but wrote no energy.json"
        return Verdict.OK, ""
    if rc == 2:
        return Verdict.FAILED, f"bad input (exit 2, not retried): {tail}"
    if rc is not None and (rc < 0 or rc > 128):
        signum = -rc if rc < 0 else rc - 128
        name = _signal_name(signum)
        why = " (the kernel's out-of-memory killer sends SIGKILL)" if signum == 9 else ""
        return Verdict.RETRY, f"killed by {name}{why}" + (f": {tail}" if tail else "")
    if "out of gpu memory" in tail.lower() or "out of memory" in tail.lower():
        return Verdict.RETRY, f"out of memory (exit {rc}): {tail}"
    return Verdict.FAILED, f"exit {rc}: {tail}"


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def keep_report(text: str, target: Path) -> dict[str, Any]:
    """Validate a worker's energy.json and write it, as it came, at target (atomically).
    Raises ReportInvalid (not JSON, or not a valid report) or RunError (cannot write)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ReportInvalid([f"not JSON: {exc}"]) from None
    problems = energy_report_problems(doc)  # as validate checks it, before it is kept
    if problems:
        raise ReportInvalid(problems)
    write_text_atomic(target, text)
    return dict(doc)


@dataclass
class _Point:
    """One point's life on the fleet: its submissions, attempts and final record."""

    index: int
    params: RunParams
    spec: PointSpec
    attempts: int = 0  # attempts that started (a lost worker before that is not one)
    submissions: int = 0
    errors: list[str] = field(default_factory=list)
    avoid: set[str] = field(default_factory=set)  # worker addresses and names
    record: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        return f"{self.params.model_name} {self.params.precision}"


class _Fleet:
    """The client's side of one fleet sweep (not thread-safe: the main thread only)."""

    def __init__(
        self,
        client: Any,
        root: Path,
        runs: tuple[RunParams, ...],
        options: FleetOptions,
        progress: Progress,
    ) -> None:
        self.client = client
        self.root = root
        self.options = options
        self.progress = progress
        sweep_id = uuid.uuid4().hex[:12]
        self.topic = f"ecocompute-sweep-{sweep_id}"
        self.cancel_event = f"{self.topic}-cancel"
        self.points = [self._point(i, p) for i, p in enumerate(runs, 1)]
        self.pending: dict[Any, _Point] = {}  # future -> point
        self.by_key: dict[str, _Point] = {}  # attempt_key -> point
        self.started: dict[str, dict[str, Any]] = {}  # attempt_key -> start event
        self._seen_events = 0
        self.interrupt_name = "an interrupt"  # set by cancel()

    def _point(self, index: int, params: RunParams) -> _Point:
        spec = PointSpec(
            name=Path(params.output_dir).name,
            attempt_key="",
            parameters_yaml=parameters_yaml(params),
            switches=switches_for(params),
            command=self.options.point_command,
            topic=self.topic,
            cancel_event=self.cancel_event,
            one_per_host=self.options.one_per_host,
            cancel_grace_s=POINT_CANCEL_GRACE_S,
        )
        return _Point(index, params, spec)

    def say(self, point: _Point, text: str) -> None:
        self.progress(f"sweep {point.index}/{len(self.points)}: {point.label} {text}")

    # -- submitting ----------------------------------------------------------------

    def submit(self, point: _Point) -> None:
        point.submissions += 1
        key = f"ecocompute-point-{point.spec.name}-{point.submissions}-{uuid.uuid4().hex[:8]}"
        spec = replace(point.spec, attempt_key=key)
        workers = self._allowed_workers(point)
        future = self.client.submit(
            run_point,
            spec,
            key=key,
            resources={GPU_RESOURCE: 1},
            workers=workers,
            allow_other_workers=False,
            pure=False,
            retries=0,
        )
        self.pending[future] = point
        self.by_key[key] = point

    def _allowed_workers(self, point: _Point) -> list[str] | None:
        """None (any GPU worker) for a first try; for a retry, the GPU workers that are
        not the one(s) it failed on, if any is connected."""
        if not point.avoid:
            return None
        others = [
            address
            for address, name in gpu_workers(self.client).items()
            if address not in point.avoid and name not in point.avoid
        ]
        if not others:
            self.say(point, "has no other worker to go to: retried on any")
            return None
        return others

    # -- watching ------------------------------------------------------------------

    def run(self) -> list[dict[str, Any]]:
        from distributed import wait

        for point in self.points:
            self.say(point, f"queued -> {point.params.output_dir}")
            self.submit(point)
        while self.pending:
            self._announce_started()
            try:
                done = wait(list(self.pending), timeout=POLL_S, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                continue
            self._announce_started()
            for future in done:
                self.settle(self.pending.pop(future), future, may_retry=True)
        return self.records()

    def _announce_started(self) -> None:
        events = self.client.get_events(self.topic)
        for _, msg in events[self._seen_events :]:
            self.started[msg["attempt_key"]] = msg
            point = self.by_key.get(msg["attempt_key"])
            if point is not None and point.record is None:
                self.say(point, f"running on {describe_placement(_placement_of(msg))}")
        self._seen_events = len(events)

    # -- settling ------------------------------------------------------------------

    def settle(self, point: _Point, future: Any, *, may_retry: bool) -> None:
        """Record a finished submission; resubmit it when it earns a retry."""
        from distributed import CancelledError, KilledWorker

        try:
            outcome: PointOutcome = future.result()
        except (KilledWorker, OSError, CancelledError) as exc:  # CommClosedError is an OSError
            self._lost(point, future.key, exc, may_retry)
            return
        except Exception as exc:  # run_point itself failed on the worker: a bug
            self._fail(point, None, f"the worker's task failed: {type(exc).__name__}: {exc}")
            return
        verdict, reason = judge(outcome)
        place = outcome.placement
        if verdict is Verdict.OK:
            self._ok(point, outcome)
        elif verdict is Verdict.CANCELLED:
            self._cancelled(point, f"cancelled by {self.interrupt_name} while it ran", place)
        else:
            point.attempts += 1
            retryable = may_retry and verdict is Verdict.RETRY
            self._retry_or_fail(point, place, reason, outcome, retryable)

    def _lost(self, point: _Point, key: str, exc: BaseException, may_retry: bool) -> None:
        start = self.started.get(key)
        if start is None and point.submissions < MAX_SUBMISSIONS and may_retry:
            # Lost before it started (queued on a worker that died): not an attempt.
            self.say(point, "lost its worker before it started; submitted again")
            self.submit(point)
            return
        point.attempts += 1
        place = _placement_of(start) if start else _placement_of_killed(exc)
        reason = f"worker lost ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        self._retry_or_fail(point, place, reason, None, may_retry)

    def _retry_or_fail(
        self,
        point: _Point,
        place: Placement,
        reason: str,
        outcome: PointOutcome | None,
        retryable: bool,
    ) -> None:
        where = describe_placement(place)
        point.errors.append(f"attempt {point.attempts} on {where}: {reason}")
        elapsed = "" if outcome is None else f" after {outcome.elapsed_s:.1f} s"
        if retryable and point.attempts < MAX_ATTEMPTS:
            self.say(point, f"FAILED{elapsed} on {where}: {reason}; retrying on another worker")
            point.avoid.update(a for a in (place.worker, place.worker_name) if a)
            self.submit(point)
            return
        self.say(point, f"FAILED{elapsed} on {where}: {reason}")
        self._fail(point, place, reason, outcome)

    def _ok(self, point: _Point, outcome: PointOutcome) -> None:
        point.attempts += 1
        target = Path(point.params.output_dir) / REPORT_NAME
        try:
            doc = keep_report(outcome.report_text or "", target)
        except RunError as exc:  # ReportInvalid is one: a second try would repeat it
            self.say(point, f"FAILED: {exc}")
            self._fail(point, outcome.placement, str(exc), outcome)
            return
        record = new_record(point.params)
        record.update(run_fields(written_record(target, doc), self.root), status="ok")
        point.record = {**record, **self._placement_fields(point, outcome.placement, outcome)}
        delta = doc["results"].get("vs_fp16_energy_pct")
        delta_text = "" if delta is None else f": {delta:+.1f}% vs FP16"
        self.say(
            point,
            f"done in {outcome.elapsed_s:.1f} s on {describe_placement(outcome.placement)}"
            f"{delta_text} ({doc['results'].get('basis')})",
        )

    def _fail(
        self,
        point: _Point,
        place: Placement | None,
        reason: str,
        outcome: PointOutcome | None = None,
    ) -> None:
        record = new_record(point.params)
        record["error"] = reason
        point.record = {**record, **self._placement_fields(point, place, outcome)}

    def _cancelled(self, point: _Point, reason: str, place: Placement | None) -> None:
        record = new_record(point.params)
        record.update(status="cancelled", error=reason)
        point.record = {**record, **self._placement_fields(point, place, None)}

    def _placement_fields(
        self, point: _Point, place: Placement | None, outcome: PointOutcome | None
    ) -> dict[str, Any]:
        return {
            "host": None if place is None else place.host,
            "gpu": None if place is None else place.gpu,
            "worker": None if place is None else (place.worker_name or place.worker),
            "attempts": point.attempts,
            "attempt_errors": list(point.errors),
            "elapsed_s": None if outcome is None else outcome.elapsed_s,
            "started_unix_s": None if outcome is None else outcome.started_unix_s,
            "ended_unix_s": None if outcome is None else outcome.ended_unix_s,
        }

    # -- stopping ------------------------------------------------------------------

    def cancel(self, interrupt: BaseException) -> list[dict[str, Any]]:
        """Ctrl-C: tell every point to stop (running ones get SIGINT, queued ones never
        start), wait a while for them, keep whatever finished, cancel the rest."""
        from distributed import Event, wait

        name, _ = describe_interrupt(interrupt)
        self.interrupt_name = name
        self.progress(
            f"sweep interrupted by {name}: cancelling {len(self.pending)} point(s) not "
            "finished; the finished ones are kept"
        )
        try:
            Event(self.cancel_event, client=self.client).set()
            if self.pending:
                wait(list(self.pending), timeout=self.options.cancel_wait_s)
        except (KeyboardInterrupt, Interrupted, TimeoutError, OSError):
            pass  # a second Ctrl-C, or points that did not stop in time: cancelled below
        for future, point in list(self.pending.items()):
            if future.done():  # finished (or stopped) after all: keep what it says
                self.settle(point, future, may_retry=False)
        with contextlib.suppress(Exception):  # the scheduler may be gone: nothing to stop
            self.client.cancel(list(self.pending))
        self.pending.clear()
        for point in self.points:
            if point.record is None:
                self._cancelled(point, f"cancelled by {name} before it finished", None)
        return self.records()

    def records(self) -> list[dict[str, Any]]:
        missing = [p.label for p in self.points if p.record is None]
        if missing:  # every path above sets one; a gap would be a bug here
            raise RuntimeError(f"points without a record: {missing}")
        return [p.record for p in self.points if p.record is not None]


def _placement_of(msg: dict[str, Any]) -> Placement:
    return Placement(
        host=str(msg.get("host")),
        gpu=msg.get("gpu"),
        worker=msg.get("worker"),
        worker_name=msg.get("worker_name"),
    )


def _placement_of_killed(exc: BaseException) -> Placement:
    """Where a lost attempt ran, from KilledWorker's last worker when nothing else says."""
    last = getattr(exc, "last_worker", None)
    address = getattr(last, "address", None)
    name = getattr(last, "name", None)
    host = getattr(last, "host", None)
    return Placement(
        host=str(host or "unknown host"),
        gpu=None,
        worker=None if address is None else str(address),
        worker_name=None if name is None else str(name),
    )


def options_from_flags(
    *,
    scheduler: str | None,
    local_cluster: bool,
    one_per_host: bool,
    workers: int | None,
    fit_only: bool,
) -> FleetOptions | None:
    """The sweep's fleet flags, checked together (InputError), or None for the
    sequential sweep. Checks that Dask is installed (FleetExtraMissing) before anything
    runs."""
    fleet = bool(scheduler) or local_cluster
    if not fleet:
        for name, given in (("one_per_host", one_per_host), ("workers", workers is not None)):
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
        workers=workers,
    )
    require_distributed(options.flag)
    return options


def where_of(options: FleetOptions, quiet: bool) -> Where:
    if options.scheduler:
        return Where(scheduler=options.scheduler, quiet=quiet)
    gpus = tuple(visible_gpus(options.workers))
    return Where(local_gpus=gpus, threads_per_worker=options.threads_per_worker, quiet=quiet)


def run_fleet(
    root: Path, runs: tuple[RunParams, ...], options: FleetOptions, progress: Progress
) -> list[dict[str, Any]]:
    """Run every point on the fleet and write each report under its output_dir; returns
    the sweep's run records in plan order. Raises FleetExtraMissing (no Dask),
    InputError (no GPU for --local_cluster), RunError (no scheduler or workers), or
    FleetInterrupted on Ctrl-C / SIGTERM."""
    require_distributed(options.flag)
    where = where_of(options, quiet=progress.quiet)
    if where.scheduler is None:
        gpus = ", ".join(where.local_gpus)
        progress(f"starting a local Dask cluster: one worker per GPU ({gpus})")
    fleet: _Fleet | None = None
    try:
        with open_client(where) as client:
            fleet = _Fleet(client, root, runs, options, progress)
            try:
                records = fleet.run()
            except (KeyboardInterrupt, Interrupted) as exc:
                raise FleetInterrupted(fleet.cancel(exc), exc) from None
    except (KeyboardInterrupt, Interrupted) as exc:  # while the cluster started or closed
        done = fleet is not None and all(p.record is not None for p in fleet.points)
        kept = fleet.records() if fleet is not None and done else None
        raise FleetInterrupted(kept or [cancelled_record(p, exc) for p in runs], exc) from None
    return records


def cancelled_record(params: RunParams, interrupt: BaseException) -> dict[str, Any]:
    name, _ = describe_interrupt(interrupt)
    return {**new_record(params), "status": "cancelled", "error": f"cancelled by {name}"}
