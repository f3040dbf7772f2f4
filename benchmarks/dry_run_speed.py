"""How long a whole dry run takes, and whether it imports torch.

Runs the real CLI in fresh interpreters (so import time counts), N times, and reports
the median and max wall time, plus the heavy modules found in `python -X importtime`.

    python benchmarks/dry_run_speed.py [--runs 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

HEAVY = ("torch", "transformers", "bitsandbytes", "accelerate", "matplotlib", "scipy")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        cmd = [
            sys.executable,
            "-m",
            "ecocompute",
            "energy_estimate",
            "--dry_run",
            "--quiet",
            "--model",
            "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            "--params_b",
            "1.1",
            "--precision",
            "NF4",
            "--gpu_arch",
            "ada",
            "--output_dir",
            out,
        ]
        durations_s = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, capture_output=True)
            durations_s.append(time.perf_counter() - t0)
        traced = subprocess.run(
            [sys.executable, "-X", "importtime", *cmd[1:]],
            check=True,
            capture_output=True,
            text=True,
        )
    imported = {
        line.split("|")[-1].strip().split(".")[0]
        for line in traced.stderr.splitlines()
        if line.startswith("import time:")
    }
    print(f"command: {' '.join(cmd[1:])}")
    print(f"python: {sys.version.split()[0]}; runs: {args.runs} (fresh interpreter each)")
    print(
        f"wall time per dry run: median {statistics.median(durations_s) * 1000:.0f} ms, "
        f"min {min(durations_s) * 1000:.0f} ms, max {max(durations_s) * 1000:.0f} ms"
    )
    print(f"heavy modules imported: {sorted(set(HEAVY) & imported) or 'none'}")
    print(f"modules imported in total: {len(imported)} top-level packages")


if __name__ == "__main__":
    main()
