"""Issue 20, items 2 and 3: bytes that are not text, and names that are text, not markup.

A Linux file name may hold any bytes but '/' and NUL; Python reads those that are not
UTF-8 as lone surrogates, which no report can hold. A model name of such bytes is bad
input (exit 2: a report names its model in text); an output folder, a quality text or
a parameters file of such a name is used as it is and recorded with the bytes as \\xNN.
A model name holding `$...$` is drawn as written, never parsed as matplotlib mathtext.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ecocompute.cli import main
from ecocompute.report.read import energy_report_problems

from ..made_reports import measured, write


def _undecodable(folder: Path, name: bytes) -> Path:
    return Path(os.fsdecode(os.fsencode(str(folder)) + b"/" + name))


def test_recordable_keeps_the_bytes_of_an_undecodable_name():
    from ecocompute.core.printable import printable, recordable

    assert recordable(os.fsdecode(b"caf\xe9")) == "caf\\xe9"
    assert recordable("plain") == "plain"
    assert recordable("\ud800") == "\\ud800"  # a surrogate that stands for no byte
    assert printable(os.fsdecode(b"a\xffb\n")) == "a\\xffb\\n"


def test_a_model_name_of_bytes_that_are_not_utf8_is_bad_input(tmp_path, capsys):
    out = tmp_path / "out"
    model = os.fsdecode(b"gpt-\xff-7b")
    status = main(
        ["energy_estimate", "--dry_run", "-q", "--model", model, "--output_dir", str(out)]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("ecocompute: error: invalid model_name ")
    assert "not UTF-8 text" in err[0]
    assert not out.exists()


@pytest.mark.parametrize("where", ["output_dir", "quality_text", "parameters_file"])
def test_paths_of_bytes_that_are_not_utf8_are_used_and_recorded(
    tmp_path, capsys, monkeypatch, where
):
    out = tmp_path / "out"
    argv = ["energy_estimate", "--dry_run", "--model", "gpt-7b"]
    if where == "output_dir":
        out = _undecodable(tmp_path, b"o\xff")
    elif where == "quality_text":
        text = _undecodable(tmp_path, b"q\xff.txt")
        text.write_text("In the beginning was the word, and many more words after it.\n")
        argv += ["--quality_text", str(text)]
    else:
        params = _undecodable(tmp_path, b"p\xff.yaml")
        params.write_text("precision: INT8\n")
        argv += ["--parameters_file", str(params)]
    argv += ["--output_dir", str(out)]
    monkeypatch.setattr("sys.argv", ["ecocompute", *argv])
    assert main(argv) == 0
    captured = capsys.readouterr()
    report = json.loads((out / "energy.json").read_text())
    assert energy_report_problems(report) == []
    assert "\\xff" in json.dumps(report["provenance"]["command"])
    if where == "quality_text":
        assert "quality" not in report  # the published path scores nothing (issue 19)
    if where == "parameters_file":
        assert report["workload"]["precision"] == "INT8"
    if where == "output_dir":
        assert "o\\xff/energy.json" in captured.out  # the summary names it, printably


def test_a_session_into_a_folder_of_undecodable_name_records_its_command(
    tmp_path, capsys, monkeypatch
):
    # several formats are one session (report/session_job.py): its reports record the
    # command line as a single format's does, the bytes as \\xNN
    out = _undecodable(tmp_path, b"s\xff")
    argv = ["energy_estimate", "--dry_run", "--model", "gpt-7b", "--precision", "NF4,INT8"]
    argv += ["--output_dir", str(out)]
    monkeypatch.setattr("sys.argv", ["ecocompute", *argv])
    assert main(argv) == 0, capsys.readouterr().err
    for fmt in ("NF4", "INT8"):
        report = json.loads((out / fmt / "energy.json").read_text())
        assert energy_report_problems(report) == []
        assert "\\xff" in json.dumps(report["provenance"]["command"])


def test_a_sweep_into_a_folder_of_undecodable_name_writes_its_files(tmp_path, capsys, monkeypatch):
    out = _undecodable(tmp_path, b"sw\xff")
    argv = [
        "sweep",
        "--dry_run",
        "-q",
        "--models",
        "synthetic:qwen2.5-0.5b,synthetic:tinyllama-1.1b",
    ]
    argv += ["--output_dir", str(out)]
    monkeypatch.setattr("sys.argv", ["ecocompute", *argv])
    assert main(argv) == 0
    capsys.readouterr()
    sweep = json.loads((out / "sweep.json").read_text())
    assert "\\xff" in json.dumps(sweep["command"])


# --- item 3: names are text, not markup ----------------------------------------------

MARKUP = ["m$\\frac{$-1.1b", "m$x^2$ $\\undefinedcmd$-3b", "$$-7b", "a$\\undefined$-1b"]


def test_plot_draws_names_with_dollar_signs_as_written(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    from ecocompute.plots import size_plot as plot

    for k, (size, name) in enumerate(zip((1.1, 3.0, 7.0, 1.0), MARKUP, strict=True)):
        write(measured(params_b=size, model=name), tmp_path / f"r{k}")
    drawn = []
    real_write = plot.write_figure
    monkeypatch.setattr(
        plot, "write_figure", lambda fig, path: (drawn.append(fig), real_write(fig, path))[1]
    )
    out = tmp_path / "plot.png"
    assert main(["plot", str(tmp_path), "-o", str(out)]) == 0
    capsys.readouterr()
    assert out.stat().st_size > 0
    legend = [t for ax in drawn[0].axes for t in ax.get_legend().get_texts()]
    for name in MARKUP:
        (text,) = [t for t in legend if t.get_text().startswith(name + " ")]
        assert text.get_parse_math() is False


def test_a_sweep_of_names_with_dollar_signs_plots_and_writes_sweep_json(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "sw"
    models = "a$\\undefined$-1b,b$x^$-3b,c-7b"
    status = main(["sweep", "--dry_run", "-q", "--models", models, "--output_dir", str(out)])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    sweep = json.loads((out / "sweep.json").read_text())
    assert sweep["plot"] == "sweep.png" and (out / "sweep.png").stat().st_size > 0


def test_a_sweep_that_fails_after_its_points_says_they_stand(tmp_path, capsys, monkeypatch):
    """Whatever breaks after the points (here a stand-in bug in the plot), the line says
    what is on disk: the points' reports, and no sweep.json."""
    from ecocompute.sweeps import sweep

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a stand-in bug")

    monkeypatch.setattr(sweep, "with_plot", broken)
    out = tmp_path / "sw"
    models = "synthetic:qwen2.5-0.5b,synthetic:tinyllama-1.1b"
    assert main(["sweep", "--dry_run", "-q", "--models", models, "--output_dir", str(out)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ecocompute: internal error: ZeroDivisionError")
    assert "nothing was written" not in err[0]
    assert (
        "no sweep.json was written; the energy.json of every point that finished stands" in err[0]
    )
    assert len(list(out.glob("*/energy.json"))) == 2 and not (out / "sweep.json").exists()
