from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PARAMS_FILE = REPO / "workspace" / "parameters" / "energy_params.yaml"

# No test may reach the network: a hub id that is not cached fails at once instead of
# retrying for a minute. Set before anything imports huggingface_hub (it reads this at
# import), and inherited by the CLI subprocesses.
os.environ["HF_HUB_OFFLINE"] = "1"
# One compute thread per test process: the suite runs two workers a core (pytest -n),
# and a torch that spreads each worker over every core slows everything. (The fakes'
# power sampler has no thread to starve: tests/fakes.py ScheduledSampler reads on
# schedule whatever the load.) Read at torch's import.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture
def run_cli(tmp_path):
    """Run `python -m ecocompute ...` in a subprocess, as a user would."""

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        return subprocess.run(
            [sys.executable, "-m", "ecocompute", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=full_env,
            timeout=300,
        )

    return run


def read_report(folder: Path) -> dict:
    return json.loads((folder / "energy.json").read_text())


def derived_source(report: dict) -> str:
    """A derived report's measurement_source (exactly the published phrase, checked here)
    with the reason the report gives beside it: "ecocompute-dataset (no local GPU): why"."""
    assert report["measurement_source"] == "ecocompute-dataset (no local GPU)", report
    return f"{report['measurement_source']}: {report['measurement_source_reason']}"


@pytest.fixture(scope="session")
def synthetic_cache(tmp_path_factory) -> Path:
    """One ECOCOMPUTE_CACHE for the session: synthetic checkpoints are built once."""
    return tmp_path_factory.mktemp("ecocompute-cache")


@pytest.fixture
def default_signal_handlers():
    """Python's own handlers of SIGINT, SIGTERM and SIGHUP while a test runs, whatever
    this process inherited (a shell's background job has SIGINT ignored, and the CLI
    leaves an ignored signal ignored), and the inherited ones back afterwards."""
    names = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {s: signal.getsignal(s) for s in names}
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, names)  # and none of them blocked
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    yield
    for s, h in before.items():
        signal.signal(s, h)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
