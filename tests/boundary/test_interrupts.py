"""The signal handler (boundary/interrupts.py) and the entry point (cli/entry.py), in this
process, without a wall clock: signals are raised with signal.raise_signal (its handler
runs before it returns) or handed to the handler directly, and time is a fake clock.

The promises: SIGINT is KeyboardInterrupt, SIGTERM and SIGHUP errors.Interrupted (exit
130 / 143 / 129); a held-down Ctrl-C (a burst) is one interrupt and one line; a signal
inside a critical section is raised as the section ends; an interrupt Python could only
print is never lost; a signal the parent ignored stays ignored; the Python API installs
nothing (test_api.py).
"""

from __future__ import annotations

import ast
import gc
import os
import signal
import subprocess
import sys
import textwrap
import threading
from types import SimpleNamespace

import pytest

from ecocompute.boundary import interrupts
from ecocompute.cli import entry
from ecocompute.errors import Interrupted

from ..conftest import REPO


@pytest.fixture(autouse=True)
def _defaults(default_signal_handlers):
    """Python's own handlers to start from (a background job's SIGINT is ignored)."""


class FakeClock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(interrupts.state, "clock", fake)
    return fake


@pytest.fixture
def handled(clock):
    """The CLI's handlers installed in this process, as cli.main installs them."""
    with interrupts.handled() as state:
        yield state


# --- the handler -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sig", "kind", "status"),
    [
        (signal.SIGINT, KeyboardInterrupt, 130),
        (signal.SIGTERM, Interrupted, 143),
        (signal.SIGHUP, Interrupted, 129),
    ],
)
def test_each_signal_is_raised_where_it_lands(handled, sig, kind, status):
    assert signal.getsignal(sig) is interrupts.on_signal
    with pytest.raises(kind) as caught:
        signal.raise_signal(sig)
    assert interrupts.describe(caught.value) == (signal.Signals(sig).name, status)
    assert handled.raised and handled.pending is None


def test_interrupted_is_not_an_exception():
    """So that no `except Exception` in the protocol or a library can swallow it."""
    assert not issubclass(Interrupted, Exception)
    assert Interrupted(15, "SIGTERM").exit_status == 143


def test_a_burst_is_one_interrupt_and_a_ctrl_c_after_a_quiet_second_a_new_one(handled, clock):
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_signal(signal.SIGINT, None)
    for _ in range(20):  # the key held down: a signal every 30 ms
        clock.advance(0.03)
        interrupts.on_signal(signal.SIGINT, None)  # that same interrupt: not raised
    assert handled.pending is None
    clock.advance(interrupts.REPEAT_S + 0.01)  # in case a library swallowed the first
    with pytest.raises(KeyboardInterrupt):
        interrupts.on_signal(signal.SIGINT, None)


def test_a_signal_inside_a_critical_section_is_raised_as_it_ends(handled, clock):
    reached = []
    with pytest.raises(Interrupted), interrupts.critical():
        interrupts.on_signal(signal.SIGTERM, None)
        clock.advance(0.002)
        interrupts.on_signal(signal.SIGTERM, None)  # a burst inside: still one
        with interrupts.critical():  # nested: raised only by the outermost
            pass
        reached.append("the section ran to its end")
    assert reached == ["the section ran to its end"]
    clock.advance(0.002)
    interrupts.on_signal(signal.SIGTERM, None)  # the burst's tail: not raised again


def test_the_interrupt_replaces_an_error_the_critical_section_raised(handled):
    with pytest.raises(KeyboardInterrupt) as caught, interrupts.critical():
        interrupts.on_signal(signal.SIGINT, None)
        raise OSError("disk full")
    assert isinstance(caught.value.__context__, OSError)


def test_an_interrupt_python_could_only_print_is_recorded_for_the_next_check(handled):
    """Raised inside a __del__ (or a weakref callback of the import system) Python would
    print "Exception ignored" and carry on: it is kept, printed nowhere, and the next
    safe point raises it; the next signal is a new interrupt, not a repeat."""

    class Finalised:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)

    Finalised()
    gc.collect()
    assert handled.pending == signal.SIGINT and not handled.raised
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()
    interrupts.check()  # raised once


def test_check_raises_nothing_for_the_python_api_nor_off_the_main_thread(handled):
    handled.pending = signal.SIGINT
    seen: list[BaseException] = []

    def in_a_thread() -> None:
        try:
            interrupts.check()
            with interrupts.critical():
                pass
        except BaseException as exc:
            seen.append(exc)

    worker = threading.Thread(target=in_a_thread)
    worker.start()
    worker.join()
    assert seen == [] and handled.pending == signal.SIGINT
    handled.active = False  # as outside handled(): no handler of ours, nothing recorded
    interrupts.check()
    handled.active = True
    with pytest.raises(KeyboardInterrupt):
        interrupts.check()


@pytest.mark.parametrize("ignored", interrupts.SIGNALS)
def test_a_signal_the_parent_ignored_stays_ignored_and_the_rest_come_back(ignored):
    """nohup ignores SIGHUP, a shell's background job SIGINT: the run goes on."""
    signal.signal(ignored, signal.SIG_IGN)
    before = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    hook = sys.unraisablehook
    with interrupts.handled():
        for s in interrupts.SIGNALS:
            assert signal.getsignal(s) == (signal.SIG_IGN if s == ignored else interrupts.on_signal)
        assert sys.unraisablehook is interrupts.unraisable_hook
        signal.raise_signal(ignored)  # nothing happens
    assert sys.unraisablehook is hook
    assert {s: signal.getsignal(s) for s in interrupts.SIGNALS} == before


def test_each_command_starts_with_no_interrupt(clock):
    with pytest.raises(KeyboardInterrupt), interrupts.handled():
        signal.raise_signal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt), interrupts.handled():  # at once: not a repeat
        signal.raise_signal(signal.SIGINT)


# --- the entry point ---------------------------------------------------------------------


def _run_entry(monkeypatch, capsys, command, *, arrived=None) -> tuple[int, str]:
    """entry.main over `validate`, whose handler is `command`."""
    from ecocompute.cli import reports_commands

    monkeypatch.setattr(reports_commands, "_cmd_validate", lambda args: command())
    status = entry.main(["validate", "x"], exiting=False, arrived=arrived)
    return status, capsys.readouterr().err


def test_a_signal_while_starting_ends_the_run_before_it_begins(monkeypatch, capsys):
    ran = []
    status, err = _run_entry(monkeypatch, capsys, lambda: ran.append(1), arrived=[signal.SIGTERM])
    assert (status, ran) == (143, [])
    assert err == "ecocompute: interrupted by SIGTERM while starting: nothing was run or written\n"


def test_a_burst_while_the_first_is_told_is_one_line(monkeypatch, capsys, clock):
    from ecocompute.cli import dispatch

    def describe_during_a_burst(exc):
        signal.raise_signal(signal.SIGINT)  # the key is still down
        return interrupts.describe(exc)

    monkeypatch.setattr(dispatch, "describe_interrupt", describe_during_a_burst)

    def command() -> int:
        signal.raise_signal(signal.SIGINT)
        return 0

    status, err = _run_entry(monkeypatch, capsys, command)
    assert status == 130
    assert err.splitlines() == [
        "ecocompute: interrupted by SIGINT: the file being written, if any, was not, and "
        "earlier files are untouched"
    ]


def test_a_signal_as_the_command_finishes_is_said_after_its_output(monkeypatch, capsys):
    def command() -> int:
        print("the output", file=sys.stderr)
        return 0

    from ecocompute.cli import dispatch

    real_main = dispatch.main

    def then_a_signal(argv):
        status = real_main(argv)
        signal.raise_signal(signal.SIGTERM)  # entry's noting handler is back
        return status

    monkeypatch.setattr(dispatch, "main", then_a_signal)
    status, err = _run_entry(monkeypatch, capsys, command)
    assert status == 0
    assert err.splitlines() == [
        "the output",
        "ecocompute: SIGTERM arrived as the command finished (exit status 0); what it wrote "
        "and printed is complete",
    ]


def test_an_interrupt_during_an_import_ends_it_promptly(tmp_path, monkeypatch, capsys):
    """A long import (torch's first, seconds) must not hold a Ctrl-C: it is raised inside
    the import, which is abandoned; one line, no traceback."""
    (tmp_path / "slow_to_import.py").write_text(
        textwrap.dedent("""
        import signal
        signal.raise_signal(signal.SIGINT)
        COMPLETE = True
    """)
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reached: list[str] = []

    def command() -> int:
        import slow_to_import  # noqa: F401

        reached.append("imported")
        return 0

    status, err = _run_entry(monkeypatch, capsys, command)
    assert status == 130 and reached == [] and "slow_to_import" not in sys.modules
    assert err.startswith("ecocompute: interrupted by SIGINT") and "Traceback" not in err


def test_an_interrupt_lost_in_a_finaliser_stops_the_run_at_its_next_safe_point(monkeypatch, capsys):
    class Finalised:
        def __del__(self) -> None:
            signal.raise_signal(signal.SIGINT)

    reached: list[str] = []

    def command() -> int:
        Finalised()
        gc.collect()
        reached.append("finalised")
        interrupts.check()  # e.g. the next trial
        reached.append("not interrupted")
        return 0

    status, err = _run_entry(monkeypatch, capsys, command)
    assert status == 130 and reached == ["finalised"]
    assert "Exception ignored" not in err and "Traceback" not in err


def test_a_burst_inside_a_writes_cleanup_leaves_no_temp_file(tmp_path, monkeypatch, clock):
    from ecocompute.boundary import atomic

    real_unlink = os.unlink

    def unlink_during_a_burst(path, *args, **kwargs):
        clock.advance(0.002)
        signal.raise_signal(signal.SIGINT)  # lands in the finally that removes the temp
        real_unlink(path, *args, **kwargs)

    with pytest.raises(KeyboardInterrupt), interrupts.handled():
        monkeypatch.setattr(atomic.os, "unlink", unlink_during_a_burst)
        with atomic.atomic_path(tmp_path / "energy.json") as tmp:
            tmp.write_text('{"half": ')
            signal.raise_signal(signal.SIGINT)  # the first
    monkeypatch.setattr(atomic.os, "unlink", real_unlink)
    assert list(tmp_path.iterdir()) == []


def test_a_signal_while_a_temp_file_is_made_is_raised_once_its_name_is_kept(tmp_path, monkeypatch):
    from ecocompute.boundary import atomic

    real_mkstemp = atomic.tempfile.mkstemp

    def mkstemp_then_a_signal(*args, **kwargs):
        made = real_mkstemp(*args, **kwargs)
        signal.raise_signal(signal.SIGTERM)  # before the caller notes the name
        return made

    monkeypatch.setattr(atomic.tempfile, "mkstemp", mkstemp_then_a_signal)
    target = tmp_path / "energy.json"
    with pytest.raises(Interrupted), interrupts.handled(), atomic.atomic_path(target) as tmp:
        tmp.write_text("never reached")
    assert list(tmp_path.iterdir()) == []


def test_an_ending_process_ignores_and_blocks_its_signals_for_the_interpreters_shutdown():
    """CPython's shutdown can put back a signal's default action before the process
    ends: a signal at the tail of a burst then killed a run that had finished and said
    so (exit -2 after its one line). Ending, main() ignores and blocks them."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        status = entry.main(["validate", "/nonexistent/energy.json"], exiting=True)
        ignored = {s: signal.getsignal(s) for s in interrupts.SIGNALS}
    finally:
        blocked = signal.pthread_sigmask(signal.SIG_SETMASK, before)
    assert status == 1
    assert set(interrupts.SIGNALS) <= set(blocked)
    assert set(ignored.values()) == {signal.SIG_IGN}


def test_unraisable_noise_goes_to_the_debug_log(caplog):
    noise = SimpleNamespace(exc_value=ValueError("x"), exc_type=ValueError, object="obj")
    with caplog.at_level("DEBUG", logger=interrupts.__name__):
        interrupts.unraisable_hook(noise)
    assert "ignored in 'obj': ValueError: x" in caplog.text


MAIN_WITH_AN_EXEC = """
import threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()  # SIGINT not blocked
from ecocompute.cli import entry, reports_commands

def command(args):
    exec("import signal; signal.raise_signal(signal.SIGINT)")  # out of an exec()
    return 0

reports_commands._cmd_validate = command
raise SystemExit(entry.main(["validate", "x"]))
"""


def test_a_ctrl_c_out_of_an_exec_still_exits_130_under_python_m(tmp_path):
    """CPython marks a KeyboardInterrupt that left an exec() "unhandled", and `python -m`
    then kills itself by SIGINT at exit (-2), after the line and the status were ours.
    A process of its own: the interpreter's exit is the point."""
    (tmp_path / "runs_the_cli").mkdir()
    (tmp_path / "runs_the_cli" / "__main__.py").write_text(MAIN_WITH_AN_EXEC)
    done = subprocess.run(
        [sys.executable, "-m", "runs_the_cli"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        timeout=120,
    )
    assert done.returncode == 130, done
    assert (
        done.stderr.startswith("ecocompute: interrupted by SIGINT")
        and "Traceback" not in done.stderr
    )


def test_the_console_script_imports_only_the_standard_librarys_first_modules_before_main():
    """`ecocompute` imports ecocompute.cli.entry, and first ecocompute and ecocompute.cli:
    typing (about 12 ms) was imported there, before main() held Ctrl-C, and a Ctrl-C in it
    printed a traceback from inside the package."""
    code = (
        "import sys; before = set(sys.modules); import ecocompute.cli.entry; "
        "print(sorted(set(sys.modules) - before))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    new = ast.literal_eval(done.stdout)  # the module names the child printed
    assert "typing" not in new and set(new) <= {
        "__future__", "ecocompute", "ecocompute.cli", "ecocompute.cli.entry"
    }, new  # fmt: skip


def test_an_interrupt_a_library_turned_into_another_error_exits_as_the_interrupt(
    monkeypatch, capsys
):
    """A review (2026-12-05): SIGTERM inside `import numpy.dtypes` (during transformers'
    lazy import) became a ModuleNotFoundError there, and the command said "internal error
    ... a bug", exit 1, about a third of the time at 0.9-1.05 s. The signal was raised,
    so the interrupt is what the command says: exit 143."""
    from ecocompute.cli import dispatch

    def handler(args: object) -> int:
        try:
            signal.raise_signal(signal.SIGTERM)  # the handler raises Interrupted here
        except Interrupted:
            raise ModuleNotFoundError("Could not import module 'AutoModelForCausalLM'") from None
        return 0

    parser = SimpleNamespace(
        parse_args=lambda argv: SimpleNamespace(handler=handler, verbose=False)
    )
    monkeypatch.setattr(dispatch, "build_parser", lambda: parser)
    assert dispatch.main([]) == 143
    err = capsys.readouterr().err
    assert "interrupted by SIGTERM" in err and "internal error" not in err
