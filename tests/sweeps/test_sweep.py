"""sweep: the run loop, the layout on disk, sweep.json (a typed Sweep, its schema generated
from the model), the fit of measured points only."""

from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("scipy")

from ecocompute.boundary.progress import Progress
from ecocompute.cli import main
from ecocompute.errors import RunError
from ecocompute.published.figures import delta_pct
from ecocompute.report.schema import sweep_errors
from ecocompute.sweeps.document import SCHEMA_FILE, read_sweep, schema_text
from ecocompute.sweeps.plan import slug
from ecocompute.sweeps.sweep import sweep

from ..made_reports import measured, on_curve, v2_on_figures, write

A, S, NSTAR = 40.0, 80.0, 3.0  # crosses zero at N = 3B


def _doc(folder):
    doc = json.loads((folder / "sweep.json").read_text())
    assert sweep_errors(doc) == []
    assert read_sweep(folder / "sweep.json").document() == doc  # read back as written
    return doc


def test_the_committed_schema_is_the_one_the_model_generates():
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "schema/sweep.schema.json differs from the Sweep model: regenerate it with "
        "`python -m ecocompute.sweeps.document`"
    )


def test_slug_names_one_folder_per_model_and_format():
    assert slug("synthetic:qwen2.5-0.5b", "NF4") == "synthetic-qwen2.5-0.5b-NF4"
    assert slug("Qwen/Qwen2.5-3B", "INT8") == "Qwen-Qwen2.5-3B-INT8"


def test_dry_run_sweep_writes_reports_and_says_why_it_does_not_fit(run_cli, tmp_path):
    out = tmp_path / "sw"
    done = run_cli(
        "sweep",
        "--models",
        "synthetic:qwen2.5-0.5b,synthetic:qwen2.5-1.5b,synthetic:qwen2.5-3b",
        "--precisions",
        "NF4",
        "--dry_run",
        "--gpu_arch",
        "ada",
        "--output_dir",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    for model in ("qwen2.5-0.5b", "qwen2.5-1.5b", "qwen2.5-3b"):
        assert (out / f"synthetic-{model}-NF4" / "energy.json").is_file()
    doc = _doc(out)
    (fit,) = doc["fits"]
    assert fit["status"] == "skipped" and "derived from the published curve" in fit["reason"]
    assert len(fit["left_out"]) == 3
    assert [r["basis"] for r in doc["runs"]] == ["interpolated"] * 3
    assert doc["plot"] == "sweep.png" and (out / "sweep.png").is_file()
    assert "NF4 fit: skipped" in done.stdout
    assert "sweep 1/3" in done.stderr  # progress on stderr, summary on stdout


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--models", "synthetic:qwen2.5-0.5b", "--precisions", "FP16"], "precisions"),
        (["--models", "a,a"], "models"),
        (["--models", " , "], "models"),
        (["--models", "synthetic:qwen2.5-0.5b", "--iterations", "0"], "iterations"),
    ],
)
def test_bad_input_is_exit_2_and_writes_nothing(tmp_path, capsys, args, field):
    out = tmp_path / "sw"
    assert main(["sweep", *args, "--dry_run", "--output_dir", str(out)]) == 2
    assert f"invalid {field}" in capsys.readouterr().err
    assert not out.exists()


def _place_on_curve(root, sizes, **kw):
    for n in sizes:
        write(on_curve(n, A, S, NSTAR, half_ci=1.0, **kw), root / slug(f"synthetic:m-{n}b", "NF4"))


def test_fit_only_recovers_a_known_crossover_and_plots_it(tmp_path, capsys):
    _place_on_curve(tmp_path, (0.5, 1.0, 2.0, 4.0, 7.0))
    assert main(["sweep", "--fit_only", "--output_dir", str(tmp_path), "-q"]) == 0
    doc = _doc(tmp_path)
    assert doc["card"] == "NVIDIA H200" and doc["gpu_arch"] == "hopper"
    assert doc["software"].startswith("py3.12.3 torch2.11.0")
    (fit,) = doc["fits"]
    assert fit["status"] == "fitted" and fit["n_points"] == 5
    cross = fit["crossover"]
    assert cross["status"] == "within measured range"
    assert cross["params_b"] == pytest.approx(3.0, rel=0.02)
    assert cross["ci95_b"][0] < 3.0 < cross["ci95_b"][1]
    assert fit["published_curve"]["borrowed_for"] == "hopper"
    assert doc["plot"] == "sweep.png"
    assert "NF4 crossover: 3B (within measured range)" in capsys.readouterr().out


def test_fit_only_refuses_to_mix_cards(tmp_path):
    _place_on_curve(tmp_path, (0.5, 1.0, 2.0))
    write(measured(gpu="NVIDIA A100-SXM4-80GB", arch="ampere"), tmp_path / "other")
    assert main(["sweep", "--fit_only", "--output_dir", str(tmp_path), "-q"]) == 2
    assert not (tmp_path / "sweep.json").exists()


def test_fit_only_on_an_empty_folder_is_exit_2(tmp_path):
    assert main(["sweep", "--fit_only", "--output_dir", str(tmp_path)]) == 2


def test_fit_only_bad_input_names_its_field_and_leaves_no_folder(tmp_path, capsys):
    """--reports with nothing to fit names --reports, reports of two cards name the
    cards, and neither leaves the output folder it would have made; a flag for the runs
    (which a fit never makes) is refused, not silently unused."""
    _place_on_curve(tmp_path / "r", (0.5, 1.0, 2.0))
    write(measured(gpu="NVIDIA A100-SXM4-80GB", arch="ampere"), tmp_path / "other")
    out = tmp_path / "sw"
    fit = ["sweep", "--fit_only", "--output_dir", str(out), "-q"]
    cases = (
        (["--reports", str(tmp_path / "none")], "invalid reports "),
        (["--reports", str(tmp_path / "r"), str(tmp_path / "other")], "invalid card 'NVIDIA "),
        (["--reports", str(tmp_path / "r"), "--tokens", "0"], "invalid tokens '0': only without"),
        (["--reports", str(tmp_path / "r"), "--models", "m-1b"], "invalid models 'm-1b'"),
    )
    for extra, says in cases:
        assert main([*fit, *extra]) == 2, extra
        assert says in capsys.readouterr().err, extra
        assert not out.exists(), extra
    assert main([*fit, "--reports", str(tmp_path / "r")]) == 0  # -q stays a fit's own
    assert (out / "sweep.json").is_file()


def test_a_failed_run_is_recorded_the_rest_fitted_and_exit_1(tmp_path, monkeypatch, capsys):
    import ecocompute.jobs.report_job as job

    sizes = {
        "synthetic:m-0.5b": 0.5,
        "synthetic:m-1.5b": 1.5,
        "synthetic:m-3b": 3.0,
        "synthetic:m-7b": 7.0,
    }

    def run(params, progress, machine=None):
        if params.model_name == "synthetic:m-3b":
            raise RunError("out of memory (scripted)")
        return params

    def build(params, command):  # a measured report on the curve, for each size
        n = sizes[params.model_name]
        return v2_on_figures(params_b=n, delta=delta_pct(n, A, S, NSTAR), model=params.model_name)

    monkeypatch.setattr(job, "run_energy_estimate", run)
    monkeypatch.setattr(job, "build_report", build)

    done = sweep(
        list(sizes), ["NF4"], tmp_path, options={"quiet": True}, progress=Progress(quiet=True),
        n_boot=200,
    )  # fmt: skip
    assert done.document() == _doc(tmp_path)  # what it returns is what it wrote
    (failed,) = done.failed
    assert failed.model_name == "synthetic:m-3b" and failed.status == "failed"
    assert "out of memory" in (failed.error or "")
    (fit,) = done.fits
    assert fit.status == "fitted" and fit.n_points == 3
    assert fit.crossover is not None
    assert fit.crossover.params_b == pytest.approx(3.0, rel=0.02)
    models = ",".join(sizes)  # the command line: the same sweep, exit 1, saying which
    assert main(["sweep", "--models", models, "--output_dir", str(tmp_path / "cli"), "-q"]) == 1
    err = capsys.readouterr().err
    assert "1 of 4 run(s) failed" in err and "sweep.json was written" in err


def test_cli_sweep_without_scipy_still_writes_reports(tmp_path, monkeypatch, capsys):
    import ecocompute.sweeps.fits as fits

    monkeypatch.setattr(fits, "missing_fit_stack", lambda: ["scipy", "matplotlib"])
    _place_on_curve(tmp_path, (0.5, 1.0, 2.0))
    assert main(["sweep", "--fit_only", "--output_dir", str(tmp_path), "-q"]) == 0
    doc = _doc(tmp_path)
    assert doc["fits"][0]["status"] == "skipped" and "scipy" in doc["fits"][0]["reason"]
    assert doc["plot"] is None and "matplotlib" in doc["plot_note"]


@pytest.mark.slow
def test_measured_sweep_end_to_end_on_the_cpu(tmp_path, monkeypatch):
    from ..fakes import StandInQuantBackend, fake_machine

    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    options = {"tokens": 8, "iterations": 3, "warmup": 1, "idle_seconds": 0.2,
               "sample_rate_hz": 50, "quiet": True}  # fmt: skip
    backend = StandInQuantBackend()
    done = sweep(
        ["synthetic:tiny-test"],
        ["NF4", "INT8"],
        tmp_path / "sw",
        options=options,
        progress=Progress(quiet=True),
        machine=fake_machine(backend=lambda: backend),
    )
    assert done.failed == []
    out = tmp_path / "sw"
    doc = _doc(out)
    # several formats: one session per point, FP16 loaded once, a report per format
    assert [r["report"] for r in doc["runs"]] == [
        "synthetic-tiny-test/NF4/energy.json",
        "synthetic-tiny-test/INT8/energy.json",
    ]
    assert {r["basis"] for r in doc["runs"]} == {"measured"}
    assert backend.loads == ["FP16", "NF4", "INT8"]
    assert len(doc["fits"]) == 2  # NF4's and INT8's
    assert all(f["status"] == "skipped" and "3 or more sizes" in f["reason"] for f in doc["fits"])
    assert doc["card"] == "NVIDIA H200"


def test_a_compiled_sweep_says_how_many_compiles_lie_ahead(tmp_path):
    """A static compile per format (FP16's too) and batch size; a dynamic batch one for
    batch 1 and one for every batch of 2 or more: the count the compiled map's budget
    rests on (docs/map.md), said before the first point."""
    from ecocompute.sweeps.plan import compiles_ahead, plan

    formats = "NF4,INT4,FP8,INT8"
    static = plan(["m-7b"], formats, {"decode": "compiled"}, tmp_path, batch_sizes=[1, 4, 16, 64])
    line = compiles_ahead(static)
    assert line is not None and line.startswith("compiled: 20 compiles ahead")
    assert line.endswith("; --compile_batch dynamic compiles 10")
    dynamic = plan(
        ["m-7b"], formats, {"decode": "compiled", "compile_batch": "dynamic"}, tmp_path,
        batch_sizes=[1, 4, 16, 64],
    )  # fmt: skip
    assert (compiles_ahead(dynamic) or "").startswith("compiled, dynamic batch: 10 compiles")
    no_one = plan(["m-7b"], "NF4", {"decode": "compiled", "compile_batch": "dynamic"}, tmp_path,
                  batch_sizes=[4, 16])  # fmt: skip
    assert (compiles_ahead(no_one) or "").startswith("compiled, dynamic batch: 2 compiles")
    assert compiles_ahead(plan(["m-7b"], formats, {}, tmp_path, batch_sizes=[1, 4])) is None
    prompts = [  # the prompt axis: one plan of both lengths' points (sweeps/sweep.py)
        r
        for n in (128, 1024)
        for r in plan(["m-7b"], "NF4", {"decode": "compiled", "compile_batch": "dynamic",
                      "prompt_tokens": n}, tmp_path / str(n), batch_sizes=[4, 16]).runs
    ]  # fmt: skip
    both = dataclasses.replace(dynamic, runs=tuple(prompts))
    assert (compiles_ahead(both) or "").startswith("compiled, dynamic batch: 4 compiles")
    one = plan(["m-7b"], formats, {"decode": "compiled"}, tmp_path)
    assert compiles_ahead(one) is None  # one point: its own progress says each compile
    dry = plan(["m-7b"], formats, {"decode": "compiled", "dry_run": True}, tmp_path,
               batch_sizes=[1, 4])  # fmt: skip
    assert compiles_ahead(dry) is None  # the published path compiles nothing


@pytest.mark.parametrize("precisions", ["NF4,nf4", ["NF4", "nf4"]])
def test_a_format_listed_twice_is_named_as_given(tmp_path, precisions):
    """From Python, one text of formats is shown as the command line shows it, not joined
    letter by letter ('N,F,4,,,n,f,4')."""
    from ecocompute.errors import InputError
    from ecocompute.sweeps.plan import plan

    with pytest.raises(InputError, match="invalid precisions 'NF4,nf4': lists a format twice"):
        plan(["m-1b"], precisions, {}, tmp_path)


def test_a_fit_of_reports_of_two_card_classes_is_refused_derived_ones_too(tmp_path, capsys):
    """Derived points of Ada and of Ampere were summarised as one card's, under the
    second's name and curve (the check covered measured reports only)."""
    for arch in ("ada", "ampere"):
        argv = ["sweep", "--models", "m-1b,m-3b", "--dry_run", "-q", "--gpu_arch", arch]
        assert main([*argv, "--output_dir", str(tmp_path / arch)]) == 0
    capsys.readouterr()
    both = ["--reports", str(tmp_path / "ada"), str(tmp_path / "ampere")]
    assert main(["sweep", "--fit_only", *both, "--output_dir", str(tmp_path / "fit")]) == 2
    assert "invalid gpu_arch 'ada; ampere'" in capsys.readouterr().err
    assert not (tmp_path / "fit").exists()


def test_a_sweeps_int8_threshold_reaches_its_int8_points_on_the_fleet_too(tmp_path):
    """The fleet runs one format a point: the NF4 point carries the sweep's threshold
    (nothing reads it there) and the INT8 point uses it; a parameters file's likewise."""
    from ecocompute.sweeps.plan import plan

    (tmp_path / "th.yaml").write_text("llm_int8_threshold: 0\n")
    for options, file in (({"llm_int8_threshold": "0"}, None), ({}, str(tmp_path / "th.yaml"))):
        split = plan(["gpt-1b"], ["NF4", "INT8"], {**options, "dry_run": True}, tmp_path / "o",
                     file, sessions=False)  # fmt: skip
        assert [(str(r.precision), r.llm_int8_threshold) for r in split.runs] == [
            ("NF4", 0.0), ("INT8", 0.0)
        ]  # fmt: skip


def test_a_sweep_run_again_writes_through_a_linked_sweep_json(tmp_path, capsys):
    """boundary/atomic.py keeps a link and replaces what it points to; the earlier
    summary's removal took the link itself away."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "sweep.json").write_text("{}")
    out = tmp_path / "sl"
    out.mkdir()
    (out / "sweep.json").symlink_to(shared / "sweep.json")
    argv = ["sweep", "--models", "gpt-1b", "--dry_run", "-q", "--output_dir", str(out)]
    assert main(argv) == 0
    capsys.readouterr()
    assert (out / "sweep.json").is_symlink()
    assert json.loads((shared / "sweep.json").read_text())["runs"]


def test_fit_only_fits_each_int8_kernel_apart_and_borrows_no_curve_for_another(tmp_path, capsys):
    """LLM.int8() at threshold 6, at threshold 0 and torchao's INT8 were one 'INT8' curve
    through all their points, with the threshold-6 published curve beside it."""
    for n in (0.5, 1.0, 2.0):
        for kind, threshold, library in (("t6", None, None), ("t0", 0.0, None),
                                         ("ao", None, "torchao")):  # fmt: skip
            doc = on_curve(n, A, S, NSTAR, half_ci=1.0, precision="INT8", unit=kind)
            if threshold is not None:
                doc["workload"]["llm_int8_threshold"] = threshold
            if library is not None:
                doc["workload"]["quantization"] = {"library": library}
            write(doc, tmp_path / f"{kind}-{n}")
    assert main(["sweep", "--fit_only", "--output_dir", str(tmp_path), "-q"]) == 0
    out = capsys.readouterr().out
    doc = _doc(tmp_path)
    fits = {f.get("format_label", f["precision"]): f for f in doc["fits"]}
    assert list(fits) == ["INT8", "INT8 (threshold 0)", "INT8-torchao"]
    assert all(f["n_points"] == 3 for f in fits.values())
    assert fits["INT8"]["published_curve"]["A"] is not None
    for other in ("INT8 (threshold 0)", "INT8-torchao"):
        assert "A" not in fits[other]["published_curve"], other
        assert f"no {other} curve" in fits[other]["published_curve"]["note"]
        assert f"{other} fit: A=" in out
    assert sorted(r.get("format_label", "INT8") for r in doc["runs"]) == sorted(3 * list(fits))
    assert "synthetic:made-0.5b                0.5 INT8 (threshold 0)" in out


def test_points_with_no_figure_are_not_called_derived(tmp_path, capsys):
    """INT4 has no published curve: its points are basis unavailable, and the fit said
    they were derived from the published curve."""
    argv = ["sweep", "--models", "m-1b,m-3b", "--precisions", "INT4", "--dry_run", "-q"]
    assert main([*argv, "--gpu_arch", "ada", "--output_dir", str(tmp_path)]) == 0
    (fit,) = _doc(tmp_path)["fits"]
    assert fit["reason"] == "no point has a figure (unavailable): nothing to fit"
    assert fit["left_out"] == [f"m-{n}b (unavailable: no figure, not measured)" for n in (1, 3)]
    assert "derived" not in capsys.readouterr().out.split("INT4 fit:")[1]
