"""The 1.1 compatibility schema (issue 11, Build item 1) against hand-made 1.1 reports,
one fact at a time, and, until the writer is fixed, against our own dry runs (xfail)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("jsonschema")

from jsonschema import Draft202012Validator

from ecocompute.cli import main

from .compat_11 import EXAMPLES, compat_problems, compat_schema, has_at_most_one_decimal
from .conftest import REPO, read_report

VALID = sorted((EXAMPLES / "valid").glob("*/energy.json"))
INVALID = sorted((EXAMPLES / "invalid").glob("*.json"))


def _load(path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def _dry() -> dict[str, Any]:
    return _load(EXAMPLES / "valid" / "dry-run-ada-nf4-1.1b" / "energy.json")


def _measured() -> dict[str, Any]:
    return _load(EXAMPLES / "valid" / "measured-rtx4090-nf4-3b" / "energy.json")


def test_the_schema_is_a_valid_draft_2020_12_schema():
    Draft202012Validator.check_schema(compat_schema())
    assert "reconstructed" in compat_schema()["description"].lower()


def test_there_are_valid_and_invalid_examples():
    assert len(VALID) == 2 and len(INVALID) >= 8


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.parent.name)
def test_hand_made_1_1_reports_are_compatible(path):
    doc = _load(path)
    assert doc["schema_version"] == "ecocompute-energy/1.1"
    assert compat_problems(doc) == []
    assert "trials" not in doc["results"]  # single runs: n = 1, no interval


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_each_invalid_example_is_rejected(path):
    assert compat_problems(_load(path)), f"{path.name} passed"


def _set(*keys: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node = doc
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return mutate


def _drop(*keys: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node = doc
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return mutate


# (fact broken, which example, the mutation, where the schema must complain)
FACTS = [
    ("top level schema_version required", "dry", _drop("schema_version"), "$"),
    ("top level scenario required", "measured", _drop("scenario"), "$"),
    ("top level results required", "dry", _drop("results"), "$"),
    ("notice is written", "dry", _drop("notice"), "$"),
    ("notice is a string", "dry", _set("notice", value=None), "notice"),
    ("share_url is written (null unless shared)", "dry", _drop("share_url"), "$"),
    ("share_url is a string or null", "dry", _set("share_url", value=1), "share_url"),
    ("comparability_note", "measured", _drop("software", "comparability_note"), "software"),
    ("provenance.dataset_doi", "dry", _drop("provenance", "dataset_doi"), "provenance"),
    ("provenance.code is a string", "dry", _set("provenance", "code", value=[]), "provenance/code"),
    ("provenance.paper_ssrn", "measured", _drop("provenance", "paper_ssrn"), "provenance"),
    (
        "gpu is a string",
        "dry",
        _set("system_under_test", "gpu", value=None),
        "system_under_test/gpu",
    ),
    (
        "accelerator_count >= 1",
        "dry",
        _set("system_under_test", "accelerator_count", value=0),
        "system_under_test/accelerator_count",
    ),
    (
        "accelerator_count is an integer",
        "measured",
        _set("system_under_test", "accelerator_count", value=1.5),
        "system_under_test/accelerator_count",
    ),
    (
        "a package version is a string",
        "dry",
        _set("software", "packages", "bitsandbytes", value=None),
        "software/packages/bitsandbytes",
    ),
    (
        "nvidia_driver is a string",
        "measured",
        _set("software", "nvidia_driver", value=None),
        "software/nvidia_driver",
    ),
    (
        "sample_rate_hz is an integer",
        "measured",
        _set("measurement", "sample_rate_hz", value=10.5),
        "measurement/sample_rate_hz",
    ),
    (
        "sample_rate_hz is written as an integer, not 10.0",
        "measured",
        _set("measurement", "sample_rate_hz", value=10.0),
        "measurement/sample_rate_hz",
    ),
    (
        "accelerator_count is written as an integer, not 1.0",
        "dry",
        _set("system_under_test", "accelerator_count", value=1.0),
        "system_under_test/accelerator_count",
    ),
    ("quality.metric required", "measured", _drop("quality", "metric"), "quality"),
    (
        "quality.metric is perplexity",
        "measured",
        _set("quality", "metric", value="ppl"),
        "quality/metric",
    ),
    (
        "quality.basis vocabulary",
        "dry",
        _set("quality", "basis", value="not requested"),
        "quality/basis",
    ),
    ("quality.value when measured", "measured", _drop("quality", "value"), "quality"),
    (
        "quality.tokens_evaluated is an integer",
        "measured",
        _set("quality", "tokens_evaluated", value="13312"),
        "quality/tokens_evaluated",
    ),
    (
        "measurement_source vocabulary",
        "dry",
        _set("measurement_source", value="published-dataset (--dry_run)"),
        "measurement_source",
    ),
    (
        "measurement_source direct-nvml exactly",
        "measured",
        _set("measurement_source", value="direct-NVML"),
        "measurement_source",
    ),
    (
        "a dry run writes no matches_reference_pins",
        "dry",
        _set("software", "matches_reference_pins", value=True),
        "software",
    ),
    (
        "vs_fp16_energy_pct is a number",
        "dry",
        _set("results", "vs_fp16_energy_pct", value="36.6"),
        "results/vs_fp16_energy_pct",
    ),
    (
        "params_b is a number",
        "measured",
        _set("workload", "params_b", value="3"),
        "workload/params_b",
    ),
]


@pytest.mark.parametrize(("fact", "base", "mutate", "where"), FACTS, ids=[f[0] for f in FACTS])
def test_each_fact_is_enforced(fact, base, mutate, where):
    doc = _dry() if base == "dry" else _measured()
    assert compat_problems(doc) == []  # the starting point is compatible
    mutate(doc)
    problems = compat_problems(doc)
    assert any(p.startswith(f"{where}:") for p in problems), (fact, problems)


def test_one_decimal_is_checked_outside_the_schema():
    # multipleOf 0.1 would reject 0.3 (0.3 / 0.1 = 2.9999999999999996); the helper does not
    for ok in (36.6, 0.3, -28.0, 0.0, 195.0, -0.1):
        assert has_at_most_one_decimal(ok), ok
    for bad in (36.57, 0.25, -30.593):
        assert not has_at_most_one_decimal(bad), bad
    doc = _dry()
    doc["results"]["vs_fp16_energy_pct"] = 36.57
    assert compat_problems(doc) == ["results/vs_fp16_energy_pct: 36.57 has more than one decimal"]
    doc["results"]["vs_fp16_energy_pct"] = None  # no figure claimed: nothing to round
    assert compat_problems(doc) == []


def test_additional_properties_are_allowed_as_1_2_is_a_superset():
    doc = _measured()
    doc["results"].update(
        {"verdict": "costs", "vs_fp16_ci95_pct": [0.1, 1.5], "trials": [], "n_pairs": 10}
    )
    doc["workload"]["params_b_counted"] = 3.085939
    doc["quality"]["reason"] = "words"
    doc["provenance"]["dataset_dois"] = ["10.5281/zenodo.19647290"]
    assert compat_problems(doc) == []


def test_a_measured_report_may_carry_reference_pins():
    doc = _measured()
    assert doc["software"]["matches_reference_pins"] is True
    assert compat_problems(copy.deepcopy(doc)) == []


def _our_dry_run(tmp_path, arch: str, params_b: str, precision: str) -> dict[str, Any]:
    out = tmp_path / f"{arch}-{precision}-{params_b}"
    argv = [
        "energy_estimate",
        "--dry_run",
        "--quiet",
        "--model",
        f"made-{params_b}b",
        "--params_b",
        params_b,
        "--precision",
        precision,
        "--gpu_arch",
        arch,
        "--output_dir",
        str(out),
    ]
    assert main(argv) == 0
    return read_report(out)


ARCHS = ("turing", "ampere", "ada", "hopper", "blackwell", "volta")
SIZES = ("0.5", "1.1", "1.5", "3", "7", "14")


def test_every_dry_run_of_the_grid_is_1_1_compatible(tmp_path):
    """Issue 11's acceptance grid: every arch class x FP16/NF4/INT8 x 0.5..14B."""
    problems = {}
    for arch in ARCHS:
        for precision in ("FP16", "NF4", "INT8"):
            for size in SIZES:
                found = compat_problems(_our_dry_run(tmp_path, arch, size, precision))
                if found:
                    problems[(arch, precision, size)] = found
    assert problems == {}


def committed_measured_reports() -> list[Path]:
    return sorted(REPO.glob("docs/validation/**/energy.json"))


def test_there_are_committed_measured_reports_to_check():
    assert len(committed_measured_reports()) >= 20


@pytest.mark.parametrize(
    "path", committed_measured_reports(), ids=lambda p: str(p.relative_to(REPO))
)
def test_every_committed_measured_report_is_1_1_compatible(path):
    doc = json.loads(path.read_text())
    assert doc["measurement_source"] == "direct-nvml"
    assert compat_problems(doc) == []
