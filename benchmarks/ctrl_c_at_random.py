"""Ctrl-C at a random moment of a whole run, many times: what each run did.

Each try starts `python -m ecocompute energy_estimate --dry_run` (or, with --command
aggregate, `aggregate docs/validation -o <folder>/table.csv`) in a fresh interpreter
(so Python's start-up and every import are inside the window), in a folder that
already holds an earlier report, and sends SIGINT (or --signal) after a delay drawn
uniformly from 0 to --max_ms: one signal, or with --burst N a burst of N signals
--burst_gap_ms apart, as a held-down Ctrl-C sends. Tries run --parallel at a time. One
JSON line per try on stdout: the delay, the exit status, stderr, whether the old
report is still byte-identical, whether the report there now is valid, what else is in
the folder, whether the process had already exited, or printed its summary, before the
signal, and the outcome judged against docs/errors.md's promises. On stderr, the
outcomes counted; the exit status is 1 if any try broke a promise.

    python benchmarks/ctrl_c_at_random.py --runs 200 [--max_ms 300] [--parallel 4]
    python benchmarks/ctrl_c_at_random.py --runs 200 --burst 5 --burst_gap_ms 2

Random moments are luck by design, so this is a measurement, not a test; the suite's
signal tests are deterministic (tests/boundary/test_interrupts.py,
tests/boundary/test_signals_e2e.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OLD_REPORT = b'{"an": "earlier report"}\n'
OURS = "ecocompute: "
# Python's own start-up (site, runpy, finding the package) runs before the first line of
# ecocompute: a Ctrl-C there is Python's, with Python's traceback (entry.py says so).
# Its frames: frozen modules, the standard library, and "<string>" (a .pth line that
# site.py executes, the source namedtuple evaluates).
PYTHON_STARTUP = re.compile(
    r'  File "(<frozen [\w.]+>|<string>|[^"]*/lib/python3\.\d+/[^"]*)", line'
)


def judge(t: dict[str, Any], signum: int) -> str:
    """What the try did, or "BROKEN: " and the promise it broke."""
    status, err = t["status"], t["stderr"]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    table = t["command"] == "aggregate"
    if not set(t["folder"]) <= ({"energy.json", "table.csv"} if table else {"energy.json"}):
        return "BROKEN: a file left beside the report (a temp file?)"
    if table and not t["old_report_intact"]:
        return "BROKEN: aggregate touched the report it read"
    if "Traceback" in err or "Exception ignored" in err or "lost sys.stderr" in err:
        frames = [ln for ln in lines if ln.startswith("  File")]
        ours = "/ecocompute/" in err or any(ln.startswith(OURS) for ln in lines)
        if ours or not all(PYTHON_STARTUP.match(ln) for ln in frames):
            return "BROKEN: a traceback from ecocompute's code"
        return "python start-up" if t["old_report_intact"] else "BROKEN: report replaced"
    if status == -signum:  # the signal's default action: before Python had a handler
        return "before the interpreter" if not lines else "BROKEN: killed after its line"
    others = [ln for ln in lines if not ln.startswith("wrote ")]
    if status == 0:  # finished: complete, and never an interrupt swallowed mid-run
        done = "table.csv" in t["folder"] if table else t["report_valid"]
        told = others == [] or (len(others) == 1 and "arrived as the command finished" in others[0])
        early = t["finished_first"] or t["printed_first"] or table
        return "finished" if done and (early or others) and told else "BROKEN: exit 0"
    if status != 128 + signum or len(others) != 1 or not others[0].startswith(OURS):
        return "BROKEN: not one line of ours with 128 + the signal"
    if "arrived just after" in others[0]:
        return "just after the write" if t["report_valid"] else "BROKEN: report invalid"
    return "interrupted" if t["old_report_intact"] else "BROKEN: report replaced"


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
    tried: dict[str, Any] = {
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
    tried["outcome"] = judge(tried, signum)
    return tried


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
        outcomes: Counter[str] = Counter()
        for result in tries:
            print(json.dumps(result), flush=True)
            outcomes[str(result["outcome"])] += 1
    for outcome, count in outcomes.most_common():
        print(f"{count:5d}  {outcome}", file=sys.stderr)
    if any(o.startswith("BROKEN") for o in outcomes):
        sys.exit(1)


if __name__ == "__main__":
    main()
