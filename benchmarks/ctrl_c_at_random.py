"""Ctrl-C at a random moment of a whole run, many times: what each run did.

Each try starts `python -m ecocompute energy_estimate --dry_run` (or, with --command
aggregate, `aggregate docs/validation -o <folder>/table.csv`) in a fresh interpreter
(so Python's start-up and every import are inside the window), in a folder that
already holds an earlier report, and sends SIGINT (or --signal) after a delay drawn
uniformly from 0 to --max_ms: one signal, or with --burst N a burst of N signals
--burst_gap_ms apart, as a held-down Ctrl-C sends. Tries run --parallel at a time. One
JSON line per try on stdout: the delay, the exit status, stderr, whether the old
report is still byte-identical, whether the report there now is valid, what else is in
the folder, and whether the process had already exited, or printed its summary,
before the signal. This script measures; tests/test_hostile_signals.py judges.

    python benchmarks/ctrl_c_at_random.py --runs 200 [--max_ms 300] [--parallel 4]
    python benchmarks/ctrl_c_at_random.py --runs 200 --burst 5 --burst_gap_ms 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OLD_REPORT = b'{"an": "earlier report"}\n'


def command_for(name: str, folder: Path) -> list[str]:
    if name == "aggregate":
        reports = str(REPO / "docs" / "validation")
        return [
            sys.executable,
            "-m",
            "ecocompute",
            "aggregate",
            reports,
            "-o",
            str(folder / "table.csv"),
        ]
    command = [sys.executable, "-m", "ecocompute", "energy_estimate", "--dry_run", "-q"]
    return [*command, "--params_b", "1.1", "--output_dir", str(folder)]


def one_try(
    folder: Path,
    delay_s: float,
    signum: int,
    burst: int = 1,
    gap_s: float = 0.002,
    name: str = "energy_estimate",
) -> dict[str, object]:
    folder.mkdir(parents=True)
    (folder / "energy.json").write_bytes(OLD_REPORT)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = command_for(name, folder)
    proc = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # a background job inherits SIGINT ignored; a terminal user's run has the default
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(delay_s)
    finished_first = proc.poll() is not None
    # with -q, stdout gets the summary only once the report is written and the command
    # is all but over: if it is there already, the signal comes after the work
    printed_first = bool(select.select([proc.stdout], [], [], 0)[0])
    for k in range(burst):
        if proc.poll() is not None:
            break
        if k:
            time.sleep(gap_s)
        proc.send_signal(signum)
    out, err = proc.communicate(timeout=120)
    report = folder / "energy.json"
    data = report.read_bytes() if report.is_file() else None
    checked = subprocess.run(
        [sys.executable, "-m", "ecocompute", "validate", str(report)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return {
        "command": name,
        "burst": burst,
        "delay_ms": round(delay_s * 1000, 1),
        "finished_first": finished_first,
        "printed_first": printed_first,
        "status": proc.returncode,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
        "old_report_intact": data == OLD_REPORT,
        "report_valid": data != OLD_REPORT and checked.returncode == 0,
        "folder": sorted(p.name for p in folder.iterdir()),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--max_ms", type=float, default=300.0)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--signal", default="SIGINT")
    parser.add_argument("--burst", type=int, default=1, help="signals per try (a held key)")
    parser.add_argument("--burst_gap_ms", type=float, default=2.0)
    parser.add_argument(
        "--command", choices=("energy_estimate", "aggregate"), default="energy_estimate"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    delays = [rng.uniform(0.0, args.max_ms / 1000.0) for _ in range(args.runs)]
    signum = signal.Signals[args.signal]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(args.parallel) as pool:
        tries = pool.map(
            lambda k: one_try(
                Path(tmp) / f"try{k}",
                delays[k],
                signum,
                args.burst,
                args.burst_gap_ms / 1000.0,
                args.command,
            ),
            range(args.runs),
        )
        for result in tries:
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
