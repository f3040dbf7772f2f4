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


def test_an_older_reports_bad_field_is_named_first_and_the_line_stays_short(tmp_path, capsys):
    """A 1.3 report whose basis is 'guessed': validate led with what the schema's
    condition on a non-measured basis asks of another field, and quoted every trial (one
    line of 5,448 bytes)."""
    import json

    from ecocompute.cli import main

    source = REPO / "docs/validation/h200-sweep/reports/synthetic-qwen2.5-0.5b-NF4/energy.json"
    doc = json.loads(source.read_text())
    doc["results"]["basis"] = "guessed"
    (tmp_path / "old.json").write_text(json.dumps(doc))
    assert main(["validate", str(tmp_path / "old.json")]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.split(": INVALID ", 1)[1].startswith("$.results.basis: 'guessed' is not one of")
    assert len(line) < 1500, len(line)
