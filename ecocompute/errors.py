"""The project's own exception types, so callers catch meaning rather than vendor codes.

Exit status follows from the type: InputError -> 2 (bad input, nothing written),
RunError -> 1 (input accepted, the run failed and says why).
"""

from __future__ import annotations


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
        super().__init__(f"invalid {field} {value!r}: {allowed}")


class RunError(EcoComputeError):
    """The run could not finish after its input was accepted."""

    exit_status = 1


class ReportInvalid(RunError):
    """A report failed its schema: it is an error, never a file."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        listed = "; ".join(problems[:5])
        more = f" (+{len(problems) - 5} more)" if len(problems) > 5 else ""
        super().__init__(f"report failed schema validation, nothing written: {listed}{more}")


class TelemetryUnavailable(EcoComputeError):
    """NVML (or a device's power telemetry) cannot be used; the reference path applies."""

    def __init__(self, code: str, reason: str) -> None:
        self.code = code
        self.reason = reason
        super().__init__(reason)


class MeasurementRefused(EcoComputeError):
    """The on-device measurement could not be trusted (e.g. power reads kept failing)."""
