"""Issue 20, item 5: a held-down Ctrl-C (a burst of SIGINTs) is one Ctrl-C.

Each SIGINT of a burst was raised anew while the one before it was still unwinding:
through the `finally` that removes a temp file (left behind), through the line that
says what happened (two half lines, or a traceback and no `ecocompute:` line). Once an
interrupt is raised, the signals that follow it closely are that interrupt.

- In this process, deterministically: a second SIGINT while the first one's line is
  being written, and one inside the cleanup of a write.
- In fresh processes at random moments (benchmarks/ctrl_c_at_random.py --burst 5,
  2 ms apart), for energy_estimate and aggregate: never a traceback after ecocompute's
  first line, one line, and no file half written.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from ecocompute.boundary import interrupts
from ecocompute.cli import entry

from .test_hostile_signals import OURS, PYTHON_STARTUP, judge, random_moments

pytestmark = pytest.mark.slow


def _sigint_now() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the handler runs here, at the next bytecode


def test_a_second_sigint_while_the_first_is_told_is_the_same_interrupt(monkeypatch, capsys):
    from ecocompute.cli import dispatch, reports_commands

    real_describe = interrupts.describe

    def describe_during_a_burst(exc):
        _sigint_now()  # the key is still down
        return real_describe(exc)

    monkeypatch.setattr(dispatch, "describe_interrupt", describe_during_a_burst)

    def command(args) -> int:
        _sigint_now()
        return 0

    monkeypatch.setattr(reports_commands, "_cmd_validate", command)
    status = entry.main(["validate", "x"], exiting=False)
    err = capsys.readouterr().err
    assert status == 130
    assert err.splitlines() == [
        "ecocompute: interrupted by SIGINT: the file being written, if any, was not, and "
        "earlier files are untouched"
    ]


def test_a_burst_inside_a_writes_cleanup_leaves_no_temp_file(tmp_path, monkeypatch):
    from ecocompute.report import atomic

    real_unlink = os.unlink

    def unlink_during_a_burst(path, *args, **kwargs):
        _sigint_now()  # the second SIGINT lands in the finally that removes the temp file
        real_unlink(path, *args, **kwargs)

    target = tmp_path / "energy.json"
    with pytest.raises(KeyboardInterrupt), interrupts.process_handlers():
        monkeypatch.setattr(atomic.os, "unlink", unlink_during_a_burst)
        with atomic.atomic_path(target) as tmp:
            tmp.write_text('{"half": ')
            _sigint_now()  # the first
    monkeypatch.setattr(atomic.os, "unlink", real_unlink)
    assert list(tmp_path.iterdir()) == []


def test_a_new_ctrl_c_after_a_quiet_second_is_a_new_interrupt(monkeypatch, capsys):
    """In case a library swallowed the first: the burst rule never makes a run
    uninterruptible."""
    from ecocompute.cli import reports_commands

    swallowed = []

    def command(args) -> int:
        try:
            _sigint_now()
        except KeyboardInterrupt:
            swallowed.append(True)  # as a careless library might
        time.sleep(interrupts.REPEAT_S + 0.1)
        _sigint_now()
        return 0

    monkeypatch.setattr(reports_commands, "_cmd_validate", command)
    assert entry.main(["validate", "x"], exiting=False) == 130
    assert swallowed == [True]
    assert capsys.readouterr().err.startswith("ecocompute: interrupted by SIGINT")


# --- bursts at random moments of whole runs -----------------------------------------


def bursts(runs: int, command: str, max_ms: float) -> list[dict]:
    burst = ("--burst", "5", "--burst_gap_ms", "2", "--command", command, "--seed", "20")
    return random_moments(runs, "SIGINT", max_ms, *burst, timeout=900)


def test_bursts_of_ctrl_c_at_random_moments_of_energy_estimate():
    outcomes = [judge(t, "SIGINT") for t in bursts(100, "energy_estimate", 300.0)]
    assert len(outcomes) == 100 and outcomes.count("interrupted") > 20


def judge_aggregate(t: dict) -> str:
    """aggregate -o table.csv under a burst: as judge(), for a command whose file is a
    table (its folder holds the earlier report and, once written, the table)."""
    status, err = t["status"], t["stderr"]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert set(t["folder"]) <= {"energy.json", "table.csv"}, t  # no temp file
    assert t["old_report_intact"], t
    if "Traceback" in err or "Exception ignored" in err or "lost sys.stderr" in err:
        assert "/ecocompute/" not in err and not any(ln.startswith(OURS) for ln in lines), t
        frames = [ln for ln in lines if ln.startswith("  File")]
        # Python's own start-up, interrupted (a burst's next signal may cut its
        # traceback short): never a frame of ours
        assert all(PYTHON_STARTUP.match(ln) for ln in frames), t
        return "python start-up"
    if status == -signal.SIGINT:
        assert lines == [], t
        return "before the interpreter"
    others = [ln for ln in lines if not ln.startswith("wrote ")]
    if status == 0:
        assert "table.csv" in t["folder"], t
        assert others == [] or (
            len(others) == 1 and "arrived as the command finished" in others[0]
        ), t
        return "finished"
    assert status == 130, t
    assert len(others) == 1 and others[0].startswith(OURS), t
    return "interrupted"


def test_bursts_of_ctrl_c_at_random_moments_of_aggregate():
    outcomes = [judge_aggregate(t) for t in bursts(60, "aggregate", 1200.0)]
    assert len(outcomes) == 60 and outcomes.count("interrupted") > 10
