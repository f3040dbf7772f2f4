"""Every report committed under docs/ still reads (issue 28: the model reads every format
this tool has written, upgrading the older ones), and every committed sweep.json is valid."""

from __future__ import annotations

from ecocompute.report.files import read_document
from ecocompute.report.read import sweep_problems
from ecocompute.results.collect import read_reports

from ..conftest import REPO

DOCS = REPO / "docs"


def test_every_committed_energy_report_reads():
    files = sorted(DOCS.rglob("energy.json"))
    assert len(files) >= 100  # the H200 validation runs, older formats among them
    reports, invalid = read_reports([DOCS])
    assert [(i.path, i.problems[:2]) for i in invalid] == []
    assert len(reports) == len(files)
    assert {r.format for r in reports} >= {"ecocompute-energy/1.3", "ecocompute-energy/1.4"}


def test_every_committed_sweep_is_valid():
    files = sorted(DOCS.rglob("sweep.json"))
    assert files
    for path in files:
        document, problems = read_document(path)
        assert document is not None, problems
        assert sweep_problems(document) == [], path
