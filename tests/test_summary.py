"""The human summary: it says what the report says, and no more."""

from __future__ import annotations

from ecocompute.report.summary import render

from .made_reports import measured


def _line(text: str, key: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(key))


def test_measured_summary_states_the_sampler_cross_check():
    doc = measured()
    res = doc["results"]
    res["sampled_vs_counter_pct"], res["sampled_vs_counter_max_abs_pct"] = -0.123, 1.567
    res["dropped_samples"] = 1
    line = _line(render(doc, "out/energy.json"), "check")
    assert "mean -0.12%" in line
    assert "largest 1.57%" in line
    assert f"over {len(res['trials'])} windows" in line
    assert "1 read dropped" in line


def test_without_a_counter_the_summary_says_the_sampler_is_the_figure():
    doc = measured()
    res = doc["results"]
    res["sampled_vs_counter_pct"] = res["sampled_vs_counter_max_abs_pct"] = None
    res["dropped_samples"] = 3
    line = _line(render(doc, "out/energy.json"), "check")
    assert line.split(None, 1)[1] == (
        "no energy counter: energy is the 10 Hz power sampler's alone; 3 reads dropped"
    )


def test_reference_summary_has_no_cross_check():
    from ecocompute.params import resolve
    from ecocompute.report.build import build_report
    from ecocompute.task.hardware import Hardware
    from ecocompute.task.published_path import FallbackReason, published_run

    params = resolve(None, {"gpu_arch": "ada", "params_b": "1.1"})
    run = published_run(params, FallbackReason("dry_run", "--dry_run"), Hardware())
    text = render(build_report(run, None), "out/energy.json")
    assert "check" not in text and "derived" in text.lower()
