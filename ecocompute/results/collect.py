"""Finding and reading many energy.json reports: the shared front end of aggregate,
plot, check and sweep.

A folder is searched recursively for files named energy.json; a file named on the
command line is read whatever its name. Every file is checked as `validate` checks it
(report/checks.py: schema, sane numbers, its own arithmetic); an invalid one is listed
with its reasons and skipped, never fatal. Each file is read once however it is named,
each report counted once however many files hold it (results/identity.py), and a
folder that cannot be searched is listed with the invalid files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ecocompute.precision import Precision
from ecocompute.published.archs import arch_from_product_name
from ecocompute.report.checks import energy_report_problems
from ecocompute.report.finding import find_files
from ecocompute.report.labels import local_gpu
from ecocompute.report.software import (
    DRIVER_UNAVAILABLE,
    STACK_PACKAGES,
    stack_in_words,
    version_of,
)
from ecocompute.report.validate import UNSEARCHABLE, files_under, read_document
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.identity import repeats
from ecocompute.results.upgrade import upgrade

BASIS_MEASURED = "measured"
PUBLISHED_FORMAT = "ecocompute-energy/1.1"


def software_fingerprint(software: dict[str, Any]) -> str:
    """A short, readable label of the stack that produced a report, e.g.
    "py3.12.3 torch2.11.0 tf5.17.0 bnb0.50.2 cu13.0 drv580.159.04". Packages that were
    not installed are left out (a published-path report may have none of them)."""
    installed = software.get("packages") or {}
    parts = [f"py{software.get('python', '?')}"]
    for name, short in STACK_PACKAGES:
        version = version_of(installed, name)
        if version:
            parts.append(f"{short}{version}")
    if software.get("torch_cuda"):
        parts.append(f"cu{software['torch_cuda']}")
    if software.get("nvidia_driver") not in (None, DRIVER_UNAVAILABLE):
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
    def format(self) -> str:
        return str(self.doc.get("schema_version"))

    @property
    def from_published_container(self) -> bool:
        """Written by the published EcoCompute container (format 1.1): one run, no
        trials, so n = 1 and no interval."""
        return self.format == PUBLISHED_FORMAT

    @property
    def origin(self) -> str:
        return "published container, format 1.1" if self.from_published_container else "ecocompute"

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
        sut = self.doc["system_under_test"]
        arch = sut.get("gpu_arch")
        return str(arch) if arch else arch_from_product_name(str(sut.get("gpu", "")))

    @property
    def card(self) -> str:
        """The GPU's product name; for a report made without a GPU, what it stands for."""
        gpu = local_gpu(self.doc)
        if gpu and self.measured:
            return str(gpu)
        ref = self.doc["results"].get("reference_card")
        stand_in = f"published {ref}" if ref else "no published card"
        return f"{gpu or 'no GPU'} [{self.arch}, {stand_in}]"

    @property
    def model(self) -> str:
        return str(self.doc["workload"].get("model_name", "unknown model"))

    @property
    def params_b(self) -> float | None:
        size = self.doc["workload"].get("params_b")
        return None if size is None else float(size)

    @property
    def precision(self) -> str:
        return str(self.doc["workload"].get("precision", "?"))

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
        work, meas = self.doc["workload"], self.doc["measurement"]
        tokens = work.get("max_new_tokens", meas.get("tokens_per_run", "?"))
        text = f"{tokens} tok, batch {work.get('batch_size', '?')}"
        if self.measured and self.regime != "eager":
            text += f", {self.regime}"
        gpus = self.doc["system_under_test"].get("accelerator_count") or 1
        return f"{text}, {gpus} GPUs" if self.measured and gpus > 1 else text

    @property
    def energy_per_token_mj(self) -> float | None:
        value = self.doc["results"].get("energy_per_token_mj")
        return None if value is None else float(value)

    @property
    def fp16_energy_per_token_mj(self) -> float | None:
        value = self.doc["results"].get("fp16_energy_per_token_mj")
        return None if value is None else float(value)

    @property
    def delta_pct(self) -> float | None:
        """Energy per token vs FP16 in percent; None for FP16 itself or no figure."""
        if not self.quantized:
            return None
        res = self.doc["results"]
        value = res.get("vs_fp16_energy_pct_3dp", res.get("vs_fp16_energy_pct"))
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
    """A valid report of any format this tool reads (1.1, 1.2, 1.3), 1.2 converted to
    the current format in memory; or why the file is not one."""
    document, problems = read_document(path)
    if document is not None:
        problems = energy_report_problems(document)
    if document is None or problems:
        return Invalid(str(path), problems)
    return Report(Path(path), upgrade(document))


def read_reports(
    paths: Iterable[str | os.PathLike[str]],
) -> tuple[list[Report], list[Invalid]]:
    """Every valid report under paths, and every file that is not one (with why)."""
    reports: list[Report] = []
    invalid: list[Invalid] = []
    found = find_files(paths, (REPORT_NAME,))  # each file once, however it was named
    invalid += [Invalid(f"{f.path}/", [f"{UNSEARCHABLE}: {f.reason}"]) for f in found.unsearchable]
    for file in found.files:
        one = read_one(file)
        if isinstance(one, Invalid):
            invalid.append(one)
        else:
            reports.append(one)
    repeated = repeats([(r.path, r.doc) for r in reports])  # each report once, too
    invalid += [Invalid(str(reports[k].path), [why]) for k, why in repeated.items()]
    return [r for k, r in enumerate(reports) if k not in repeated], invalid
