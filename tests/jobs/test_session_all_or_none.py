"""Issue 30, item 1: a session of several formats is written all or none. Every report is
made in full beside its target before the first is renamed into place; a failure
while making them writes none (every earlier report untouched, and the one line says
so truthfully); a rename that fails after another succeeded says exactly which were
written, as does a sweep's sweep.json."""

from __future__ import annotations

import errno
import json
import os
import signal
from pathlib import Path

import pytest

import ecocompute
from ecocompute.boundary.atomic import write_texts_atomic
from ecocompute.cli import main
from ecocompute.errors import PartlyWritten, RunError
from ecocompute.report.read import energy_report_problems

SESSION = ["energy_estimate", "--dry_run", "-q", "--model", "gpt-1b", "--precision", "NF4,INT8"]


def _earlier_nf4(out: Path) -> tuple[bytes, int]:
    """An earlier NF4 report in out/NF4: its bytes and inode (a dry run within the same
    second may write the same bytes; a rename onto it changes the inode)."""
    assert main([*SESSION[:-1], "NF4", "--output_dir", str(out / "NF4")]) == 0
    return _nf4(out)


def _nf4(out: Path) -> tuple[bytes, int]:
    path = out / "NF4" / "energy.json"
    return path.read_bytes(), path.stat().st_ino


@pytest.fixture
def no_plot(monkeypatch):
    """A sweep here draws no plot (matplotlib "missing"): the slowest part of a dry run."""
    import ecocompute.sweeps.fits as fits

    monkeypatch.setattr(fits, "missing_fit_stack", lambda: ["matplotlib"])


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _fail_on_call(monkeypatch, module, name: str, n: int, code: int = errno.ENOSPC) -> None:
    """module.name raises OSError(code) on its n-th call, and works otherwise."""
    real = getattr(module, name)
    calls = {"n": 0}

    def wrapped(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == n:
            raise OSError(code, os.strerror(code))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)


def test_a_folder_in_one_reports_place_writes_none_and_says_so(tmp_path, capsys, monkeypatch):
    """Made during the run: none written, the earlier one stands (exit 1). There before
    it: refused before anything is measured (exit 2; a review, 2026-12-05: the whole
    measurement was lost to a folder the start could have seen)."""
    from ecocompute.jobs import session_job

    out = tmp_path / "out"
    before = _earlier_nf4(out)
    real_run_session = session_job.run_session

    def run_then_a_folder(*args, **kwargs):
        done = real_run_session(*args, **kwargs)
        (out / "INT8" / "energy.json").mkdir(parents=True)
        return done

    monkeypatch.setattr(session_job, "run_session", run_then_a_folder)
    capsys.readouterr()
    assert main([*SESSION, "--output_dir", str(out)]) == 1
    line = _one_error(capsys)
    assert "INT8/energy.json" in line and "nothing was written" in line, line
    assert _nf4(out) == before  # the earlier one stands
    assert _listing(out) == ["INT8", "INT8/energy.json", "NF4", "NF4/energy.json"]
    monkeypatch.setattr(session_job, "run_session", real_run_session)
    assert main([*SESSION, "--output_dir", str(out)]) == 2  # there before the run
    line = _one_error(capsys)
    assert "invalid output_dir" in line and "INT8/energy.json': it is a folder" in line, line
    assert _nf4(out) == before


def test_a_full_disk_on_the_second_report_writes_none(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    before = _earlier_nf4(out)
    capsys.readouterr()
    _fail_on_call(monkeypatch, os, "fsync", 2)  # the INT8 temp file's
    assert main([*SESSION, "--output_dir", str(out)]) == 1
    line = _one_error(capsys)
    assert "INT8/energy.json: No space left on device; nothing was written" in line, line
    assert _nf4(out) == before
    # no temp file left, nor the INT8 folder the write made for it
    assert _listing(out) == ["NF4", "NF4/energy.json"]


def test_a_rename_that_fails_after_another_names_exactly_what_was_written(
    tmp_path, capsys, monkeypatch
):
    out = tmp_path / "out"
    _earlier_nf4(out)
    capsys.readouterr()
    _fail_on_call(monkeypatch, os, "replace", 2, errno.EIO)
    assert main([*SESSION, "--output_dir", str(out)]) == 1
    line = _one_error(capsys)
    assert "nothing was written" not in line, line
    assert f"written, complete and valid: {out / 'NF4' / 'energy.json'}" in line, line
    assert f"not written: {out / 'INT8' / 'energy.json'}" in line, line
    assert energy_report_problems(json.loads((out / "NF4" / "energy.json").read_text())) == []
    assert _listing(out) == ["NF4", "NF4/energy.json"]


def test_a_signal_during_the_renames_is_acted_on_after_all_of_them(
    tmp_path, capsys, monkeypatch, default_signal_handlers
):
    out = tmp_path / "out"
    real_replace = os.replace
    calls: list[str] = []

    def replace_then_signal(src, dst):
        real_replace(src, dst)
        calls.append(str(dst))
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGTERM)  # between the two renames

    monkeypatch.setattr(os, "replace", replace_then_signal)
    assert main([*SESSION, "--output_dir", str(out)]) == 143
    line = _one_error(capsys)
    assert "after 2 of 2 reports were written" in line, line
    assert len(calls) == 2


def test_estimate_write_of_a_session_is_all_or_none(tmp_path):
    out = tmp_path / "out"
    before = _earlier_nf4(out)
    (out / "INT8" / "energy.json").mkdir(parents=True)
    answer = ecocompute.estimate("gpt-1b", "NF4,INT8", dry_run=True)
    with pytest.raises(RunError, match="nothing was written"):
        answer.write(out)
    assert _nf4(out) == before


def test_a_ctrl_c_between_an_api_sessions_renames_is_raised_after_the_last(
    tmp_path, monkeypatch, default_signal_handlers
):
    """Estimate.write() holds no handler of the command line's: Python's own raised
    the Ctrl-C at once, and one report of two was written. Python's handler is back
    after, and a handler of the caller's own is left alone."""
    import signal

    out = tmp_path / "out"
    answer = ecocompute.estimate("gpt-1b", "NF4,INT8", dry_run=True)
    real_replace, renamed = os.replace, []

    def replace(src, dst):
        real_replace(src, dst)
        renamed.append(dst)
        if len(renamed) == 1:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C after the first rename

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        answer.write(out)
    assert len(renamed) == 2 and (out / "NF4" / "energy.json").is_file()
    assert (out / "INT8" / "energy.json").is_file()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not list(out.rglob("*.tmp*"))


def test_write_texts_atomic_makes_every_file_before_the_first_rename(tmp_path, monkeypatch):
    targets = [tmp_path / "a" / "energy.json", tmp_path / "b" / "energy.json"]
    seen: list[list[str]] = []
    real_replace = os.replace

    def replace(src, dst):
        seen.append(sorted(p.name for p in tmp_path.rglob("*.tmp.json")))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    assert write_texts_atomic([(t, "{}\n") for t in targets]) == targets
    assert len(seen[0]) == 2  # both temp files exist when the first is renamed
    assert [t.read_text() for t in targets] == ["{}\n", "{}\n"]
    assert not list(tmp_path.rglob("*.tmp*"))


def test_a_partly_written_session_in_a_sweep_lists_each_report_truthfully(
    tmp_path, capsys, monkeypatch, no_plot
):
    out = tmp_path / "sw"
    _fail_on_call(monkeypatch, os, "replace", 2, errno.EIO)  # INT8's rename (sweep.json: 3rd)
    argv = ["sweep", "--models", "gpt-1b", "--precisions", "NF4,INT8", "--dry_run", "-q"]
    assert main([*argv, "--output_dir", str(out)]) == 1
    capsys.readouterr()
    runs = {r["precision"]: r for r in json.loads((out / "sweep.json").read_text())["runs"]}
    assert runs["NF4"]["status"] == "ok" and runs["NF4"]["report"] == "gpt-1b/NF4/energy.json"
    assert runs["INT8"]["status"] == "failed"
    assert "Input/output error" in runs["INT8"]["error"]
    assert not (out / "gpt-1b" / "INT8" / "energy.json").exists()


def test_a_session_in_a_sweep_that_writes_none_lists_none_as_written(tmp_path, capsys, no_plot):
    out = tmp_path / "sw"
    (out / "gpt-1b" / "INT8" / "energy.json").mkdir(parents=True)
    argv = ["sweep", "--models", "gpt-1b", "--precisions", "NF4,INT8", "--dry_run", "-q"]
    assert main([*argv, "--output_dir", str(out)]) == 1
    capsys.readouterr()
    runs = json.loads((out / "sweep.json").read_text())["runs"]
    assert [r["status"] for r in runs] == ["failed", "failed"]
    assert not (out / "gpt-1b" / "NF4" / "energy.json").exists()


def test_partly_written_is_a_run_error_naming_both_lists():
    exc = PartlyWritten(Path("b"), "Input/output error", [Path("a")], [Path("b")])
    assert isinstance(exc, RunError) and exc.written == [Path("a")]
    assert str(exc) == (
        "could not write b: Input/output error; written, complete and valid: a; not written: b"
    )


def test_an_interrupted_write_leaves_no_folder_it_made(tmp_path, monkeypatch):
    """Exit 130 promises nothing new: the folders a write made for its file went with
    its temp file (out/, out/NF4/ and out/INT8/ were left, empty). A folder that was
    there before, or holds another file now, stays."""
    from ecocompute.boundary.atomic import atomic_path

    with pytest.raises(KeyboardInterrupt), atomic_path(tmp_path / "n1" / "out" / "energy.json"):
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == []
    targets = [tmp_path / "out" / f / "energy.json" for f in ("NF4", "INT8")]
    real_fsync, calls = os.fsync, []

    def fsync(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise KeyboardInterrupt  # while the second file is synced
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(KeyboardInterrupt):
        write_texts_atomic([(t, "{}\n") for t in targets])
    assert os.listdir(tmp_path) == []
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("x")
    calls.clear()
    with pytest.raises(KeyboardInterrupt):
        write_texts_atomic([(t, "{}\n") for t in targets])
    assert os.listdir(tmp_path / "out") == ["keep.txt"]


def test_a_target_under_a_file_says_nothing_was_written(tmp_path):
    """A review (2026-12-05): a format's folder turned into a file mid-run gave 'could not
    write .../INT8/energy.json: a part of it that should be a folder is a file' without
    the '; nothing was written' that docs/errors.md promises every such line ends with."""
    from ecocompute.boundary.atomic import write_mode

    (tmp_path / "INT8").write_text("x")
    with pytest.raises(RunError) as info:
        write_mode(tmp_path / "INT8" / "energy.json")
    assert str(info.value).endswith("should be a folder is a file; nothing was written")


def test_targets_a_session_could_not_write_are_refused_before_the_run(tmp_path, capsys):
    """A review (2026-12-05): a format's folder that is a dangling link failed only after
    the run ('File exists; nothing was written', the measurement lost), and two formats'
    energy.json linked to one file were both 'written', one over the other (exit 0)."""
    dangling = tmp_path / "dangling"
    dangling.mkdir()
    (dangling / "INT8").symlink_to(tmp_path / "nowhere")
    assert main([*SESSION, "--output_dir", str(dangling)]) == 2
    assert "INT8': is a symbolic link to nothing" in _one_error(capsys)
    shared = tmp_path / "shared"
    for fmt in ("NF4", "INT8"):
        (shared / fmt).mkdir(parents=True)
        (shared / fmt / "energy.json").symlink_to(tmp_path / "one.json")
    assert main([*SESSION, "--output_dir", str(shared)]) == 2
    assert "two formats' energy.json lead to one file" in _one_error(capsys)
    assert not (tmp_path / "one.json").exists()
