"""Issue 13, class 6: signals at any moment, from the first millisecond to the last.

- Ctrl-C at random moments of whole runs (200 of them, 0-300 ms after start: start-up,
  every import, the run, the write, the exit): never a traceback from our code, never
  swallowed, the earlier report intact unless a complete new one replaced it.
- SIGTERM at random moments, likewise; SIGHUP is handled like SIGTERM (exit 129).
- A signal just after the rename exits with its message (the report is complete).
- An interrupt during an import is deferred, not lost; one raised where Python can only
  print it (a __del__) is delivered again, not swallowed.
- A run killed outright (SIGKILL) leaves a temp file; the next write there removes it,
  and only stale temp files of ours.

The random-moment runs are measured by benchmarks/ctrl_c_at_random.py (one JSON line
per try) and judged here.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ecocompute.cli import entry
from ecocompute.report.atomic import LEGACY_STALE_S, remove_stale_temps
from ecocompute.report.read import energy_report_problems

from .conftest import REPO
from .test_faults import MEASURE, assert_untouched, previous_report
from .test_interrupts import StderrWatch

pytestmark = pytest.mark.slow

OURS = "ecocompute: "
# Python's own start-up (site, runpy, finding the package) runs before the first line of
# ecocompute: a Ctrl-C there is Python's, with Python's traceback (entry.py says so).
# Its frames: frozen modules, the standard library, and "<string>" (a .pth line that
# site.py executes, the source namedtuple evaluates).
PYTHON_STARTUP = re.compile(
    r'  File "(<frozen [\w.]+>|<string>|[^"]*/lib/python3\.\d+/[^"]*)", line'
)


def random_moments(
    runs: int, sig: str, max_ms: float = 300.0, *extra: str, timeout: float = 600
) -> list[dict]:
    """benchmarks/ctrl_c_at_random.py's tries (one dict each); extra: more of its flags."""
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "ctrl_c_at_random.py"),
            *("--runs", str(runs), "--max_ms", str(max_ms), "--parallel", "2"),
            *("--signal", sig, *extra),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def judge(t: dict, sig: str) -> str:
    """What the try did, or an AssertionError saying which promise it broke."""
    status, err = t["status"], t["stderr"]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    status_of = {"SIGINT": 130, "SIGTERM": 143}[sig]
    assert t["folder"] == ["energy.json"], t  # no temp file, nothing else
    if "Traceback" in err:
        # only Python's own start-up, before any line of ours: nothing of ours ran
        assert "/ecocompute/" not in err and not any(ln.startswith(OURS) for ln in lines), t
        frames = [ln for ln in lines if ln.startswith("  File")]
        assert frames and all(PYTHON_STARTUP.match(ln) for ln in frames), t
        assert status in (1, -signal.Signals[sig]) and t["old_report_intact"], t
        return "python start-up"
    if status == -signal.Signals[sig]:
        # killed by the signal's default action: before Python installed any handler
        assert lines == [] and t["old_report_intact"], t
        return "before the interpreter"
    if status == 0:
        # finished: a complete new report; never an interrupt swallowed mid-run
        assert t["report_valid"], t
        assert (
            t["finished_first"]
            or t["printed_first"]
            or (len(lines) == 1 and "arrived as the command finished" in lines[0])
        ), t
        return "finished"
    assert status == status_of, t
    assert len(lines) == 1 and lines[0].startswith(OURS), t
    if "arrived just after" in lines[0]:
        assert t["report_valid"], t
        return "just after the write"
    assert t["old_report_intact"], t
    return "interrupted"


def test_ctrl_c_at_200_random_moments():
    outcomes = [judge(t, "SIGINT") for t in random_moments(200, "SIGINT")]
    assert len(outcomes) == 200
    assert outcomes.count("interrupted") > 50  # the window is mostly the run itself


def test_sigterm_at_random_moments():
    outcomes = [judge(t, "SIGTERM") for t in random_moments(30, "SIGTERM")]
    assert outcomes.count("interrupted") > 5


def _fakes_process(out: Path, cache: Path, *extra: str, env: dict[str, str] | None = None):
    args = [a for a in MEASURE if a != "--quiet"]
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.cli_with_fakes",
            "energy_estimate",
            *args,
            "--precision",
            "NF4",
            *extra,
            "--output_dir",
            str(out),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "ECOCOMPUTE_CACHE": str(cache), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_sighup_mid_trial_is_handled_like_sigterm(tmp_path, synthetic_cache):
    out = tmp_path / "out"
    before = previous_report(out)
    proc = _fakes_process(out, synthetic_cache, "--iterations", "100000")
    watch = StderrWatch(proc)
    try:
        assert watch.wait_for("round 1/100000", timeout_s=120), watch.text()
        proc.send_signal(signal.SIGHUP)
        assert proc.wait(timeout=60) == 129
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = watch.text()
    assert "Traceback" not in text
    assert text.splitlines()[-1] == (
        "ecocompute: interrupted by SIGHUP: no energy.json was written and any earlier one "
        "is untouched"
    )
    assert_untouched(out, before)


@pytest.mark.parametrize(("name", "status"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_signal_just_after_the_rename_says_the_report_is_complete(
    tmp_path, synthetic_cache, name, status
):
    out = tmp_path / "out"
    before = previous_report(out)
    proc = _fakes_process(
        out, synthetic_cache, "--quiet", env={"ECOCOMPUTE_TEST_SIGNAL_AFTER_RENAME": name}
    )
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == status, stderr
    assert stderr.splitlines() == [
        f"ecocompute: {name} arrived just after {out / 'energy.json'} was written; that "
        "report is complete and valid"
    ]
    assert stdout == ""
    data = (out / "energy.json").read_bytes()
    assert data != before.data and energy_report_problems(json.loads(data)) == []


# --- deferred and redelivered interrupts (in this process, entry.main) ------------------


def _run_entry(monkeypatch, capsys, command) -> tuple[int, str]:
    from ecocompute import cli

    monkeypatch.setattr(cli, "main", lambda argv: command())
    status = entry.main([], exiting=False)
    return status, capsys.readouterr().err


def test_an_interrupt_during_an_import_is_deferred_then_raised(tmp_path, monkeypatch, capsys):
    """The module's body is signalled halfway: the import completes (no half-made module,
    no exec() marked "unhandled"), then the interrupt is raised outside it."""
    module = tmp_path / "slow_to_import.py"
    module.write_text(
        textwrap.dedent("""
        import os, signal, time
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        COMPLETE = True
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reached: list[str] = []

    def command() -> int:
        import slow_to_import  # noqa: F401

        reached.append("imported")
        time.sleep(5)  # the deferred interrupt arrives here
        reached.append("not interrupted")
        return 0

    status, err = _run_entry(monkeypatch, capsys, command)
    assert status == 130 and reached == ["imported"]
    assert sys.modules["slow_to_import"].COMPLETE
    assert err.startswith("ecocompute: interrupted by SIGINT") and "Traceback" not in err


def test_an_interrupt_raised_in_a_finaliser_is_delivered_again(monkeypatch, capsys):
    """Python can only print an exception raised in __del__ ("Exception ignored") and
    the run would carry on: it is delivered again instead."""
    import gc

    class Finalised:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the interrupt is raised here, inside __del__

    reached: list[str] = []

    def command() -> int:
        Finalised()
        gc.collect()
        reached.append("finalised")
        time.sleep(5)
        reached.append("not interrupted")
        return 0

    status, err = _run_entry(monkeypatch, capsys, command)
    assert status == 130 and reached == ["finalised"]
    assert "Exception ignored" not in err and "Traceback" not in err


# --- temp files left by a run killed outright ----------------------------------------

KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from ecocompute.report.atomic import atomic_path
with atomic_path(Path(sys.argv[1]) / "energy.json") as tmp:
    tmp.write_text('{"half": ')
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_next_run_removes_what_a_killed_run_left(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(out)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    (left,) = out.iterdir()
    assert left.name.startswith(".energy.json.") and left.name.endswith(".tmp.json")
    # a live writer's temp file (this process's pid), one not of ours, one of another name
    live = out / f".energy.json.{os.getpid()}.abcdefgh.tmp.json"
    foreign = out / ".energy.json.notours.tmp.json"
    other = out / f".table.csv.{killed_pid_placeholder()}.abcdefgh.tmp.csv"
    for path in (live, foreign, other):
        path.write_text("x")
    past = time.time() - 60
    for path in (live, foreign, other):
        os.utime(path, (past, past))
    nxt = subprocess.run(  # a process of its own: older temp files are stale to it
        [
            sys.executable,
            "-m",
            "ecocompute",
            "energy_estimate",
            "--dry_run",
            "-q",
            "--output_dir",
            str(out),
        ],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        check=False,
    )
    assert nxt.returncode == 0, nxt.stderr
    names = sorted(p.name for p in out.iterdir())
    assert left.name not in names
    assert names == sorted(["energy.json", live.name, foreign.name, other.name])


def killed_pid_placeholder() -> int:
    """A pid that is not running (the highest a kernel hands out is below 2**22)."""
    return 2**22 + 7


def test_legacy_temp_names_are_removed_only_when_old(tmp_path):
    target = tmp_path / "energy.json"
    young = tmp_path / ".energy.json.abcdefgh.tmp.json"
    old = tmp_path / ".energy.json.zyxwvuts.tmp.json"
    young.write_text("x")
    old.write_text("x")
    past = time.time() - LEGACY_STALE_S - 60
    os.utime(old, (past, past))
    assert remove_stale_temps(target) == [old]
    assert young.exists() and not old.exists()


def test_a_dead_writers_temp_newer_than_this_process_is_kept(tmp_path):
    """It may be a writer on another machine sharing the folder, writing right now."""
    fresh = tmp_path / f".energy.json.{killed_pid_placeholder()}.abcdefgh.tmp.json"
    fresh.write_text("x")
    assert remove_stale_temps(tmp_path / "energy.json") == []
    assert fresh.exists()
