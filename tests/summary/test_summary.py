"""The human summary: it says what the report says, and no more."""

from __future__ import annotations

from ecocompute.summary.report import render

from ..made_reports import measured


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


def _session(formats: str, **flags: str) -> str:
    from ecocompute.params import resolve
    from ecocompute.report.build import build_report
    from ecocompute.summary.session import render_session
    from ecocompute.task.hardware import Hardware
    from ecocompute.task.published_path import FallbackReason, published_run

    reports = []
    for fmt in formats.split(","):
        params = resolve(None, {"params_b": "1.1", "precision": fmt, **flags})
        run = published_run(params, FallbackReason("dry_run", "--dry_run"), Hardware())
        reports.append(build_report(run, None))
    return render_session(reports, [f"out/{f}/energy.json" for f in formats.split(",")])


def test_a_session_gives_each_format_its_basis_and_the_reason_for_no_figure():
    text = _session("INT4,NF4,FP8")
    # FP16 is the session's, not the first format's (INT4 has none)
    assert _line(text, "FP16").split(None, 1)[1].startswith("1,585.7 mJ/token")
    assert "INT4, FP8 unavailable: no figure is claimed" in _line(text, "basis")
    assert "NF4 interpolated" in text
    assert "basis      unavailable" not in text
    assert "INT4: the published dataset has figures for bitsandbytes NF4" in _line(
        text, "no figure  INT4"
    )
    assert _line(text, "no figure  FP8")


def test_a_session_keeps_the_why_data_from_decode_and_note_lines():
    text = _session("NF4,INT8", decode="compiled")
    assert _line(text, "why").endswith("--dry_run")
    assert "published RTX 4090" in _line(text, "data from")
    assert _line(text, "decode").strip().startswith("decode     --decode compiled asked for")
    assert "pass --gpu_arch" in _line(text, "note")


def test_a_single_unavailable_report_says_why_on_screen():
    from ecocompute.params import resolve
    from ecocompute.report.build import build_report
    from ecocompute.task.hardware import Hardware
    from ecocompute.task.published_path import FallbackReason, published_run

    params = resolve(None, {"params_b": "1.1", "precision": "FP8", "decode": "graphs"})
    run = published_run(params, FallbackReason("dry_run", "--dry_run"), Hardware())
    report = build_report(run, None)
    assert report.results.note.startswith("No figure is claimed")
    line = _line(render(report, "out/energy.json"), "no figure")
    assert "FP8 (torchao" in line and "was never measured there" in line
    assert "--decode graphs" not in line  # the decode line says that
