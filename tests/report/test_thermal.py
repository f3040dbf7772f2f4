"""The published format's thermal block (Protocol v1.1 section 4.6), written for a measured
run from its windows' edge temperatures (report/thermal.py) and derived again by the
reader: a measured report of ours is no longer short of it under `validate --profile`."""

from __future__ import annotations

import copy

import pytest

from ecocompute.params import resolve
from ecocompute.report.read import energy_report_problems
from ecocompute.report.results_model import WindowConditions
from ecocompute.report.thermal import STEADY_SPAN_C, thermal_of
from ecocompute.results.conformance import judge

from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, estimate_report
from ..made_reports import made_trial


def _trials(edges: list[tuple[float | None, float | None]]):
    out = []
    for k, (a, b) in enumerate(edges):
        t = made_trial(k, k // 2, "FP16" if k % 2 == 0 else "NF4", [10.0], 1.0, 4)
        out.append(
            t.model_copy(
                update={"conditions": [WindowConditions(nvml_index=0, temperature_c=[a, b])]}
            )
        )
    return out


def test_a_card_that_keeps_warming_has_not_reached_steady():
    th = thermal_of(_trials([(40, 42), (42, 44), (44, 46), (46, 48)]), 1, "interleaved")
    assert (th.basis, th.mode, th.warmup_runs, th.cooldown_s) == ("measured", "steady", 1, 0.0)
    assert (th.temperature_start_c, th.temperature_end_c, th.temperature_peak_c) == (40, 48, 48)
    assert th.steady_state_reached is False and th.temperature_steady_c is None
    assert th.arm_order == "fixed" and "FP16 then the quantized format" in (th.note or "")


def test_a_flat_last_half_is_steady_at_its_mean():
    th = thermal_of(_trials([(38, 44), (45, 46), (46, 46), (46, 47)]), 2, "rotated")
    assert th.steady_state_reached is True
    assert th.temperature_steady_c == pytest.approx((46 + 46 + 46 + 47) / 4)
    assert th.arm_order == "counterbalanced"
    wider = thermal_of(
        _trials([(38, 44), (45, 46), (46, 46), (46, 46 + STEADY_SPAN_C + 0.5)]), 2, "rotated"
    )
    assert wider.steady_state_reached is False


def test_the_hottest_gpu_of_a_window_counts():
    (t,) = _trials([(40, 41)])
    two = t.model_copy(
        update={
            "conditions": [
                WindowConditions(nvml_index=0, temperature_c=[40, 41]),
                WindowConditions(nvml_index=1, temperature_c=[55, 57]),
            ]
        }
    )
    th = thermal_of([two], 0, "interleaved")
    assert (th.temperature_start_c, th.temperature_end_c, th.temperature_peak_c) == (55, 57, 57)


def test_no_temperature_read_is_basis_unavailable():
    th = thermal_of(_trials([(None, None), (None, None)]), 1, "alternating blocks")
    assert th.basis == "unavailable" and th.temperature_peak_c is None
    assert th.steady_state_reached is None and "not cancelled" in (th.note or "")


@pytest.fixture(scope="module")
def warming_report():
    """A measured NF4 run on the fakes whose GPU warms by 1 C a second."""
    telemetry = FakeTelemetry(temperature_c=lambda t: 40.0 + t)
    params = resolve(
        None,
        {
            "model_name": "synthetic:tiny-test",
            "precision": "NF4",
            "tokens": "4",
            "iterations": "3",
            "warmup": "1",
            "idle_seconds": "0.2",
            "quality_probe": False,
        },
    )
    return estimate_report(
        params,
        open_telemetry=lambda: telemetry,
        accelerator=CpuAccelerator(sync_s=0.12),
        backend=StandInQuantBackend(),
    )


def test_a_measured_report_carries_its_thermal_block(warming_report):
    th = warming_report["thermal"]
    assert th["basis"] == "measured" and th["warmup_runs"] == 1
    assert th["temperature_start_c"] < th["temperature_end_c"] == th["temperature_peak_c"]
    assert energy_report_problems(warming_report) == []
    v = judge(warming_report, "v1.1-core")
    assert not any("thermal" in x or "arm order" in x for x in v.violations), v.violations


@pytest.mark.parametrize(
    "field, value",
    [
        ("temperature_peak_c", lambda v: v - 20.0),
        ("steady_state_reached", lambda v: not v),
        ("warmup_runs", lambda v: v + 4),
    ],
)
def test_a_thermal_block_its_trials_do_not_give_is_refused(warming_report, field, value):
    doc = copy.deepcopy(warming_report)
    doc["thermal"][field] = value(doc["thermal"][field])
    problems = energy_report_problems(doc)
    assert any(p.startswith(f"$.thermal.{field}") for p in problems), problems


@pytest.mark.e2e
def test_a_measured_run_at_the_core_settings_is_protocol_conformant():
    """256 tokens and 10 iterations, the Protocol v1.1 core: nothing is missing."""
    params = resolve(
        None,
        {
            "model_name": "synthetic:tiny-test",
            "precision": "NF4",
            "tokens": "256",
            "iterations": "10",
            "idle_seconds": "0.2",
        },
    )
    report = estimate_report(params, backend=StandInQuantBackend())
    v = judge(report, "v1.1-core")
    assert (v.verdict, list(v.violations)) == ("protocol-conformant", [])


def test_the_summary_says_the_temperatures_and_whether_they_settled(warming_report):
    from ecocompute.report.read import parse_report
    from ecocompute.summary.report import unit_lines

    report, problems = parse_report(copy.deepcopy(warming_report))
    assert report is not None, problems
    (line,) = [x for x in unit_lines(report) if x.lstrip().startswith("thermal")]
    th = warming_report["thermal"]
    assert f"peak {th['temperature_peak_c']:.0f} C" in line
    assert ("steady at" in line) is th["steady_state_reached"]
