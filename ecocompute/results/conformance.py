"""`validate --profile`: is one report schema-valid, protocol-conformant, dataset-eligible?

The published container's validator (hongping-zh/ecocompute-mlcube tools/validate.py at
8778c42) gives one of four verdicts against its Protocol v1.1 (DOI 10.5281/zenodo.22958675):

  schema-invalid        the report's structure is refused
  schema-valid          its structure holds, but a Protocol v1.1 MUST does not (or is not
                        recorded, so it cannot be verified)
  protocol-conformant   every machine-checkable MUST holds (profile v1.1-core)
  dataset-eligible      and the extras a dataset release asks for: a whole-run power trace,
                        the achieved sample rate, a measured basis (profile dataset-eligible)

Here "structure" is what this tool's reader checks (report/read.py: the report's own
format's schema, then its arithmetic), plus any schema given (`--schema`). The protocol's
clauses are read from the typed report, one function per clause group; a report that
does not record a fact the protocol requires is never conformant. Honest failure states
(thermal basis unavailable, steady_state_reached false) are valid. Exit statuses (chosen
in cli/): 0 conformant or eligible as asked, 1 schema-valid with violations, 2
schema-invalid, 3 a file or schema that cannot be read.

May import: report and everything report may import.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.report.files import read_document
from ecocompute.report.model import Report
from ecocompute.report.read import parse_report
from ecocompute.report.schema import check_schema, schema_errors_against

PROFILES = ("v1.1-core", "dataset-eligible")
SCHEMA_INVALID, SCHEMA_VALID = "schema-invalid", "schema-valid"
CONFORMANT, ELIGIBLE = "protocol-conformant", "dataset-eligible"
PROTOCOL_FLOOR = ("ecocompute-energy/1.0",)  # conformance is defined against 1.2 and later
CORE_TOKENS, CORE_ITERATIONS, CORE_BATCH, MIN_RATE_HZ = 256, 10, 1, 10
NEEDED_PACKAGES = ("torch", "transformers", "bitsandbytes")
THERMAL_MEASURED = (
    "warmup_runs",
    "cooldown_s",
    "temperature_start_c",
    "temperature_end_c",
    "temperature_peak_c",
)
DATASET_NOTES = (
    "n >= 2 independent sessions per configuration (and per card where there are several) "
    "is checked at the dataset level (its table and review), not from one report",
    "a maintainer's review before a report enters a release cannot be checked here",
)


@dataclass(frozen=True)
class Violation:
    clause: str  # the protocol's section, e.g. "4.2.1"
    text: str  # what failed, in one line
    hint: str = ""

    def line(self) -> str:
        return f"[\u00a7{self.clause}] {self.text}" + (f" (fix: {self.hint})" if self.hint else "")


@dataclass(frozen=True)
class Conformance:
    profile: str
    verdict: str
    violations: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    schema_version: str | None = None

    @property
    def exit_status(self) -> int:
        if self.verdict == SCHEMA_INVALID:
            return 2
        if self.verdict == SCHEMA_VALID or (self.profile == ELIGIBLE and self.violations):
            return 1
        return 0


def judge(document: Any, profile: str, schema_problems: list[str] | None = None) -> Conformance:
    """The verdict on one parsed document under a profile. schema_problems: what a schema
    given beside the reader's own refused (empty or None: nothing more)."""
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r}: one of {', '.join(PROFILES)}")
    version = document.get("schema_version") if isinstance(document, Mapping) else None
    version = version if isinstance(version, str) else None
    report, problems = parse_report(document)
    problems = [*problems, *(schema_problems or [])]
    if report is None or problems:
        return Conformance(profile, SCHEMA_INVALID, tuple(problems), (), version)
    core = core_violations(report)
    if core:
        return Conformance(profile, SCHEMA_VALID, tuple(v.line() for v in core), (), version)
    if profile == "v1.1-core":
        return Conformance(profile, CONFORMANT, (), (), version)
    extra = list(dataset_violations(report))
    if extra:
        return Conformance(profile, CONFORMANT, tuple(v.line() for v in extra), (), version)
    return Conformance(profile, ELIGIBLE, (), DATASET_NOTES, version)


def core_violations(r: Report) -> list[Violation]:
    """Every Protocol v1.1 MUST that one report can show, in the protocol's order."""
    return [
        *_version_floor(r),
        *_power(r),
        *_baseline(r),
        *_workload(r),
        *_window(r),
        *_software(r),
        *_thermal(r),
    ]


def _version_floor(r: Report) -> Iterator[Violation]:
    if r.ecocompute_format is None and r.schema_version in PROTOCOL_FLOOR:
        yield Violation(
            "4.5.2",
            f"schema_version {r.schema_version!r} is below the protocol floor: "
            "conformance is defined against ecocompute-energy/1.2 or later",
            "a 1.0 report can be schema-valid, never protocol-conformant",
        )


def _power(r: Report) -> Iterator[Violation]:
    if r.measured and r.measurement_source != "direct-nvml":
        yield Violation(
            "4.1.4",
            f"basis measured needs measurement_source direct-nvml, not {r.measurement_source!r}",
            "figures from TDP or a vendor's typical power are never measurements",
        )
    if r.measured and "nvml" not in r.measurement.method.lower():
        yield Violation(
            "4.1.1",
            f"measurement.method {r.measurement.method!r}: a measured report records "
            "NVML on-device GPU-package power",
        )
    rate = r.measurement.sample_rate_hz
    if rate < MIN_RATE_HZ:
        yield Violation("4.1.2", f"sample_rate_hz {rate} is below the {MIN_RATE_HZ} Hz minimum")


def _baseline(r: Report) -> Iterator[Violation]:
    res = r.results
    lacking = res.vs_fp16_energy_pct is None or res.fp16_energy_per_token_mj is None
    if r.measured and r.workload.precision != "FP16" and lacking:
        yield Violation(
            "4.2.1",
            f"a measured {r.workload.precision} report without its same-session FP16 "
            "baseline (vs_fp16_energy_pct, fp16_energy_per_token_mj)",
        )


def _workload(r: Report) -> Iterator[Violation]:
    w, m = r.workload, r.measurement
    if w.batch_size != CORE_BATCH:
        yield Violation(
            "4.3.1",
            f"batch_size {w.batch_size}: the protocol's core is batch {CORE_BATCH}",
            "other batch sizes are an optional extension, labelled apart",
        )
    yield from _recorded("4.3.2", "tokens_per_run", m.tokens_per_run, CORE_TOKENS)
    yield from _recorded("4.3.2", "decode iterations", m.iterations, CORE_ITERATIONS)
    if w.decoding is None:
        yield Violation(
            "4.3.2",
            "decoding strategy not recorded (the core is greedy)",
            "workload.decoding: greedy",
        )
    elif w.decoding != "greedy":
        yield Violation("4.3.2", f"workload.decoding {w.decoding!r}: the core is greedy")
    if w.context_length is None:
        yield Violation("4.3.3", "context_length not recorded")
    if m.warmup is None or m.warmup < 1:
        yield Violation("4.3.4", "warm-up missing or zero: warm-up runs precede the window")


def _recorded(clause: str, name: str, value: int | None, core: int) -> Iterator[Violation]:
    if value is None:
        yield Violation(clause, f"{name} not recorded (the core is {core})")
    elif value != core:
        yield Violation(clause, f"{name} is {value}, the core is {core}")


def _window(r: Report) -> Iterator[Violation]:
    window = r.measurement.window
    if window is None:
        yield Violation(
            "4.4.1",
            "measurement window not stated (the core is the generation window)",
            "measurement.window: generation",
        )
    elif window != "generation":
        yield Violation("4.4.1", f"measurement.window {window!r}: the core is generation")
    elif r.results.phases is not None:  # --phases apart: the headline is one phase's window
        yield Violation(
            "4.4.1",
            "the headline window is the decode window alone (--phases apart): the prefill and "
            "the first token it yields lie outside it; the core's generation window holds the "
            "whole generation",
        )


def _software(r: Report) -> Iterator[Violation]:
    sw = r.software
    if sw is None:
        yield Violation("4.5.1", "software block missing: the versions used are recorded")
        return
    if not sw.python:
        yield Violation("4.5.1", "software.python missing")
    missing = [p for p in NEEDED_PACKAGES if not (sw.packages or {}).get(p)]
    if missing:
        yield Violation("4.5.1", f"software.packages missing: {', '.join(missing)}")
    if not sw.nvidia_driver:
        yield Violation("4.5.1", "software.nvidia_driver missing")
    if sw.differs_from_reference_pins and sw.matches_reference_pins is not False:
        yield Violation(
            "4.5.3",
            "differs_from_reference_pins is not empty, but matches_reference_pins is not false",
        )


def _thermal(r: Report) -> Iterator[Violation]:
    th = r.thermal
    if th is None:
        yield Violation(
            "4.6.1",
            "thermal block missing",
            "the warm-up count and the temperatures at start, steady, end and peak",
        )
        return
    if th.basis == "measured":
        for name in THERMAL_MEASURED:
            if getattr(th, name) is None:
                yield Violation(
                    "4.6.1", f"thermal.{name} missing (a measured thermal block records it)"
                )
        if th.temperature_steady_c is None and th.steady_state_reached is not False:
            yield Violation(
                "4.6.4", "thermal.temperature_steady_c missing, without steady_state_reached false"
            )
    order = th.arm_order
    if order is None:
        yield Violation(
            "4.6.2",
            "arm order not recorded",
            "randomized or counterbalanced, or a fixed order disclosed in thermal.note",
        )
    elif order.lower().startswith("fixed"):
        if not (th.note or "").strip():
            yield Violation("4.6.2", "a fixed arm order whose deviation is not disclosed (no note)")
    elif order not in ("randomized", "counterbalanced"):
        yield Violation("4.6.2", f"thermal.arm_order {order!r} is not one the protocol names")


def dataset_violations(r: Report) -> Iterator[Violation]:
    if r.power_trace is None or not r.power_trace.files:
        yield Violation(
            "4.4.3",
            "no whole-run power-trace sidecar attached",
            "run with --power_trace: the window can then be re-cut without re-running",
        )
    if not r.measured:
        yield Violation("C", f"results.basis {r.results.basis!r}: a release needs measured")


def judge_file(
    path: str | os.PathLike[str], profile: str, schema: JsonObject | None = None
) -> Conformance | str:
    """The verdict on one file, or (a str) why it cannot be read at all: not there, not
    JSON, not UTF-8 (the container's usage error)."""
    if Path(path).is_dir():  # a run's output folder: its report
        path = Path(path) / "energy.json"
        if not path.exists():
            return "no energy.json in this folder"
    document, problems = read_document(path)
    if document is None:
        return "; ".join(problems) or "cannot be read"
    extra = schema_errors_against(document, schema) if schema is not None else []
    return judge(document, profile, extra)


def read_schema(path: str | os.PathLike[str]) -> JsonObject | str:
    """A JSON schema given with --schema, or (a str) why it cannot be used."""
    document, problems = read_document(path)
    if not isinstance(document, dict):
        return "; ".join(problems) or "not a JSON schema (an object)"
    try:
        check_schema(document)
    except ValueError as exc:
        return str(exc)
    return document
