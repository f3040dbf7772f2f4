"""Issue 20, items 11 and 12: outputs never destroy inputs, and temp files never outlive
their run.

- `aggregate r -o r/energy.json` and `plot -o` naming a report they read would replace
  that report: refused (exit 2), however the path is spelt (`r/../r`, a link, a hard
  link). `-o ''` is bad input (exit 2), and `-o newdir/` names a folder, not a file.
- Content written through (`-o /dev/stdout`, a FIFO) is made in a memory file, so a run
  killed outright leaves nothing in TMPDIR; where there is no memory file, the temp file
  there carries the pid and the next such write removes it.
- A dead writer's temp file dated far ahead of the clock is stale too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ecocompute.boundary.atomic import remove_stale_temps
from ecocompute.cli import main

from ..conftest import REPO
from ..made_reports import measured, write
from .test_hostile_signals import killed_pid_placeholder


@pytest.fixture
def reports(tmp_path):
    for size in (1.1, 3.0):
        write(measured(params_b=size), tmp_path / "r" / f"m{size:g}")
    return tmp_path / "r"


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _spellings(reports):
    target = reports / "m1.1" / "energy.json"
    link = reports.parent / "link.json"
    link.symlink_to(target)
    hard = reports.parent / "hard.json"
    os.link(target, hard)
    return target, [
        str(target),
        str(reports / ".." / "r" / "m1.1" / "energy.json"),
        os.path.relpath(target),
        str(link),
        str(hard),
    ]


@pytest.mark.parametrize("tool", ["aggregate", "plot"])
def test_an_output_that_is_an_input_report_is_refused(reports, capsys, tool):
    if tool == "plot":
        pytest.importorskip("matplotlib")
    target, spellings = _spellings(reports)
    before = target.read_bytes()
    for output in spellings:
        assert main([tool, str(reports), "-o", output]) == 2, output
        line = _one_error(capsys)
        assert line.startswith("ecocompute: error: invalid output "), line
        assert "one of the files read" in line and "destroy" in line
        assert target.read_bytes() == before


@pytest.mark.parametrize(
    ("formats", "written"), [("NF4", "energy.json"), ("NF4,INT8", "INT8/energy.json")]
)
def test_a_run_never_writes_over_its_own_quality_text(tmp_path, capsys, formats, written):
    """--quality_text naming the report the run would write (a single format's, or one
    of a session's) is refused before anything runs, and the text is left as it was."""
    out = tmp_path / "o"
    text = out / written
    text.parent.mkdir(parents=True)
    text.write_text("a quality text\n")
    argv = ["energy_estimate", "--dry_run", "--precision", formats, "--output_dir", str(out)]
    assert main([*argv, "--quality_text", str(text)]) == 2
    line = _one_error(capsys)
    assert "one of the files read" in line and "destroy" in line, line
    assert text.read_text() == "a quality text\n"
    assert sorted(p.name for p in out.rglob("*")) == sorted(Path(written).parts)


@pytest.mark.parametrize("tool", ["aggregate", "plot"])
@pytest.mark.parametrize(("output", "why"), [("", "is empty"), ("newdir/", "names a folder")])
def test_an_output_that_names_no_file_is_bad_input(
    reports, tmp_path, capsys, monkeypatch, tool, output, why
):
    if tool == "plot":
        pytest.importorskip("matplotlib")
    monkeypatch.chdir(tmp_path)  # put back afterwards: later tests read paths from the repo
    assert main([tool, str(reports), "-o", output]) == 2
    line = _one_error(capsys)
    assert line.startswith("ecocompute: error: invalid output ") and why in line
    assert not (tmp_path / "newdir").exists()


def test_a_new_file_beside_the_inputs_is_written(reports, capsys):
    assert main(["aggregate", str(reports), "-o", str(reports / "table.csv")]) == 0
    capsys.readouterr()
    assert (reports / "table.csv").read_text().startswith("kind,card")


# --- item 12: temp files ---------------------------------------------------------

KILLED_THROUGH = """
import os, signal, sys
from pathlib import Path
if sys.argv[1] == "no-memfd":
    del os.memfd_create
from ecocompute.boundary.atomic import atomic_path
with atomic_path(Path("/dev/null")) as tmp:
    tmp.write_text('{"half": ')
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_through(tmpdir, mode: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_THROUGH, mode],
        env={**os.environ, "PYTHONPATH": str(REPO), "TMPDIR": str(tmpdir)},
        check=False,
    )
    assert done.returncode == -signal.SIGKILL


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="no memfd on this system")
def test_a_run_killed_while_writing_through_leaves_nothing_in_tmpdir(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    _killed_through(tmpdir, "memfd")
    assert list(tmpdir.iterdir()) == []


def test_without_memfd_the_next_write_through_removes_a_killed_runs_temp(tmp_path, monkeypatch):
    import tempfile

    from ecocompute.boundary.temp_files import THROUGH_PREFIX, scratch_file

    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    _killed_through(tmpdir, "no-memfd")
    (left,) = tmpdir.iterdir()
    assert left.name.startswith(f"{THROUGH_PREFIX}{int(left.name.split('.')[3])}.")
    past = time.time() - 86_400  # older than this process: certain to be left over
    os.utime(left, (past, past))
    monkeypatch.delattr(os, "memfd_create", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmpdir))
    with scratch_file(tmp_path / "table.csv") as scratch:
        scratch.write_text("x")
        assert [p.name for p in tmpdir.iterdir()] == [scratch.name]
    assert list(tmpdir.iterdir()) == []


def test_a_dead_writers_temp_dated_far_ahead_of_the_clock_is_removed(tmp_path):
    future_stale_s = 3600.0  # temp_files.FUTURE_STALE_S
    dead = killed_pid_placeholder()
    future = tmp_path / f".energy.json.{dead}.abcdefgh.tmp.json"
    near = tmp_path / f".energy.json.{dead}.zyxwvuts.tmp.json"
    legacy = tmp_path / ".energy.json.qwertyui.tmp.json"
    for path in (future, near, legacy):
        path.write_text("x")
    ahead = time.time() + future_stale_s + 86_400
    os.utime(future, (ahead, ahead))
    os.utime(legacy, (ahead, ahead))
    soon = time.time() + 60  # a minute ahead: may be a live writer's, on a skewed clock
    os.utime(near, (soon, soon))
    assert sorted(remove_stale_temps(tmp_path / "energy.json")) == sorted([future, legacy])
    assert near.exists()
