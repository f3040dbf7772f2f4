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


def test_reading_many_reports_puts_the_garbage_collector_back_as_it_was():
    import gc

    for was_on in (True, False):
        (gc.enable if was_on else gc.disable)()
        try:
            read_reports([DOCS / "validation" / "h200-units"])
            assert gc.isenabled() is was_on
        finally:
            gc.enable()


def test_reading_many_reports_leaves_nothing_frozen_and_a_callers_frozen_objects_frozen(
    monkeypatch,
):
    """What was read goes to the oldest generation through a freeze that is undone at
    once; where the caller froze objects of its own, it is not done at all (an unfreeze
    would thaw the caller's). The calls are counted, not the frozen objects: frozen
    objects that die during the read leave the count, so it is no measure of a thaw."""
    import gc

    calls: list[str] = []
    real_freeze, real_unfreeze = gc.freeze, gc.unfreeze

    def freeze() -> None:
        calls.append("freeze")
        real_freeze()

    def unfreeze() -> None:
        calls.append("unfreeze")
        real_unfreeze()

    monkeypatch.setattr(gc, "freeze", freeze)
    monkeypatch.setattr(gc, "unfreeze", unfreeze)
    assert gc.get_freeze_count() == 0
    reports, _ = read_reports([DOCS / "validation" / "h200-units"])
    assert reports and gc.get_freeze_count() == 0
    assert calls == ["freeze", "unfreeze"]
    real_freeze()
    try:
        calls.clear()
        read_reports([DOCS / "validation" / "h200-units"])
        assert calls == [] and gc.get_freeze_count() > 0
    finally:
        real_unfreeze()
