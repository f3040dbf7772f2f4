"""The published container's 1.2 and 1.3 beside this tool's older formats of the same
names (issue 29, item 1): the container's reports are read as its own (its strict
schema, its fields), ours by their benchmark name (and format 2.0 by ecocompute_format),
and what we write now passes the container's strict 1.3 schema where it can."""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from ecocompute.cli import main
from ecocompute.report.model import BENCHMARK, LEGACY_BENCHMARK, SCHEMA_VERSION
from ecocompute.report.read import parse_report
from ecocompute.report.schema import older_format, published_13_errors
from ecocompute.results.collect import record_of

from ..conftest import REPO, read_report
from ..made_reports import measured

UPSTREAM = REPO / "tests" / "data" / "upstream"
REAL = sorted(UPSTREAM.glob("*v1.1@*.json")) + sorted(UPSTREAM.glob("re-measured*.json"))


def _doc(name: str) -> dict:
    return json.loads((UPSTREAM / name).read_text())


def test_the_fixtures_are_the_containers_newer_reports():
    assert [p.name for p in REAL] == [
        "conformant-v1.1@8778c42.json",
        "conformant-v1.1@e52f878.json",
        "re-measured-4090-nf4@e52f878.json",
    ]
    for path in REAL:
        assert published_13_errors(json.loads(path.read_text())) == [], path.name


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_the_containers_13_reports_are_read_as_its_own(path):
    doc = json.loads(path.read_text())
    assert older_format(doc) == (
        "published ecocompute-energy/1.3",
        "energy-published-1.3.schema.json",
    )
    report, problems = parse_report(doc)
    assert problems == [] and report is not None
    assert not report.ours
    assert report.power_trace is not None
    assert [f.file for f in report.power_trace.files] == ["power_trace.csv", "power_trace_fp16.csv"]
    assert report.power_trace.files[0].phases["measure_start_s"] == 561.559
    if "thermal" in doc:
        assert report.thermal is not None and report.thermal.mode == "cold"
    record = record_of(path, doc)
    assert record.from_published_container and record.format_name == "1.3"
    assert record.delta_pct == 3.5 and record.kind == "measured"


def test_the_protocol_records_the_validator_reads_are_kept():
    report, _ = parse_report(_doc("conformant-v1.1@8778c42.json"))
    assert report is not None
    assert report.workload.decoding == "greedy"
    assert report.measurement.window == "generation"
    assert report.thermal is not None and report.thermal.arm_order == "randomized"


def test_the_negative_probe_is_refused_for_its_own_arithmetic():
    """tests/test_validate.py's hand-built report: its schema holds, its delta does not
    (3.9 against 3.5 mJ/token is +11.4%, it says +11%), nor its power (1 J over 256
    tokens at 25 tokens/s is 0.098 W, it says 100 W)."""
    report, problems = parse_report(_doc("negative-probe@8778c42.json"))
    assert report is None
    assert sorted(problems) == [
        "$.results.avg_power_watts: 100 W, but its total 1 J over 256 tokens at 25 tokens/s "
        "(10.240 s) is 0.098 W",
        "$.results.vs_fp16_energy_pct: 11%, but its energies (3.9 vs FP16 3.5 mJ/token) "
        "give 11.429%",
    ]


def test_a_13_report_is_ours_by_its_benchmark_and_theirs_otherwise(tmp_path):
    """One file name, two formats: this tool's 0.3 wrote ecocompute-energy/1.3 with its
    own benchmark name (trials, an interval), the container writes 1.3 with its own."""
    ours = measured(delta=-12.0, half_ci=0.5)
    ours["schema_version"] = "ecocompute-energy/1.3"
    assert ours["benchmark"] == LEGACY_BENCHMARK
    assert older_format(ours) == ("ecocompute ecocompute-energy/1.3", "energy-1.3.schema.json")
    report, problems = parse_report(ours)
    assert problems == [] and report is not None and report.ours
    assert report.results.n_pairs and report.provenance is not None
    # the same document under the container's benchmark is the container's: checked
    # against its strict schema, and only what its format names is read
    theirs = copy.deepcopy(ours)
    theirs["benchmark"] = BENCHMARK
    assert older_format(theirs)[1] == "energy-published-1.3.schema.json"
    report, problems = parse_report(theirs)
    assert problems == [] and report is not None and not report.ours
    assert report.results.trials == [] and report.results.vs_fp16_ci95_pct is None
    # a 1.4 only this tool wrote: under another benchmark it is no format we know
    ours["schema_version"] = "ecocompute-energy/1.4"
    ours["benchmark"] = BENCHMARK
    _, problems = parse_report(ours)
    assert problems and "is not a report format this tool reads" in problems[0]


@pytest.mark.parametrize("precision", ["FP16", "NF4", "INT8"])
def test_what_we_write_passes_the_strict_13_schema(tmp_path, capsys, precision):
    argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "made-1.1b",
            "--params_b", "1.1", "--precision", precision, "--gpu_arch", "ampere",
            "--output_dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    doc = read_report(tmp_path)
    assert (doc["ecocompute_format"], doc["schema_version"], doc["benchmark"]) == (
        "2.0",
        SCHEMA_VERSION,
        "ecocompute-energy-methodology",
    )
    assert published_13_errors(doc) == []


def test_a_precision_the_published_format_does_not_name_fails_on_that_alone(tmp_path, capsys):
    argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "made-1.1b",
            "--params_b", "1.1", "--precision", "INT4", "--gpu_arch", "ada",
            "--output_dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    problems = published_13_errors(read_report(tmp_path))
    assert problems == ["$.workload.precision: 'INT4' is not one of ['FP16', 'NF4', 'INT8']"]


def test_below_10_hz_the_strict_schema_refuses_for_the_rate_alone(tmp_path, capsys):
    argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "made-1.1b",
            "--params_b", "1.1", "--precision", "NF4", "--gpu_arch", "ada",
            "--sample_rate_hz", "5", "--output_dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0  # written: the 1.1 facts hold, the protocol's floor does not
    problems = published_13_errors(read_report(tmp_path))
    assert problems == ["$.measurement.sample_rate_hz: 5 is less than the minimum of 10"]


def test_the_results_tools_read_the_containers_13_reports(tmp_path, capsys):
    for path in REAL:
        folder = tmp_path / path.stem
        folder.mkdir()
        shutil.copy(path, folder / "energy.json")
    assert main(["validate", str(tmp_path)]) == 0
    assert capsys.readouterr().out.count("valid (published container's format 1.3") == 3
    assert main(["aggregate", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "published container, format 1.3" in out and "Qwen/Qwen2.5-3B" in out
    pytest.importorskip("matplotlib")
    assert main(["plot", "-o", str(tmp_path / "p.png"), str(tmp_path)]) == 0
    assert (tmp_path / "p.png").stat().st_size > 0


def test_a_report_whose_size_is_only_in_its_model_name_is_read_at_that_size(tmp_path):
    """Issue 29: the site reads "1.1B" from a name; a report with params_b null was
    refused by the results tools."""
    doc = _doc("re-measured-4090-nf4@e52f878.json")
    doc["workload"]["params_b"] = None
    doc["workload"]["model_name"] = "TinyLlama/TinyLlama-1.1B-Chat-v1.0"
    record = record_of(tmp_path / "energy.json", doc)
    assert record.params_b == 1.1


def test_the_containers_alternate_parameter_set_is_shipped_and_runs(tmp_path, capsys):
    """Issue 29: workspace/parameters/bert_bs32.yaml, the container's example of
    swapping parameters (batch 32: the Offline scenario)."""
    params = REPO / "workspace" / "parameters" / "bert_bs32.yaml"
    argv = ["run", "--parameters_file", str(params), "--dry_run", "-q",
            "--output_dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    doc = read_report(tmp_path)
    assert (doc["workload"]["model_name"], doc["workload"]["batch_size"]) == (
        "bert-base-uncased",
        32,
    )
    assert (
        doc["scenario"] == "Offline" and doc["results"]["basis"] == "unavailable"
    )  # batch 32: no published figure


@pytest.mark.parametrize("tokens_per_s", [35.3, 44.7, 58.3])
def test_a_container_run_whose_sampler_spans_less_than_the_wall_time_reads(tokens_per_s):
    """The published container's power is the mean of its samples and its throughput
    counts the wall time, which its sampler falls short of (its own file: 0.21 s over
    94 s, at 27.1 tokens/s). The same shortfall in a faster run was refused as an
    inconsistent power (a review, 2026-12-05); three seconds short still is."""
    for short_s, reads in ((0.21, True), (3.0, False)):
        doc = _doc("re-measured-4090-nf4@e52f878.json")
        res = doc["results"]
        total_j = res["avg_power_watts"] * (res["tokens_generated"] / tokens_per_s - short_s)
        per_token = total_j * 1000.0 / res["tokens_generated"]
        res.update(
            total_energy_joules=round(total_j, 3),
            energy_per_token_mj=round(per_token, 3),
            throughput_tokens_per_s=tokens_per_s,
            vs_fp16_energy_pct=round((per_token / res["fp16_energy_per_token_mj"] - 1) * 100, 1),
        )
        report, problems = parse_report(doc)
        assert (report is not None) == reads, (short_s, problems)
        if not reads:
            assert problems[0].startswith("$.results.avg_power_watts: 96.3 W, but its total")


def test_a_vanishing_fp16_energy_is_one_invalid_file_not_an_internal_error(tmp_path, capsys):
    """An FP16 energy of 1e-200 mJ/token made the delta's tolerance divide by its square,
    0.0: validate ended in an internal error, the other files unread (a review,
    2026-12-05). Now that file is INVALID and the others are checked."""
    tiny = _doc("conformant-v1.1@8778c42.json")
    tiny["results"]["fp16_energy_per_token_mj"] = 1e-200
    (tmp_path / "tiny.json").write_text(json.dumps(tiny))
    good = UPSTREAM / "re-measured-4090-nf4@e52f878.json"
    assert main(["validate", str(tmp_path / "tiny.json"), str(good)]) == 1
    out = capsys.readouterr().out
    assert "tiny.json: INVALID $.results.vs_fp16_energy_pct: 3.5%, but its energies" in out
    assert "e+" in out and f"{good}: valid" in out
