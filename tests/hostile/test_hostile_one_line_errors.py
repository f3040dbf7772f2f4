"""Issue 13, class 7: every error is one `ecocompute: error:` line.

Usage mistakes (argparse) are one line and exit 2; usage stays in --help. A load that
ends in our own refusal is not preceded by the libraries' own warnings (accelerate's
"offloaded to the disk" on an H200): while a model loads, accelerate, transformers and
bitsandbytes log records and Python warnings go to the debug log (--verbose).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ..conftest import REPO


def run(*args: str, module: str = "ecocompute", env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "the following arguments are required: COMMAND"),
        (("frobnicate",), "invalid choice: 'frobnicate'"),
        (("energy_estimate", "--foo"), "unrecognized arguments: --foo"),
        (("energy_estimate", "--tokens"), "argument --tokens: expected one argument"),
        (("validate",), "the following arguments are required: PATH"),
        (("plot", "somewhere"), "the following arguments are required: -o/--output"),
        (("check", "r.json", "--k"), "argument --k: expected one argument"),
        (("--verbose",), "the following arguments are required: COMMAND"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args, says):
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ecocompute: error: ") and says in lines[0]
    assert "usage:" not in done.stderr


def test_a_newline_in_a_value_does_not_make_two_lines(tmp_path):
    path = tmp_path / "two\nlines"
    path.write_text("a file, not a folder")
    done = run("energy_estimate", "--dry_run", "--output_dir", str(path))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("ecocompute: error: invalid output_dir ") and "two\\nlines" in line


@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_library_warnings_before_our_refusal_stay_in_the_debug_log(tmp_path, synthetic_cache):
    """A stand-in load that logs what accelerate and transformers log when a model
    spills to the disk, and warns, then is refused (tests/cli_with_chatty_load.py)."""
    argv = [
        "energy_estimate",
        "--model",
        "synthetic:tiny-test",
        "--precision",
        "FP16",
        "--tokens",
        "4",
        "--iterations",
        "1",
        "--warmup",
        "0",
        "--idle_seconds",
        "0",
        "--quiet",
        "--output_dir",
        str(tmp_path / "out"),
    ]
    env = {"ECOCOMPUTE_CACHE": str(synthetic_cache)}
    done = run(*argv, module="tests.cli_with_chatty_load", env=env)
    assert done.returncode == 1
    lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ecocompute: error: synthetic:tiny-test at FP16 does not fit")
    verbose = run("--verbose", *argv, module="tests.cli_with_chatty_load", env=env)
    assert verbose.returncode == 1
    assert "offloaded to the disk" in verbose.stderr  # kept, as debug, not dropped
    assert "DEBUG ecocompute.llm.library_messages" in verbose.stderr
    assert not (tmp_path / "out").exists()
