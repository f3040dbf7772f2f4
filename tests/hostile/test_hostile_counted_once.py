"""Issue 20, items 9 and 10: one report is counted once, and no folder is skipped in
silence.

- The same folder named as `r`, `$PWD/r`, `r/../r` or through a link, and a copy of a
  report, pooled as n = 3 with a zero-width interval, and `sweep --fit_only` fitted one
  report as several points. Files are one by identity (device, inode), reports one by
  content.
- A folder that cannot be searched (permission denied) was skipped silently by
  `validate` (exit 0) and `aggregate`, or described as holding no energy.json. It is
  one INVALID line saying so, and validate's exit status is 1.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys

import pytest

from ecocompute.cli import main

from ..conftest import REPO
from ..made_reports import measured, write
from ..published_reports import measured_report


@pytest.fixture
def one_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(measured(params_b=1.1, delta=20.0), tmp_path / "r" / "a")
    (tmp_path / "link").symlink_to(tmp_path / "r")
    return tmp_path


SPELLINGS = ["r", "{cwd}/r", "r/../r", "link", "r/a/energy.json", "link/a/energy.json"]


def _names(root) -> list[str]:
    return [s.format(cwd=root) for s in SPELLINGS]


def test_one_report_named_many_ways_is_pooled_once(one_report, capsys):
    assert main(["aggregate", *_names(one_report), "-o", "t.csv"]) == 0
    captured = capsys.readouterr()
    (row,) = (one_report / "t.csv").read_text().splitlines()[1:]
    assert ",1,10," in row  # n_reports 1, n_pairs 10
    assert "skipped" not in captured.err


def test_validate_checks_one_file_named_many_ways_once(one_report, capsys):
    assert main(["validate", *_names(one_report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].endswith(": valid")


def test_a_copy_of_a_report_is_the_same_report(one_report, capsys):
    shutil.copytree(one_report / "r" / "a", one_report / "r" / "b")
    doc = json.loads((one_report / "r" / "a" / "energy.json").read_text())
    (one_report / "r" / "c").mkdir()
    (one_report / "r" / "c" / "energy.json").write_text(json.dumps(doc, indent=4))  # reformatted
    assert main(["aggregate", "r", "-o", "t.csv"]) == 0
    err = capsys.readouterr().err
    (row,) = (one_report / "t.csv").read_text().splitlines()[1:]
    assert ",1,10," in row
    assert "skipped 2 file(s) (0 invalid, 2 the same report again):" in err
    assert "r/b/energy.json: the same report as r/a/energy.json (identical content)" in err


def test_two_different_reports_still_pool(one_report, capsys):
    other = copy.deepcopy(measured(params_b=1.1, delta=22.0))
    write(other, one_report / "r" / "b")
    assert main(["aggregate", "r", "-o", "t.csv"]) == 0
    capsys.readouterr()
    (row,) = (one_report / "t.csv").read_text().splitlines()[1:]
    assert ",2,20," in row


def test_fit_only_fits_one_report_once(tmp_path, capsys):
    pytest.importorskip("scipy")
    for size, delta in ((0.5, 30.0), (1.1, 20.0), (3.0, 10.0)):
        write(measured(params_b=size, delta=delta), tmp_path / "reports" / f"m{size:g}")
    shutil.copytree(tmp_path / "reports" / "m0.5", tmp_path / "reports" / "copy")
    (tmp_path / "again").symlink_to(tmp_path / "reports")
    reports = [str(tmp_path / "reports"), str(tmp_path / "again"), str(tmp_path / "reports/..")]
    argv = ["sweep", "--fit_only", "--reports", *reports, "--output_dir", str(tmp_path / "sw")]
    assert main([*argv, "-q"]) == 0
    capsys.readouterr()
    sweep = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert len(sweep["runs"]) == 3
    (fit,) = sweep["fits"]
    assert fit["n_points"] == 3


# --- item 10: folders that cannot be searched ----------------------------------------


@pytest.fixture
def locked(tmp_path, monkeypatch):
    """r/a holds a report; r/locked holds one too, but listing r/locked fails as it does
    for a user without permission (in this process: root may read anything)."""
    write(measured(params_b=1.1), tmp_path / "r" / "a")
    write(measured(params_b=3.0), tmp_path / "r" / "locked" / "x")
    refused = str(tmp_path / "r" / "locked")
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path) == refused:
            raise PermissionError(13, "Permission denied", refused)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return tmp_path / "r"


def test_validate_says_a_folder_it_cannot_search(locked, capsys):
    assert main(["validate", str(locked)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"{locked / 'locked'}/: INVALID cannot search this folder" in lines[0]
    assert lines[0].endswith("Permission denied")
    assert lines[1:] == [f"{locked / 'a' / 'energy.json'}: valid"]


def test_validate_of_an_unsearchable_folder_does_not_say_it_is_empty(locked, capsys):
    assert main(["validate", str(locked / "locked")]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert "cannot search this folder" in line and "no energy.json" not in line


def test_aggregate_lists_a_folder_it_cannot_search(locked, capsys):
    assert main(["aggregate", str(locked)]) == 0
    err = capsys.readouterr().err
    assert "skipped 1 invalid file(s):" in err
    assert f"{locked / 'locked'}/: cannot search this folder" in err


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="needs root and setpriv to run without the power to read any folder",
)
def test_a_folder_without_read_permission_is_invalid_for_a_user_who_cannot_read_it(tmp_path):
    """For real: the process keeps uid 0 but drops the capabilities that let root read
    any folder, so a mode 000 folder is as unreadable to it as to any other user."""
    write(measured(params_b=1.1), tmp_path / "r" / "a")
    write(measured(params_b=3.0), tmp_path / "r" / "locked" / "x")
    write(measured(params_b=7.0), tmp_path / "r" / "listed")  # names listed, none looked at
    (tmp_path / "r" / "locked").chmod(0)
    (tmp_path / "r" / "listed").chmod(0o644)
    try:
        done = subprocess.run(
            [
                "setpriv",
                "--inh-caps=-dac_override,-dac_read_search",
                "--bounding-set=-dac_override,-dac_read_search",
                sys.executable,
                "-m",
                "ecocompute",
                "validate",
                str(tmp_path / "r"),
            ],
            env={**os.environ, "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        (tmp_path / "r" / "locked").chmod(0o755)
        (tmp_path / "r" / "listed").chmod(0o755)
    assert done.returncode == 1, done
    lines = done.stdout.splitlines()
    assert f"{tmp_path}/r/locked/: INVALID cannot search this folder" in lines[0]
    assert "listed/energy.json: INVALID cannot read: Permission denied" in done.stdout
    assert f"{tmp_path}/r/a/energy.json: valid" in lines


def test_a_measurement_is_counted_once_whatever_else_its_copy_changed(tmp_path, capsys):
    """A measured report upgraded into another format, or copied with its timestamp
    edited, holds the same trials of the same GPU: pooled with itself it halved the
    interval (an inconclusive [-138.8, +58.5] read as [-72.0, -8.4], 'saves')."""
    source = REPO / "docs/validation/h200-map/eager-7b-b16/energy.json"
    (tmp_path / "orig").mkdir()
    shutil.copy(source, tmp_path / "orig" / "energy.json")
    doc = json.loads(source.read_text())
    doc["timestamp_utc"] = "2026-01-01T00:00:00Z"
    write(doc, tmp_path / "edited")
    assert main(["upgrade", str(tmp_path / "orig"), "--output_dir", str(tmp_path / "new")]) == 0
    capsys.readouterr()
    assert main(["aggregate", str(tmp_path), "-o", str(tmp_path / "t.csv")]) == 0
    err = capsys.readouterr().err
    (row,) = (tmp_path / "t.csv").read_text().splitlines()[1:]
    assert ",1,5," in row  # one report of 5 pairs, as the original alone
    assert err.count("the same measurement: one format, the same trials") == 2
    # two measurements of one GPU in one session's formats stay two formats' reports
    nf4 = measured(precision="NF4", delta=10.0, unit="u9")
    int8 = measured(precision="INT8", delta=90.0, unit="u9")
    write(nf4, tmp_path / "s" / "NF4")
    write(int8, tmp_path / "s" / "INT8")
    assert main(["aggregate", str(tmp_path / "s")]) == 0
    assert "counted once" not in capsys.readouterr().err


def _aggregate_row(root, capsys) -> tuple[str, str]:
    """aggregate's one CSV row over root, and its stderr."""
    assert main(["aggregate", str(root), "-o", str(root / "t.csv")]) == 0
    (row,) = (root / "t.csv").read_text().splitlines()[1:]
    return row, capsys.readouterr().err


def test_a_report_with_its_trials_reordered_is_the_same_measurement(tmp_path, capsys):
    """The trials in another order (each keeps its pair) pooled as a second report:
    n 1, 4 pairs, -0.5 .. +2.4% read as n 8 pairs, +0.2 .. +1.7%."""
    source = REPO / "docs/validation/h200-map/map-7b/synthetic-llama-2-7b-b1/FP8/energy.json"
    doc = json.loads(source.read_text())
    write(doc, tmp_path / "a")
    doc["results"]["trials"].reverse()
    write(doc, tmp_path / "b")
    row, err = _aggregate_row(tmp_path, capsys)
    assert ",1,4," in row
    assert "the same trials): counted once" in err


def test_a_measured_report_with_another_gpu_uuid_is_the_same_measurement(tmp_path, capsys):
    """The same readings under another UUID were a unit more (--units listed three and
    drew a prediction interval from two): no two GPUs read the same to the joule. Two
    units' own reports stay two."""
    units = REPO / "docs/validation/h100-units"
    for tail in ("976cb2cb4a26", "f6c8f6a86b79"):
        shutil.copytree(units / tail / "session/NF4", tmp_path / tail)
    doc = json.loads((tmp_path / "976cb2cb4a26" / "energy.json").read_text())
    doc["system_under_test"]["gpus"][0]["uuid"] = "GPU-11111111-2222-3333-4444-555555555555"
    write(doc, tmp_path / "edited")
    row, err = _aggregate_row(tmp_path, capsys)
    assert ",2,11," in row  # two units, 5 and 6 pairs
    assert "edited/energy.json: the same report as" in err and "the same trials" in err


def test_copies_of_a_published_run_are_one_report_and_draw_no_interval(tmp_path, capsys):
    """The published container's run (one run, no trials) copied with its timestamp
    edited pooled as n 3, sd 0.0, +0.8 .. +0.8%. Its figures tell it; two runs whose
    deltas agree to the digit are two reports, but a spread of zero is no interval."""
    for k in range(3):
        doc = measured_report()
        doc["timestamp_utc"] = f"2026-07-1{k}T09:26:40.1Z"
        write(doc, tmp_path / f"copy{k}")
    row, err = _aggregate_row(tmp_path, capsys)
    assert ",1,," in row and "(the same measurement: one format, the same figures)" in err
    write(measured_report(throughput_tokens_per_s=80.0, avg_power_watts=271.6), tmp_path / "run2")
    row, err = _aggregate_row(tmp_path, capsys)
    assert ",2,," in row and ",0.8,0.8," not in row
