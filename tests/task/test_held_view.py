"""Issue 22, items 2 and 3: a session whose formats occupy different GPUs (FP16 over two
fake GPUs, NF4 whole on one, LLM.int8() on the other; the in-memory tiny model, really
quantized on the CPU), on fake NVML devices of constant power (GPU 0 100 W, GPU 1 40 W).

Both views: the headline's energy of the GPUs each model used, and every GPU the
session held, each trial's idle GPUs read in its own window and counted against its
format, with pairs (each against its round's FP16 trial), interval and verdict. Every
report is valid alone; a forged figure of the new view is found; the summary says how
many GPUs each format used and what the freed GPU drew idle, and which view leads."""

from __future__ import annotations

import copy
import re

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.jobs.session_job import SessionJob
from ecocompute.llm.loading import ModelBackend
from ecocompute.params import resolve
from ecocompute.report.read import energy_report_problems
from ecocompute.report.read import energy_report_problems as consistency_problems
from ecocompute.summary.report import render

from ..fake_gpus import FakeGpus
from ..fakes import FakeTelemetry, estimate_report, fake_devices, fake_machine

pytestmark = pytest.mark.slow
WATTS = {0: 100.0, 1: 40.0}
CAP_GIB = "0.00041"  # FP16 spans both fake GPUs; each quantized copy fits one


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    out = tmp_path_factory.mktemp("held")
    params = resolve(
        None,
        {
            "model_name": "synthetic:tiny-in-memory",
            "precision": "NF4,INT8",
            "tokens": "4",
            "iterations": "3",
            "warmup": "1",
            "idle_seconds": "0.3",
            "max_gpu_memory_gib": CAP_GIB,
            "output_dir": str(out / "out"),
        },
    )
    telemetry = FakeTelemetry(
        fake_devices(2), power_w={i: (lambda t, w=w: w) for i, w in WATTS.items()}
    )
    gpus = FakeGpus(max_memory_gib=float(CAP_GIB), sync_s=0.02)
    machine = fake_machine(lambda: telemetry, gpus, ModelBackend)
    written = SessionJob(params).run(Progress(quiet=True), machine=machine)
    return {w.document["workload"]["precision"]: w.document for w in written.reports}, written


def test_each_format_uses_its_own_gpus_and_every_report_is_valid_alone(session):
    reports, _ = session
    assert set(reports) == {"NF4", "INT8"}
    for fmt, doc in reports.items():
        assert energy_report_problems(doc) == []
        per = doc["results"]["per_format"]
        assert per["FP16"]["nvml_indices"] == [0, 1]
        assert per[fmt]["nvml_indices"] == ([0] if fmt == "NF4" else [1])
        assert doc["results"]["held_gpus"]["nvml_indices"] == [0, 1]
        assert "results.held_gpus gives the same comparison" in doc["results"]["note"]
        assert "built in memory" in doc["workload"]["weights_note"]


def test_each_trial_reads_the_gpus_its_format_left_idle_in_its_own_window(session):
    reports, _ = session
    for fmt, doc in reports.items():
        idle_w = WATTS[1] if fmt == "NF4" else WATTS[0]
        own_w = WATTS[0] if fmt == "NF4" else WATTS[1]
        for t in doc["results"]["trials"]:
            if t["format"] == "FP16":  # it occupies every held GPU: nothing left idle
                assert t["idle_gpus_energy_joules"] == []
                assert t["held_energy_joules"] == t["energy_joules"]
                continue
            (idle_j,) = t["idle_gpus_energy_joules"]
            assert idle_j == pytest.approx(idle_w * t["duration_s"], rel=0.1)
            assert t["per_gpu_energy_joules"][0] == pytest.approx(own_w * t["duration_s"], rel=0.1)
            assert t["held_energy_joules"] == pytest.approx(t["energy_joules"] + idle_j, abs=2e-4)
        held = doc["results"]["held_gpus"]["per_format"][fmt]
        assert held["idle_nvml_indices"] == ([1] if fmt == "NF4" else [0])
        assert held["idle_gpus_power_watts"] == pytest.approx(idle_w, rel=0.1)
        assert held["idle_gpus_idle_window_watts"] == pytest.approx(idle_w, rel=0.15)


def test_the_held_view_pairs_each_trial_with_its_rounds_fp16_trial(session):
    reports, _ = session
    for fmt, doc in reports.items():
        res = doc["results"]
        held = res["held_gpus"]
        fp16 = {t["pair"]: t for t in res["trials"] if t["format"] == "FP16"}
        mine = {t["pair"]: t for t in res["trials"] if t["format"] == fmt}
        assert [p["pair"] for p in held["pairs"]] == sorted(fp16) == sorted(mine)
        for p in held["pairs"]:
            assert p["fp16_energy_per_token_mj"] == fp16[p["pair"]]["held_energy_per_token_mj"]
            assert p["energy_per_token_mj"] == mine[p["pair"]]["held_energy_per_token_mj"]
        assert held["n_pairs"] == res["n_pairs"] == 3
        assert held["verdict"] in ("saves", "costs", "inconclusive")
        # the format that freed a GPU pays for it here, not in the headline
        assert held["energy_per_token_mj"] > res["energy_per_token_mj"]
        assert held["fp16_energy_per_token_mj"] == res["fp16_energy_per_token_mj"]


def _edit(doc: dict, path: str, value) -> dict:
    forged = copy.deepcopy(doc)
    *parents, last = path.split("/")
    node = forged
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    key: int | str = int(last) if isinstance(node, list) else last
    node[key] = value(node[key]) if callable(value) else value
    return forged


def _quantized_trial(doc: dict) -> int:
    return next(k for k, t in enumerate(doc["results"]["trials"]) if t["format"] != "FP16")


FORGERIES = [
    ("trials/{q}/held_energy_joules", lambda v: v * 1.2, "held_energy_joules"),
    ("trials/{q}/held_energy_per_token_mj", lambda v: v + 1.0, "held_energy_per_token_mj"),
    ("trials/{q}/idle_gpus_energy_joules", lambda v: [], "idle_gpus_energy_joules"),
    ("held_gpus/per_format/{fmt}/idle_gpus_power_watts", lambda v: v / 2, "idle_gpus_power"),
    ("held_gpus/per_format/{fmt}/energy_per_token_mj", lambda v: v * 0.9, "energy_per_token"),
    ("held_gpus/per_format/{fmt}/idle_nvml_indices", lambda v: [], "idle_nvml_indices"),
    ("held_gpus/per_format/{fmt}/idle_gpus_idle_window_watts", lambda v: v + 9, "idle_window"),
    ("idle_window/energy_joules_by_gpu/1", lambda v: v + 9, "idle"),
    ("held_gpus/pairs/0/delta_pct", lambda v: v - 50.0, "delta_pct"),
    ("held_gpus/vs_fp16_energy_pct", lambda v: v - 50.0, "vs_fp16_energy_pct"),
    ("held_gpus/energy_per_token_mj", lambda v: v / 2, "energy_per_token_mj"),
    ("held_gpus/nvml_indices", lambda v: [0, 7], "nvml_indices"),
    ("held_gpus/verdict", lambda v: "costs" if v == "saves" else "saves", "verdict"),
]


@pytest.mark.parametrize(("path", "change", "named"), FORGERIES)
def test_one_forged_figure_of_the_held_view_is_found(session, path, change, named):
    reports, _ = session
    doc = reports["NF4"]
    where = path.format(q=_quantized_trial(doc), fmt="NF4")
    forged = _edit(doc, f"results/{where}", change)
    problems = consistency_problems(forged)
    assert problems and any(named in p for p in problems), problems


def test_held_fields_without_the_view_are_refused(session):
    reports, _ = session
    forged = copy.deepcopy(reports["NF4"])
    del forged["results"]["held_gpus"]
    problems = consistency_problems(forged)
    assert any("present, but the report has no results.held_gpus" in p for p in problems)


def test_the_summary_says_gpus_used_what_the_freed_gpu_drew_and_which_view_leads(session):
    reports, written = session
    text = written.summary
    assert "FP16 used 2 GPUs (GPUs 0, 1)" in text
    assert re.search(r"NF4 used 1 GPU of the session's 2, leaving GPU 1 idle: 4\d\.\d W", text)
    assert re.search(
        r"INT8 used 1 GPU of the session's 2, leaving GPU 0 idle: (9|10)\d\.\d W", text
    )
    assert "lead       the figures above: the GPUs each model used; 'held' below adds" in text
    assert "every GPU the session held (GPUs 0, 1)" in text
    one = render(reports["NF4"], "energy.json")
    assert "gpus       FP16 on GPUs 0, 1; NF4 on GPU 0 (NVML index)" in one
    assert re.search(r"held       every GPU the session held \(GPUs 0, 1\): NF4 [\d,.]+ vs", one)
    assert "freed      NF4 used 1 GPU" in one


def test_the_summary_says_so_where_the_two_views_disagree(session):
    reports, _ = session
    doc = copy.deepcopy(reports["NF4"])
    doc["results"]["verdict"] = "saves"
    doc["results"]["held_gpus"]["verdict"] = "costs"
    one = render(doc, "energy.json")
    assert "views      differ: saves on the GPUs each model used, costs on every GPU" in one


def test_formats_on_the_same_gpus_have_no_held_view(tmp_path):
    params = resolve(
        None,
        {
            "model_name": "synthetic:tiny-in-memory",
            "precision": "NF4",
            "tokens": "4",
            "iterations": "2",
            "warmup": "0",
            "idle_seconds": "0.2",
            "output_dir": str(tmp_path / "out"),
        },
    )
    doc = estimate_report(params)
    assert energy_report_problems(doc) == []
    assert "held_gpus" not in doc["results"]
    assert not any("held_energy_joules" in t for t in doc["results"]["trials"])
