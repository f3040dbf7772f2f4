"""The project's own exception types, so callers catch meaning rather than vendor codes.

Exit status follows from the type: InputError -> 2 (bad input, nothing written),
RunError -> 1 (input accepted, the run failed and says why).
"""

from __future__ import annotations

import os
import reprlib
from collections.abc import Mapping, Sequence


class EcoComputeError(Exception):
    """Base of every error this package raises on purpose."""

    exit_status = 1


class InputError(EcoComputeError):
    """Bad flags, parameters file or values. One line names the field, value and allowed."""

    exit_status = 2

    def __init__(self, field: str, value: object, allowed: str) -> None:
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"invalid {field} {quote(value)}: {allowed}")


# A bad value is quoted, but never at length: a YAML alias bomb parses to a small graph
# whose full repr would be astronomically long.
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 120
_SHORT.maxlist = _SHORT.maxdict = _SHORT.maxtuple = _SHORT.maxset = 4
_SHORT.maxlevel = 2
_MAX_QUOTE = 160


def quote(value: object) -> str:
    """repr(value), cut short (at most _MAX_QUOTE characters)."""
    text = _SHORT.repr(value)
    return text if len(text) <= _MAX_QUOTE else text[: _MAX_QUOTE - 3] + "..."


class RunError(EcoComputeError):
    """The run could not finish after its input was accepted."""

    exit_status = 1


class PartlyWritten(RunError):
    """Files meant to be written as one (a session's reports) of which some were put in
    place and then one could not be: .written names those in place (complete and
    valid), .not_written the others."""

    def __init__(
        self,
        failed: os.PathLike[str],
        why: str,
        written: Sequence[os.PathLike[str]],
        not_written: Sequence[os.PathLike[str]],
    ) -> None:
        self.failed, self.why = failed, why
        self.written = list(written)
        self.not_written = list(not_written)
        super().__init__(
            f"could not write {failed}: {why}; written, complete and valid: "
            f"{', '.join(map(str, written))}; not written: {', '.join(map(str, not_written))}"
        )


class ReportInvalid(RunError):
    """A report failed validation (its schema, its numbers or its own arithmetic): it is
    an error, never a file."""

    def __init__(self, problems: list[str], *, read_from: str | None = None) -> None:
        self.problems = problems
        self.read_from = read_from  # a file that was read (not one about to be written)
        listed = "; ".join(problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        if read_from is None:
            super().__init__(f"report failed validation, nothing written: {listed}{more}")
        else:
            super().__init__(f"{read_from}: not a report this tool reads: {listed}{more}")


class DecodeCaptureFailed(RunError):
    """A graph-replayed decode regime (graphs, compiled) cannot run one format: its
    compile, its capture, or the check of the first replays failed. Never answered by a
    silent fall back to another regime: the formats of a run must share one regime."""

    def __init__(
        self, label: str, reason: str, regime: str = "graphs", *, parted: bool = False
    ) -> None:
        self.label = label  # the format, e.g. "INT8"
        self.reason = reason  # one line
        self.regime = regime  # the regime that failed
        other = "--decode graphs or --decode eager" if regime == "compiled" else "--decode eager"
        # parted: the token check refused it, where a stated wider near tie may admit it
        wider = ", or state a wider near tie (--near_tie_std, at most 1)" if parted else ""
        super().__init__(
            f"{self.refusal}. Measure it with {other} instead{wider}; no report was written."
        )

    @property
    def refusal(self) -> str:
        """What was refused and why, without what that left written."""
        return f"the {self.regime} decode regime cannot measure {self.label}: {self.reason}"


class FormatsRefused(RunError):
    """A session's regime refused some of its formats while preparing them (before any
    measured window) and measured the others: their reports are written (.written);
    .refused maps each refused format to why."""

    def __init__(self, refused: Mapping[str, str], written: Sequence[os.PathLike[str]]) -> None:
        self.refused = dict(refused)
        self.written = list(written)
        why = "; ".join(f"{fmt} not measured ({reason})" for fmt, reason in self.refused.items())
        super().__init__(
            f"{why}; the session's other formats were measured: written, complete and valid: "
            f"{', '.join(map(str, self.written))}"
        )


class CannotMeasure(EcoComputeError):
    """Nothing on this machine can be measured for this run; the published path answers
    instead, labelled with the reason. The one place that decides measured or published
    (task/run.py) catches it; hardware is what the probe had learnt when it was
    raised (estimate.hardware.Hardware, attached on the way up), None if nothing."""

    def __init__(self, code: str, reason: str) -> None:
        self.code = code  # a fallback_reason code of the schema
        self.reason = reason
        self.hardware: object | None = None
        super().__init__(reason)


class TelemetryUnavailable(CannotMeasure):
    """NVML (or a device's power telemetry) cannot be used."""


class AcceleratorUnavailable(CannotMeasure):
    """NVML sees a GPU but this process cannot compute on it (no torch/transformers, or
    CUDA finds no device)."""


class MeasurementRefused(CannotMeasure):
    """An on-device measurement was started and could not be trusted (e.g. power reads
    kept failing, or CUDA's devices could not be matched to NVML's)."""

    def __init__(self, why: str) -> None:
        super().__init__("measurement_failed", f"on-device measurement failed: {why}")
        self.why = why


class Interrupted(BaseException):
    """SIGTERM or SIGHUP arrived (SIGINT is KeyboardInterrupt: boundary/interrupts.py). A
    BaseException, like KeyboardInterrupt, so no `except Exception` can swallow it."""

    def __init__(self, signum: int, name: str) -> None:
        self.signum = signum
        self.name = name
        self.exit_status = 128 + signum  # the shell's convention: 130 SIGINT, 143 SIGTERM
        super().__init__(name)


def one_line(exc: BaseException) -> str:
    """The exception's type and the first line of its message (at most 200 characters),
    for a refusal that names its cause in one line."""
    text = str(exc).strip()
    first = text.splitlines()[0][:200] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
