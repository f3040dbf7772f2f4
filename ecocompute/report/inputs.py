"""What a measured report's figures derive from, besides the formulas: its trials, the
facts of its formats, its idle window (report/derive.py derives; checks.py takes these
back out of a report to derive them again)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from ecocompute.report.results_model import (
    Format,
    IdleWindow,
    PrefillWindow,
    Trial,
    WindowConditions,
)


class WindowReadings(TypedDict):
    """A window's meter readings: the raw fields a Trial and a PrefillWindow share."""

    duration_s: float
    energy_joules: float
    energy_source: str
    counter_energy_joules: float | None
    sampled_energy_joules: float
    samples: int
    dropped_samples: int
    per_gpu_energy_joules: Sequence[float]


class RawPrefill(WindowReadings):
    """A prefill window's raw fields, as derive.prefill_window takes them."""

    prefills: int
    prompt_tokens: int


class RawTrial(WindowReadings):
    """A trial's raw fields, as derive.trial takes them."""

    index: int
    pair: int | None
    format: Format
    tokens: int
    slot: NotRequired[int | None]
    idle_gpus_energy_joules: NotRequired[Sequence[float] | None]
    conditions: NotRequired[Sequence[WindowConditions]]
    compile: NotRequired[int | None]
    prefill: NotRequired[PrefillWindow | None]


@dataclass(frozen=True)
class FormatFacts:
    """One format of a measured report, as its per_format entry names it."""

    format: str  # its key (INT8-torchao where not the default library)
    library: str
    nvml_indices: tuple[int, ...]
    weights_mib: float | None = None


@dataclass(frozen=True)
class Measured:
    """Everything a measured report's results derive from."""

    precision: Format  # the report's own format (the headline's)
    trials: tuple[Trial, ...]
    facts: Mapping[Format, FormatFacts]
    idle_window: IdleWindow | None
    batch_size: int
    bandwidth_gbs: float | None
    held_nvml_indices: tuple[int, ...] = ()  # every GPU the session held, where the formats' differ
    # the stated workload of a run with its phases apart, per sequence (row)
    prompt_tokens: int | None = None
    new_tokens: int | None = None
    # over --compiles N, the interval's SE floored at the classic one (reports before
    # 2026-12-05: not; read from the report, derived again as it was)
    compiles_floor: bool = True
