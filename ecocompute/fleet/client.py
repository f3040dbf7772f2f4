"""`ecocompute sweep --scheduler ADDRESS | --local_cluster`: the sweep's points spread
over GPUs on one or several hosts with Dask distributed (the [fleet] extra).

Dask places each point on a worker with a GPU free (workers declare GPU=1, points ask
for GPU=1: a GPU never runs two measurements at once) and notices one that dies. Each
point is one `energy_estimate` process on its worker (point.py); the client here
gathers the reports into the sweep's folder, in the sequential sweep's layout, and the
caller (fleet/sweep.py) writes sweep.json and the fit exactly as the sequential sweep
does.

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
import re
import signal
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ecocompute.boundary.atomic import write_text_atomic
from ecocompute.boundary.interrupts import describe as describe_interrupt
from ecocompute.boundary.progress import Progress
from ecocompute.core.json_types import JsonObject
from ecocompute.errors import Interrupted, ReportInvalid, RunError
from ecocompute.fleet.cluster import (
    GPU_RESOURCE,
    gpu_workers,
    open_client,
    require_distributed,
    visible_gpus,
)
from ecocompute.fleet.options import (
    MAX_SUBMISSIONS,
    POINT_CANCEL_GRACE_S,
    FleetOptions,
)
from ecocompute.fleet.point import (
    POLL_S,
    Placement,
    PointOutcome,
    PointSpec,
    describe_placement,
    parameters_yaml,
    placement_of,
    run_point,
    switches_for,
)
from ecocompute.params import RunParams
from ecocompute.report.read import energy_report_problems
from ecocompute.report.write import REPORT_NAME
from ecocompute.sweeps.document import CANCELLED, FAILED, RunRecord
from ecocompute.sweeps.records import answered, new_record, written_record

MAX_ATTEMPTS = 2  # the first, and one retry


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
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        why = " (the kernel's out-of-memory killer sends SIGKILL)" if signum == 9 else ""
        return Verdict.RETRY, f"killed by {name}{why}" + (f": {tail}" if tail else "")
    if "out of gpu memory" in tail.lower() or "out of memory" in tail.lower():
        return Verdict.RETRY, f"out of memory (exit {rc}): {tail}"
    return Verdict.FAILED, f"exit {rc}: {tail}"


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


def placement_of_killed(exc: BaseException) -> Placement:
    """Where a lost attempt ran, from KilledWorker's last worker when nothing else says."""
    last = getattr(exc, "last_worker", None)
    address, name = getattr(last, "address", None), getattr(last, "name", None)
    return Placement(
        host=str(getattr(last, "host", None) or "unknown host"),
        gpu=None,
        worker=None if address is None else str(address),
        worker_name=None if name is None else str(name),
    )


class FleetInterrupted(BaseException):
    """Ctrl-C or SIGTERM stopped a fleet sweep: records holds every point (the finished
    ones, with their reports written, and the cancelled ones); interrupt is the original
    KeyboardInterrupt or errors.Interrupted, for the caller to re-raise."""

    def __init__(self, records: list[RunRecord], interrupt: BaseException) -> None:
        super().__init__("interrupted")
        self.records = records
        self.interrupt = interrupt


@dataclass
class Point:
    """One point's life on the fleet: its submissions, attempts and final record."""

    index: int
    params: RunParams
    spec: PointSpec
    attempts: int = 0  # attempts that started (a lost worker before that is not one)
    submissions: int = 0
    errors: list[str] = field(default_factory=list)
    avoid: set[str] = field(default_factory=set)  # worker addresses and names
    record: RunRecord | None = None
    pinned: str | None = None  # --every_gpu: the worker (address) it must run on
    pinned_name: str | None = None

    @property
    def label(self) -> str:
        on = f" on {self.pinned_name}" if self.pinned_name else ""
        return f"{self.params.model_name} {self.params.precision}{on}"


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
        self.topic = f"ecocompute-sweep-{uuid.uuid4().hex[:12]}"
        self.cancel_event = f"{self.topic}-cancel"
        self.points = self._points(runs)
        self.pending: dict[Any, Point] = {}  # future -> point
        self.by_key: dict[str, Point] = {}  # attempt_key -> point
        self.started: dict[str, JsonObject] = {}  # attempt_key -> start event
        self._seen_events = 0
        self.interrupt_name = "an interrupt"  # set by cancel()

    def _points(self, runs: tuple[RunParams, ...]) -> list[Point]:
        """One point per run; with --every_gpu, one per run and GPU worker connected now,
        pinned to it, its report in a folder named by the worker under the run's."""
        if not self.options.every_gpu:
            return [self._point(i, p) for i, p in enumerate(runs, 1)]
        workers = sorted(gpu_workers(self.client).items(), key=lambda w: w[1])
        if not workers:
            raise RunError("--every_gpu: no GPU worker is connected to the scheduler")
        self.progress(
            f"--every_gpu: each point on each of {len(workers)} GPU worker(s): "
            + ", ".join(name for _, name in workers)
        )
        points: list[Point] = []
        for params in runs:
            for address, name in workers:
                folder = Path(params.output_dir) / worker_folder(name)
                pinned = replace(params, output_dir=str(folder))
                point = self._point(len(points) + 1, pinned)
                point.pinned, point.pinned_name = address, name
                points.append(point)
        return points

    def _point(self, index: int, params: RunParams) -> Point:
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
        return Point(index, params, spec)

    def say(self, point: Point, text: str) -> None:
        self.progress(f"sweep {point.index}/{len(self.points)}: {point.label} {text}")

    # -- submitting ----------------------------------------------------------------

    def submit(self, point: Point) -> None:
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

    def _allowed_workers(self, point: Point) -> list[str] | None:
        """None (any GPU worker) for a first try; for a retry, the GPU workers that are
        not the one(s) it failed on, if any is connected; a pinned point (--every_gpu)
        its own worker only."""
        if point.pinned is not None:
            return [point.pinned]
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

    def run(self) -> list[RunRecord]:
        from distributed import CancelledError, wait
        from distributed.comm.core import CommClosedError

        for point in self.points:
            self.say(point, f"queued -> {point.params.output_dir}")
            self.submit(point)
        while self.pending:
            try:
                self._announce_started()
                done = wait(list(self.pending), timeout=POLL_S, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                self._orphans()
                continue
            except (CancelledError, CommClosedError, OSError) as exc:  # the scheduler is gone
                self._scheduler_lost(exc)
                break
            self._announce_started()
            for future in done:  # settled, then let go: an interrupt between the two
                # finds it still pending and done, so cancel() keeps what it says
                self.settle(self.pending[future], future, may_retry=True)
                del self.pending[future]
        return self.records()

    def _orphans(self) -> None:
        """A pinned point whose worker is gone (a restarted worker comes back at another
        address) would wait for that address for ever, the scheduler having queued it
        again there: it fails, as a pinned point whose worker is lost does."""
        pinned = [(f, pt) for f, pt in self.pending.items() if pt.pinned is not None]
        if not pinned:
            return
        alive = gpu_workers(self.client)
        for future, point in pinned:
            if point.pinned not in alive and point.record is None:
                with contextlib.suppress(Exception):
                    self.client.cancel([future])
                del self.pending[future]
                reason = f"its worker ({point.pinned_name or point.pinned}) was lost"
                self.say(point, f"FAILED: {reason}")
                self._failed_attempt(point, reason)

    def _scheduler_lost(self, exc: BaseException) -> None:
        """The scheduler's connection closed (it died, or its host went away): no pending
        point can finish or be retried; each fails, and what finished before stands."""
        reason = f"lost the connection to the Dask scheduler ({type(exc).__name__})"
        for point in list(self.pending.values()):
            self.say(point, f"FAILED: {reason}")
            self._failed_attempt(point, reason)
        self.pending.clear()

    def _announce_started(self) -> None:
        events = self.client.get_events(self.topic)
        for _, msg in events[self._seen_events :]:
            self.started[msg["attempt_key"]] = msg
            point = self.by_key.get(msg["attempt_key"])
            if point is not None and point.record is None:
                self.say(point, f"running on {describe_placement(placement_of(msg))}")
        self._seen_events = len(events)

    # -- settling ------------------------------------------------------------------

    def settle(self, point: Point, future: Any, *, may_retry: bool) -> None:
        """Record a finished submission; resubmit it when it earns a retry."""
        from distributed import CancelledError, KilledWorker
        from distributed.comm.core import CommClosedError

        try:
            outcome: PointOutcome = future.result()
        except (KilledWorker, CommClosedError, CancelledError) as exc:  # the worker, lost
            self._lost(point, future.key, exc, may_retry)
            return
        except Exception as exc:  # run_point itself failed on a live worker: not retried
            reason = f"the worker's task failed: {type(exc).__name__}: {exc}"
            self.say(point, f"FAILED: {reason}")
            self._failed_attempt(point, reason)
            return
        verdict, reason = judge(outcome)
        place = outcome.placement
        if verdict is Verdict.OK:
            self._ok(point, outcome)
        elif verdict is Verdict.CANCELLED:  # its command never started: no GPU was used
            ran = outcome.returncode is not None
            when = "while it ran" if ran else "before it started"
            why = f"cancelled by {self.interrupt_name} {when}"
            self._fail(point, place if ran else None, why, status=CANCELLED)
        else:
            point.attempts += 1
            retryable = may_retry and verdict is Verdict.RETRY
            self._retry_or_fail(point, place, reason, outcome, retryable)

    def _lost(self, point: Point, key: str, exc: BaseException, may_retry: bool) -> None:
        start = self.started.get(key)
        if point.pinned is not None:  # its GPU's worker is gone: nowhere else is that GPU
            may_retry = False
        if start is None and point.submissions < MAX_SUBMISSIONS and may_retry:
            # Lost before it started (queued on a worker that died): not an attempt.
            self.say(point, "lost its worker before it started; submitted again")
            self.submit(point)
            return
        point.attempts += 1
        place = placement_of(start) if start else placement_of_killed(exc)
        reason = f"worker lost ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        self._retry_or_fail(point, place, reason, None, may_retry)

    def _failed_attempt(self, point: Point, reason: str) -> None:
        """One attempt, failed where no placement was reported; not retried."""
        point.attempts += 1
        point.errors.append(f"attempt {point.attempts}: {reason}")
        self._fail(point, None, reason)

    def _retry_or_fail(
        self,
        point: Point,
        place: Placement,
        reason: str,
        outcome: PointOutcome | None,
        retryable: bool,
    ) -> None:
        where = describe_placement(place)
        point.errors.append(f"attempt {point.attempts} on {where}: {reason}")
        elapsed = "" if outcome is None else f" after {outcome.elapsed_s:.1f} s"
        if retryable and point.attempts < MAX_ATTEMPTS:
            # a pinned point's GPU is the point of it: once more on the same worker only
            again = "the same GPU" if point.pinned is not None else "another worker"
            self.say(point, f"FAILED{elapsed} on {where}: {reason}; retrying on {again}")
            if point.pinned is None:
                point.avoid.update(a for a in (place.worker, place.worker_name) if a)
            self.submit(point)
            return
        self.say(point, f"FAILED{elapsed} on {where}: {reason}")
        self._fail(point, place, reason, outcome)

    def _ok(self, point: Point, outcome: PointOutcome) -> None:
        point.attempts += 1
        target = Path(point.params.output_dir) / REPORT_NAME
        try:
            doc = keep_report(outcome.report_text or "", target)
        except RunError as exc:  # ReportInvalid is one: a second try would repeat it
            self.say(point, f"FAILED: {exc}")
            self._fail(point, outcome.placement, str(exc), outcome)
            return
        params = point.params
        point.record = answered(
            params.model_name,
            str(params.precision),
            written_record(target, doc),
            self.root,
            self._placement_fields(point, outcome.placement, outcome),
        )
        delta = doc["results"].get("vs_fp16_energy_pct")
        delta_text = "" if delta is None else f": {delta:+.1f}% vs FP16"
        self.say(
            point,
            f"done in {outcome.elapsed_s:.1f} s on {describe_placement(outcome.placement)}"
            f"{delta_text} ({doc['results'].get('basis')})",
        )

    def _fail(
        self,
        point: Point,
        place: Placement | None,
        reason: str,
        outcome: PointOutcome | None = None,
        status: str = FAILED,
    ) -> None:
        placement = self._placement_fields(point, place, outcome)
        point.record = new_record(point.params, error=reason, status=status, more=placement)

    def _placement_fields(
        self, point: Point, place: Placement | None, outcome: PointOutcome | None
    ) -> dict[str, object]:
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

    def cancel(self, interrupt: BaseException) -> list[RunRecord]:
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
            if future.done() and point.record is None:  # finished after all: keep it
                self.settle(point, future, may_retry=False)
        with contextlib.suppress(Exception):  # the scheduler may be gone: nothing to stop
            self.client.cancel(list(self.pending))
        self.pending.clear()
        for point in self.points:
            if point.record is None:
                why = f"cancelled by {name} before it finished"
                self._fail(point, None, why, status=CANCELLED)
        return self.records()

    def records(self) -> list[RunRecord]:
        missing = [p.label for p in self.points if p.record is None]
        if missing:  # every path above sets one; a gap would be a bug here
            raise RuntimeError(f"points without a record: {missing}")
        return [p.record for p in self.points if p.record is not None]


def worker_folder(name: str) -> str:
    """A worker's name as one folder name ('gpu-0'; 'tcp://10.0.0.5:4001' ->
    'tcp-10.0.0.5-4001')."""
    safe = "".join(c if c.isalnum() or c in "._-" else "-" for c in name).strip(".-")
    return re.sub("-{2,}", "-", safe) or "worker"


def run_fleet(
    root: Path, runs: tuple[RunParams, ...], options: FleetOptions, progress: Progress
) -> list[RunRecord]:
    """Run every point on the fleet and write each report under its output_dir; returns
    the sweep's run records in plan order. Raises FleetExtraMissing (no Dask),
    InputError (no GPU for --local_cluster), RunError (no scheduler or workers), or
    FleetInterrupted on Ctrl-C / SIGTERM."""
    require_distributed(options.flag)
    gpus = () if options.scheduler else tuple(visible_gpus(options.workers))
    if gpus:
        progress(f"starting a local Dask cluster: one worker per GPU ({', '.join(gpus)})")
    fleet: _Fleet | None = None
    try:
        with open_client(options.scheduler, gpus, progress.quiet) as client:
            fleet = _Fleet(client, root, runs, options, progress)
            try:
                records = fleet.run()
            except (KeyboardInterrupt, Interrupted) as exc:
                raise FleetInterrupted(fleet.cancel(exc), exc) from None
    except (KeyboardInterrupt, Interrupted) as exc:  # while the cluster started or closed
        done = fleet is not None and all(p.record is not None for p in fleet.points)
        why = f"cancelled by {describe_interrupt(exc)[0]}"
        kept = fleet.records() if fleet is not None and done else None
        cancelled = [new_record(p, status=CANCELLED, error=why) for p in runs]
        raise FleetInterrupted(kept or cancelled, exc) from None
    return records
