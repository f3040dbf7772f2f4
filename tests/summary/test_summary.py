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


# -- a review's findings (2026-12-04): lines that said more, or other, than the file ------


def test_the_check_line_gives_the_runs_own_sample_rate():
    doc = measured()
    doc["measurement"]["sample_rate_hz"] = 50
    assert (
        _line(render(doc, "out/energy.json"), "check")
        .split(None, 1)[1]
        .startswith("50 Hz sampler vs energy counter")
    )


def test_a_borrowed_curve_is_not_called_this_projects_own():
    """Hopper INT8 at 7B: FP16 from this project's H200 measurements, the delta from
    Ampere's published curve, borrowed; the basis and data-from lines said 'this
    project's own measurements' alone."""
    text = _session("INT8,NF4", gpu_arch="hopper", params_b="7")
    basis = _line(text, "basis")
    assert (
        "INT8 extrapolated: FP16 derived from this project's own measurements, the delta" in (basis)
        and "from ampere's published curve, borrowed" in basis
    )
    assert "NF4 interpolated: derived from this project's own measurements" in text
    assert _line(text, "data from").endswith(
        "this project's NVIDIA H200 measurements and ampere's published curve (borrowed)"
    )


def test_weights_lines_carry_their_caveats():
    from ecocompute.report.model import Workload
    from ecocompute.summary.report import weights_lines

    def one(reports=(), **fields: object) -> list[str]:
        return weights_lines(Workload.model_validate({**measured()["workload"], **fields}), reports)

    # the outliers' caveat only where LLM.int8() is among the formats (a review: an NF4 or
    # a torchao INT8 run was told it too)
    from ecocompute.summary.report import as_report

    int8, nf4 = as_report(measured(precision="INT8")), as_report(measured())
    assert one([nf4, int8], weights="synthetic") == [
        "  weights    synthetic (random weights: LLM.int8()'s outlier cost is understated, "
        "no perplexity)"
    ]
    assert one([nf4], weights="synthetic") == [
        "  weights    synthetic (random weights: no perplexity)"
    ]
    gguf = "pretrained, converted from GGUF: file x.gguf; Q4_1 round trip: not the original."
    assert "not the original weights" in one(weights="pretrained", weights_note=gguf)[0]
    assert one(weights="pretrained", weights_note=None) == ["  weights    pretrained"]


def test_committed_sessions_say_whose_thermal_line_and_which_compile():
    """The H100 session's thermal line is its first report's windows (FP16 and NF4), and
    a two-compile report's compile line gives the first compile's times and says so."""
    import json

    from ecocompute.summary.session import render_session

    from ..conftest import REPO

    unit = REPO / "docs/validation/h100-units/12540358f057/session"
    docs = [json.loads((unit / f / "energy.json").read_text()) for f in ("NF4", "INT4", "FP8")]
    thermal = _line(render_session(docs, ["a", "b", "c"]), "thermal")
    assert thermal.endswith("(FP16's and NF4's windows; each report holds its own)"), thermal
    two = REPO / "docs/validation/h200-compiled-units/ae7bae9e5a61/session/NF4/energy.json"
    compile_line = _line(render(json.loads(two.read_text()), "x"), "compile ")
    assert compile_line.split(None, 1)[1].startswith("the first of 2 compiles: FP16 ")
    assert "s of compiling over all of them" in compile_line


def test_a_single_format_summary_names_the_format_as_tables_do():
    """A review: an INT8 run on torchao, or LLM.int8() at threshold 0, printed a bare
    `format INT8 vs FP16`, while its session, sweep and aggregate said which."""
    from ecocompute.summary.report import render

    torchao = measured(precision="INT8")
    torchao["workload"]["quantization"] = {"library": "torchao"}
    text = render(torchao, "x/energy.json")
    assert "  format     INT8-torchao vs FP16" in text
    assert "  INT8-torchao " in text and "outlier" not in text
    # and every later line that names it (a review of the first fix: verdict, why)
    assert "verdict    costs: INT8-torchao spends more" in text
    assert "(FP16 n=10, INT8-torchao n=10)" in text and "INT8 n=" not in text
    from ecocompute.summary.session import render_session

    session = render_session([torchao, measured()], ["a", "b"])
    row = next(line for line in session.splitlines() if line.startswith("  INT8-torchao"))
    header = next(line for line in session.splitlines() if line.startswith("  format "))
    assert row.index("2,880.0") + len("2,880.0") == header.index("mJ/token") + len("mJ/token")
    zero = measured(precision="INT8")
    zero["workload"]["llm_int8_threshold"] = 0.0
    assert "  format     INT8 (threshold 0) vs FP16" in render(zero, "x/energy.json")
