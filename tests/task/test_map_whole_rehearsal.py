"""benchmarks/map_whole_h200.sh rehearsed on the CPU (REHEARSAL=1): the script's whole
path, through the real CLI with the fakes, so that the H200 calls do not meet a broken
script. The phases part, the one whose flags are new: a prompt axis, phases apart."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

import pytest

from ..conftest import REPO

pytestmark = pytest.mark.slow


@pytest.mark.e2e  # slow (seconds to a minute): .ci/run's e2e step
def test_the_phases_part_rehearses_on_the_cpu(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    env = {
        **os.environ,
        "REHEARSAL": "1",
        "PY": sys.executable,
        "OUT": str(out),
        "PROMPTS": "8,16",
        "FORMATS": "NF4",
        "TMPDIR": str(tmp_path),
        "PYTHONPATH": str(REPO),
    }
    done = subprocess.run(
        ["bash", str(REPO / "benchmarks" / "map_whole_h200.sh"), "phases"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "phases: exit 0" in done.stdout, done.stdout[-3000:]
    assert "INVALID" not in done.stdout
    assert "(prefill decides)" in done.stdout or "(decode decides)" in done.stdout
    with tarfile.open(out / "map-whole-phases-NF4.tar.gz") as tar:
        names = tar.getnames()
    assert any(n.endswith("p8/sweep.json") for n in names)
    assert any(n.endswith("p16/synthetic-tiny-test-NF4-b16/energy.json") for n in names)
