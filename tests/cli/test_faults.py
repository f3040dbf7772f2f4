"""The fault matrix (issue 6): every fault through the real CLI (cli.main, in-process),
with the fake machine at task.py's seams where the fault cannot happen on a CPU.

Each test asserts the exit status, the one-line message and what is (not) on disk.
Signals are in test_interrupts.py; the property-based checks in test_properties.py.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import sys
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

import ecocompute.core.packages as packages
import ecocompute.jobs.report_job as task
from ecocompute.cli import main
from ecocompute.core.precision import Precision
from ecocompute.errors import MeasurementRefused
from ecocompute.formats.table import FP16_SPEC, spec_for
from ecocompute.llm import loading as models
from ecocompute.llm.loading import ModelBackend
from ecocompute.llm.quantizers import quantizer_for
from ecocompute.monitor.meter import MIN_VALID_SAMPLE_FRACTION, EnergyMeter, WindowEdges
from ecocompute.monitor.sampler import PowerSampler
from ecocompute.params import MAX_PARAMETERS_BYTES
from ecocompute.report.files import MAX_REPORT_BYTES
from ecocompute.report.read import validation_errors

from ..conftest import derived_source
from ..fakes import (
    CpuAccelerator,
    FakeClock,
    FakeTelemetry,
    StandInQuantBackend,
    drive,
    install_fakes,
)

DERIVED = "ecocompute-dataset (no local GPU): "  # a figure derived, not measured

# A measured run that takes well under a second on the CPU.
MEASURE = (
    "--model",
    "synthetic:tiny-test",
    "--tokens",
    "8",
    "--iterations",
    "2",
    "--warmup",
    "1",
    "--idle_seconds",
    "0.2",
    "--sample_rate_hz",
    "50",
    "--quiet",
)


@pytest.fixture(autouse=True)
def _cache(synthetic_cache, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(synthetic_cache))


@dataclass
class Ran:
    status: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]


@pytest.fixture
def cli(capsys):
    """cli.main in this process; its exit status, stdout and stderr."""

    def run(*args: str) -> Ran:
        status = main(list(args))
        captured = capsys.readouterr()
        assert "Traceback" not in captured.err
        return Ran(status, captured.out, captured.err)

    return run


class SpyBackend(StandInQuantBackend):
    """The stand-in backend, recording every step in order."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def preflight(self, precision, accelerator):
        self.calls.append(f"preflight {precision}")
        super().preflight(precision, accelerator)

    def checkpoint(self, model_name, accelerator):
        self.calls.append("checkpoint")
        return super().checkpoint(model_name, accelerator)

    def load(self, checkpoint, precision, accelerator):
        self.calls.append(f"load {precision}")
        return super().load(checkpoint, precision, accelerator)


def one_line(ran: Ran) -> str:
    """The run's one message (transformers' own "Loading weights" bars aside)."""
    ours = [ln for ln in ran.error_lines if ln.startswith("ecocompute:")]
    assert len(ours) == 1, ran.err
    return ours[0]


def listing(folder: Path) -> list[str] | None:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else None


def report_in(folder: Path) -> dict:
    report = json.loads((folder / "energy.json").read_text())
    assert validation_errors(report) == []
    return report


@dataclass(frozen=True)
class Snapshot:
    data: bytes
    inode: int
    mtime_ns: int


def previous_report(folder: Path) -> Snapshot:
    """An energy.json from an earlier run, with an old mtime so any rewrite shows."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "energy.json"
    path.write_text('{"an": "earlier report"}\n')
    os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    st = path.stat()
    return Snapshot(path.read_bytes(), st.st_ino, st.st_mtime_ns)


def assert_untouched(folder: Path, before: Snapshot) -> None:
    path = folder / "energy.json"
    st = path.stat()
    assert Snapshot(path.read_bytes(), st.st_ino, st.st_mtime_ns) == before
    assert listing(folder) == ["energy.json"]  # and no temp file beside it


# --- NVML library missing, or nvmlInit fails -> reference path, exit 0 --------------


@pytest.fixture
def nvml_fails(monkeypatch):
    """The real open_nvml, with nvmlInit failing as it does without libnvidia-ml."""
    import pynvml

    def init() -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", init)
    return pynvml


def test_nvml_init_fails_with_a_driver_present(cli, tmp_path, nvml_fails, monkeypatch):
    monkeypatch.setattr("ecocompute.telemetry.nvml.no_gpu_on_this_machine", lambda: False)
    ran = cli("energy_estimate", "--precision", "NF4", "--output_dir", str(tmp_path), "-q")
    assert ran.status == 0, ran.err
    report = report_in(tmp_path)
    assert derived_source(report).startswith(DERIVED + "NVML unavailable: ")
    assert "NVML Shared Library Not Found" in derived_source(report)
    assert report["results"]["fallback_reason"] == "nvml_unavailable"
    assert report["results"]["basis"] == "interpolated"
    assert "NVML unavailable" in ran.out  # the summary's "why" line says it too


def test_nvml_init_fails_without_any_driver(cli, tmp_path, nvml_fails, monkeypatch):
    monkeypatch.setattr("ecocompute.telemetry.nvml.no_gpu_on_this_machine", lambda: True)
    ran = cli("energy_estimate", "--output_dir", str(tmp_path), "-q")
    assert ran.status == 0, ran.err
    report = report_in(tmp_path)
    assert derived_source(report).startswith(
        DERIVED + "no GPU found: no NVIDIA driver or device on this machine (NVML: "
    )
    assert report["results"]["fallback_reason"] == "no_gpu"


def test_nvml_library_not_importable(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    ran = cli("energy_estimate", "--output_dir", str(tmp_path), "-q")
    assert ran.status == 0, ran.err
    source = derived_source(report_in(tmp_path))
    assert source.startswith(DERIVED + "NVML unavailable: nvidia-ml-py not importable")


def test_nvml_starts_but_the_gpu_is_lost(cli, tmp_path, nvml_fails, monkeypatch):
    """nvmlInit succeeds, then enumerating the device fails (GPU fell off the bus)."""
    pynvml = nvml_fails

    def lost(index: int) -> None:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_GPU_IS_LOST)

    monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlShutdown", lambda: None)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetCount", lambda: 1)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lost)
    ran = cli("energy_estimate", "--output_dir", str(tmp_path), "-q")
    assert ran.status == 0, ran.err
    source = derived_source(report_in(tmp_path))
    assert source.startswith(DERIVED + "NVML unavailable: ")
    assert "GPU is lost" in source


# --- A GPU that reports no power -> reference path before any model is loaded ------


def test_power_unsupported_falls_back_before_anything_is_loaded(cli, tmp_path, monkeypatch):
    spy = SpyBackend()
    install_fakes(monkeypatch.setattr, lambda: FakeTelemetry(power=False), backend=lambda: spy)
    ran = cli("energy_estimate", *MEASURE, "--params_b", "1.1", "--output_dir", str(tmp_path))
    assert ran.status == 0, ran.err
    report = report_in(tmp_path)
    assert derived_source(report) == (DERIVED + "power telemetry unsupported on NVIDIA H200")
    assert report["results"]["fallback_reason"] == "power_unsupported"
    assert report["results"]["basis"] != "measured"
    assert spy.calls == []  # no preflight, no checkpoint, no load


# --- Energy counter unsupported, power readable -> measured from the sampler ---------


def test_counter_unsupported_measures_from_the_sampler_alone(cli, tmp_path, monkeypatch):
    install_fakes(
        monkeypatch.setattr, lambda: FakeTelemetry(power_w=lambda t: 120.0, energy_counter=False)
    )
    ran = cli("energy_estimate", *MEASURE, "--precision", "NF4", "--output_dir", str(tmp_path))
    assert ran.status == 0, ran.err
    report = report_in(tmp_path)
    assert report["results"]["basis"] == "measured"
    assert report["measurement"]["energy_source"] == "sampled_power"
    assert report["measurement"]["method"].endswith("(no energy counter on this GPU)")
    assert report["measurement"]["counter_edges"]["mode"] == "no counter"
    for trial in report["results"]["trials"]:
        assert trial["energy_source"] == "sampled_power"
        assert trial["counter_energy_joules"] is None
        assert trial["avg_power_watts"] == pytest.approx(120.0)  # a constant trace: exact


# --- Intermittent failed power reads -> counted; persistent -> refused ---------------


def test_intermittent_read_failures_are_counted_and_the_measurement_stands(
    cli, tmp_path, monkeypatch
):
    """One read in four fails. Each window closes with a 100 ms synchronize(), so at
    50 Hz about five reads are due per window and well over half succeed."""
    install_fakes(
        monkeypatch.setattr,
        lambda: FakeTelemetry(power_w=lambda t: 90.0, fail_read=lambda k: k % 4 == 0),
        CpuAccelerator(sync_s=0.1),
    )
    ran = cli("energy_estimate", *MEASURE, "--precision", "FP16", "--output_dir", str(tmp_path))
    assert ran.status == 0, ran.err
    report = report_in(tmp_path)
    res = report["results"]
    assert res["basis"] == "measured"
    assert report["measurement"]["min_valid_sample_fraction"] == MIN_VALID_SAMPLE_FRACTION == 0.5
    assert res["dropped_samples"] == sum(t["dropped_samples"] for t in res["trials"]) > 0
    for trial in res["trials"]:
        due = trial["duration_s"] * 50
        assert trial["samples"] >= MIN_VALID_SAMPLE_FRACTION * due
        # the gaps are bridged, never filled with a made-up value (duration is rounded)
        assert trial["sampled_energy_joules"] / trial["duration_s"] == pytest.approx(90.0, rel=1e-3)


def test_persistent_read_failures_refuse_the_measurement(cli, tmp_path, monkeypatch):
    install_fakes(monkeypatch.setattr, lambda: FakeTelemetry(fail_read=lambda k: k > 3))
    ran = cli(
        "energy_estimate",
        *MEASURE,
        "--precision",
        "FP16",
        "--params_b",
        "1.1",
        "--output_dir",
        str(tmp_path),
    )
    assert ran.status == 0, ran.err
    report = report_in(tmp_path)
    assert report["results"]["basis"] != "measured"
    assert report["results"]["fallback_reason"] == "measurement_failed"
    assert derived_source(report).startswith(
        DERIVED + "on-device measurement failed: power reads kept failing on GPU 0"
    )
    assert re.search(r"\(read \d+ failed \(scripted\)\)$", derived_source(report))
    assert report["results"]["trials"] == []


@pytest.mark.parametrize(("ok", "refused"), [(25, False), (24, True)])
def test_enough_samples_means_at_least_half_of_those_due(ok, refused):
    """The rule the report records as min_valid_sample_fraction: a 5 s window at 10 Hz
    has 50 reads due; 25 successes stand (25 dropped), 24 are refused."""
    clock = FakeClock()
    # Read n is made at 100 + (n - 1) / 10 s; the window [100.05, 105.05] holds reads
    # 2..51. The first `ok` of them succeed, the rest of the window's reads fail.
    failing = set(range(2 + ok, 52))
    telemetry = FakeTelemetry(fail_read=lambda k: k in failing, clock=clock)
    sampler = PowerSampler(lambda i: telemetry.power_mw(i) / 1000, [0], 10.0, clock=clock)
    drive(sampler, clock, reads=52, read_cost_s=lambda k: 0.0)
    meter = EnergyMeter(telemetry, [0], sampler, lambda: None, use_counter=False, clock=clock)
    if refused:
        with pytest.raises(MeasurementRefused, match=f": {ok} of ~50 reads due in a 5.00 s"):
            meter.reading(WindowEdges(100.05, 105.05, None, None))
    else:
        reading = meter.reading(WindowEdges(100.05, 105.05, None, None))
        assert (reading.samples, reading.dropped) == (ok, 50 - ok)
        assert reading.sampled_j == pytest.approx(100.0 * 5.0)


# --- CUDA out of memory -> exit 1 naming model, format, memory; nothing written -----


class OutOfMemoryBackend(StandInQuantBackend):
    """CUDA runs out of memory loading or running one format."""

    def __init__(self, monkeypatch, stage: str, precision: str) -> None:
        super().__init__()
        self.monkeypatch = monkeypatch
        self.stage = stage
        self.target = precision

    def load(self, checkpoint, precision, accelerator):
        import torch

        def out_of_memory(*args, **kwargs):
            raise torch.cuda.OutOfMemoryError(
                "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 139.8 GiB total)"
            )

        if self.stage == "loading" and str(precision) == self.target:
            # the real loader (models.load), with from_pretrained running out of memory
            from transformers import AutoModelForCausalLM

            with self.monkeypatch.context() as m:
                m.setattr(AutoModelForCausalLM, "from_pretrained", out_of_memory)
                return models.load(checkpoint, precision, accelerator)
        loaded = super().load(checkpoint, precision, accelerator)
        if self.stage == "running" and str(precision) == self.target:
            loaded.model.generate = out_of_memory
        return loaded


@pytest.mark.parametrize("stage", ["loading", "running"])
@pytest.mark.parametrize("precision", ["FP16", "NF4"])
def test_out_of_memory_names_model_format_and_memory(cli, tmp_path, monkeypatch, stage, precision):
    install_fakes(
        monkeypatch.setattr,
        FakeTelemetry,
        CpuAccelerator(free_mib=100_000),
        lambda: OutOfMemoryBackend(monkeypatch, stage, precision),
    )
    before = previous_report(tmp_path)
    ran = cli("energy_estimate", *MEASURE, "--precision", "NF4", "--output_dir", str(tmp_path))
    assert ran.status == 1
    line = one_line(ran)
    assert line.startswith(
        f"ecocompute: error: out of GPU memory {stage} synthetic:tiny-test at {precision} "
        "(100,000 MiB free of 143,771 MiB): CUDA out of memory. Tried to allocate 2.00 GiB"
    )
    assert "smaller model" in line and "--batch_size" in line
    assert line.endswith("no report was written.")
    assert_untouched(tmp_path, before)


# --- A model that would spill off the GPUs -> exit 1, nothing written -----------------


class SpillingAccelerator(CpuAccelerator):
    """A CPU stand-in on which accelerate 'placed' part of the model on the CPU."""

    max_memory_gib = 1.5

    def offloaded(self, model):
        return ["lm_head", "model.norm"]


def test_a_model_placed_partly_off_the_gpus_is_refused(cli, tmp_path, monkeypatch):
    """Energy spent on offloaded layers is not GPU-package energy: such a run is refused
    before any trial, naming the model, the format and the cap."""
    install_fakes(monkeypatch.setattr, FakeTelemetry, SpillingAccelerator(), StandInQuantBackend)
    before = previous_report(tmp_path)
    ran = cli("energy_estimate", *MEASURE, "--precision", "FP16", "--output_dir", str(tmp_path))
    assert ran.status == 1
    line = one_line(ran)
    assert line.startswith(
        "ecocompute: error: synthetic:tiny-test at FP16 does not fit on this process's GPU(s) "
        "within --max_gpu_memory_gib 1.5 per GPU (2 module(s) placed off the GPU(s), e.g. "
        "lm_head). Offloading to the CPU or disk is not measured"
    )
    assert line.endswith("no report was written.")
    assert_untouched(tmp_path, before)


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        (
            "The current device_map had weights offloaded to the disk. Please provide an "
            "offload_folder for them.",
            True,
        ),
        (
            "Some modules are dispatched on the CPU or the disk. Make sure you have enough "
            "GPU RAM to fit the quantized model.",
            True,
        ),
        ("Unrecognized configuration class", False),
    ],
)
def test_transformers_refusing_a_spilled_placement_is_does_not_fit(monkeypatch, message, refused):
    from transformers import AutoModelForCausalLM

    from ecocompute.errors import RunError

    def refuse(*args, **kwargs):
        raise ValueError(message)

    checkpoint = ModelBackend().checkpoint("synthetic:tiny-test", CpuAccelerator())
    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", refuse)
    if refused:
        with pytest.raises(RunError, match="does not fit on this process's GPU"):
            models.load(checkpoint, Precision.NF4, CpuAccelerator())
    else:
        with pytest.raises(ValueError, match="Unrecognized"):
            models.load(checkpoint, Precision.NF4, CpuAccelerator())


def test_a_load_that_is_not_quantized_is_refused():
    """A model labelled NF4 that has no 4-bit layers would report FP16's numbers as NF4's."""
    import torch

    from ecocompute.errors import RunError

    plain = torch.nn.Sequential(torch.nn.Linear(4, 4))
    quantizer_for(FP16_SPEC).check(plain)
    nf4 = quantizer_for(spec_for(Precision.NF4))
    with pytest.raises(RunError, match="not NF4; refusing to report its energy as NF4"):
        nf4.check(plain)
    fake_4bit = type("Linear4bit", (torch.nn.Module,), {})
    nf4.check(torch.nn.Sequential(fake_4bit()))


# --- Model id not found / hub unreachable -> exit 1, nothing written -----------------


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("no-such-org/no-such-model-xyz", "the Hugging Face hub has no such id or cannot be"),
        ("/no/such/checkpoint-folder", "no such folder"),
    ],
)
def test_model_not_found_names_the_id_and_writes_nothing(cli, tmp_path, monkeypatch, model, says):
    install_fakes(monkeypatch.setattr, FakeTelemetry, backend=ModelBackend)
    out = tmp_path / "out"
    ran = cli(
        "energy_estimate",
        *MEASURE,
        "--precision",
        "FP16",
        "--model",
        model,
        "--output_dir",
        str(out),
    )
    assert ran.status == 1
    line = one_line(ran)
    assert f"model '{model}' could not be loaded" in line and says in line
    assert "local checkpoint folder" in line and "synthetic:<preset>" in line
    assert listing(out) is None  # not even the folder


def test_a_folder_that_holds_no_checkpoint_is_a_one_line_error(cli, tmp_path, monkeypatch):
    """An existing folder without config or tokenizer: transformers raises ValueError,
    which was an internal error (and stopped a sweep at that point)."""
    install_fakes(monkeypatch.setattr, FakeTelemetry, backend=ModelBackend)
    model = tmp_path / "empty-0.5b"
    model.mkdir()
    out = tmp_path / "out"
    ran = cli("energy_estimate", *MEASURE, "--precision", "FP16", "--model", str(model),
              "--output_dir", str(out))  # fmt: skip
    assert ran.status == 1
    line = one_line(ran)
    assert f"model '{model}' could not be loaded: it holds no" in line, line
    assert "internal error" not in line and "synthetic:<preset>" in line
    assert listing(out) is None


# --- bitsandbytes missing or its kernel absent -> preflight error before loading -----


@pytest.fixture
def nothing_loads(monkeypatch):
    """Fails the test if a checkpoint is resolved (built, downloaded) or loaded."""
    calls: list[str] = []
    monkeypatch.setattr(models, "resolve_checkpoint", lambda *a: calls.append("checkpoint"))
    monkeypatch.setattr(models, "load", lambda *a: calls.append("load"))
    return calls


def test_bitsandbytes_missing_is_a_preflight_error(cli, tmp_path, monkeypatch, nothing_loads):
    monkeypatch.setitem(sys.modules, "bitsandbytes", None)  # import bitsandbytes fails
    # and its metadata is gone too (the test environment installs it: test_real_weights)
    real_version = packages.installed_version
    monkeypatch.setattr(
        packages, "installed_version", lambda n: None if n == "bitsandbytes" else real_version(n)
    )
    install_fakes(monkeypatch.setattr, FakeTelemetry, backend=ModelBackend)
    out = tmp_path / "out"
    ran = cli("energy_estimate", *MEASURE, "--precision", "NF4", "--output_dir", str(out))
    assert ran.status == 1
    line = one_line(ran)
    assert line.startswith("ecocompute: error: NF4 needs bitsandbytes, which could not be imported")
    import torch

    assert f"torch {torch.__version__}, CUDA None, bitsandbytes not installed" in line
    assert "pip install bitsandbytes" in line and "--precision FP16" in line
    assert nothing_loads == []
    assert listing(out) is None


@pytest.mark.parametrize("precision", ["NF4", "INT8"])
def test_bitsandbytes_kernel_absent_is_a_preflight_error(
    cli, tmp_path, monkeypatch, nothing_loads, precision
):
    def no_kernel(*args, **kwargs):
        raise RuntimeError("CUDA Setup failed despite GPU being available.\nmore detail")

    fake = types.ModuleType("bitsandbytes")
    fake.functional = types.SimpleNamespace(quantize_4bit=no_kernel)  # type: ignore[attr-defined]
    fake.nn = types.SimpleNamespace(Linear8bitLt=no_kernel)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "bitsandbytes", fake)
    install_fakes(monkeypatch.setattr, FakeTelemetry, backend=ModelBackend)
    out = tmp_path / "out"
    ran = cli("energy_estimate", *MEASURE, "--precision", precision, "--output_dir", str(out))
    assert ran.status == 1
    line = one_line(ran)
    assert line.startswith(
        f"ecocompute: error: bitsandbytes {precision} preflight failed on this GPU "
        "(RuntimeError: CUDA Setup failed despite GPU being available.)"
    )
    assert "torch " in line and "CUDA None" in line and "nothing was loaded" in line
    assert nothing_loads == []
    assert listing(out) is None


# --- Output folder vanishes, is read-only, or the disk fills -> exit 1, no partial ----


@pytest.fixture
def after_the_run(monkeypatch):
    """Do something between the (reference-path) run and the write of its report."""

    def then(action) -> None:
        real = task.run_energy_estimate

        def run_then_act(*args, **kwargs):
            report = real(*args, **kwargs)
            action()
            return report

        monkeypatch.setattr(task, "run_energy_estimate", run_then_act)

    return then


def test_output_folder_vanishes_during_the_run(cli, tmp_path, after_the_run):
    out = tmp_path / "out"
    out.mkdir()
    after_the_run(lambda: shutil.rmtree(out))
    ran = cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(out))
    assert ran.status == 1
    line = one_line(ran)
    assert f"the folder {out} existed when the run started and is gone now" in line
    assert "nothing was written" in line
    assert listing(out) is None  # not silently recreated (it may be an unmounted volume)


def test_output_folder_vanishes_while_the_report_is_written(cli, tmp_path, monkeypatch):
    out = tmp_path / "out"
    previous_report(out)
    real_fsync = os.fsync

    def fsync_then_vanish(fd: int) -> None:
        real_fsync(fd)
        shutil.rmtree(out)  # deleted with the temp file in it, before the rename

    monkeypatch.setattr(os, "fsync", fsync_then_vanish)
    ran = cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(out))
    assert ran.status == 1
    assert "No such file or directory; nothing was written" in one_line(ran)
    assert listing(tmp_path) == []  # not recreated, nothing left behind


@pytest.mark.parametrize(
    ("code", "words"),
    [(errno.EROFS, "Read-only file system"), (errno.EACCES, "Permission denied")],
)
def test_output_folder_turns_read_only(cli, tmp_path, after_the_run, monkeypatch, code, words):
    """Root ignores permission bits, so the refusal is the kernel's error, injected."""
    import tempfile

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    out = tmp_path / "out"
    before = previous_report(out)
    after_the_run(lambda: monkeypatch.setattr(tempfile, "mkstemp", refuse))
    ran = cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(out))
    assert ran.status == 1
    line = one_line(ran)
    assert line == (
        f"ecocompute: error: could not write {out / 'energy.json'}: {words}; nothing was "
        "written (check the folder exists, is writable and the disk has space)"
    )
    assert_untouched(out, before)


def test_output_folder_read_only_from_the_start_is_bad_input(cli, tmp_path, monkeypatch):
    import tempfile

    def refuse(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "TemporaryFile", refuse)  # check_output_dir's probe
    ran = cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(tmp_path / "out"))
    assert ran.status == 2
    assert "output_dir" in one_line(ran) and "Read-only file system" in one_line(ran)
    assert listing(tmp_path) == []


@pytest.mark.parametrize("fail_on", ["write", "fsync"])
def test_disk_fills_while_writing(cli, tmp_path, monkeypatch, fail_on):
    out = tmp_path / "out"
    before = previous_report(out)

    def no_space() -> OSError:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if fail_on == "write":
        real_write_text = Path.write_text

        def half_then_full(self, data, *args, **kwargs):
            real_write_text(self, data[: len(data) // 2], *args, **kwargs)  # a partial file
            raise no_space()

        monkeypatch.setattr(Path, "write_text", half_then_full)
    else:

        def fsync(fd: int) -> None:
            raise no_space()

        monkeypatch.setattr(os, "fsync", fsync)
    ran = cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(out))
    assert ran.status == 1
    assert "No space left on device; nothing was written" in one_line(ran)
    assert_untouched(out, before)  # the half-written temp file is gone


# --- Parameters files: empty, binary, a YAML list, wrong types -> exit 2 ------------


@pytest.mark.parametrize(
    ("content", "field", "says"),
    [
        (b"", "parameters_file", "is empty; expected a YAML mapping"),
        (b"\n   \n", "parameters_file", "is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "parameters_file", "is not text (binary?)"),
        (b"\xff\xfe\xfd not utf-8", "parameters_file", "is not text (binary?)"),
        (b"- precision: NF4\n- tokens: 8\n", "parameters_file", "got a YAML list"),
        (b"tokens: [1, 2\n", "parameters_file", "is not valid YAML at line"),
        (b"tokens: abc\n", "tokens", "expected a whole number"),
        (b"tokens: 2.5\n", "tokens", "expected a whole number"),
        (b"batch_size: true\n", "batch_size", "not true/false"),
        (b"sample_rate_hz: fast\n", "sample_rate_hz", "expected a whole number"),
        (b"quality_probe: maybe\n", "quality_probe", "expected true or false"),
        (b"model_name: 7\n", "model_name", "expected a non-empty string"),
        (b"precision: [NF4]\n", "precision", "expected a non-empty string"),
        (b"precison: NF4\n", "parameters_file key", "did you mean 'precision'"),
    ],
)
def test_bad_parameters_file_exits_2_naming_the_field(cli, tmp_path, content, field, says):
    params = tmp_path / "params.yaml"
    params.write_bytes(content)
    out = tmp_path / "out"
    ran = cli("energy_estimate", "--parameters_file", str(params), "--output_dir", str(out))
    assert ran.status == 2
    line = one_line(ran)
    assert line.startswith(f"ecocompute: error: invalid {field} ")
    assert says in line
    assert listing(out) is None


def test_parameters_files_that_cannot_be_read(cli, tmp_path, monkeypatch):
    out = tmp_path / "out"

    def ran_with(params: Path | str) -> str:
        ran = cli("energy_estimate", "--parameters_file", str(params), "--output_dir", str(out))
        assert ran.status == 2
        return one_line(ran)

    assert "is not a regular file" in ran_with("/dev/null")
    assert "is a folder" in ran_with(tmp_path)
    assert "does not exist" in ran_with(tmp_path / "missing.yaml")
    huge = tmp_path / "huge.yaml"
    with open(huge, "wb") as f:
        f.truncate(MAX_PARAMETERS_BYTES + 1)
    assert "is larger than 1024 KiB" in ran_with(huge)
    locked = tmp_path / "locked.yaml"
    locked.write_text("tokens: 8\n")

    def denied(self):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    with monkeypatch.context() as m:  # root reads anything: the kernel's refusal, injected
        m.setattr(Path, "read_bytes", denied)
        assert "cannot be read (Permission denied)" in ran_with(locked)
    assert listing(out) is None


def test_a_yaml_alias_bomb_is_refused_in_one_short_line(cli, tmp_path):
    """A tiny file whose value, written out, would hold 9**9 items: the message quotes
    it in a few characters, at once."""
    levels = ["&l0 [" + ", ".join(["x"] * 9) + "]"]
    levels += [f"&l{k} [" + ", ".join([f"*l{k - 1}"] * 9) + "]" for k in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("precision: NF4\ntokens: [" + ", ".join(levels) + "]\n")
    out = tmp_path / "out"
    ran = cli("energy_estimate", "--parameters_file", str(bomb), "--output_dir", str(out))
    assert ran.status == 2
    line = one_line(ran)
    assert line.startswith("ecocompute: error: invalid tokens [[")
    assert line.endswith("expected a whole number") and len(line) < 250, line
    assert listing(out) is None


# --- validate on files that are not reports -> exit 1, a message, no traceback -------


def _valid_report(cli, folder: Path) -> Path:
    assert cli("energy_estimate", "--dry_run", "-q", "--output_dir", str(folder)).status == 0
    return folder / "energy.json"


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda p, good: p.write_text(good.read_text()[:500]), "not JSON (Unterminated string"),
        (lambda p, good: p.write_text("temperature,watts\n1,2\n"), "not JSON (Expecting"),
        (lambda p, good: p.write_text('{"a": 1} {"b": 2}'), "not JSON (Extra data"),
        (lambda p, good: p.write_text("[1, 2, 3]"), "top level is a JSON list, not an object"),
        (lambda p, good: p.write_text('"a string"'), "top level is a JSON str, not an object"),
        (lambda p, good: p.write_text(""), "not JSON (Expecting value"),
        (lambda p, good: p.write_bytes(b"\xff\xd8\xff\xe0 a jpeg"), "not UTF-8 text"),
        (lambda p, good: p.write_text("[" * 100_000), "not a report (JSON nested too deeply)"),
        (lambda p, good: p.write_text("{}"), "is not a report format this tool reads"),
        (lambda p, good: p.mkdir(), "no energy.json or sweep.json in this folder"),
        (lambda p, good: None, "cannot read: No such file or directory"),
    ],
)
def test_validate_never_tracebacks(cli, tmp_path, make, says):
    good = _valid_report(cli, tmp_path / "good")
    bad = tmp_path / "bad.json"
    make(bad, good)
    ran = cli("validate", str(good), str(bad))
    assert ran.status == 1
    assert f"{good}: valid" in ran.out
    assert f"{bad}: INVALID " in ran.out and says in ran.out


def test_validate_refuses_a_huge_file_without_reading_it(cli, tmp_path):
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(MAX_REPORT_BYTES + 1)  # sparse: no data on disk
    ran = cli("validate", str(huge))
    assert ran.status == 1
    assert ran.out.strip() == (
        f"{huge}: INVALID too large to be a report ({MAX_REPORT_BYTES + 1} bytes > "
        f"{MAX_REPORT_BYTES})"
    )


# --- Anything unforeseen -> one line, exit 1; --verbose shows the traceback ----------


def test_an_unexpected_bug_is_one_line_not_a_traceback(cli, tmp_path, monkeypatch):
    def bug(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(task, "run_energy_estimate", bug)
    out = tmp_path / "out"
    ran = cli("energy_estimate", "--dry_run", "--output_dir", str(out))
    assert ran.status == 1
    assert one_line(ran) == (
        "ecocompute: internal error: ZeroDivisionError: division by zero (a bug in "
        "ecocompute; run `ecocompute --verbose ...` for the traceback and report it); "
        "nothing was written"
    )
    assert listing(out) is None
    with pytest.raises(ZeroDivisionError):
        main(["--verbose", "energy_estimate", "--dry_run", "--output_dir", str(out)])


# --- A missing --quality_text -> the measurement stands, the probe skipped ------------


def test_a_missing_quality_text_skips_the_probe_and_keeps_the_measurement(
    cli, tmp_path, monkeypatch
):
    """The run goes on without the probe (report_job's line, the published container's
    way), yet building the report read the missing file for its corpus record and the
    whole measurement ended in an internal error, nothing written (a review, 2026-12-05)."""
    install_fakes(monkeypatch.setattr, lambda: FakeTelemetry(power_w=lambda t: 100.0))
    missing = tmp_path / "missing.txt"
    out = tmp_path / "out"
    ran = cli(
        "energy_estimate", *MEASURE, "--precision", "NF4", "--quality_text", str(missing),
        "--output_dir", str(out),
    )  # fmt: skip
    assert ran.status == 0, ran.err
    assert "the quality probe is skipped" in ran.err
    report = report_in(out)
    assert report["results"]["basis"] == "measured"
    assert report["quality"]["basis"] == "unavailable" and report["quality"]["corpus"] is None


def test_a_fifo_or_oversized_quality_text_is_never_read_and_the_measurement_stands(
    cli, tmp_path, monkeypatch
):
    """A review (2026-12-05): a FIFO given as --quality_text was said to be skipped, yet
    building the report opened it for its corpus record and blocked until killed (the
    measurement lost); /dev/zero grew without end; an 8 GiB file was read whole before
    its 16 MiB check. Now none is opened: the report is written, its corpus none."""
    import os
    import threading

    install_fakes(monkeypatch.setattr, lambda: FakeTelemetry(power_w=lambda t: 100.0))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as f:
        f.truncate(8 * 2**30)  # sparse: 8 GiB by its size, nothing on the disk
    read = []
    real_read_bytes = type(huge).read_bytes
    monkeypatch.setattr(type(huge), "read_bytes", lambda p: read.append(p) or real_read_bytes(p))
    done = threading.Event()

    def unblock() -> None:  # a reader blocked on the FIFO is let go, and the test fails
        if not done.wait(60.0):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=unblock, daemon=True).start()
    try:
        for given in (fifo, huge):
            out = tmp_path / f"out-{given.name}"
            ran = cli(
                "energy_estimate", *MEASURE, "--precision", "NF4", "--quality_text",
                str(given), "--output_dir", str(out),
            )  # fmt: skip
            assert ran.status == 0, ran.err
            assert report_in(out)["quality"]["corpus"] is None
    finally:
        done.set()
    assert huge not in read
