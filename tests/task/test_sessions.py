"""Sessions of several formats against one FP16 baseline, on the CPU stand-ins: every
format resident, each round measures every model once in an order rotated per round,
each format's delta pairs with its round's FP16 trial, one report per format that is
complete and valid alone and names its siblings; and the refusal when they do not fit."""

from __future__ import annotations

import json

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.errors import RunError
from ecocompute.jobs.session_job import SessionJob
from ecocompute.params import resolve
from ecocompute.report.read import energy_report_problems
from ecocompute.task.trials import round_order

from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, fake_machine

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


def _params(tmp_path, **flags):
    base = {
        "model_name": "synthetic:tiny-test",
        "precision": "NF4,INT4,FP8",
        "tokens": "4",
        "iterations": "4",
        "warmup": "1",
        "idle_seconds": "0.2",
        "decode": "graphs",
        "output_dir": str(tmp_path / "out"),
    }
    return resolve(None, {**base, **flags})


def test_the_order_rotates_by_one_place_per_round():
    arms = ["FP16", "NF4", "INT4", "FP8"]
    orders = [round_order(arms, k, rotate=True) for k in range(5)]  # type: ignore[arg-type]
    assert orders[0] == arms and orders[1] == ["NF4", "INT4", "FP8", "FP16"]
    assert orders[4] == arms
    for place in range(4):  # over a full turn, every model is measured in every place
        assert {o[place] for o in orders[:4]} == set(arms)
    assert round_order(arms, 3, rotate=False) == arms  # type: ignore[arg-type]


def _run(tmp_path, backend, **flags):
    params = _params(tmp_path, **flags)
    machine = fake_machine(
        lambda: FakeTelemetry(power_w=lambda t: 150.0), CpuAccelerator(), lambda: backend
    )
    job = SessionJob(params)
    written = job.run(Progress(quiet=True), machine=machine)
    return params, job, written


def test_one_baseline_every_format_resident_one_report_each(tmp_path):
    backend = StandInQuantBackend()
    _, job, written = _run(tmp_path, backend)
    assert backend.loads == ["FP16", "NF4", "INT4", "FP8"]  # FP16 loaded once
    assert backend.preflights == ["NF4", "INT4", "FP8"]
    paths = [w.path for w in written.reports]
    assert [p.parent.name for p in paths] == ["NF4", "INT4", "FP8"]
    assert sorted(job.written()) == sorted(paths)
    docs = [json.loads(p.read_text()) for p in paths]
    fp16_trials = None
    for doc, fmt in zip(docs, ["NF4", "INT4", "FP8"], strict=True):
        assert energy_report_problems(doc) == []  # complete and valid alone
        res = doc["results"]
        assert {t["format"] for t in res["trials"]} == {"FP16", fmt}
        assert doc["workload"]["precision"] == fmt
        session = doc["measurement"]["session"]
        assert session["formats"] == ["NF4", "INT4", "FP8"] and session["this_format"] == fmt
        assert set(session["siblings"]) == {"NF4", "INT4", "FP8"} - {fmt}
        assert all(v == f"../{k}/energy.json" for k, v in session["siblings"].items())
        assert doc["measurement"]["order"] == "rotated"
        assert res["n_pairs"] == 4
        shared = [(t["index"], t["energy_joules"]) for t in res["trials"] if t["format"] == "FP16"]
        assert fp16_trials in (None, shared)  # the same FP16 trials, same indices
        fp16_trials = shared
        for pair in res["pairs"]:  # each delta pairs with its round's FP16 trial
            fp16 = next(
                t for t in res["trials"] if t["format"] == "FP16" and t["pair"] == pair["pair"]
            )
            assert pair["fp16_energy_per_token_mj"] == fp16["energy_per_token_mj"]
    # every trial of the session, by its index: 4 rounds x 4 models, each round rotated
    trials = {t["index"]: t for doc in docs for t in doc["results"]["trials"]}
    assert sorted(trials) == list(range(16))
    by_round = [[trials[4 * k + s]["format"] for s in range(4)] for k in range(4)]
    assert by_round[0] == ["FP16", "NF4", "INT4", "FP8"]
    assert by_round[1] == ["NF4", "INT4", "FP8", "FP16"]
    assert [trials[i]["slot"] for i in range(4)] == [0, 1, 2, 3]
    assert (
        "FP16" in written.summary and "INT4" in written.summary and "a session" in written.summary
    )
    # the why line names every format's trials, not only the first report's
    why = next(x for x in written.summary.splitlines() if x.strip().startswith("why"))
    assert why.endswith("(FP16 n=4, NF4 n=4, INT4 n=4, FP8 n=4)"), why
    assert "basis      measured" in written.summary


def test_formats_that_do_not_fit_together_are_refused_naming_what_would(tmp_path):
    backend = StandInQuantBackend()
    # the stand-in's FP16 copy of tiny-test is ~0.3 MiB: leave room for the headroom only
    accelerator = CpuAccelerator(free_mib=4096)
    params = _params(tmp_path)
    machine = fake_machine(lambda: FakeTelemetry(), accelerator, lambda: backend)
    with pytest.raises(
        RunError, match=r"do not fit on the GPU\(s\) together .*What would fit beside FP16"
    ):
        SessionJob(params).run(Progress(quiet=True), machine=machine)
    assert backend.loads == ["FP16"]  # refused before any quantized copy was loaded
    assert not (tmp_path / "out").exists()


def test_ci_target_stops_on_the_least_precise_format(tmp_path):
    backend = StandInQuantBackend()
    _, _, written = _run(tmp_path, backend, iterations="2", ci_target_pts="1e5", max_rounds="3")
    for w in written.reports:
        stopping = w.document["measurement"]["stopping"]
        assert stopping["rule"] == "ci_target" and stopping["rounds"] == 2


def test_no_validator_library_is_refused_before_anything_is_measured(tmp_path, monkeypatch):
    """A measurement must not be lost at the end because jsonschema is missing."""
    import sys

    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import fails
    # refused in SessionJob(), before its run() could load or measure anything
    with pytest.raises(RunError, match=r"jsonschema is not installed.*nothing was measured"):
        SessionJob(_params(tmp_path))
