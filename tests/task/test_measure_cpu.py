"""The measurement path end to end on the CPU: real transformers models built from
configs, a fake NVML at the telemetry seam, a CPU stand-in for CUDA."""

from __future__ import annotations

import os

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.params import resolve
from ecocompute.report.host import host_cpu
from ecocompute.report.read import validation_errors
from ecocompute.summary.report import render

from ..conftest import derived_source
from ..fakes import (
    CpuAccelerator,
    FakeTelemetry,
    StandInQuantBackend,
    estimate_report,
    fake_devices,
    scheduled_sampler,
)

DERIVED = "ecocompute-dataset (no local GPU): "  # a figure derived, not measured

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


def _params(**flags):
    base = {
        "model_name": "synthetic:tiny-test",
        "tokens": "8",
        "iterations": "3",
        "warmup": "1",
        "idle_seconds": "0.3",
        "sample_rate_hz": "50",
    }
    return resolve(None, {**base, **flags})


def test_fp16_alone_measures_fp16_alone():
    telemetry = FakeTelemetry(power_w=lambda t: 120.0)
    report = estimate_report(
        _params(precision="FP16"),
        Progress(quiet=True),
        open_telemetry=lambda: telemetry,
        accelerator=CpuAccelerator(),
    )
    assert validation_errors(report) == []
    res = report["results"]
    assert res["basis"] == "measured" and report["measurement_source"] == "direct-nvml"
    assert [t["format"] for t in res["trials"]] == ["FP16"] * 3
    assert res["verdict"] is None and res["vs_fp16_ci95_pct"] is None
    assert report["measurement"]["order"] == "single format"
    assert res["idle_power_watts"] == pytest.approx(120.0, rel=0.02)
    assert report["workload"]["weights"] == "synthetic"
    assert report["workload"]["params_b_source"] == "counted from the loaded weights"
    assert report["quality"]["basis"] == "unavailable"
    assert telemetry.closed


def test_interleaved_trials_pairs_interval_and_report():
    telemetry = FakeTelemetry(power_w=lambda t: 100.0, counter_step_s=0.1)
    backend = StandInQuantBackend()
    report = estimate_report(
        _params(precision="NF4", iterations="4"),
        Progress(quiet=True),
        open_telemetry=lambda: telemetry,
        # each window closes with a synchronize(): 0.12 s of queue drain stretches the
        # windows past one counter step, so an edge's poll jitter is a few percent of one
        accelerator=CpuAccelerator(sync_s=0.12),
        backend=backend,
    )
    assert validation_errors(report) == []
    res = report["results"]
    assert backend.preflights == ["NF4"]
    assert backend.loads == ["FP16", "NF4"]
    assert [t["format"] for t in res["trials"]] == ["FP16", "NF4"] * 4
    assert [t["pair"] for t in res["trials"]] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert [p["pair"] for p in res["pairs"]] == [0, 1, 2, 3]
    assert report["measurement"]["order"] == "interleaved"
    assert res["n_pairs"] == 4
    lo, hi = res["vs_fp16_ci95_pct"]
    assert lo <= res["vs_fp16_energy_pct"] <= hi
    assert res["verdict"] in ("saves", "costs", "inconclusive")
    for trial in res["trials"]:
        assert trial["tokens"] == 8
        assert trial["energy_source"] == "nvml_energy_counter"
        # Constant 100 W. Locating the counter's 100 ms steps costs a poll's jitter at
        # each edge (a few ms on a loaded CI machine; once 17% of a window of tens of
        # milliseconds), so the tolerance here is loose; test_counter_edges checks the
        # edge arithmetic on longer windows.
        assert trial["avg_power_watts"] == pytest.approx(100.0, rel=0.15)
        assert abs(trial["sampled_vs_counter_pct"]) < 15.0
    assert set(res["per_format"]) == {"FP16", "NF4"}
    edges = report["measurement"]["counter_edges"]
    assert edges["mode"] == "interpolated between counter steps"
    assert edges["step_period_ms"] == pytest.approx(100.0, abs=5.0)


def _alternating(backend: StandInQuantBackend) -> dict:
    """An INT8 run on an accelerator where FP16 and INT8 do not fit together."""
    return estimate_report(
        _params(precision="INT8", iterations="2"),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(),
        accelerator=CpuAccelerator(free_mib=10),
        backend=backend,
    )


def test_alternating_blocks_when_both_do_not_fit():
    report = _alternating(StandInQuantBackend())
    assert validation_errors(report) == []
    assert report["measurement"]["order"] == "alternating blocks"
    assert [t["format"] for t in report["results"]["trials"]] == ["FP16", "FP16", "INT8", "INT8"]
    assert [t["pair"] for t in report["results"]["trials"]] == [0, 1, 0, 1]
    assert report["workload"]["llm_int8_threshold"] == 6.0


def test_alternating_blocks_free_fp16_before_the_quantized_load():
    """The FP16 copy must be gone before the quantized one loads (that is why the blocks
    alternate); the session's own frame held it, so it stayed (a review, 2026-12-04)."""
    import gc
    import weakref

    seen: dict[str, object] = {}

    class Watching(StandInQuantBackend):
        def load(self, checkpoint, spec, accelerator):
            if spec.precision != "FP16":
                gc.collect()
                seen["fp16 alive at the quantized load"] = seen["fp16"]() is not None
            loaded = super().load(checkpoint, spec, accelerator)
            if spec.precision == "FP16":
                seen["fp16"] = weakref.ref(loaded.model)
            return loaded

    report = _alternating(Watching())
    assert report["measurement"]["order"] == "alternating blocks"
    assert seen["fp16 alive at the quantized load"] is False


def test_sampler_alone_when_the_counter_is_unsupported():
    report = estimate_report(
        _params(precision="FP16"),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(energy_counter=False),
        accelerator=CpuAccelerator(),
    )
    assert validation_errors(report) == []
    assert report["measurement"]["energy_source"] == "sampled_power"
    assert "no energy counter" in report["measurement"]["method"]
    assert {t["energy_source"] for t in report["results"]["trials"]} == {"sampled_power"}


def test_power_unsupported_falls_back_before_loading():
    backend = StandInQuantBackend()
    report = estimate_report(
        _params(precision="NF4", params_b="1.1"),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(power=False),
        accelerator=CpuAccelerator(),
        backend=backend,
    )
    assert report["results"]["basis"] != "measured"
    assert report["results"]["fallback_reason"] == "power_unsupported"
    assert derived_source(report) == (DERIVED + "power telemetry unsupported on NVIDIA H200")
    assert backend.loads == [] and backend.preflights == []
    assert report["system_under_test"]["gpu_arch"] == "hopper"


def test_persistent_read_failures_refuse_the_measurement():
    report = estimate_report(
        _params(precision="FP16", params_b="1.1"),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(fail_read=lambda k: k > 3),
        accelerator=CpuAccelerator(),
    )
    assert validation_errors(report) == []
    assert report["results"]["fallback_reason"] == "measurement_failed"
    assert derived_source(report).startswith(
        DERIVED + "on-device measurement failed: power reads kept failing"
    )


def test_a_model_spread_over_two_gpus_sums_both_counters():
    devices = fake_devices(2)

    class TwoGpuAccelerator(CpuAccelerator):
        def occupied(self, model):
            return (0, 1)

    telemetry = FakeTelemetry(devices, power_w={0: lambda t: 100.0, 1: lambda t: 50.0})
    report = estimate_report(
        _params(precision="FP16", tokens="32"),
        Progress(quiet=True),
        open_telemetry=lambda: telemetry,
        accelerator=TwoGpuAccelerator(devices),
    )
    assert validation_errors(report) == []
    assert report["system_under_test"]["accelerator_count"] == 2
    assert [g["nvml_index"] for g in report["system_under_test"]["gpus"]] == [0, 1]
    # and the host's CPU, which the eager regime's speed follows (report/host.py)
    assert report["system_under_test"]["host_cpu"] == host_cpu().model_dump(exclude_none=True)
    assert report["system_under_test"]["host_cpu"]["logical_cpus"] == os.cpu_count()
    for trial in report["results"]["trials"]:
        first, second = trial["per_gpu_energy_joules"]
        assert trial["energy_joules"] == pytest.approx(first + second, abs=1e-3)
        assert first == pytest.approx(2 * second, rel=0.2)  # 100 W and 50 W
    assert report["results"]["idle_power_watts"] == pytest.approx(150.0, rel=0.05)


class SpreadAccelerator(CpuAccelerator):
    """Two fake GPUs: the first model loaded (FP16) spans both, later ones only GPU 0,
    as a --max_gpu_memory_gib cap between their sizes would place them."""

    def __init__(self) -> None:
        super().__init__(devices=fake_devices(2))
        self._models: list[int] = []

    def occupied(self, model):
        if id(model) not in self._models:
            self._models.append(id(model))
        return (0, 1) if self._models.index(id(model)) == 0 else (0,)


def test_formats_on_different_gpus_sum_their_own_gpus_and_subtract_their_own_idle():
    telemetry = FakeTelemetry(fake_devices(2), power_w={0: lambda t: 100.0, 1: lambda t: 40.0})
    report = estimate_report(
        _params(precision="NF4", iterations="2"),
        Progress(quiet=True),
        open_telemetry=lambda: telemetry,
        accelerator=SpreadAccelerator(),
        backend=StandInQuantBackend(),
    )
    assert validation_errors(report) == []
    res = report["results"]
    fp16, nf4 = res["per_format"]["FP16"], res["per_format"]["NF4"]
    assert (fp16["nvml_indices"], nf4["nvml_indices"]) == ([0, 1], [0])
    # Idle is read on both GPUs; each format subtracts only the idle of its own GPUs.
    assert res["idle_power_watts"] == pytest.approx(140.0, rel=0.05)
    assert fp16["idle_power_watts"] == pytest.approx(140.0, rel=0.05)
    assert nf4["idle_power_watts"] == pytest.approx(100.0, rel=0.05)
    for trial in res["trials"]:
        gpus = 2 if trial["format"] == "FP16" else 1
        assert len(trial["per_gpu_energy_joules"]) == gpus
        assert trial["avg_power_watts"] == pytest.approx(140.0 if gpus == 2 else 100.0, rel=0.15)
    # Constant power: nothing above idle, for either format (not NF4 minus both GPUs' idle).
    for stats in (fp16, nf4):
        per_token = stats["energy_per_token_mj"]
        assert abs(stats["energy_above_idle_per_token_mj"]) < 0.2 * per_token
    assert "The formats occupy different GPUs (FP16 on GPUs 0, 1; NF4 on GPU 0)" in res["note"]
    assert [g["nvml_index"] for g in report["system_under_test"]["gpus"]] == [0, 1]
    summary = render(report, "energy.json")
    assert "gpus       FP16 on GPUs 0, 1; NF4 on GPU 0 (NVML index)" in summary


def _starved_run(monkeypatch, open_sampler):
    """A measurement in which no sampler thread ever gets the CPU (its loop never runs),
    as on a loaded machine at its worst."""
    from ecocompute.monitor.sampler import PowerSampler
    from ecocompute.task.run import run_energy_estimate

    from ..fakes import fake_machine

    monkeypatch.setattr(PowerSampler, "run", lambda self, *, wait=None: None)
    machine = fake_machine(FakeTelemetry, CpuAccelerator(), open_sampler=open_sampler)
    return run_energy_estimate(
        _params(precision="NF4", iterations="2", params_b="1.1"),
        Progress(quiet=True),
        machine=machine,
    )


def test_the_fakes_measure_whether_or_not_a_thread_gets_the_cpu(monkeypatch):
    """The unit tests' sampler reads on schedule whatever the load: a window is never
    refused because a thread was late, so no test hangs on wall-clock luck."""
    from ecocompute.task.outcome import MeasuredRun

    assert isinstance(_starved_run(monkeypatch, scheduled_sampler), MeasuredRun)


def test_the_real_sampler_starved_is_still_refused(monkeypatch):
    """The honesty rule stays for real runs: a window with too few power reads is
    refused, and the published path answers, saying why."""
    from ecocompute.monitor.sampler import open_power_sampler
    from ecocompute.task.published_path import PublishedRun

    outcome = _starved_run(monkeypatch, open_power_sampler)
    assert isinstance(outcome, PublishedRun)
    assert outcome.reason.code == "measurement_failed"
    assert "the sampler fell behind" in outcome.reason.text
