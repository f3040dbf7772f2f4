"""How long validate, aggregate and plot take over many reports (issue 21, 5).

Makes N distinct reports in a temp folder, of two kinds: published-path dry runs (one
dry run, its timestamp changed per copy: distinct content, the same shape) and measured
session reports (a committed 5-format H200 report, likewise), then times each command
over each set, wall clock, one run each, printing a table. Run on a quiet machine:

    python benchmarks/many_reports_speed.py --n 5000

The committed figures (docs/validation/many-reports-speed.txt) are this script's output.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# A committed H200 report of format 1.4 (upgraded to the model when read), and a
# 4-format session report of format 2.0 made on the CPU with the test fakes (fake NVML:
# the shape of a measured report, not a measurement; named so that no folder search
# finds it as an energy.json):
#   python -m tests.cli_with_fakes energy_estimate --model_name synthetic:tiny-test \
#     --params_b 1.1 --precision NF4,INT8,INT4,FP8 --iterations 4 --warmup 1 --tokens 8 \
#     --sample_rate_hz 10 --gpu_arch hopper --output_dir /tmp/s5 --quiet
MEASURED_14 = REPO / "docs/validation/h200-map/map-7b/synthetic-llama-2-7b-b1/NF4/energy.json"
MEASURED_20 = REPO / "benchmarks/data/session-2.0-cpu-fakes.json"


def make(folder: Path, doc: dict, n: int) -> None:
    base = datetime.datetime(2026, 1, 1)
    for i in range(n):
        copy = dict(doc)
        copy["timestamp_utc"] = (base + datetime.timedelta(seconds=i)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        (folder / f"r{i:05d}").mkdir(parents=True)
        (folder / f"r{i:05d}" / "energy.json").write_text(json.dumps(copy, indent=2))


def dry_run_doc(tmp: Path) -> dict:
    from ecocompute.cli import main

    out = tmp / "seed"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "made-1.1b",
                "--gpu_arch", "ada", "--output_dir", str(out)]  # fmt: skip
        assert main(argv) == 0
    return json.loads((out / "energy.json").read_text())


def timed(args: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ecocompute", *args], capture_output=True, env=env)
    elapsed = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"{args[0]} failed: {done.stderr.decode()[-300:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument(
        "--sets",
        default="dry-run,measured-2.0,measured-1.4",
        help="which sets, by the first word of their name",
    )
    args = parser.parse_args()
    wanted = set(args.sets.split(","))
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sets = {
            "dry-run": dry_run_doc(tmp),
            "measured-2.0 session": json.loads(MEASURED_20.read_text()),
            "measured-1.4 session": json.loads(MEASURED_14.read_text()),
        }
        print(f"{args.n} reports per set; load average before: {os.getloadavg()[0]:.2f}")
        print(f"{'set':<28} {'validate s':>11} {'aggregate s':>12} {'plot s':>8} {'ms/report':>10}")
        for name, doc in sets.items():
            if name.split()[0] not in wanted:
                continue
            folder = tmp / name.split()[0]
            make(folder, doc, args.n)
            v = timed(["validate", str(folder)])
            a = timed(["aggregate", str(folder)])
            p = timed(["plot", str(folder), "-o", str(tmp / "p.png")])
            worst = max(v, a, p)
            print(f"{name:<28} {v:>11.2f} {a:>12.2f} {p:>8.2f} {1000 * worst / args.n:>10.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
