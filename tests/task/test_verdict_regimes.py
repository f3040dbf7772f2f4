"""Stopping on precision, the decode regime through the whole protocol, and where the
energy goes (issue 12), on the CPU with the fakes."""

from __future__ import annotations

import copy
import json

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.core.precision import Precision
from ecocompute.monitor.meter import WindowReading
from ecocompute.params import resolve
from ecocompute.pooling.aggregate import group_reports
from ecocompute.report.read import validation_errors
from ecocompute.results.collect import read_reports
from ecocompute.summary.report import render
from ecocompute.task.protocol import Stopping
from ecocompute.task.trials import Trial

from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, estimate_report
from ..made_reports import measured, write


def _trials(deltas_pct: list[float]) -> list[Trial]:
    """Paired trials whose per-pair deltas are exactly deltas_pct (FP16: 1 J/token)."""
    out = []
    for k, d in enumerate(deltas_pct):
        for precision, joules in ((Precision.FP16, 1.0), (Precision.NF4, 1.0 + d / 100.0)):
            reading = WindowReading(0.0, 1.0, joules, joules, (joules,), 10, 0)
            out.append(Trial(len(out), k, precision, 1, reading))
    return out


def test_fixed_rule_stops_after_its_rounds_whatever_the_width():
    rule = Stopping(rounds=3)
    wide = _trials([-50.0, 50.0, 0.0])
    assert rule.why_stop(wide[:4], 2, 0.0) is None
    assert rule.why_stop(wide, 3, 0.0) == "fixed number of rounds"


def test_target_rule_never_stops_before_the_minimum_even_when_narrow():
    rule = Stopping(rounds=4, target_pts=5.0, max_rounds=50, max_s=600)
    narrow = _trials([10.0, 10.1, 9.9])
    assert rule.why_stop(narrow, 3, 0.0) is None


def test_target_rule_stops_on_the_width_and_says_so():
    rule = Stopping(rounds=3, target_pts=1.0, max_rounds=50, max_s=600)
    assert rule.why_stop(_trials([10.0, 10.2, 9.8]), 3, 0.0).startswith("95% interval half-width")
    assert rule.why_stop(_trials([10.0, 20.0, 0.0]), 3, 0.0) is None  # too wide: go on


def test_target_rule_does_not_stop_on_a_decided_verdict():
    # CI entirely above zero ("costs") but wider than the target: keep going
    rule = Stopping(rounds=3, target_pts=1.0, max_rounds=50, max_s=600)
    assert rule.why_stop(_trials([30.0, 40.0, 50.0]), 3, 0.0) is None


def test_target_rule_gives_up_at_max_rounds_or_max_time():
    rule = Stopping(rounds=3, target_pts=0.001, max_rounds=5, max_s=60)
    wide = _trials([0.0, 10.0, -10.0, 5.0, -5.0])
    assert rule.why_stop(wide, 5, 1.0).startswith("max_rounds 5 reached")
    assert rule.why_stop(wide[:6], 3, 61.0).startswith("max_minutes 1 reached")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


def _params(**flags):
    base = {
        "model_name": "synthetic:tiny-test",
        "tokens": "6",
        "iterations": "2",
        "warmup": "1",
        "idle_seconds": "0.2",
        "sample_rate_hz": "50",
    }
    return resolve(None, {**base, **flags})


def _run(**flags):
    return estimate_report(
        _params(**flags),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(power_w=lambda t: 100.0),
        accelerator=CpuAccelerator(),
        backend=StandInQuantBackend(),
    )


@pytest.mark.slow
def test_an_unreachable_target_runs_to_max_rounds_and_records_why():
    report = _run(precision="NF4", ci_target_pts="0.0000001", max_rounds="4")
    assert validation_errors(report) == []
    stopping = report["measurement"]["stopping"]
    assert stopping["rule"] == "ci_target" and stopping["rounds"] == 4
    assert stopping["stopped_because"].startswith("max_rounds 4 reached")
    assert report["results"]["n_pairs"] == 4
    assert len(report["results"]["trials"]) == 8
    assert "4 rounds (ci_target, target +-1e-07 pts)" in render(report, "x")


@pytest.mark.slow
def test_a_generous_target_stops_at_the_minimum():
    # 2 pairs of CPU timings can differ by tens of percent: a target no interval misses
    report = _run(precision="NF4", ci_target_pts="1000000", max_rounds="9")
    stopping = report["measurement"]["stopping"]
    assert stopping["rounds"] == 2 and stopping["stopped_because"].startswith("95% interval")


@pytest.mark.slow
def test_alternating_blocks_cannot_follow_a_target_and_say_so():
    report = estimate_report(
        _params(precision="INT8", ci_target_pts="1", max_rounds="5"),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(),
        accelerator=CpuAccelerator(free_mib=10),
        backend=StandInQuantBackend(),
    )
    stopping = report["measurement"]["stopping"]
    assert report["measurement"]["order"] == "alternating blocks"
    assert stopping["rule"] == "fixed" and "alternating blocks" in stopping["stopped_because"]
    assert len(report["results"]["trials"]) == 4


def test_a_target_needs_a_quantized_format():
    from ecocompute.errors import InputError

    with pytest.raises(InputError, match="ci_target_pts"):
        _params(precision="FP16", ci_target_pts="3")
    with pytest.raises(InputError, match="max_rounds"):
        _params(precision="NF4", ci_target_pts="3", iterations="10", max_rounds="5")
    with pytest.raises(InputError, match="decode"):
        _params(decode="compile")


@pytest.mark.slow
def test_graphs_regime_runs_the_static_cache_decode_through_the_protocol():
    report = _run(precision="NF4", decode="graphs")
    assert validation_errors(report) == []
    decode = report["measurement"]["decode"]
    assert decode["regime"] == "graphs"
    assert decode["graph_captured"] is False  # the CPU stand-in steps it eagerly, and says so
    assert decode["graph_replays_per_decode"] == 5
    assert {t["tokens"] for t in report["results"]["trials"]} == {6}
    assert "graphs decode" in render(report, "x")


@pytest.mark.slow
def test_summary_says_where_the_energy_goes():
    report = _run(precision="NF4")
    res = report["results"]
    fp16 = res["per_format"]["FP16"]
    # constant 100 W, idle 100 W: all of it is idle power, nothing above it
    assert fp16["idle_share_pct"] == pytest.approx(100.0, abs=8.0)
    text = render(report, "x")
    assert "FP16: " in text and "% of its energy is idle power" in text
    assert "vs FP16 in energy above idle" in text or res["vs_fp16_above_idle_pct"] is None


def test_aggregate_never_pools_regimes(tmp_path):
    eager = measured(delta=20.0)
    graphs = copy.deepcopy(eager)
    graphs["measurement"]["decode"] = {
        **graphs["measurement"].get("decode", {}),
        "regime": "graphs",
        "graph_captured": True,  # a graphs record says whether its step was captured
    }
    write(eager, tmp_path / "e")
    write(graphs, tmp_path / "g")
    reports, invalid = read_reports([tmp_path])
    assert invalid == []
    groups = group_reports(reports)
    assert len(groups) == 2
    assert {g.protocol for g in groups} == {"256 tok, batch 1, eager", "256 tok, batch 1, graphs"}


def test_the_schema_knows_the_regimes():
    doc = measured(delta=1.0)
    doc["measurement"]["decode"]["regime"] = "compile"
    assert any("regime" in p for p in validation_errors(json.loads(json.dumps(doc))))
    # 1.3 (this report's format) knew two regimes; 1.4 adds compiled (test_compiled.py)
    doc["measurement"]["decode"]["regime"] = "compiled"
    assert any("regime" in p for p in validation_errors(json.loads(json.dumps(doc))))


def test_target_rule_stops_at_a_half_width_at_the_target_and_not_above():
    """The edge itself: a half-width equal to the target stops, one a hair above does
    not (a rule stopping only at half the target passed every test)."""
    from ecocompute.task.protocol import half_width_pts

    trials = _trials([10.0, 10.2, 9.8])
    half = half_width_pts(trials)
    assert half is not None
    assert (
        Stopping(rounds=3, target_pts=half, max_rounds=50, max_s=600)
        .why_stop(trials, 3, 0.0)
        .startswith("95% interval half-width")
    )
    above = Stopping(rounds=3, target_pts=half * 0.999, max_rounds=50, max_s=600)
    assert above.why_stop(trials, 3, 0.0) is None
