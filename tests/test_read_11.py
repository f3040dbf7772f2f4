"""Reports written by the published container (format 1.1) are read by validate,
aggregate, plot and check, which say where a report came from (issue 11)."""

from __future__ import annotations

import pytest

from ecocompute.cli import main
from ecocompute.results.aggregate import group_reports
from ecocompute.results.collect import read_reports

from .conftest import REPO

EXAMPLES = REPO / "tests" / "data" / "reports-1.1" / "valid"
MEASURED = EXAMPLES / "measured-rtx4090-nf4-3b" / "energy.json"


def test_validate_accepts_1_1_reports_and_says_what_they_are(capsys):
    assert main(["validate", str(EXAMPLES)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert all(
        line.endswith("valid (published container's format 1.1: a single run, no trials)")
        for line in out
    )


def test_aggregate_lists_1_1_reports_in_their_own_block(capsys):
    assert main(["aggregate", str(EXAMPLES), str(REPO / "docs" / "validation" / "h200-solo")]) == 0
    out = capsys.readouterr().out
    assert "published container, format 1.1: single runs, n = 1, no interval" in out
    assert (
        "Qwen/Qwen2.5-3B-Instruct" in out and "TinyLlama/TinyLlama-1.1B-Cha" in out
    )  # names cut at 28
    reports, invalid = read_reports([EXAMPLES])
    assert invalid == [] and {r.origin for r in reports} == {"published container, format 1.1"}
    groups = group_reports(reports)
    assert {g.n for g in groups} == {1} and all(g.delta_ci95() is None for g in groups)


def test_plot_draws_1_1_reports(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "curve.svg"
    assert main(["plot", str(MEASURED), "-o", str(out)]) == 0
    svg = out.read_text()
    assert "RTX 4090" in svg  # the card in the title


def test_check_grades_a_1_1_report_and_says_it_is_one(capsys):
    assert main(["check", str(MEASURED)]) == 0
    out = capsys.readouterr().out
    assert "written by the published container (format 1.1): one run, n = 1, no interval" in out
    assert "WITHIN k = 2 (exit 0)" in out
