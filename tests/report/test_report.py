"""Reports: validated before writing, written atomically, never a partial file."""

from __future__ import annotations

import json
import os

import pytest

from ecocompute.errors import ReportInvalid, RunError
from ecocompute.params import resolve
from ecocompute.report.build import build_report
from ecocompute.report.read import validation_errors
from ecocompute.report.write import write_report
from ecocompute.task.hardware import Hardware
from ecocompute.task.published_path import FallbackReason, published_run


@pytest.fixture
def report():
    params = resolve(None, {"gpu_arch": "ada", "params_b": "1.1"})
    run = published_run(params, FallbackReason("dry_run", "--dry_run"), Hardware())
    return build_report(run, None).model_dump(mode="json")  # the document a file holds


def test_reference_report_is_schema_valid(report):
    assert validation_errors(report) == []


def test_invalid_report_is_an_error_never_a_file(report, tmp_path):
    report["results"]["basis"] = "measured"  # a fallback may never claim this
    with pytest.raises(ReportInvalid) as info:
        write_report(report, tmp_path)
    assert any("measurement_source" in p or "per_format" in p for p in info.value.problems)
    assert list(tmp_path.iterdir()) == []


def test_schema_forbids_a_delta_without_a_curve(report):
    report["results"]["basis"] = "unavailable"
    assert any(
        "vs_fp16_energy_pct" in p or "energy_per_token_mj" in p for p in validation_errors(report)
    )


def test_write_replaces_atomically_and_leaves_no_temp(report, tmp_path):
    (tmp_path / "energy.json").write_text("old")
    path = write_report(report, tmp_path)
    assert json.loads(path.read_text())["schema_version"] == "ecocompute-energy/1.3"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["energy.json"]


def test_failed_write_keeps_the_previous_report(report, tmp_path, monkeypatch):
    (tmp_path / "energy.json").write_text("previous")

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(RunError, match="No space left"):
        write_report(report, tmp_path)
    assert (tmp_path / "energy.json").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["energy.json"]


def test_report_is_readable_by_others(report, tmp_path):
    path = write_report(report, tmp_path)
    assert path.stat().st_mode & 0o044 == 0o044  # group and others can read (umask 022)
