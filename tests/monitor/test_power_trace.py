"""--power_trace / `power_trace: true` (issue 29, item 2): a second sampler from before the
first model loads, with its phases' edges, written as power_trace.csv and
power_trace_fp16.csv (t_s,power_w) and a power_trace block; measured runs only; the
reported energy never comes from it, and it never reads inside a measured window."""

from __future__ import annotations

import csv
import json
import threading
import time

import pytest

from ecocompute.cli import main
from ecocompute.monitor.trace import WholeRunTrace
from ecocompute.params import resolve
from ecocompute.report.read import validation_errors
from ecocompute.report.schema import published_13_errors
from ecocompute.results.conformance import judge

from ..conftest import REPO, read_report
from ..fakes import CpuAccelerator, FakeTelemetry, install_fakes

UPSTREAM_13 = REPO / "tests" / "data" / "upstream" / "conformant-v1.1@8778c42.json"


def test_a_paused_trace_reads_nothing_until_resumed():
    reads: list[tuple[str, float]] = []

    def read(i: int) -> float:
        reads.append(("read", time.monotonic()))
        return 50.0 + i

    trace = WholeRunTrace(read, [0, 1], 100.0)
    trace.start()
    time.sleep(0.15)
    trace.pause()
    paused_at = time.monotonic()
    time.sleep(0.15)
    resumed_at = time.monotonic()
    trace.resume()
    time.sleep(0.1)
    record = trace.stop()
    assert not [t for _, t in reads if paused_at <= t <= resumed_at]
    assert len(record.times_s) >= 5 and set(record.powers_w) == {101.0}  # two GPUs summed
    assert record.marks["trace_start_s"] <= record.times_s[0] <= record.marks["trace_end_s"]
    assert trace.stop() is record  # stopping again changes nothing


def test_the_parameters_file_key_is_accepted(tmp_path):
    params = tmp_path / "p.yaml"
    params.write_text("model_name: synthetic:tiny-test\npower_trace: true\n")
    assert resolve(str(params), {}).power_trace is True


def test_a_session_of_several_formats_is_refused(tmp_path, capsys):
    argv = ["run", "--dry_run", "--precision", "NF4,INT8", "--power_trace",
            "--output_dir", str(tmp_path / "o")]  # fmt: skip
    assert main(argv) == 2
    assert "invalid power_trace" in capsys.readouterr().err


def test_the_published_path_says_in_one_line_there_is_nothing_to_trace(tmp_path, capsys):
    assert main(["run", "--dry_run", "--power_trace", "-q", "--output_dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "power_trace: no trace to record: this figure is derived from the published dataset, "
        "not measured here (power_trace.csv needs a measured run)"
    ]
    assert "power_trace" not in read_report(tmp_path)
    assert not list(tmp_path.glob("*.csv"))


@pytest.mark.slow
def test_a_measured_run_writes_the_trace_and_reads_nothing_in_its_windows(
    tmp_path, capsys, monkeypatch, synthetic_cache
):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(synthetic_cache))
    reads: list[tuple[str, float]] = []

    def power(t: float) -> float:
        reads.append((threading.current_thread().name, time.monotonic()))
        return 100.0

    install_fakes(monkeypatch.setattr, lambda: FakeTelemetry(power_w=power), CpuAccelerator())
    started: list[float] = []
    real_start = WholeRunTrace.start

    def start(self: WholeRunTrace) -> None:
        real_start(self)
        started.append(self.marks["trace_start_s"])

    monkeypatch.setattr(WholeRunTrace, "start", start)
    out = tmp_path / "out"
    argv = ["run", "--model", "synthetic:tiny-test", "--precision", "NF4", "--tokens", "8",
            "--iterations", "3", "--warmup", "1", "--idle_seconds", "0.2",
            "--sample_rate_hz", "50", "--power_trace", "-q", "--output_dir", str(out)]  # fmt: skip
    assert main(argv) == 0, capsys.readouterr().err
    report = read_report(out)
    assert validation_errors(report) == [] and published_13_errors(report) == []
    block = report["power_trace"]
    assert [(f["role"], f["precision"], f["file"]) for f in block["files"]] == [
        ("primary", "NF4", "power_trace.csv"),
        ("fp16_baseline", "FP16", "power_trace_fp16.csv"),
    ]
    assert block["window"] == "generation" and block["sample_rate_hz"] == 50
    rows = list(csv.reader((out / "power_trace.csv").open()))
    assert rows[0] == ["t_s", "power_w"] and len(rows) - 1 == block["files"][0]["samples"]
    assert (out / "power_trace_fp16.csv").read_text() == (out / "power_trace.csv").read_text()
    # the phases, in order, on the trace's clock
    phases = block["files"][0]["phases"]
    order = ["trace_start_s", "load_start_s", "model_ready_s", "protocol_start_s",
             "warmup_end_s", "measure_start_s", "measure_end_s", "protocol_end_s",
             "quality_start_s", "quality_end_s", "trace_end_s"]  # fmt: skip
    assert [k for k in phases] == [k for k in order if k in phases]
    assert [phases[k] for k in order if k in phases] == sorted(phases.values())
    assert {"load_start_s", "model_ready_s", "measure_start_s", "measure_end_s"} <= set(phases)
    # every trial's window, and FP16's file brackets FP16's trials
    windows = block["windows"]
    assert len(windows) == len(report["results"]["trials"]) == 6
    fp16 = block["files"][1]["phases"]
    fp16_windows = [w for w in windows if w["format"] == "FP16"]
    assert fp16["measure_start_s"] == min(w["start_s"] for w in fp16_windows)
    # the trace's own thread never read inside the protocol (idle, warm-ups, trials):
    # its edges are on the trace's clock, whose zero is the start captured below
    (zero,) = started
    protocol = (zero + phases["protocol_start_s"], zero + phases["protocol_end_s"])
    trace_reads = [t for name, t in reads if name == "ecocompute-trace"]
    assert trace_reads, "the trace read nothing outside the protocol"
    assert [t for t in trace_reads if protocol[0] <= t <= protocol[1]] == []
    assert any(t < protocol[0] for t in trace_reads)  # it did read while loading
    for w in windows:  # and every trial window lies inside the protocol
        assert protocol[0] <= zero + w["start_s"] < zero + w["end_s"] <= protocol[1] + 1e-3
    v = judge(report, "dataset-eligible")
    assert not any("power-trace" in x for x in v.violations)
    # and the picture: the trace, its phases, the windows shaded
    pytest.importorskip("matplotlib")
    assert main(["plot", "--power_trace", str(out), "-o", str(tmp_path / "t.png")]) == 0
    assert (tmp_path / "t.png").stat().st_size > 10_000


@pytest.mark.parametrize("blocked", ["power_trace_fp16.csv", "energy.json"])
def test_traces_and_report_are_written_as_one(
    tmp_path, capsys, monkeypatch, synthetic_cache, blocked
):
    """A trace or the report that cannot be written (a folder in its place) leaves every
    earlier file as it was, as "nothing was written" says: the traces were renamed into
    place before the report was tried, so an old report stood beside a new trace."""
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(synthetic_cache))
    install_fakes(
        monkeypatch.setattr, lambda: FakeTelemetry(power_w=lambda t: 100.0), CpuAccelerator()
    )
    from ecocompute.jobs import report_job

    out = tmp_path / "out"
    earlier = {"energy.json": "an earlier report", "power_trace.csv": "an earlier trace"}
    for name, text in earlier.items():
        if name != blocked:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_text(text)
    real_run = report_job.run_energy_estimate

    def run_then_a_folder(*args, **kwargs):  # made during the run: a folder at energy.json
        done = real_run(*args, **kwargs)  # before the run is refused at its start (exit 2)
        (out / blocked).mkdir(parents=True)
        return done

    monkeypatch.setattr(report_job, "run_energy_estimate", run_then_a_folder)
    argv = ["run", "--model", "synthetic:tiny-test", "--precision", "NF4", "--tokens", "4",
            "--iterations", "2", "--warmup", "0", "--idle_seconds", "0.2",
            "--power_trace", "-q", "--output_dir", str(out)]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"could not write {out / blocked}" in err and "nothing was written" in err, err
    for name, text in earlier.items():
        assert name == blocked or (out / name).read_text() == text, name
    assert sorted(p.name for p in out.iterdir()) == sorted({*earlier, blocked})


def test_plot_power_trace_of_a_report_without_one_is_bad_input(tmp_path, capsys):
    """A derived figure says why it has none (it said "run with --power_trace" to a run
    made with it: a review); a measured report without one, to run with it."""
    pytest.importorskip("matplotlib")
    argv = ["run", "--dry_run", "--power_trace", "-q", "--output_dir", str(tmp_path)]
    assert main(argv) == 0
    assert main(["plot", "--power_trace", str(tmp_path), "-o", str(tmp_path / "t.png")]) == 2
    assert (
        "a derived figure has no power trace: only a measured run on a GPU records one"
        in capsys.readouterr().err
    )
    doc = json.loads(UPSTREAM_13.read_text())
    del doc["power_trace"]
    (tmp_path / "energy.json").write_text(json.dumps(doc))
    assert main(["plot", "--power_trace", str(tmp_path), "-o", str(tmp_path / "t.png")]) == 2
    assert "holds no power_trace (run with --power_trace)" in capsys.readouterr().err


def test_plot_power_trace_of_a_container_report_shades_its_measured_window(tmp_path):
    """The published container's 1.3 names no trial windows: its one measured window, from
    its phases, is shaded (nothing was, under a title saying the windows are)."""
    pytest.importorskip("matplotlib")
    from ecocompute.plots.trace_plot import build_trace_figure

    (tmp_path / "energy.json").write_text(UPSTREAM_13.read_text())
    rows = "".join(f"{t / 10:.1f},{100 + t % 7}\n" for t in range(6570))
    (tmp_path / "power_trace.csv").write_text("t_s,power_w\n" + rows)
    ax = build_trace_figure(tmp_path).axes[0]
    assert ax.get_title().endswith("whole-run power trace; shaded: the measured windows")
    (window,) = [p for p in ax.patches if p.get_label() == "NF4 measured window"]
    edges = (window.get_x(), window.get_x() + window.get_width())  # data seconds
    assert edges == pytest.approx((561.559, 655.958))
