"""The sweep on Dask (ecocompute/fleet/): a local cluster of 2 worker processes on two
fake GPUs, each point the real CLI in a process of its own with the fake NVML, the CPU
accelerator and the stand-in backend behind it (tests/cli_with_fakes.py)."""

from __future__ import annotations

import io
import itertools
import json
import os
import socket
import subprocess
import sys
import time
from collections import defaultdict
from importlib.util import find_spec
from pathlib import Path

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.cli import main
from ecocompute.errors import InputError
from ecocompute.fleet.client import Verdict, judge
from ecocompute.fleet.cluster import visible_gpus
from ecocompute.fleet.options import FleetOptions
from ecocompute.fleet.point import (
    Placement,
    PointOutcome,
    PointSpec,
    _wait,
    parameters_yaml,
    run_point,
    switches_for,
)
from ecocompute.fleet.sweep import fleet_sweep, run_on_fleet
from ecocompute.params import read_parameters_file, resolve
from ecocompute.report.read import validation_errors
from ecocompute.report.schema import sweep_errors
from ecocompute.sweeps.plan import Plan
from ecocompute.sweeps.sweep import sweep

from ..conftest import REPO
from ..fakes import fake_machine

needs_dask = pytest.mark.skipif(
    find_spec("distributed") is None, reason="Dask distributed ([fleet] extra) not installed"
)
FAKE_CLI = (sys.executable, "-m", "tests.cli_with_fakes")
TINY = {
    "tokens": 6,
    "iterations": 2,
    "warmup": 1,
    "idle_seconds": 0.2,
    "sample_rate_hz": 50,
    "quiet": True,
}
PLACEMENT = (
    "host",
    "gpu",
    "worker",
    "attempts",
    "attempt_errors",
    "elapsed_s",
    "session_s",
    "started_unix_s",
    "ended_unix_s",
)
# What a measurement on the CPU stand-ins decides from its timings (the fake GPU draws
# a steady 100 W, so energy follows each decode's duration): differs run to run.
TIMED_RESULTS = ("vs_fp16_energy_pct", "vs_fp16_ci95_pct", "verdict")


# -- no cluster needed -------------------------------------------------------------------


def test_a_fleet_flag_without_dask_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import ecocompute.fleet.cluster as fleet_cluster

    monkeypatch.setattr(fleet_cluster, "find_spec", lambda name: None)
    out = tmp_path / "sw"
    args = ["sweep", "--models", "synthetic:tiny-test", "--dry_run", "--output_dir", str(out)]
    assert main([*args, "--local_cluster"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "ecocompute: error: --local_cluster needs Dask distributed, which is not installed: "
        "pip install 'ecocompute[fleet]'"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (["--one_per_host"], "one_per_host"),
        (["--every_gpu"], "every_gpu"),
        (["--workers", "2"], "workers"),
        (["--scheduler", "tcp://127.0.0.1:1", "--workers", "2"], "workers"),
        (["--local_cluster", "--fit_only"], "fit_only"),
    ],
)
def test_fleet_flags_are_checked_together(tmp_path, capsys, extra, field):
    out = tmp_path / "sw"
    args = ["sweep", "--models", "synthetic:tiny-test", "--dry_run", "--output_dir", str(out)]
    assert main([*args, *extra]) == 2
    assert f"invalid {field}" in capsys.readouterr().err
    assert not out.exists()


def test_scheduler_and_local_cluster_exclude_each_other(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["sweep", "--models", "m", "--scheduler", "tcp://h:8786", "--local_cluster"])
    assert stop.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def _outcome(rc, tail="", report="{}", cancelled=False):
    return PointOutcome(Placement("h", "0"), rc, report, tail, 1.0, 0.0, 1.0, cancelled)


@pytest.mark.parametrize(
    ("outcome", "verdict", "says"),
    [
        (_outcome(0), Verdict.OK, ""),
        (_outcome(0, report=None), Verdict.FAILED, "wrote no energy.json"),
        (_outcome(2, "ecocompute: error: invalid tokens"), Verdict.FAILED, "not retried"),
        (_outcome(-9, report=None), Verdict.RETRY, "SIGKILL (the kernel's out-of-memory"),
        (_outcome(137, report=None), Verdict.RETRY, "SIGKILL"),
        (
            _outcome(1, "ecocompute: error: out of GPU memory loading m at NF4", None),
            Verdict.RETRY,
            "out of memory (exit 1)",
        ),
        (_outcome(1, "ecocompute: error: unknown synthetic preset", None), Verdict.FAILED, ""),
        (_outcome(130, report=None, cancelled=True), Verdict.CANCELLED, "cancelled"),
    ],
)
def test_judge_retries_only_a_lost_or_out_of_memory_point(outcome, verdict, says):
    got, reason = judge(outcome)
    assert got is verdict
    assert says in reason


def test_a_points_parameters_file_gives_back_its_parameters(tmp_path):
    params = resolve(
        None,
        {
            **TINY,
            "model_name": "synthetic:tiny-test",
            "precision": "INT8",
            "llm_int8_threshold": "0",
            "decode": "graphs",
            "ci_target_pts": "5",
            "output_dir": str(tmp_path / "a"),
        },
    )
    file = tmp_path / "p.yaml"
    file.write_text(parameters_yaml(params))
    assert switches_for(params) == ("--quiet",)
    read = read_parameters_file(file)
    assert "output_dir" not in read and "quiet" not in read
    again = resolve(str(file), {"output_dir": str(tmp_path / "a"), "quiet": True})
    assert again == params


def test_local_cluster_gpus_come_from_cuda_visible_devices():
    assert visible_gpus(environ={"CUDA_VISIBLE_DEVICES": "2, GPU-abc"}) == ["2", "GPU-abc"]
    assert visible_gpus(workers=2, environ={"CUDA_VISIBLE_DEVICES": "5"}) == ["0", "1"]
    with pytest.raises(InputError, match="hides every GPU"):
        visible_gpus(environ={"CUDA_VISIBLE_DEVICES": ""})


def test_local_cluster_with_no_gpu_listed_says_so(monkeypatch):
    """NVML listing no device gave no worker and then an error about declaring
    --resources GPU=1, where the docstring promises "none" (a review, 2026-12-05)."""
    import ecocompute.fleet.cluster as cluster

    monkeypatch.setattr(cluster, "_nvml_count", lambda: 0)
    with pytest.raises(InputError, match="NVML lists no GPU here"):
        visible_gpus(environ={})


def test_a_failed_point_comes_back_with_its_exit_status_and_last_line():
    script = "import sys; print('summary'); sys.stderr.write('progress\\nboom: it broke\\n'); "
    spec = PointSpec(
        "p", "k", "tokens: 6\n", command=(sys.executable, "-c", script + "sys.exit(3)")
    )
    outcome = run_point(spec)
    assert (outcome.returncode, outcome.stderr_tail, outcome.report_text) == (
        3,
        "boom: it broke",
        None,
    )
    assert outcome.placement.host == socket.gethostname() and outcome.placement.worker is None
    assert outcome.argv[3:6] == ("energy_estimate", "--parameters_file", outcome.argv[5])


def test_a_cancelled_point_gets_sigint(tmp_path, default_signal_handlers):
    """The point is a child of this process: an ignored SIGINT here (a background job's)
    would be its too, so the test runs with Python's own handlers."""
    ready = tmp_path / "ready"  # cancelled only once the point can take its SIGINT
    script = (
        "import pathlib, sys, time\ntry:\n pathlib.Path(sys.argv[1]).touch()\n time.sleep(60)\n"
        "except KeyboardInterrupt:\n raise SystemExit(130)"
    )
    proc = subprocess.Popen([sys.executable, "-c", script, str(ready)])
    try:
        assert _wait(proc, ready.exists, grace_s=30) is True
        assert proc.returncode == 130  # SIGINT, handled, not SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()


# -- a local cluster of two workers on two fake GPUs -------------------------------------


@pytest.fixture(scope="module")
def cluster(synthetic_cache):
    """A scheduler and 2 worker processes (GPUs "0" and "1"), 2 threads each, so that
    only the GPU resource, not the thread count, keeps two points off one GPU."""
    from distributed import Client

    from ecocompute.fleet.cluster import local_cluster

    saved = {k: os.environ.get(k) for k in ("PYTHONPATH", "ECOCOMPUTE_CACHE")}
    path = os.pathsep.join(p for p in (str(REPO), saved["PYTHONPATH"]) if p)
    os.environ.update(PYTHONPATH=path, ECOCOMPUTE_CACHE=str(synthetic_cache))
    try:
        with (
            local_cluster(("0", "1"), threads_per_worker=2, quiet=True) as dask_cluster,
            Client(dask_cluster, set_as_default=False) as client,  # as the CLI would be
        ):
            client.wait_for_workers(2, timeout=120)
            yield client
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _on(client, **options):
    """FleetOptions for the fixture's scheduler, both workers connected."""
    client.wait_for_workers(2, timeout=120)
    return FleetOptions(scheduler=client.scheduler.address, **options)


def _runs(out: Path, n_models: int, model: str = "synthetic:tiny-test", **flags):
    """n_models x (NF4, INT8) points of one model, each in a folder of its own."""
    return tuple(
        resolve(
            None,
            {
                **TINY,
                **flags,
                "model_name": model,
                "precision": fmt,
                "output_dir": str(out / f"m{i}-{fmt}"),
            },
        )
        for i in range(n_models)
        for fmt in ("NF4", "INT8")
    )


def _overlaps(records, by):
    """Pairs of runs whose processes overlapped in time, within each group of `by`."""
    groups = defaultdict(list)
    for r in records:
        groups[by(r)].append((r.started_unix_s, r.ended_unix_s, r.report))
    found = []
    for spans in groups.values():
        spans.sort()
        found += [(a[2], b[2]) for a, b in itertools.pairwise(spans) if b[0] < a[1]]
    return found


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_points_spread_over_both_workers_and_never_share_a_gpu(cluster, tmp_path):
    from ecocompute.fleet.client import run_fleet

    runs = _runs(tmp_path, 2)
    records = run_fleet(tmp_path, runs, _on(cluster, point_command=FAKE_CLI), Progress(True))
    assert [r.status for r in records] == ["ok"] * 4, records
    assert {r.worker for r in records} == {"gpu0", "gpu1"}
    assert {r.gpu for r in records} == {"0", "1"}
    assert _overlaps(records, by=lambda r: r.gpu) == []
    assert len(_overlaps(records, by=lambda r: "any")) >= 1  # the two GPUs did work at once
    for r in records:
        report = json.loads((tmp_path / r.report).read_text())
        assert validation_errors(report) == []
        sut = report["system_under_test"]
        assert (sut["hostname"], sut["cuda_visible_devices"]) == (r.host, r.gpu)
        assert report["results"]["basis"] == "measured" and r.attempts == 1


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_every_gpu_runs_each_point_on_each_gpu_and_the_units_pool(cluster, tmp_path):
    from ecocompute.fleet.client import run_fleet
    from ecocompute.pooling.groups import group_reports
    from ecocompute.pooling.units import pool_units
    from ecocompute.results.collect import read_reports
    from ecocompute.sweeps.fits import fit_entry

    runs = _runs(tmp_path, 1)[:1]  # one point: NF4
    fleet = _on(cluster, point_command=FAKE_CLI, every_gpu=True)
    records = run_fleet(tmp_path, runs, fleet, Progress(True))
    assert [r.status for r in records] == ["ok", "ok"], records
    assert sorted(r.gpu for r in records) == ["0", "1"]  # the same point on each GPU
    assert sorted(r.report for r in records) == [
        "m0-NF4/gpu0/energy.json",
        "m0-NF4/gpu1/energy.json",
    ]
    reports, invalid = read_reports([tmp_path])
    assert invalid == [] and len(reports) == 2
    (pooled,) = pool_units(group_reports(reports))
    assert len(pooled.units) == 2  # two GPUs, two units (told apart by UUID)
    # one size on two units: no size curve through both as if they were one card's
    fit = fit_entry("NF4", reports, tmp_path, None, [], 50)
    assert fit.status == "skipped" and "measured on 2 GPUs" in (fit.reason or "")
    assert [p.params_b for p in fit.points] == [fit.points[0].params_b] * 2  # still listed


def _comparable(doc, drop_runs=(), drop_points=()):
    assert sweep_errors(doc) == []
    doc = {k: v for k, v in doc.items() if k not in ("timestamp_utc", "command")}
    doc["runs"] = [{k: v for k, v in r.items() if k not in drop_runs} for r in doc["runs"]]
    for fit in doc["fits"]:
        fit["points"] = [
            {k: v for k, v in p.items() if k not in drop_points} for p in fit["points"]
        ]
    return doc


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_measured_fleet_sweep_json_matches_the_sequential_one(cluster, tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", os.environ["ECOCOMPUTE_CACHE"])
    common = (["synthetic:tiny-test"], ["NF4", "INT8"])
    fleet_out, seq_out = tmp_path / "fleet", tmp_path / "seq"
    kw = {"options": TINY, "progress": Progress(True), "n_boot": 50}
    fleet = _on(cluster, point_command=FAKE_CLI)
    assert fleet_sweep(*common, fleet_out, fleet, **kw).failed == []
    assert sweep(*common, seq_out, machine=fake_machine(), **kw).failed == []
    fleet_doc = json.loads((fleet_out / "sweep.json").read_text())
    seq_doc = json.loads((seq_out / "sweep.json").read_text())
    assert {r["basis"] for r in fleet_doc["runs"]} == {"measured"}
    drop, timed = PLACEMENT + TIMED_RESULTS, ("delta_pct", "se_pct", "ci95_pct")
    # points the fleet ran on both workers' GPUs are two units' (the fake GPUs 0 and 1,
    # whose UUIDs share their tails: named whole); the sequential run's are one unit's
    if len({r["gpu"] for r in fleet_doc["runs"]}) > 1:
        assert fleet_doc.pop("units_note").startswith("the points were measured on 2 units (GPU-")
    assert "units_note" not in fleet_doc and "units_note" not in seq_doc
    assert _comparable(fleet_doc, drop, timed) == _comparable(seq_doc, drop, timed)
    assert all(r["attempts"] == 1 and r["elapsed_s"] > 0 for r in fleet_doc["runs"])


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_derived_fleet_sweep_json_is_the_sequential_one_to_the_digit(cluster, tmp_path):
    models = ["synthetic:qwen2.5-0.5b", "synthetic:qwen2.5-1.5b", "synthetic:qwen2.5-3b"]
    options = {"dry_run": True, "gpu_arch": "ada", "quiet": True}
    kw = {"options": options, "progress": Progress(True)}
    fleet_sweep(models, ["NF4", "INT8"], tmp_path / "fleet", _on(cluster), **kw)
    sweep(models, ["NF4", "INT8"], tmp_path / "seq", **kw)
    docs = [json.loads((tmp_path / name / "sweep.json").read_text()) for name in ("fleet", "seq")]
    assert len(docs[0]["runs"]) == 6
    assert _comparable(docs[0], PLACEMENT) == _comparable(docs[1], PLACEMENT)


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_one_per_host_runs_one_point_at_a_time_on_a_host(cluster, tmp_path):
    from ecocompute.fleet.client import run_fleet

    runs = _runs(tmp_path, 2, "synthetic:qwen2.5-1.5b", dry_run=True, gpu_arch="hopper")
    records = run_fleet(tmp_path, runs, _on(cluster, one_per_host=True), Progress(True))
    assert [r.status for r in records] == ["ok"] * 4, records
    assert {r.worker for r in records} == {"gpu0", "gpu1"}
    assert _overlaps(records, by=lambda r: r.host) == []


class _CtrlCOnce:
    """A progress stream that raises KeyboardInterrupt (as Ctrl-C would, in the main
    thread) when the first line containing `needle` is printed."""

    def __init__(self, needle: str) -> None:
        self.needle = needle
        self.fired = False

    def write(self, text: str) -> int:
        if self.needle in text and not self.fired:
            self.fired = True
            raise KeyboardInterrupt
        return len(text)

    def flush(self) -> None:
        pass


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_ctrl_c_cancels_what_is_left_and_keeps_what_finished(cluster, tmp_path):
    runs = _runs(tmp_path, 2)
    stream = _CtrlCOnce(" done in ")
    with pytest.raises(KeyboardInterrupt):
        run_on_fleet(
            Plan(tmp_path, runs),
            _on(cluster, point_command=FAKE_CLI),
            Progress(False, stream=stream),
            ["sweep", "test"],
            50,
        )
    assert stream.fired
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert sweep_errors(doc) == []
    status = [r["status"] for r in doc["runs"]]
    # One finished (the Ctrl-C came on its "done" line); the queued two never finished;
    # the one running on the other GPU may have finished before its SIGINT arrived.
    assert status.count("ok") >= 1 and status.count("cancelled") >= 2, doc["runs"]
    assert set(status) == {"ok", "cancelled"}
    for run, params in zip(doc["runs"], runs, strict=True):
        report = Path(params.output_dir) / "energy.json"
        assert report.is_file() == (run["status"] == "ok")
        if run["status"] == "cancelled":
            assert run["error"].startswith("cancelled") and run["report"] is None
    assert doc["plot"] is None and "interrupted" in doc["plot_note"]


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_killed_workers_point_is_recorded_and_retried_once_elsewhere(cluster, tmp_path):
    from ecocompute.fleet.client import run_fleet

    marker = tmp_path / "killed-once"
    killer = (sys.executable, "-m", "tests.fleet.point_killer", str(marker))
    runs = _runs(tmp_path, 1)[:1]
    records = run_fleet(tmp_path, runs, _on(cluster, point_command=killer), Progress(True))
    assert marker.exists()
    (record,) = records
    assert (record.status, record.attempts) == ("ok", 2), record
    (error,) = record.attempt_errors or []
    assert error.startswith("attempt 1 on ") and "worker lost (KilledWorker" in error
    assert f"(worker {record.worker})" not in error  # the retry ran on the other one
    assert (tmp_path / (record.report or "")).is_file()
    cluster.wait_for_workers(2, timeout=120)  # the nanny restarted the killed worker


@needs_dask
def test_a_scheduler_whose_workers_declare_no_gpu_is_refused_before_anything_runs(tmp_path):
    from distributed import LocalCluster

    from ecocompute.errors import RunError
    from ecocompute.fleet.client import run_fleet

    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as plain:
        options = FleetOptions(scheduler=plain.scheduler_address)
        with pytest.raises(RunError, match='--resources "GPU=1"'):
            run_fleet(tmp_path, _runs(tmp_path, 1), options, Progress(True))
    assert list(tmp_path.iterdir()) == []


def test_workers_that_would_share_a_gpu_are_found():
    from ecocompute.fleet.cluster import shared_gpus

    apart = {"gpu0": ("a", "0"), "gpu1": ("a", "1"), "other": ("b", "0"), "uuid": ("a", "GPU-x")}
    assert shared_gpus(apart) is None  # one GPU each, or another host
    said = shared_gpus({"w0": ("a", "0,1"), "w1": ("a", "1")})
    assert said == "w0 (CUDA_VISIBLE_DEVICES 0,1) and w1 (CUDA_VISIBLE_DEVICES 1) on a"
    every = shared_gpus({"w0": ("a", None), "w1": ("a", "3")})  # unset: every GPU
    assert every is not None and "unset: every GPU" in every
    assert shared_gpus({"w0": ("a", None)}) is None  # alone on its host


@needs_dask
def test_two_workers_that_see_one_gpu_are_refused_before_anything_runs(tmp_path):
    """docs/fleet.md: a GPU never runs two measurements at once. Two GPU=1 workers that
    see the same GPUs (here: in-process workers, no CUDA_VISIBLE_DEVICES, as `dask
    worker --nworkers 2` without one gives) measured two points on it at once, and both
    were kept (a review, 2026-12-05)."""
    from distributed import LocalCluster

    from ecocompute.errors import RunError
    from ecocompute.fleet.client import run_fleet

    with LocalCluster(
        n_workers=2, processes=False, dashboard_address=":0", resources={"GPU": 1}
    ) as shared:
        options = FleetOptions(scheduler=shared.scheduler_address)
        with pytest.raises(RunError, match=r"could measure on one GPU at once: .* on "):
            run_fleet(tmp_path, _runs(tmp_path, 1), options, Progress(True))
    assert list(tmp_path.iterdir()) == []


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_task_that_fails_on_a_live_worker_is_failed_not_retried(cluster, tmp_path, capsys):
    """An OSError raised by the point's own task (its command missing) was taken for a
    lost worker and retried on the other one; docs/fleet.md: failing in another way is
    recorded as failed and not retried (a review, 2026-12-04)."""
    from ecocompute.fleet.client import run_fleet

    runs = _runs(tmp_path, 1)[:1]
    fleet = _on(cluster, point_command=(str(tmp_path / "no-such-ecocompute"),))
    (record,) = run_fleet(tmp_path, runs, fleet, Progress(False))
    assert (record.status, record.attempts) == ("failed", 1), record
    (error,) = record.attempt_errors
    assert "the worker's task failed: FileNotFoundError" in error and "worker lost" not in error
    # and said as it happened, as every other failed point is (a review, 2026-12-05)
    assert "FAILED: the worker's task failed: FileNotFoundError" in capsys.readouterr().err


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_an_interrupt_as_a_finished_point_is_settled_keeps_it(cluster, tmp_path, monkeypatch):
    """A Ctrl-C that lands as the client settles a finished point (here: at the entry of
    its first settle) must not lose it: the future was taken off the pending list before
    its record was kept, so the point was recorded 'cancelled before it finished' beside
    its own energy.json (a review, 2026-12-04)."""
    import ecocompute.fleet.client as fleet_client
    from ecocompute.fleet.client import FleetInterrupted

    real, calls = fleet_client._Fleet.settle, []

    def settle(self, point, future, *, may_retry):
        calls.append(point.label)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(self, point, future, may_retry=may_retry)

    monkeypatch.setattr(fleet_client._Fleet, "settle", settle)
    runs = _runs(tmp_path, 1)[:1]
    with pytest.raises(FleetInterrupted) as info:
        fleet_client.run_fleet(tmp_path, runs, _on(cluster, point_command=FAKE_CLI), Progress(True))
    (record,) = info.value.records
    assert record.status == "ok", record
    assert (tmp_path / record.report).is_file()


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_pinned_point_whose_worker_restarts_elsewhere_fails_not_waits(tmp_path, synthetic_cache):
    """--every_gpu on a scheduler with Dask's default allowed_failures (as `dask scheduler`
    starts): a pinned point's worker is killed, its nanny brings it back at another
    address, and the scheduler queues the point again for the old one, where it would
    wait for ever (a review, 2026-12-04). It fails, as a pinned point whose worker is lost
    does; the other GPU's point is kept."""
    import threading

    from distributed import Client, Nanny, Scheduler, SpecCluster

    from ecocompute.fleet.client import run_fleet

    workers = {
        f"gpu{i}": {
            "cls": Nanny,
            "options": {"host": "127.0.0.1", "nthreads": 1, "resources": {"GPU": 1},
                        "env": {"CUDA_VISIBLE_DEVICES": str(i), "PYTHONPATH": str(REPO),
                                "ECOCOMPUTE_CACHE": str(synthetic_cache)},
                        "memory_limit": 0, "dashboard": False, "name": f"gpu{i}"},
        }
        for i in (0, 1)
    }  # fmt: skip
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard": False}}
    marker = tmp_path / "killed-once"
    killer = (sys.executable, "-m", "tests.fleet.point_killer", str(marker))
    runs = _runs(tmp_path, 1)[:1]
    got: dict[str, object] = {}
    with (
        SpecCluster(workers=workers, scheduler=scheduler, silence_logs=40) as dask_cluster,
        Client(dask_cluster, set_as_default=False) as client,
    ):
        fleet = _on(client, point_command=killer, every_gpu=True)
        thread = threading.Thread(
            target=lambda: got.update(records=run_fleet(tmp_path, runs, fleet, Progress(True))),
            daemon=True,
        )
        thread.start()
        thread.join(120)
        assert not thread.is_alive(), "the sweep waited for a worker address that is gone"
    records = got["records"]
    assert sorted(r.status for r in records) == ["failed", "ok"], records
    (lost,) = [r for r in records if r.status == "failed"]
    assert "was lost" in (lost.error or "")


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_workers_of_two_cards_fail_the_summary_not_the_input(cluster, tmp_path, monkeypatch):
    """Workers of two card models: the points ran, then the summary refused them as bad
    input (exit 2, 'nothing was written') beside their written reports (a review,
    2026-12-05). It is a failure after the run that says what stands."""
    from ecocompute.errors import RunError

    monkeypatch.setenv("ECOCOMPUTE_CACHE", os.environ["ECOCOMPUTE_CACHE"])
    fleet = _on(cluster, point_command=(sys.executable, "-m", "tests.fleet.two_cards"))
    kw = {"options": TINY, "progress": Progress(True), "n_boot": 50}
    with pytest.raises(RunError) as info:
        fleet_sweep(["synthetic:tiny-test"], ["NF4", "INT8"], tmp_path, fleet, **kw)
    text = str(info.value)
    assert "invalid card" in text and "the 2 point(s) that finished keep their energy.json" in text
    assert len(list(tmp_path.rglob("energy.json"))) == 2
    assert not (tmp_path / "sweep.json").exists()


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_lost_scheduler_fails_the_pending_points_and_keeps_the_finished(
    cluster, tmp_path, monkeypatch
):
    """The scheduler killed mid-sweep: wait() raised FuturesCancelledError, which the
    client took for a bug ('internal error', no sweep.json) though a point had finished
    (a review, 2026-12-05). Each pending point fails, saying why; the records stand."""
    import distributed
    from distributed.client import FuturesCancelledError

    from ecocompute.fleet.client import run_fleet

    real, calls = distributed.wait, []

    def wait(futures, **kw):
        calls.append(len(futures))
        if len(calls) > 1 and len(futures) == 1:  # one point settled, one pending
            raise FuturesCancelledError([])
        return real(futures, **kw)

    monkeypatch.setattr(distributed, "wait", wait)
    runs = _runs(tmp_path, 1)  # NF4 and INT8
    records = run_fleet(tmp_path, runs, _on(cluster, point_command=FAKE_CLI), Progress(True))
    statuses = sorted(r.status for r in records)
    assert statuses == ["failed", "ok"], records
    (lost,) = [r for r in records if r.status == "failed"]
    assert "lost the connection to the Dask scheduler (FuturesCancelledError)" in (lost.error or "")


@needs_dask
@pytest.mark.slow
@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_a_queued_point_cancelled_by_an_interrupt_never_started_and_had_no_gpu(cluster, tmp_path):
    """Ctrl-C while two points run and a third waits: the third's record said
    'cancelled ... while it ran' with a host and GPU, though its command never started
    (a review, 2026-12-05)."""
    from ecocompute.fleet.client import FleetInterrupted, run_fleet

    class CtrlC(io.StringIO):
        running = 0

        def write(self, text: str) -> int:
            if "running on" in text:
                self.running += 1
                if self.running == 2:
                    time.sleep(1.0)  # both commands started
                    raise KeyboardInterrupt
            return super().write(text)

    runs = _runs(tmp_path, 2, iterations="30")  # 4 points on 2 GPUs: 2 wait
    with pytest.raises(FleetInterrupted) as info:
        run_fleet(tmp_path, runs, _on(cluster, point_command=FAKE_CLI), Progress(False, CtrlC()))
    records = info.value.records
    waited = [r for r in records if "before it started" in (r.error or "")]
    assert len(waited) == 2 and all((r.host, r.gpu, r.worker) == (None,) * 3 for r in waited)
    ran = [r for r in records if "while it ran" in (r.error or "")]
    assert len(ran) == 2 and all(r.gpu in ("0", "1") for r in ran)
