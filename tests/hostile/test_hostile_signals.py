"""SIGINT, SIGTERM and SIGHUP at every stage of a run, in this process: samplers stopped,
NVML closed, no energy.json written for the run, any earlier one untouched, exit 130 /
143 / 129; past the report's rename, the report stays and the line says so. And the temp
files a run killed outright (SIGKILL) leaves: the next write there removes them, and
only stale temp files of ours.

Real processes signalled mid-trial, in a burst and just after the rename:
test_signals_e2e.py (marked e2e).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ecocompute.boundary import interrupts
from ecocompute.boundary.atomic import LEGACY_STALE_S, remove_stale_temps
from ecocompute.cli import main
from ecocompute.report.read import validation_errors

from ..cli.test_faults import MEASURE, Snapshot, assert_untouched, listing, previous_report
from ..conftest import REPO
from ..fakes import (
    RUNNING_SAMPLERS,
    CpuAccelerator,
    FakeTelemetry,
    StandInQuantBackend,
    install_fakes,
)

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _cache(synthetic_cache, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(synthetic_cache))


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ecocompute-power" and t.is_alive()]


# --- in-process: the interrupt at every stage of a run -----------------------------


class Trap:
    """Raises the interrupt when the run reaches the chosen point."""

    def __init__(self, point: str, signal_name: str) -> None:
        self.point = point
        self.signal_name = signal_name
        self.fired = False
        self.counts: dict[str, int] = {}

    def reached(self, point: str) -> None:
        self.counts[point] = self.counts.get(point, 0) + 1
        name = f"{point} #{self.counts[point]}"
        if name != self.point or self.fired:
            return
        self.fired = True
        # a real signal to this process, handled before raise_signal returns: the CLI's
        # handler must turn it into KeyboardInterrupt or Interrupted
        sig = signal.Signals[self.signal_name]
        assert signal.getsignal(sig) is interrupts.on_signal
        signal.raise_signal(sig)


class TrapBackend(StandInQuantBackend):
    def __init__(self, trap: Trap) -> None:
        super().__init__()
        self.trap = trap

    def preflight(self, precision, accelerator):
        self.trap.reached("preflight")
        super().preflight(precision, accelerator)

    def load(self, checkpoint, precision, accelerator):
        self.trap.reached(f"load {precision}")
        loaded = super().load(checkpoint, precision, accelerator)
        inner = loaded.model.generate

        def generate(*args, **kwargs):
            self.trap.reached("generate")  # warm-ups are #1-#2, trials from #3
            return inner(*args, **kwargs)

        loaded.model.generate = generate
        return loaded


class TrapTelemetry(FakeTelemetry):
    def __init__(self, trap: Trap) -> None:
        super().__init__()
        self.trap = trap

    def energy_mj(self, index: int) -> int:
        self.trap.reached("counter read")
        return super().energy_mj(index)


class TrapAccelerator(CpuAccelerator):
    def __init__(self, trap: Trap) -> None:
        super().__init__()
        self.trap = trap

    def synchronize(self) -> None:
        self.trap.reached("synchronize")  # the edges of every window
        super().synchronize()


# Each stage with one of the three signals, in turn: every signal unwinds through the
# same code (the handler raises it where it lands), so each stage is met once, and each
# signal at stages of every kind (loading, windows, writing).
POINTS = [
    ("preflight #1", "SIGINT"),
    ("load FP16 #1", "SIGTERM"),
    ("load NF4 #1", "SIGHUP"),
    ("counter read #1", "SIGINT"),  # calibrating the energy counter, before any window
    ("synchronize #1", "SIGTERM"),  # opening the idle window
    ("generate #1", "SIGHUP"),  # a warm-up
    ("generate #4", "SIGINT"),  # a measured trial (NF4, pair 0)
    ("synchronize #8", "SIGTERM"),  # closing a trial's window
    ("counter read #20", "SIGHUP"),  # at a window edge, after calibration (16 reads or more)
    ("fsync", "SIGINT"),  # writing the report's temp file
    ("before rename", "SIGTERM"),
    ("fsync", "SIGHUP"),
]
STATUS = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": 129}


@pytest.fixture(autouse=True)
def _defaults(default_signal_handlers):
    """Python's own handlers to start from (a background job's SIGINT is ignored)."""


@pytest.mark.parametrize(("point", "signal_name"), POINTS)
def test_interrupt_at_any_point_leaves_nothing(tmp_path, monkeypatch, capsys, point, signal_name):
    trap = Trap(point, signal_name)
    telemetry = TrapTelemetry(trap)
    install_fakes(
        monkeypatch.setattr, lambda: telemetry, TrapAccelerator(trap), lambda: TrapBackend(trap)
    )
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        trap.reached("fsync")
        real_fsync(fd)

    def replace(src, dst) -> None:
        if Path(dst).name == "energy.json":  # not the synthetic checkpoint's rename
            trap.reached("before rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    trap.point = point if "#" in point else f"{point} #1"
    out = tmp_path / "out"
    before = previous_report(out)
    handler = signal.getsignal(signal.SIGTERM)

    status = main(["energy_estimate", *MEASURE, "--precision", "NF4", "--output_dir", str(out)])

    err = capsys.readouterr().err
    assert trap.fired, f"the run never reached {point}: {trap.counts}"
    assert status == STATUS[signal_name]
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"ecocompute: interrupted by {signal_name}: no energy.json was written and any "
        "earlier one is untouched"
    )
    assert_untouched(out, before)
    assert sampler_threads() == [] and not RUNNING_SAMPLERS  # every sampler stopped
    assert telemetry.closed  # NVML shut down
    assert signal.getsignal(signal.SIGTERM) == handler  # the CLI's handler is gone again


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_interrupt_just_after_the_rename_keeps_the_complete_report(
    tmp_path, monkeypatch, capsys, signal_name
):
    """Past the rename the new report is whole and valid: it stays, and says so."""
    trap = Trap("after rename #1", signal_name)
    install_fakes(monkeypatch.setattr, FakeTelemetry)
    real_replace = os.replace

    def replace(src, dst) -> None:
        real_replace(src, dst)
        if Path(dst).name == "energy.json":
            trap.reached("after rename")

    monkeypatch.setattr(os, "replace", replace)
    out = tmp_path / "out"
    before: Snapshot = previous_report(out)
    status = main(["energy_estimate", *MEASURE, "--precision", "NF4", "--output_dir", str(out)])
    err = capsys.readouterr().err
    assert status == STATUS[signal_name]
    assert err.strip().splitlines()[-1] == (
        f"ecocompute: {signal_name} arrived just after {out / 'energy.json'} was written; "
        "that report is complete and valid"
    )
    report = json.loads((out / "energy.json").read_bytes())
    assert (out / "energy.json").read_bytes() != before.data
    assert validation_errors(report) == [] and report["results"]["basis"] == "measured"
    assert listing(out) == ["energy.json"]


# --- temp files left by a run killed outright ----------------------------------------

KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from ecocompute.boundary.atomic import atomic_path
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


def test_a_temp_left_by_an_earlier_holder_of_a_live_pid_is_removed(tmp_path):
    """In a container every run is pid 1: a run killed mid-write left a temp file named
    with pid 1, which the next run (pid 1 too) and any host (init is pid 1) counted as a
    live writer's forever. One named with this process's own pid but older than it, and
    one of a live pid an hour old, are left over."""
    target = tmp_path / "energy.json"
    mine = tmp_path / f".energy.json.{os.getpid()}.abcdefgh.tmp.json"
    init = tmp_path / ".energy.json.1.abcdefgh.tmp.json"
    recent_init = tmp_path / ".energy.json.1.zyxwvuts.tmp.json"
    for path, age_s in ((mine, 5.0), (init, LEGACY_STALE_S + 60), (recent_init, 5.0)):
        path.write_text("x")
        past = min(time.time(), temp_module_started_s()) - age_s
        os.utime(path, (past, past))
    assert sorted(remove_stale_temps(target)) == sorted([mine, init])
    assert recent_init.exists()  # pid 1 is running, and this may be its write now


def temp_module_started_s() -> float:
    from ecocompute.boundary import temp_files

    return temp_files._STARTED_S
