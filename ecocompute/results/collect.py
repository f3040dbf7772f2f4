"""Finding and reading many energy.json reports: the shared front end of aggregate,
plot, check and sweep.

A folder is searched recursively for files named energy.json; a file named on the
command line is read whatever its name. Every file is checked as `validate` checks it
(report/checks.py: schema, sane numbers, its own arithmetic); an invalid one is listed
with its reasons and skipped, never fatal.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.precision import Precision
from ecocompute.report.checks import energy_report_problems
from ecocompute.report.software import STACK_PACKAGES, stack_in_words
from ecocompute.report.validate import files_under, read_document
from ecocompute.report.write import REPORT_NAME

BASIS_MEASURED = "measured"


def software_fingerprint(software: dict[str, Any]) -> str:
    """A short, readable label of the stack that produced a report, e.g.
    "py3.12.3 torch2.11.0 tf5.17.0 bnb0.50.2 cu13.0 drv580.159.04". Packages that were
    not installed are left out (a published-path report may have none of them)."""
    packages = software.get("packages") or {}
    parts = [f"py{software.get('python', '?')}"]
    for name, short in STACK_PACKAGES:
        version = packages.get(name)
        if version:
            parts.append(f"{short}{version}")
    if software.get("torch_cuda"):
        parts.append(f"cu{software['torch_cuda']}")
    if software.get("nvidia_driver"):
        parts.append(f"drv{software['nvidia_driver']}")
    return " ".join(parts)


def software_title(software: dict[str, Any]) -> str:
    """The same stack in words, for a plot title."""
    return ", ".join(stack_in_words(software)) or f"Python {software.get('python', '?')}"


@dataclass(frozen=True)
class Report:
    """One valid report and the fields the result tools read from it."""

    path: Path
    doc: dict[str, Any]

    @property
    def results(self) -> dict[str, Any]:
        return dict(self.doc["results"])

    @property
    def basis(self) -> str:
        return str(self.doc["results"]["basis"])

    @property
    def measured(self) -> bool:
        return self.basis == BASIS_MEASURED

    @property
    def kind(self) -> str:
        """ "measured" or "derived" (a figure from the published dataset)."""
        return "measured" if self.measured else "derived"

    @property
    def arch(self) -> str:
        return str(self.doc["system_under_test"]["gpu_arch"])

    @property
    def card(self) -> str:
        """The GPU's product name; for a report made without a GPU, what it stands for."""
        gpu = self.doc["system_under_test"].get("gpu")
        if gpu and self.measured:
            return str(gpu)
        ref = self.doc["results"].get("reference_card")
        stand_in = f"published {ref}" if ref else "no published card"
        return f"{gpu or 'no GPU'} [{self.arch}, {stand_in}]"

    @property
    def model(self) -> str:
        return str(self.doc["workload"]["model_name"])

    @property
    def params_b(self) -> float | None:
        size = self.doc["workload"].get("params_b")
        return None if size is None else float(size)

    @property
    def precision(self) -> str:
        return str(self.doc["workload"]["precision"])

    @property
    def quantized(self) -> bool:
        return self.precision != Precision.FP16

    @property
    def fingerprint(self) -> str:
        return software_fingerprint(self.doc["software"])

    @property
    def regime(self) -> str:
        """The decode regime measured ("eager" for reports older than the regimes)."""
        return str((self.doc["measurement"].get("decode") or {}).get("regime", "eager"))

    @property
    def protocol(self) -> str:
        """New tokens per run, batch size, the decode regime of a measurement, and for a
        measurement over several GPUs their number: reports of different workloads,
        regimes or placements never pool."""
        work = self.doc["workload"]
        tokens = work.get("max_new_tokens", self.doc["measurement"]["tokens_per_run"])
        text = f"{tokens} tok, batch {work['batch_size']}"
        if self.measured and self.regime != "eager":
            text += f", {self.regime}"
        gpus = self.doc["system_under_test"].get("accelerator_count") or 1
        return f"{text}, {gpus} GPUs" if self.measured and gpus > 1 else text

    @property
    def energy_per_token_mj(self) -> float | None:
        value = self.doc["results"]["energy_per_token_mj"]
        return None if value is None else float(value)

    @property
    def fp16_energy_per_token_mj(self) -> float | None:
        value = self.doc["results"]["fp16_energy_per_token_mj"]
        return None if value is None else float(value)

    @property
    def delta_pct(self) -> float | None:
        """Energy per token vs FP16 in percent; None for FP16 itself or no figure."""
        if not self.quantized:
            return None
        value = self.doc["results"]["vs_fp16_energy_pct"]
        return None if value is None else float(value)

    @property
    def ci95_pct(self) -> tuple[float, float] | None:
        ci = self.doc["results"].get("vs_fp16_ci95_pct")
        return None if not ci else (float(ci[0]), float(ci[1]))

    @property
    def n_pairs(self) -> int | None:
        n = self.doc["results"].get("n_pairs")
        return None if n is None else int(n)


@dataclass(frozen=True)
class Invalid:
    path: str
    problems: list[str]


def report_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Files named directly, plus every energy.json under each folder, sorted, no repeats."""
    return files_under(paths, (REPORT_NAME,))


def read_one(path: str | os.PathLike[str]) -> Report | Invalid:
    document, problems = read_document(path)
    if document is not None:
        problems = energy_report_problems(document)
    if document is None or problems:
        return Invalid(str(path), problems)
    return Report(Path(path), document)


def read_reports(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[Report], list[Invalid]]:
    """Every valid report under paths, and every file that is not one (with why)."""
    reports: list[Report] = []
    invalid: list[Invalid] = []
    for file in report_files(paths):
        one = read_one(file)
        if isinstance(one, Invalid):
            invalid.append(one)
        else:
            reports.append(one)
    return reports, invalid
