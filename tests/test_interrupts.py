"""SIGINT and SIGTERM at any point of a run: samplers stopped, NVML closed, no
energy.json written for the run, any earlier one untouched, exit 130 / 143.

A real process is signalled in the middle of its trials (the shipped CLI with the fake
machine behind it, tests/cli_with_fakes.py); in-process, the interrupt is raised at
each stage of a run in turn, including either side of the report's rename.
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

from ecocompute.boundary import interrupts
from ecocompute.cli import main
from ecocompute.errors import Interrupted
from ecocompute.report.schema import validation_errors

from .conftest import REPO
from .fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, install_fakes
from .test_faults import MEASURE, Snapshot, assert_untouched, listing, previous_report

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _cache(synthetic_cache, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(synthetic_cache))


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ecocompute-power" and t.is_alive()]


# --- a real process, signalled mid-trial ------------------------------------------


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


@pytest.mark.parametrize(("sig", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_mid_trial_stops_cleanly_and_writes_nothing(
    tmp_path, synthetic_cache, sig, status
):
    out = tmp_path / "out"
    before = previous_report(out)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.cli_with_fakes",
            "energy_estimate",
            *[a for a in MEASURE if a != "--quiet"],
            "--precision",
            "NF4",
            "--iterations",
            "100000",  # far more than it will get to
            "--output_dir",
            str(out),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), "ECOCOMPUTE_CACHE": str(synthetic_cache)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell's background job (`pytest &`) inherits SIGINT ignored, and Python keeps
        # an inherited SIG_IGN, as a terminal user would want. Give the child the default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    watch = StderrWatch(proc)
    try:
        assert watch.wait_for("round 1/100000", timeout_s=120), watch.text()
        proc.send_signal(sig)
        try:
            assert proc.wait(timeout=60) == status
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 60 s after {sig.name}:\n{watch.text()[-3000:]}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = watch.text()
    assert "Traceback" not in stderr, stderr
    assert stderr.splitlines()[-1] == (
        f"ecocompute: interrupted by {signal.Signals(sig).name}: no energy.json was written "
        "and any earlier one is untouched"
    )
    assert proc.stdout is not None and proc.stdout.read() == ""  # no summary
    assert_untouched(out, before)


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
        if self.signal_name == "SIGINT":
            raise KeyboardInterrupt
        # a real SIGTERM to this process: the CLI's handler must turn it into Interrupted
        assert signal.getsignal(signal.SIGTERM) is interrupts._raise_terminated
        os.kill(os.getpid(), signal.SIGTERM)


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


POINTS = [
    "preflight #1",
    "load FP16 #1",
    "load NF4 #1",
    "counter read #1",  # calibrating the energy counter, before any window
    "synchronize #1",  # opening the idle window
    "generate #1",  # a warm-up
    "generate #4",  # a measured trial (NF4, pair 0)
    "synchronize #8",  # closing a trial's window
    "counter read #20",  # at a window edge, after calibration (16 reads or more)
    "fsync",  # writing the report's temp file
    "before rename",
]


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("point", POINTS)
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
    assert status == {"SIGINT": 130, "SIGTERM": 143}[signal_name]
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"ecocompute: interrupted by {signal_name}: no energy.json was written and any "
        "earlier one is untouched"
    )
    assert_untouched(out, before)
    assert sampler_threads() == []
    assert telemetry.closed  # NVML shut down
    assert signal.getsignal(signal.SIGTERM) == handler  # the CLI's handler is gone again


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
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
    assert status == {"SIGINT": 130, "SIGTERM": 143}[signal_name]
    assert err.strip().splitlines()[-1] == (
        f"ecocompute: {signal_name} arrived just after {out / 'energy.json'} was written; "
        "that report is complete and valid"
    )
    report = json.loads((out / "energy.json").read_bytes())
    assert (out / "energy.json").read_bytes() != before.data
    assert validation_errors(report) == [] and report["results"]["basis"] == "measured"
    assert listing(out) == ["energy.json"]


def test_sigterm_is_left_alone_where_the_parent_ignored_it(monkeypatch):
    monkeypatch.setattr(signal, "getsignal", lambda s: signal.SIG_IGN)
    installed: list[object] = []
    monkeypatch.setattr(signal, "signal", lambda s, h: installed.append(h))
    with interrupts.sigterm_raises():
        pass
    assert installed == []


def test_interrupted_is_not_an_exception():
    """So that no `except Exception` in the protocol or a library can swallow it."""
    assert not issubclass(Interrupted, Exception)
    assert Interrupted(15, "SIGTERM").exit_status == 143


def test_an_ending_process_blocks_its_signals_for_the_interpreters_shutdown():
    """CPython's shutdown can put back SIGINT's default action before the process ends:
    a signal at the tail of a burst then killed a run that had finished and said so
    (exit -2 after its one line). Ending, main() blocks the signals it held."""
    import signal

    from ecocompute.cli import entry

    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        status = entry.main(["validate", "/nonexistent/energy.json"], exiting=True)
    finally:
        blocked = signal.pthread_sigmask(signal.SIG_SETMASK, before)
        for s, h in handlers.items():
            signal.signal(s, h)
    assert status == 1
    assert {signal.SIGINT, signal.SIGTERM, signal.SIGHUP} <= set(blocked)
