"""Reading many reports in worker processes (results/in_parallel.py) gives what reading
them one by one gives: the same reports, the same invalid files with the same reasons, in
the same order, a repeated copy named as such; and processes_for keeps to its rules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ecocompute.results import in_parallel
from ecocompute.results.in_parallel import ENV, PARALLEL_FROM, processes_for

from ..conftest import REPO
from ..made_reports import measured, write

# A fresh interpreter: the test process (a pytest-xdist worker) has threads, and a
# threaded process is never forked (the rule below), so the parallel path runs there.
_READ = """
import json, sys
from ecocompute.results import in_parallel
from ecocompute.results.collect import read_reports
from ecocompute.results.validate_files import validate_paths
reports, invalid = read_reports([sys.argv[1]])
checks = validate_paths([sys.argv[1]])
print(json.dumps({
    "processes": in_parallel.processes_for(len(reports) + len(invalid)),
    "reports": [[str(r.path), r.precision, r.delta_pct, r.ci95_pct] for r in reports],
    "invalid": [[i.path, list(i.problems)] for i in invalid],
    "checks": [[c.path, list(c.problems)] for c in checks],
}))
"""


def _read_with(folder, processes: int) -> dict:
    env = {**os.environ, ENV: str(processes), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", _READ, str(folder)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_worker_processes_read_the_same_reports_in_the_same_order(tmp_path):
    for k in range(6):
        write(measured(delta=-10.0 - k, unit=f"unit{k}"), tmp_path / f"r{k}")
    shutil.copytree(tmp_path / "r2", tmp_path / "r2-copy")  # a repeat, counted once
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "energy.json").write_text('{"schema_version": "2.0", "run"')
    one = _read_with(tmp_path, 1)
    two = _read_with(tmp_path, 2)
    assert one["processes"] == 1 and two["processes"] == 2
    assert two == {**one, "processes": 2}
    assert len(one["reports"]) == 6
    deltas = sorted(d for _path, _format, d, _ci in one["reports"])
    assert deltas == pytest.approx(sorted(-10.0 - k for k in range(6)), abs=1e-3)
    problems = {path: why for path, why in one["invalid"]}
    assert any("broken" in p for p in problems)
    assert any("r2" in p and "identical content" in " ".join(why) for p, why in problems.items())
    assert any(why for _path, why in one["checks"])  # validate flags the broken file too


def test_processes_for_reads_here_below_the_threshold_or_when_told(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    four_cpus = lambda _pid: {0, 1, 2, 3}  # noqa: E731
    monkeypatch.setattr(in_parallel.os, "sched_getaffinity", four_cpus, raising=False)
    monkeypatch.setattr(in_parallel.threading, "active_count", lambda: 1)
    assert processes_for(PARALLEL_FROM - 1) == 1
    assert processes_for(PARALLEL_FROM) == 4
    monkeypatch.setenv(ENV, "1")
    assert processes_for(10_000) == 1
    monkeypatch.setenv(ENV, "three")
    assert processes_for(10_000) == 1  # said, with a warning; never a crash
    monkeypatch.setenv(ENV, "3")
    assert processes_for(2) == 2  # never more processes than files
    assert processes_for(50) == 3  # told: below the threshold too
    monkeypatch.setenv(ENV, "100000")
    assert processes_for(10_000) == in_parallel.MOST_PROCESSES


def test_a_process_with_other_threads_is_never_forked(monkeypatch):
    monkeypatch.setenv(ENV, "4")
    monkeypatch.setattr(in_parallel.threading, "active_count", lambda: 2)
    assert processes_for(10_000) == 1
    calls = []
    assert in_parallel.map_files(lambda x: calls.append(x) or x * 2, [1, 2, 3]) == [2, 4, 6]
    assert calls == [1, 2, 3]  # read here, in order
