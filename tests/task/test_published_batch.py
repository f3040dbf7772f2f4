"""The published figures are all batch 1: at any other batch size the published path
claims no figure (basis unavailable), names the batch-1 figure, and says so on screen."""

from __future__ import annotations

import pytest

from ecocompute.params import resolve
from ecocompute.report.build import build_report
from ecocompute.report.read import energy_report_problems
from ecocompute.summary.report import render
from ecocompute.task.hardware import Hardware
from ecocompute.task.published_path import FallbackReason, published_run

DRY_RUN = FallbackReason("dry_run", "--dry_run")


def _run(**flags):
    params = resolve(None, {"gpu_arch": "ada", "params_b": "1.1", **flags})
    return published_run(params, DRY_RUN, Hardware())


def test_batch_one_keeps_the_published_figure():
    fig = _run(batch_size="1").figure
    assert fig.basis == "interpolated"
    assert fig.vs_fp16_energy_pct == pytest.approx(24.83, abs=0.001)  # the anchors at 1.1B


@pytest.mark.parametrize("batch", ["4", "16", "64"])
def test_another_batch_gets_no_figure_and_names_the_batch_one_figure(batch):
    report = build_report(_run(batch_size=batch), None)
    res = report.results
    assert res.basis == "unavailable"
    assert res.energy_per_token_mj is None and res.vs_fp16_energy_pct is None
    assert res.fp16_energy_per_token_mj is None
    assert report.workload.batch_size == int(batch)
    assert f"none exists for batch {batch}" in res.note
    assert "NF4 +24.8% vs FP16 (interpolated)" in res.note  # the batch-1 figure, named
    assert not res.note.startswith("Derived from")  # nothing was derived
    assert energy_report_problems(report.model_dump(mode="json")) == []
    text = render(report, "out/energy.json")
    line = next(x for x in text.splitlines() if x.strip().startswith("no figure"))
    assert f"none exists for batch {batch}" in line and "+24.8%" in line


def test_fp16_alone_at_another_batch_gets_no_figure():
    res = build_report(_run(batch_size="16", precision="FP16"), None).results
    assert res.basis == "unavailable" and res.fp16_energy_per_token_mj is None
    assert "FP16 1585.71 mJ/token (interpolated)" in res.note


def test_a_format_without_a_figure_says_both_reasons():
    res = build_report(_run(batch_size="16", precision="INT4"), None).results
    assert res.basis == "unavailable"
    assert "NF4 and LLM.int8() only" in res.note and "none exists for batch 16" in res.note
    assert "pass --batch_size 1" not in res.note  # batch 1 has none either
