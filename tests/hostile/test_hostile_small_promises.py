"""Issue 20, items 1 and 15: a size read from the model name is checked as --params_b is;
and the smaller promises (a key given twice in the parameters file, an energy.json
link into a missing folder, `aggregate` with nothing to read, a stderr that cannot be
written)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ecocompute.cli import main
from ecocompute.params import nominal_params_b, params_b_from_model_name
from ecocompute.report.read import energy_report_problems

from ..cli.test_faults import MEASURE
from ..conftest import REPO


def _dry(model: str, out) -> list[str]:
    return ["energy_estimate", "--dry_run", "-q", "--model", model, "--output_dir", str(out)]


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("ecocompute: error: "), err
    return err[0]


# --- item 1: sizes from names ------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "why"),
    [
        ("gpt-0b", "must be a positive number of billions"),
        ("org/tiny-0.00005b", "must be at least 0.0001"),
        ("gpt-999999b", "must be at most 100000"),
        ("tiny\x07-0m", "must be a positive number of billions"),  # a control char hides none
    ],
)
def test_a_size_in_the_name_is_checked_as_params_b_is(tmp_path, capsys, model, why):
    out = tmp_path / "out"
    status = main(_dry(model, out))
    line = _one_error(capsys)
    assert status == 2, line
    assert line.startswith("ecocompute: error: invalid params_b ")
    assert "read from model name" in line and why in line and "--params_b" in line
    assert not out.exists()


def test_given_params_b_overrides_an_impossible_size_in_the_name(tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["energy_estimate", "--dry_run", "-q", "--model", "gpt-0b", "--params_b", "1.1"]
    assert main([*argv, "--output_dir", str(out)]) == 0
    capsys.readouterr()
    assert json.loads((out / "energy.json").read_text())["workload"]["params_b"] == 1.1


@pytest.mark.parametrize(
    ("model", "size"),
    [
        ("llama-7b\x1b[0m", 7.0),  # an ANSI reset after the name: "0m" is no size
        ("gpt-\x1b[31m7b\x1b[0m", 7.0),  # a coloured size reads as the size shown
        ("\x1b[1mTinyLlama-1.1B-Chat\x1b[0m", 1.1),
        ("llama-7b\x9b0m", 7.0),  # the one-byte form of the same reset
    ],
)
def test_escape_codes_in_a_name_are_no_part_of_its_size(model, size):
    assert params_b_from_model_name(model) == size


def test_a_coloured_name_writes_the_size_it_shows(tmp_path, capsys):
    out = tmp_path / "out"
    model = "llama-7b\x1b[0m"
    assert main(_dry(model, out)) == 0
    capsys.readouterr()
    assert json.loads((out / "energy.json").read_text())["workload"]["params_b"] == 7.0


def test_an_impossible_name_size_falls_back_to_the_counted_size_where_there_is_one():
    """(An old report whose size was counted, read by the results tools.)"""
    assert nominal_params_b("gpt-0b", None, 0.1249) == (0.125, "counted from the loaded weights")


# --- item 15: a key given twice ------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("precision: NF4\nbatch_size: 1\nprecision: INT8\n", "lines 1 and 3"),
        ("{precision: NF4, precision: INT8}\n", "lines 1 and 1"),
        ("tokens: 8\ntokens: 8\n", "lines 1 and 2"),  # even when both agree
    ],
)
def test_a_key_given_twice_in_the_parameters_file_is_refused(tmp_path, capsys, text, lines):
    params = tmp_path / "p.yaml"
    params.write_text(text)
    out = tmp_path / "out"
    argv = ["energy_estimate", "--dry_run", "-q", "--parameters_file", str(params)]
    status = main([*argv, "--output_dir", str(out)])
    line = _one_error(capsys)
    assert status == 2
    assert line == (
        f"ecocompute: error: invalid parameters_file '{params}': key "
        f"'{'tokens' if 'tokens' in text else 'precision'}' is given twice ({lines}); "
        "give each key once"
    )
    assert not out.exists()


# --- item 15: an energy.json link into a missing folder ------------------------------


def test_an_energy_json_link_into_a_missing_folder_is_refused_before_the_run(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    missing = tmp_path / "gone" / "deeper" / "energy.json"
    (out / "energy.json").symlink_to(missing)
    status = main(["energy_estimate", "--dry_run", "-q", "--output_dir", str(out)])
    line = _one_error(capsys)
    assert status == 2
    assert "is a symbolic link to" in line and "whose folder does not exist" in line
    assert "existed when the run started" not in line
    assert not (tmp_path / "gone").exists()


def test_a_link_whose_folder_vanishes_during_the_run_is_described_as_a_link(tmp_path):
    from ecocompute.boundary.atomic import write_text_atomic
    from ecocompute.errors import RunError

    out, far = tmp_path / "out", tmp_path / "far"
    out.mkdir()
    far.mkdir()
    (out / "energy.json").symlink_to(far / "energy.json")
    far.rmdir()  # after the run's checks, before its write
    with pytest.raises(RunError) as caught:
        write_text_atomic(out / "energy.json", "{}", create_dir=False)
    assert "is a symbolic link to" in str(caught.value)
    assert "existed when the run started" not in str(caught.value)


# --- item 15: aggregate with nothing to read ----------------------------------------


def test_aggregate_with_no_report_says_error(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["aggregate", str(tmp_path / "empty")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ecocompute: error: no valid energy.json report found"]


# --- item 15: a stderr that cannot be written ----------------------------------------


def _fakes_run(out, synthetic_cache, stderr) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.cli_with_fakes",
            "energy_estimate",
            *[a for a in MEASURE if a != "--quiet"],
            "--output_dir",
            str(out),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "ECOCOMPUTE_CACHE": str(synthetic_cache)},
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.slow
def test_a_measurement_is_kept_when_stderr_cannot_be_written(tmp_path, synthetic_cache):
    """Progress lines and the libraries' loading bars all fail on /dev/full; the
    measurement, its report and its summary on stdout do not."""
    out = tmp_path / "out"
    with open("/dev/full", "w") as full:
        done = _fakes_run(out, synthetic_cache, full)
    assert done.returncode == 0
    report = json.loads((out / "energy.json").read_text())
    assert report["results"]["basis"] == "measured"
    assert energy_report_problems(report) == []
    assert "EcoCompute energy estimate" in done.stdout


@pytest.mark.slow
def test_with_stderr_closed_progress_never_reaches_stdout(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run(
        f'"{sys.executable}" -m ecocompute energy_estimate --dry_run --output_dir "{out}" 2>&-',
        shell=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("EcoCompute energy estimate"), done.stdout
    assert "published path" not in done.stdout  # a progress line


def test_a_session_reports_link_into_a_missing_folder_is_refused_before_the_run(tmp_path, capsys):
    # several formats: each <format>/energy.json is checked as a single report's is
    out = tmp_path / "out"
    (out / "INT8").mkdir(parents=True)
    (out / "INT8" / "energy.json").symlink_to(tmp_path / "gone" / "energy.json")
    argv = ["energy_estimate", "--dry_run", "-q", "--precision", "NF4,INT8"]
    status = main([*argv, "--output_dir", str(out)])
    line = _one_error(capsys)
    assert status == 2
    assert "is a symbolic link to" in line and "whose folder does not exist" in line
    assert not (out / "NF4").exists() and not (tmp_path / "gone").exists()
