"""Issue 13, class 1: after a file is written, a stdout that fails never says
"nothing was written".

Real processes with stdout on /dev/full (every write: ENOSPC) or a pipe whose reader is
gone (EPIPE). Every command that writes files and then prints says the files were
written, exit 3; one that wrote nothing says it could not print, exit 1. One line on
stderr, no traceback, and the files on disk are complete.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ecocompute.report.read import energy_report_problems

from ..cli.test_faults import previous_report
from ..conftest import REPO
from ..made_reports import on_curve, write

FULL = "/dev/full"


def run(*args: str, stdout: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ecocompute", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
        check=False,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("ecocompute")]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.fixture
def full():
    if not os.path.exists(FULL):
        pytest.skip("no /dev/full on this system")
    with open(FULL, "w") as handle:
        yield handle


@pytest.mark.parametrize("earlier", [True, False], ids=["replaces-a-report", "new-folder"])
def test_energy_estimate_whose_summary_cannot_print_exits_3(tmp_path, full, earlier):
    out = tmp_path / "out"
    before = previous_report(out) if earlier else None
    done = run("energy_estimate", "--dry_run", "-q", "--output_dir", str(out), stdout=full)
    assert done.returncode == 3
    assert one_line(done) == (
        f"ecocompute: {out / 'energy.json'} was written (complete and valid), but the "
        "summary could not be printed: No space left on device"
    )
    report = json.loads((out / "energy.json").read_text())
    assert energy_report_problems(report) == []
    assert before is None or (out / "energy.json").read_bytes() != before.data
    assert sorted(p.name for p in out.iterdir()) == ["energy.json"]


def _reports(root: Path) -> Path:
    for n in (0.5, 1.0, 2.0, 4.0):
        write(on_curve(n, 40.0, 60.0, 2.5, half_ci=1.0), root / f"synthetic-m-{n}b-NF4")
    return root


@pytest.mark.parametrize(
    ("command", "written"),
    [
        (["aggregate", "{root}", "-o", "{root}/table.csv"], "table.csv"),
        (["plot", "{root}", "-o", "{root}/plot.png"], "plot.png"),
        (["sweep", "--fit_only", "-q", "--output_dir", "{root}"], "sweep.json"),
    ],
    ids=["aggregate", "plot", "sweep"],
)
def test_other_commands_that_write_then_print_say_so(tmp_path, full, command, written):
    root = _reports(tmp_path / "r")
    done = run(*(a.format(root=root) for a in command), stdout=full)
    assert done.returncode == 3, done.stderr
    line = one_line(done)
    assert line.startswith(f"ecocompute: {root / written} was written (complete")
    assert line.endswith("but the summary could not be printed: No space left on device")
    assert (root / written).stat().st_size > 0


@pytest.mark.parametrize("command", [["validate"], ["aggregate"], ["check"]])
def test_commands_that_only_print_say_they_could_not(tmp_path, full, command):
    root = _reports(tmp_path / "r")
    target = (
        str(root / "synthetic-m-1.0b-NF4" / "energy.json") if command == ["check"] else str(root)
    )
    done = run(*command, target, stdout=full)
    assert done.returncode != 0
    line = one_line(done)
    assert line.startswith("ecocompute: error: could not print the output: No space left on device")


def test_a_closed_pipe_is_one_line_not_a_traceback(tmp_path):
    root = _reports(tmp_path / "r")
    read_end, write_end = os.pipe()
    os.close(read_end)  # nobody will read: every write is EPIPE
    try:
        done = run("validate", str(root), stdout=write_end)
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert one_line(done).startswith("ecocompute: error: could not print the output: Broken pipe")
