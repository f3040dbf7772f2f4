"""A point's life on the fleet as the client keeps it, and what the client makes of a
point that came back: kept, retried or failed (a point's own failure is not retried; a
lost worker is), the report it brought checked as `validate` checks it, and the
record of a point cancelled by an interrupt."""

from __future__ import annotations

import enum
import json
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ecocompute.boundary.atomic import write_text_atomic
from ecocompute.boundary.interrupts import describe as describe_interrupt
from ecocompute.errors import ReportInvalid
from ecocompute.fleet.point import Placement, PointOutcome, PointSpec
from ecocompute.params import RunParams
from ecocompute.report.read import energy_report_problems
from ecocompute.sweeps.document import CANCELLED, RunRecord
from ecocompute.sweeps.records import new_record

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
        name = signal_name(signum)
        why = " (the kernel's out-of-memory killer sends SIGKILL)" if signum == 9 else ""
        return Verdict.RETRY, f"killed by {name}{why}" + (f": {tail}" if tail else "")
    if "out of gpu memory" in tail.lower() or "out of memory" in tail.lower():
        return Verdict.RETRY, f"out of memory (exit {rc}): {tail}"
    return Verdict.FAILED, f"exit {rc}: {tail}"


def signal_name(signum: int) -> str:
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


def cancelled_record(params: RunParams, interrupt: BaseException) -> RunRecord:
    name, _ = describe_interrupt(interrupt)
    return new_record(params, status=CANCELLED, error=f"cancelled by {name}")


def placement_of_killed(exc: BaseException) -> Placement:
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
