"""Signals sent to a real process, one run of each kind (marked e2e: deselected from the
default run, run by .ci/run with `-m e2e`): the shipped CLI with the fake machine behind
it (tests/cli_with_fakes.py), signalled once its first round is on stderr, or the
moment its report has been renamed into place. What the handler does with each signal
is tested in this process, without a clock, in test_interrupts.py; the interrupt at
every stage of a run in test_hostile_signals.py; Ctrl-C at random moments of whole
runs by benchmarks/ctrl_c_at_random.py (docs/validation/ctrl-c-bursts.txt).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ecocompute.report.read import energy_report_problems

from ..cli.test_faults import MEASURE, assert_untouched, previous_report
from ..conftest import REPO

pytestmark = pytest.mark.e2e


class StderrWatch:
    """Collects a process's stderr lines in a thread; waits for one to appear."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._seen = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            with self._seen:
                self.lines.append(line.rstrip("\n"))
                self._seen.notify_all()

    def wait_for(self, needle: str, timeout_s: float) -> bool:
        with self._seen:
            return self._seen.wait_for(
                lambda: any(needle in ln for ln in self.lines), timeout=timeout_s
            )

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "\n".join(self.lines)


def fakes_process(out: Path, cache: Path, *extra: str, env: dict[str, str] | None = None):
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.cli_with_fakes",
            "energy_estimate",
            *[a for a in MEASURE if a != "--quiet"],
            "--precision",
            "NF4",
            # windows of ~0.3 s, not MEASURE's ~0.04 s: the real sampler's thread, late by
            # one tick on a loaded CPU, would leave one of ~2 reads due and the window be
            # refused (fewer than half of its reads), which is not what these tests test
            "--tokens",
            "64",
            *extra,
            "--output_dir",
            str(out),
        ],
        cwd=REPO,
        env={
            **os.environ,
            "PYTHONPATH": str(REPO),
            "ECOCOMPUTE_CACHE": str(cache),
            # end to end: the real sampler, its thread stopped by the signal's unwinding
            "ECOCOMPUTE_TEST_THREADED_SAMPLER": "1",
            **(env or {}),
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell's background job (`pytest &`) inherits SIGINT ignored, and Python keeps
        # an inherited SIG_IGN, as a terminal user would want. Give the child the default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def signalled_mid_trial(out: Path, cache: Path, sig: signal.Signals, count: int = 1):
    """(exit status, stderr, stdout) of a run sent `count` signals 2 ms apart once its
    first round is done (of far more rounds than it will get to)."""
    proc = fakes_process(out, cache, "--iterations", "100000")
    watch = StderrWatch(proc)
    try:
        assert watch.wait_for("round 1/100000", timeout_s=120), watch.text()
        for _ in range(count):
            proc.send_signal(sig)
            threading.Event().wait(0.002)
        try:
            status = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 60 s after {sig.name}:\n{watch.text()[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stdout is not None
    return status, watch.text(), proc.stdout.read()


def interrupted_line(name: str) -> str:
    return (
        f"ecocompute: interrupted by {name}: no energy.json was written and any earlier one "
        "is untouched"
    )


@pytest.mark.parametrize(("name", "status"), [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_mid_trial_stops_cleanly_and_writes_nothing(
    tmp_path, synthetic_cache, name, status
):
    out = tmp_path / "out"
    before = previous_report(out)
    got, stderr, stdout = signalled_mid_trial(out, synthetic_cache, signal.Signals[name])
    assert got == status
    assert "Traceback" not in stderr, stderr
    assert stderr.splitlines()[-1] == interrupted_line(name)
    assert stdout == ""  # no summary
    assert_untouched(out, before)


def test_a_held_down_ctrl_c_mid_trial_is_one_interrupt(tmp_path, synthetic_cache):
    out = tmp_path / "out"
    before = previous_report(out)
    got, stderr, stdout = signalled_mid_trial(out, synthetic_cache, signal.SIGINT, count=5)
    assert got == 130
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    ours = [ln for ln in stderr.splitlines() if ln.startswith("ecocompute:")]
    assert ours == [interrupted_line("SIGINT")] == stderr.splitlines()[-1:]
    assert stdout == ""
    assert_untouched(out, before)  # and nothing else in the folder: no temp file


def test_a_signal_just_after_the_rename_says_the_report_is_complete(tmp_path, synthetic_cache):
    out = tmp_path / "out"
    before = previous_report(out)
    proc = fakes_process(
        out, synthetic_cache, "--quiet", env={"ECOCOMPUTE_TEST_SIGNAL_AFTER_RENAME": "SIGTERM"}
    )
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 143, stderr
    said = (
        f"ecocompute: SIGTERM arrived just after {out / 'energy.json'} was written; that "
        "report is complete and valid"
    )
    # one line of ours, the last; a library's warnings may come before it (torchao's,
    # while the first process of a session builds the synthetic checkpoint)
    assert [ln for ln in stderr.splitlines() if ln.startswith("ecocompute")] == [said]
    assert stderr.splitlines()[-1] == said and "Traceback" not in stderr
    assert stdout == ""
    data = (out / "energy.json").read_bytes()
    assert data != before.data and energy_report_problems(json.loads(data)) == []
    assert sorted(p.name for p in out.iterdir()) == ["energy.json"]
