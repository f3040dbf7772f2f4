"""What the published container writes (formats 1.0 and 1.1, made from the published
format's facts) is read by validate, aggregate, plot and check, which name each report's
format; its illustrative example is listed as illustrative, never as a measurement
(issue 19, Build item 2)."""

from __future__ import annotations

import pytest

from ecocompute.cli import main
from ecocompute.pooling.aggregate import group_reports
from ecocompute.results.collect import read_one, read_reports

from ..published_reports import (
    all_examples,
    example_output,
    illustrative_report,
    measured_report,
    minimal,
    no_gpu_report,
    write,
)


@pytest.fixture
def folder(tmp_path):
    for name, doc in all_examples().items():
        write(doc, tmp_path / name)
    return tmp_path


def test_validate_accepts_them_and_names_each_format(folder, capsys):
    assert main(["validate", str(folder)]) == 0
    lines = {
        line.split("/")[-2]: line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines()
    }
    assert lines["example-output-1.0"] == (
        "valid (published container's format 1.0: a single run, no trials)"
    )
    assert lines["no-gpu-1.1"] == (
        "valid (published container's format 1.1: a single run, no trials)"
    )
    assert lines["illustrative-1.1"] == (
        "valid (published container's format 1.1: a single run, no trials; "
        "ILLUSTRATIVE: it says it is not a real measurement)"
    )
    assert len(lines) == 6


def test_the_reader_makes_one_typed_record_of_each(folder):
    reports, invalid = read_reports([folder])
    assert invalid == []
    by_name = {r.path.parent.name: r for r in reports}
    ex = by_name["example-output-1.0"]
    assert (ex.format, ex.origin, ex.kind, ex.basis) == (
        "ecocompute-energy/1.0",
        "published container, format 1.0",
        "derived",
        "interpolated",
    )
    assert (ex.arch, ex.params_b, ex.delta_pct, ex.ci95_pct, ex.n_pairs) == (
        "blackwell",
        1.1,
        29.8,
        None,
        None,
    )
    assert ex.card == "no GPU [blackwell, published RTX 5090]"
    assert ex.fingerprint == "software not recorded (format 1.0)"
    assert by_name["illustrative-1.1"].kind == "illustrative"
    assert not by_name["illustrative-1.1"].measured
    assert by_name["measured-1.1"].measured
    least = by_name["minimal-1.1"]
    # no params_b, but its model's name states 1.1B, the size the container took
    assert (least.params_b, least.delta_pct, least.energy_per_token_mj) == (1.1, None, None)
    assert least.protocol == "? tok, batch 1"


def test_aggregate_lists_them_in_blocks_of_their_own_with_their_format(folder, capsys):
    assert main(["aggregate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "(published container, format 1.0: single runs, n = 1, no interval)" in out
    assert "(published container, format 1.1: single runs, n = 1, no interval)" in out
    assert "ILLUSTRATIVE: the reports say they are not a real measurement" in out
    groups = group_reports(read_reports([folder])[0])
    kinds = {g.reports[0].path.parent.name: g.kind for g in groups}
    assert kinds["illustrative-1.1"] == "illustrative" and kinds["measured-1.1"] == "measured"
    assert all(g.delta_ci95() is None and g.n == 1 for g in groups)


def test_plot_draws_them(tmp_path):
    pytest.importorskip("matplotlib")
    write(measured_report(), tmp_path / "m")
    out = tmp_path / "c.svg"
    assert main(["plot", str(tmp_path), "-o", str(out)]) == 0
    svg = out.read_text()
    assert "RTX 4090" in svg and "published container, format 1.1" in svg  # in the legend
    write(example_output(), tmp_path / "d" / "a")
    assert main(["plot", str(tmp_path / "d"), "-o", str(tmp_path / "d.svg")]) == 0
    assert "published container, format 1.0" in (tmp_path / "d.svg").read_text()


def test_check_grades_a_measured_one_and_says_its_format(tmp_path, capsys):
    assert main(["check", str(write(measured_report(), tmp_path / "m"))]) == 0
    out = capsys.readouterr().out
    assert "written by the published container (format 1.1): one run, n = 1, no interval" in out
    # its delta is graded; its FP16 is not: the site's 3B anchor is a two-card mean
    assert "NF4 anchors: +0.8% vs the site's ada anchors at 3B" in out
    assert "FP16 anchor: not graded: the site's 3B anchor (3,368.4 mJ/token) is a mean" in out
    assert "WITHIN k = 2 (exit 0)" in out


def test_check_refuses_the_illustrative_one_and_the_no_gpu_ones(tmp_path, capsys):
    assert main(["check", str(write(illustrative_report(), tmp_path / "i"))]) == 2
    out = capsys.readouterr().out
    assert "REFUSED (exit 2): the report says it is illustrative, not a real measurement" in out
    for doc in (example_output(), no_gpu_report()):
        assert main(["check", str(write(doc, tmp_path / doc["schema_version"][-3:]))]) == 2
        out = capsys.readouterr().out
        assert "format 1." in out and "REFUSED (exit 2): the report is derived" in out


def test_a_measured_basis_from_no_local_gpu_is_refused(tmp_path):
    """A published report cannot be measured and say no local GPU measured it."""
    doc = no_gpu_report()
    doc["results"]["basis"] = "measured"
    assert read_one(write(doc, tmp_path)).problems == [
        "$.results.basis: 'measured', but measurement_source says 'ecocompute-dataset "
        "(no local GPU)': a figure no local GPU measured is not a measurement"
    ]


def test_the_illustrative_one_is_never_fitted_nor_listed_as_measured(tmp_path, capsys):
    write(illustrative_report(), tmp_path / "i")
    assert main(["sweep", "--fit_only", "--output_dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "illustrative (not a measurement)" in out
    assert "NF4 fit: skipped: no point is a measurement (derived or illustrative)" in out


def test_the_least_1_0_report_is_read(tmp_path):
    one = read_one(write(minimal("ecocompute-energy/1.0"), tmp_path))
    assert one.format == "ecocompute-energy/1.0" and one.kind == "derived"


def test_aggregate_never_lists_the_illustrative_example_as_measured(folder, capsys):
    assert main(["aggregate", str(folder / "illustrative-1.1")]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "NF4" in line]
    assert rows and all(
        line.rstrip().endswith("illustrative (not a real measurement)") for line in rows
    )
    assert not any(line.rstrip().endswith("measured") for line in rows)


def test_a_no_gpu_figure_without_a_size_is_of_the_size_the_container_took(tmp_path):
    """The container derives a figure whose run gave no size at the first "...B" its model
    name holds, else at 1.1 (it reads no millions): a SmolLM2-135M figure is its 1.1B one,
    listed at 1.1B (it was listed at 0.135B), and a made-up delta or FP16 energy beside no
    size is refused as beside one (both were valid: a review)."""
    doc = example_output()
    doc["workload"].update(params_b=None, model_name="HuggingFaceTB/SmolLM2-135M")
    one = read_one(write(doc, tmp_path / "135m"))
    assert one.params_b == 1.1 and one.delta_pct == 29.8
    edited = example_output()
    edited["workload"]["params_b"] = None
    edited["results"].update(energy_per_token_mj=829.5, vs_fp16_energy_pct=-50.0)
    assert read_one(write(edited, tmp_path / "delta")).problems == [
        "$.results.vs_fp16_energy_pct: -50%, but the published blackwell NF4 curves give "
        "+29.8% at 1.1B"
    ]
    fp16 = example_output()
    fp16["results"].update(fp16_energy_per_token_mj=100.0, energy_per_token_mj=129.8)
    assert read_one(write(fp16, tmp_path / "fp16")).problems == [
        "$.results.fp16_energy_per_token_mj: 100 mJ/token, but the published blackwell FP16 "
        "anchors give 1659.00 at 1.1B"
    ]
    ada = example_output()  # the container's own Ada anchors and curve: the RTX 4090D's
    ada["system_under_test"].update(gpu="RTX 4090D", gpu_arch="ada")
    ada["results"].update(
        energy_per_token_mj=2222.22, fp16_energy_per_token_mj=1600.58, vs_fp16_energy_pct=38.8
    )
    assert read_one(write(ada, tmp_path / "ada")).kind == "derived"  # valid


@pytest.mark.parametrize("make", [measured_report, example_output])
def test_a_delta_beside_an_fp16_energy_of_zero_is_refused(tmp_path, make):
    """An FP16 energy of 0 gives no delta: the delta stated beside it was never checked,
    and the report read as valid (a review)."""
    doc = make()
    doc["results"]["fp16_energy_per_token_mj"] = 0.0
    assert read_one(write(doc, tmp_path)).problems[0] == (
        "$.results.fp16_energy_per_token_mj: 0 mJ/token, but the report states a delta vs "
        "FP16, which no FP16 energy of 0 or less gives"
    )  # (a no-GPU figure's is also not its anchors')
