"""The protocol's safe points (boundary/interrupts.py: a signal recorded and not yet
raised is raised at the next one) and its refusal of a decode that made the wrong
number of tokens, each where it must stand: a mutation test found that every safe
point, and both token checks, could be deleted with no test failing."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.core.precision import Precision
from ecocompute.errors import RunError
from ecocompute.sweeps import run as sweep_run
from ecocompute.sweeps.plan import plan
from ecocompute.task import trials


class _Decode:
    batch, prompt_tokens = 1, 4

    def __init__(self, events: list[str], tokens: int = 4) -> None:
        self.events, self.tokens = events, tokens

    def run(self) -> str:
        self.events.append("decode")
        return "output"

    run_decode = run

    def run_prefills(self, n: int) -> None:
        self.events.append("prefill")

    def new_tokens(self, output: str) -> int:
        return self.tokens


class _Meter:
    indices = (0,)

    def __init__(self, events: list[str]) -> None:
        self.events = events

    def run(self, work):
        self.events.append("window")
        return work(), None

    def reading(self, edges, gpus=None):
        return "reading"


def _arm(events, tokens=4):
    return SimpleNamespace(
        precision=Precision.NF4, decode=_Decode(events, tokens), meter=_Meter(events),
        gpus=(0,), left_idle=(),
    )  # fmt: skip


@pytest.fixture
def events(monkeypatch):
    seen: list[str] = []
    monkeypatch.setattr(trials, "check_interrupt", lambda: seen.append("check"))
    return seen


def test_a_safe_point_comes_before_every_warm_up(events):
    arm = _arm(events)
    trials.warm_up([arm, arm], 2, Progress(quiet=True))
    assert events == ["check", "decode"] * 4


@pytest.mark.parametrize("phased", [False, True])
def test_a_safe_point_comes_before_every_trials_windows(events, phased):
    arm = _arm(events)
    if phased:
        trials.phased_trial(arm, 4, 0, 0, None, 1)
    else:
        trials.measured_trial(arm, 4, 0, 0)
    assert events[0] == "check" and events.count("check") == 1 and "window" in events[1:]


@pytest.mark.parametrize("phased", [False, True])
def test_a_decode_of_the_wrong_token_count_is_refused(events, phased):
    arm = _arm(events, tokens=3)
    with pytest.raises(RunError, match="NF4 decode produced 3 new tokens, expected 4"):
        if phased:
            trials.phased_trial(arm, 4, 0, 0, None, 1)
        else:
            trials.measured_trial(arm, 4, 0, 0)


def test_a_safe_point_comes_before_every_sweep_point(tmp_path, monkeypatch):
    events: list[str] = []
    monkeypatch.setattr(sweep_run, "check_interrupt", lambda: events.append("check"))
    monkeypatch.setattr(sweep_run, "run_point", lambda *a, **k: events.append("point") or [])
    the_plan = plan(["gpt-1b", "gpt-3b"], ["NF4"], {"dry_run": True}, tmp_path, None)
    sweep_run.run_sweep(the_plan, Progress(quiet=True))
    assert events == ["check", "point"] * 2
