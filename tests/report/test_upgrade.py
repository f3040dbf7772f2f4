"""`ecocompute upgrade` (issue 29: "committed FP16/NF4/INT8 reports pass the strict 1.3
schema"): every report of our older formats committed under docs/ is copied into the
published envelope, passes the container's strict 1.3 schema where its precision is one
that schema names, and reads back as ours, figures and all; the sources are untouched.
All of docs/ takes about 6 s, so the whole sweep is in the default suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ecocompute.cli import main
from ecocompute.report.model import BENCHMARK, LEGACY_BENCHMARK, SCHEMA_VERSION
from ecocompute.report.read import parse_report
from ecocompute.report.schema import LEGACY_SCHEMAS as OURS_LEGACY
from ecocompute.report.schema import PUBLISHED_PRECISIONS, published_13_errors
from ecocompute.report.upgrade import Upgrade, mirrored, upgrade_reports

from ..conftest import REPO

DOCS = REPO / "docs"
SOURCES = sorted(DOCS.rglob("energy.json"))
ONE = DOCS / "validation" / "h200-map" / "eager-7b-b16" / "energy.json"  # NF4, 1.4


def _doc(path: Path | str) -> dict:
    return json.loads(Path(path).read_text())


def _ours_legacy(path: Path) -> bool:
    doc = _doc(path)
    return doc.get("benchmark") == LEGACY_BENCHMARK and doc["schema_version"] in OURS_LEGACY


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[dict[Path, bytes], dict[Path, Upgrade]]:
    """Every committed report's bytes before, and what upgrading docs/ made of each."""
    before = {p: p.read_bytes() for p in SOURCES}
    out = tmp_path_factory.mktemp("upgraded")
    results = upgrade_reports([DOCS], out)
    by_source = {Path(r.source).resolve(): r for r in results}
    assert len(by_source) == len(results) == len(SOURCES)
    for source, result in by_source.items():
        assert result.target == str(out / mirrored(source)), result.line()
    return before, by_source


def test_every_committed_fp16_nf4_int8_report_passes_the_strict_13_schema(swept):
    _, results = swept
    named = [p for p in SOURCES if _ours_legacy(p) and _doc(p)["workload"]["precision"] in
             PUBLISHED_PRECISIONS]  # fmt: skip
    assert len(named) >= 66  # the GPU records of issue 29, at least
    for source in named:
        result = results[source.resolve()]
        assert result.outcome == "upgraded", result.line()
        assert result.from_format == _doc(source)["schema_version"]
        copy = _doc(result.target)
        assert (copy["schema_version"], copy["benchmark"]) == (SCHEMA_VERSION, BENCHMARK)
        assert "ecocompute_format" not in copy
        assert published_13_errors(copy, thorough=True) == [], source
        # read back as ours, as the format it came from: the same report, figure by figure
        read, problems = parse_report(copy)
        original, _ = parse_report(_doc(source))
        assert problems == [] and read is not None and original is not None
        assert read.ours and read.schema_version == result.from_format
        assert read.model_dump() == original.model_dump(), source
        # what the strict schema's protocol reads, where the old report states it
        assert copy["workload"]["decoding"] == "greedy"
        assert copy["measurement"]["window"] == "generation"
        assert copy["provenance"]["upgraded_from"].startswith(f"ecocompute {result.from_format}")


def test_int4_and_fp8_are_upgraded_and_said_not_to_pass_for_their_precision(swept):
    _, results = swept
    unnamed = [p for p in SOURCES if _ours_legacy(p) and _doc(p)["workload"]["precision"] in
               ("INT4", "FP8")]  # fmt: skip
    assert unnamed
    for source in unnamed:
        result = results[source.resolve()]
        precision = _doc(source)["workload"]["precision"]
        assert result.outcome == "not strict 1.3", result.line()
        assert f"its precision {precision} is not one that schema names" in result.line()
        copy = _doc(result.target)
        assert published_13_errors(copy) == [
            f"$.workload.precision: '{precision}' is not one of ['FP16', 'NF4', 'INT8']"
        ]
        assert parse_report(copy)[1] == []


def test_the_sources_are_untouched_and_current_reports_copied_unchanged(swept):
    before, results = swept
    assert {p: p.read_bytes() for p in SOURCES} == before
    current = [p for p in SOURCES if "ecocompute_format" in _doc(p)]
    assert current
    for source in current:
        result = results[source.resolve()]
        assert result.outcome == "already current", result.line()
        assert Path(result.target).read_bytes() == before[source]


def test_a_copy_is_upgraded_again_unchanged(tmp_path):
    first = upgrade_reports([ONE], tmp_path / "a")[0]
    again = upgrade_reports([first.target], tmp_path / "b")[0]
    assert again.outcome == "already current"
    assert "a copy upgraded from ecocompute-energy/1.4" in again.line()
    assert Path(again.target).read_bytes() == Path(first.target).read_bytes()


def test_a_null_quality_text_is_upgraded_as_absent(tmp_path):
    """Our 1.3 and 1.4 allow quality.note, delta_note and error to be null; the strict
    published 1.3 schema takes them only as text, so `upgrade` refused such a valid
    report (25 of our historical 1.3 reports; a review, 2026-12-04). A null text is left
    out of the copy, which passes the strict schema and reads back the same."""
    doc = _doc(ONE)
    doc["quality"].update(note=None, delta_note=None, error=None)
    source = tmp_path / "src" / "energy.json"
    source.parent.mkdir()
    source.write_text(json.dumps(doc))
    done = upgrade_reports([source], tmp_path / "up")[0]
    assert done.outcome == "upgraded", done.line()
    copy = _doc(done.target)
    assert published_13_errors(copy) == []
    assert not {"note", "delta_note", "error"} & set(copy["quality"])
    before, _ = parse_report(doc)
    after, _ = parse_report(copy)
    assert before is not None and after is not None and after.quality == before.quality


def test_a_copy_is_read_as_ours_a_tampered_figure_refused(tmp_path):
    """A trial's energy edited in the copy: the published container's 1.3 reads no
    trials (they are dropped, never trusted), so only our own reading (its 1.4's, every
    figure derived again within its rounding) can refuse it."""
    copy = _doc(upgrade_reports([ONE], tmp_path)[0].target)
    report, _ = parse_report(copy)
    assert report is not None and report.ours and report.results.trials
    copy["results"]["trials"][0]["energy_joules"] += 5.0
    report, problems = parse_report(copy)
    assert report is None
    assert any(p.startswith("$.results.trials[0].energy_joules:") for p in problems), problems
    # without the record of its upgrade it is the container's 1.3: its trials unread
    del copy["provenance"]["upgraded_from"]
    _, problems = parse_report(copy)
    assert not any("trials" in p for p in problems), problems


def test_a_record_its_source_does_not_state_is_refused(tmp_path):
    copy = _doc(upgrade_reports([ONE], tmp_path)[0].target)
    copy["workload"]["decoding"] = "sampling"
    assert parse_report(copy)[1] == [
        "$.workload.decoding: 'sampling', but the ecocompute-energy/1.4 report it was "
        "upgraded from states 'greedy'"
    ]


def test_an_invalid_report_is_one_line_and_the_status_says_so(tmp_path, capsys, monkeypatch):
    bad = tmp_path / "bad" / "energy.json"
    bad.parent.mkdir()
    doc = _doc(ONE)
    doc["results"]["trials"][0]["energy_joules"] += 5.0
    bad.write_text(json.dumps(doc, indent=2))
    good = tmp_path / "good" / "energy.json"
    good.parent.mkdir()
    shutil.copy(ONE, good)
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    assert main(["upgrade", "bad", "good", "empty", "--output_dir", "out"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "empty: NOT UPGRADED no energy.json in this folder"
    assert lines[1].startswith("bad/energy.json: NOT UPGRADED $.results.trials[0].energy_joules:")
    assert lines[2] == (
        "good/energy.json -> out/good/energy.json: upgraded from ecocompute-energy/1.4; "
        "passes the published strict 1.3 schema"
    )
    assert len(lines) == 3
    assert not (tmp_path / "out" / "bad").exists()
    assert main(["upgrade", "good", "--output_dir", "again"]) == 0


def test_a_copy_never_replaces_its_source(tmp_path, capsys, monkeypatch):
    source = tmp_path / "r" / "energy.json"
    source.parent.mkdir()
    shutil.copy(ONE, source)
    monkeypatch.chdir(tmp_path)
    assert main(["upgrade", "r", "--output_dir", "."]) == 1
    assert "would replace a file read" in capsys.readouterr().out
    assert source.read_bytes() == ONE.read_bytes()


def test_an_output_dir_that_is_a_file_is_bad_input(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    assert main(["upgrade", str(ONE), "--output_dir", str(tmp_path / "f")]) == 2
    assert "output_dir" in capsys.readouterr().err


def test_a_12_report_of_ours_reads_and_is_not_upgraded(tmp_path):
    """ecocompute 0.2's 1.2 (this project's own, from commit 3c7559c, H200) named the
    published references in one DOI list: the reader refused every such report for the
    four provenance fields 1.3 names apart (a review, 2026-12-04). It reads now; its copy
    is refused, as docs/formats.md says, its quality and software records being in shapes
    the published schemas refuse."""
    source = REPO / "tests" / "data" / "ours-1.2-tinyllama-nf4.json"
    report, problems = parse_report(_doc(source))
    assert problems == [] and report is not None
    assert report.provenance.dataset_doi == "10.5281/zenodo.19647290"
    assert report.provenance.code == "ecocompute 0.2.0: an independent implementation"
    (done,) = upgrade_reports([source], tmp_path)
    assert done.outcome == "failed" and "NOT UPGRADED" in done.line()


def test_a_current_report_is_copied_with_the_power_traces_it_names(tmp_path):
    """An already-current report's power_trace block names CSV files beside it: they were
    left behind, the copy naming files not beside it (a review); one that is missing is
    said so on its line."""
    source = next(
        p for p in SOURCES if "ecocompute_format" in _doc(p) and _doc(p)["results"].get("trials")
    )
    doc = _doc(source)
    files = [
        {"role": "primary", "precision": doc["workload"]["precision"], "file": "power_trace.csv",
         "samples": 2},
        {"role": "fp16_baseline", "precision": "FP16", "file": "power_trace_fp16.csv",
         "samples": 2},
    ]  # fmt: skip
    doc["power_trace"] = {"format": "csv", "sample_rate_hz": 10, "window": "generation",
                          "files": files}  # fmt: skip
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "energy.json").write_text(json.dumps(doc, indent=2))
    (folder / "power_trace.csv").write_text("t_s,power_w\n0.0,100.0\n0.1,101.0\n")
    result = upgrade_reports([folder], tmp_path / "out")[0]
    assert result.outcome == "already current", result.line()
    copied = Path(result.target).parent
    assert (copied / "power_trace.csv").read_text() == (folder / "power_trace.csv").read_text()
    assert not (copied / "power_trace_fp16.csv").exists()
    assert (
        "(its power trace not copied: power_trace_fp16.csv (no such file beside the report))"
        in result.line()
    )
