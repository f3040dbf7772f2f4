"""Issue 13, class 2: bad input is exit 2 naming the field, never "internal error".

The family: what the parser or the operating system refuses before any of our checks
ran: a parameters file nested deeper than the YAML parser recurses, an integer longer
than Python converts (sys.get_int_max_str_digits()), a name longer than the file system
allows (ENAMETOOLONG), a NUL byte, a loop of symbolic links, a path through a file,
values so large that a run's arithmetic would overflow. Each: exit 2, one line naming
the field, nothing written, no traceback.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from ..cli.test_faults import Ran, listing

LONG_NAME = "n" * 300  # longer than any file system's 255-byte names
HUGE_INT = "9" * (sys.get_int_max_str_digits() + 100)


@pytest.fixture
def cli(capsys):
    from ecocompute.cli import main

    def run(*args: str) -> Ran:
        status = main(list(args))
        captured = capsys.readouterr()
        return Ran(status, captured.out, captured.err)

    return run


def refused(ran: Ran, field: str) -> str:
    """The one line of a bad-input refusal naming field."""
    assert ran.status == 2, ran.err
    assert "Traceback" not in ran.err and "internal error" not in ran.err
    lines = ran.error_lines
    assert len(lines) == 1, ran.err
    assert lines[0].startswith(f"ecocompute: error: invalid {field} "), lines[0]
    return lines[0]


def _yaml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "params.yaml"
    path.write_text(text)
    return str(path)


PARAMETERS_FILES = [
    pytest.param(
        "tokens: " + "[" * 5000 + "]" * 5000 + "\n",
        "parameters_file",
        "nested too deeply",
        id="deep-list",
    ),
    pytest.param(
        "tokens: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n",
        "parameters_file",
        "nested too deeply",
        id="deep-mapping",
    ),
    pytest.param(f"tokens: {HUGE_INT}\n", "tokens", "a number far too long", id="long-int"),
    pytest.param(
        f"iterations: -{HUGE_INT}\n", "iterations", "a number far too long", id="long-negative-int"
    ),
    pytest.param("params_b: 1e999\n", "params_b", "expected a finite number", id="float-overflow"),
    pytest.param(
        "tokens: 100000000000000000000\n", "tokens", "must be at most", id="int-too-large"
    ),
    pytest.param("idle_seconds: 1.0e300\n", "idle_seconds", "must be at most", id="huge-seconds"),
]


@pytest.mark.parametrize(("text", "field", "says"), PARAMETERS_FILES)
def test_parameters_files_the_parser_cannot_take(cli, tmp_path, text, field, says):
    out = tmp_path / "out"
    ran = cli(
        "energy_estimate",
        "--dry_run",
        "--parameters_file",
        _yaml(tmp_path, text),
        "--output_dir",
        str(out),
    )
    assert says in refused(ran, field)
    assert listing(out) is None


FLAGS = [
    pytest.param(("--tokens", HUGE_INT), "tokens", "expected a whole number", id="long-int-flag"),
    pytest.param(("--params_b", "1e308"), "params_b", "must be at most", id="params_b-1e308"),
    pytest.param(("--params_b", "1e-300"), "params_b", "must be at least", id="params_b-tiny"),
    pytest.param(("--max_gpu_memory_gib", "1e308"), "max_gpu_memory_gib", "at most", id="memory"),
    pytest.param(
        ("--llm_int8_threshold", "1e308"), "llm_int8_threshold", "at most", id="threshold"
    ),
    pytest.param(("--max_minutes", "1e308"), "max_minutes", "at most", id="minutes"),
    pytest.param(("--batch_size", "1" + "0" * 30), "batch_size", "at most", id="batch"),
    pytest.param(("--ci_target_pts", "1e308"), "ci_target_pts", "at most", id="ci-target"),
]


@pytest.mark.parametrize(("flags", "field", "says"), FLAGS)
def test_values_too_large_for_a_run_are_bad_input(cli, tmp_path, flags, field, says):
    out = tmp_path / "out"
    ran = cli("energy_estimate", "--dry_run", *flags, "--output_dir", str(out))
    assert says in refused(ran, field)
    assert listing(out) is None


def _paths(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "a-file").write_text("x")
    os.symlink("loop", tmp_path / "loop")
    os.symlink("nowhere", tmp_path / "dangling")
    deep = tmp_path
    while len(str(deep)) < 4096 - 40:  # a folder whose path leaves no room under PATH_MAX
        deep = deep / ("d" * min(200, 4096 - 40 - len(str(deep)) - 1))
    return {
        "name-too-long": str(tmp_path / LONG_NAME),
        "nul-byte": str(tmp_path / "a\x00b"),
        "through-a-file": str(tmp_path / "a-file" / "out"),
        "link-loop": str(tmp_path / "loop"),
        "dangling-link": str(tmp_path / "dangling"),
        "path-near-path-max": str(deep / "out"),
        "is-a-file": str(tmp_path / "a-file"),
    }


@pytest.mark.parametrize(
    "case",
    [
        "name-too-long",
        "nul-byte",
        "through-a-file",
        "link-loop",
        "dangling-link",
        "path-near-path-max",
        "is-a-file",
    ],
)
def test_unusable_output_folders_are_bad_input(cli, tmp_path, case):
    path = _paths(tmp_path)[case]
    before = sorted(p.name for p in tmp_path.iterdir())
    ran = cli("energy_estimate", "--dry_run", "-q", "--output_dir", path)
    refused(ran, "output_dir")
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("case", ["name-too-long", "nul-byte", "through-a-file", "link-loop"])
def test_unusable_parameters_files_are_bad_input(cli, tmp_path, case):
    path = _paths(tmp_path)[case]
    out = tmp_path / "out"
    ran = cli("energy_estimate", "--dry_run", "--parameters_file", path, "--output_dir", str(out))
    refused(ran, "parameters_file")
    assert listing(out) is None


@pytest.mark.parametrize("case", ["name-too-long", "nul-byte", "through-a-file"])
@pytest.mark.parametrize("command", ["aggregate", "plot"])
def test_unusable_table_and_picture_names_are_bad_input(cli, tmp_path, case, command):
    assert (
        cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(tmp_path / "r")).status == 0
    )
    path = _paths(tmp_path)[case]
    ran = cli(command, str(tmp_path / "r"), "-o", path)
    refused(ran, "output")


@pytest.mark.parametrize("case", ["name-too-long", "nul-byte", "through-a-file", "link-loop"])
def test_unusable_report_paths_are_invalid_lines_not_bugs(cli, tmp_path, case):
    assert (
        cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(tmp_path / "r")).status == 0
    )
    path = _paths(tmp_path)[case]
    ran = cli("validate", str(tmp_path / "r"), path)
    assert ran.status == 1 and ran.err == ""
    assert f"{tmp_path / 'r' / 'energy.json'}: valid" in ran.out
    (line,) = [ln for ln in ran.out.splitlines() if "INVALID" in ln]
    assert "cannot read" in line or "no energy.json" in line
    ran = cli("check", path)
    assert ran.status == 2 and "internal error" not in ran.err and "Traceback" not in ran.err


def test_a_sweep_model_whose_folder_name_is_too_long(cli, tmp_path):
    out = tmp_path / "sw"
    ran = cli("sweep", "--dry_run", "--models", f"synthetic:{LONG_NAME}", "--output_dir", str(out))
    assert "longer than the file system allows" in refused(ran, "models")
    assert listing(out) is None
