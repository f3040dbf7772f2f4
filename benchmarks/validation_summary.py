"""Headline figures from committed GPU validation runs (reports and their logs).

(a) energy counter vs 10 Hz sampled energy, every trial window (and those >= 5 s);
(b) sampler overhead, from sampler_overhead.py's log;
(c) wall time to a verdict: from the run's progress log, the first round after which
    the running 95% interval excludes 0 for good, and the run's total wall time.

    python benchmarks/validation_summary.py docs/validation
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROUND = re.compile(
    r"^\[\s*([\d.]+)s\] trial (\d+)/(\d+):.*?(?:\(95% CI ([+-][\d.]+)\.\.([+-][\d.]+)%\))?$"
)


def counter_vs_sampled(reports: list[Path]) -> None:
    print("(a) energy counter vs 10 Hz sampled energy per trial window")
    width = max(len(str(path.parent)) for path in reports) if reports else 3
    print(
        f"{'run':{width}s} {'edges':>12s} {'windows':>7s} {'max|d|':>7s} {'>=5s':>5s} "
        f"{'max|d| >=5s':>11s} {'>1% (>=5s)':>10s}"
    )
    for path in reports:
        report = json.loads(path.read_text())
        trials = report["results"]["trials"]
        if not trials:
            continue
        d = [
            abs(t["sampled_vs_counter_pct"])
            for t in trials
            if t["sampled_vs_counter_pct"] is not None
        ]
        long = [abs(t["sampled_vs_counter_pct"]) for t in trials if t["duration_s"] >= 5.0]
        edges = report["measurement"].get("counter_edges", {}).get("mode", "plain reads")
        edges = "interpolated" if edges.startswith("interpolated") else edges
        longest = f"{max(long):10.2f}%" if long else f"{'-':>11s}"
        print(
            f"{path.parent!s:{width}s} {edges:>12s} {len(d):7d} {max(d):6.2f}% {len(long):5d} "
            f"{longest} {sum(x > 1.0 for x in long):10d}"
        )


def time_to_verdict(logs: list[Path]) -> None:
    print("\n(c) wall time to a verdict (running paired 95% CI excludes 0 from then on)")
    for log in logs:
        runs: list[list[tuple[float, int, int, bool]]] = []
        paired: dict[int, bool] = {}
        for line in log.read_text().splitlines():
            m = ROUND.match(line.strip())
            if m:
                t, k, n, lo, hi = m.groups()
                if int(k) == 1:
                    runs.append([])  # a log may hold several runs (smoke, sweep)
                excludes = lo is not None and (float(lo) > 0 or float(hi) < 0)
                runs[-1].append((float(t), int(k), int(n), excludes))
                paired[len(runs) - 1] = paired.get(len(runs) - 1, False) or "delta" in line
        for number, rounds in enumerate(runs, 1):
            if rounds[-1][1] < 2 or not paired[number - 1]:
                continue  # a single format (FP16 alone) has no paired interval
            first = next(
                (rounds[i] for i in range(len(rounds)) if all(r[3] for r in rounds[i:])), None
            )
            where = (
                f"after round {first[1]}/{first[2]}, {first[0]:.0f} s into the run"
                if first
                else "none (interval includes 0 at the end)"
            )
            print(
                f"  {log!s} run {number}: verdict {where}; all rounds done at {rounds[-1][0]:.0f} s"
            )


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/validation")
    reports = sorted(root.glob("**/energy.json"))
    counter_vs_sampled(reports)
    overhead = sorted(root.glob("**/sampler-overhead.log"))
    print("\n(b) sampler overhead (throughput with / without the 10 Hz sampler)")
    for log in overhead:
        last = [ln for ln in log.read_text().splitlines() if ln.startswith("median ratio")]
        print(f"  {log}: {last[-1] if last else 'no result'}")
    time_to_verdict(sorted(p for p in root.glob("**/*.log") if "overhead" not in p.name))


if __name__ == "__main__":
    main()
