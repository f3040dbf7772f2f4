"""Issue 30, item 7: reports that validated but lied. A key given twice; a published
1.1 report whose totals disagree with its figures; a derived report that names no curve
whose delta or basis no published curve gives; trials of a microsecond carrying 600 J."""

from __future__ import annotations

import copy
import json

import pytest

from ecocompute.cli import main
from ecocompute.report.numbers import NotReportJson, loads_strict
from ecocompute.report.read import energy_report_problems

from ..made_reports import measured
from ..published_reports import all_examples, measured_report, no_gpu_report


def _validate_line(tmp_path, capsys, text: str) -> tuple[int, str]:
    path = tmp_path / "energy.json"
    path.write_text(text)
    status = main(["validate", str(path)])
    out = capsys.readouterr()
    return status, (out.out + out.err).strip()


def test_a_key_given_twice_is_not_a_report(tmp_path, capsys):
    text = json.dumps(no_gpu_report(), indent=1)
    forged = text.replace('"basis": "interpolated"', '"basis": "measured", "basis": "interpolated"')
    assert forged != text
    status, line = _validate_line(tmp_path, capsys, forged)
    assert status == 1
    assert line.endswith('INVALID not a report: it gives the key "basis" twice in one object'), line
    with pytest.raises(NotReportJson, match='"c" twice'):
        loads_strict('{"a": {"c": 1, "c": 2}}')  # at any depth


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"total_energy_joules": 869.1}, "$.results.energy_per_token_mj"),
        ({"avg_power_watts": 27.1}, "$.results.avg_power_watts"),
        ({"throughput_tokens_per_s": 7.9}, "$.results.avg_power_watts"),
        ({"tokens_generated": 256}, "$.results.energy_per_token_mj"),
    ],
)
def test_a_published_reports_totals_must_give_its_figures(change, named):
    problems = energy_report_problems(measured_report(**change))
    assert any(p.startswith(named) for p in problems), problems


def test_every_published_example_still_reads():
    for name, doc in all_examples().items():
        assert energy_report_problems(doc) == [], name


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"workload": {"params_b": 70.0}}, "lies outside every range"),  # far out: extrapolated
        ({"workload": {"params_b": 70.0}}, "curves give -50.3% at 70B"),
        ({"results": {"vs_fp16_energy_pct": -12.0, "energy_per_token_mj": 1459.92}}, "give +29.8%"),
        ({"system_under_test": {"gpu_arch": "turing"}}, "turing NF4 curves give +3.6%"),
    ],
)
def test_a_derived_report_naming_no_curve_must_give_a_published_curves_figure(edit, says):
    doc = no_gpu_report()
    for section, values in edit.items():
        doc[section] = {**doc[section], **values}
    problems = energy_report_problems(doc)
    assert any(says in p for p in problems), problems


def test_trials_of_a_microsecond_carrying_600_joules_are_refused():
    doc = copy.deepcopy(measured())
    for t in doc["results"]["trials"]:
        t.update(duration_s=1e-6, energy_joules=600.0, counter_energy_joules=600.0)
        t.update(sampled_energy_joules=600.0, per_gpu_energy_joules=[600.0])
    problems = energy_report_problems(doc)
    assert any("duration_s: 1e-06 s for 600 J" in p for p in problems), problems


def _derived_2_0(model: str = "synthetic:llama-2-70b", arch: str = "ada") -> dict:
    import ecocompute

    return ecocompute.estimate(model, dry_run=True, gpu_arch=arch).report.model_dump(mode="json")


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        # an extrapolated figure made "interpolated" by widening the range its curve names
        (
            {"fitted_range_b": [0.5, 100.0], "basis": "interpolated"},
            "fitted_range_b: 0.5..100B, but the ada NF4 curve of those parameters was fitted "
            "over 0.5..7B",
        ),
        ({"precision": "INT8"}, "reference_curve.precision: 'INT8', but the report is of NF4"),
        ({"borrowed_from": "ampere"}, "borrowed_from: 'ampere', but the curve is 'ada''s"),
    ],
)
def test_a_derived_report_names_a_curve_the_published_figures_have_had(edit, says):
    doc = _derived_2_0()
    assert energy_report_problems(doc) == []
    assert doc["results"]["basis"] == "extrapolated"
    basis = edit.pop("basis", None)
    doc["results"]["reference_curve"].update(edit)
    if basis:
        doc["results"]["basis"] = basis
    problems = energy_report_problems(doc)
    assert any(says in p for p in problems), problems


def test_a_derived_report_is_interpolated_only_inside_its_fp16_anchors():
    small = _derived_2_0("synthetic:qwen2.5-3b", "ampere")  # below the anchors: extrapolated
    assert small["results"]["basis"] == "extrapolated"
    small["results"]["basis"] = "interpolated"
    problems = energy_report_problems(small)
    assert any("outside the FP16 anchors' range 7..14B" in p for p in problems), problems
