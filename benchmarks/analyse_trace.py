"""Compare the energy counter with integrated instant power in a power_trace_probe trace.

For each decode window: the counter's energy, the integral of the ~1 kHz polled instant
power, and of 10 Hz subsamples at 10 phases; plus how often the power value changes.

    python benchmarks/analyse_trace.py docs/validation/h200-trace-probe/trace.json.gz
"""

from __future__ import annotations

import gzip
import itertools
import json
import statistics
import sys

from ecocompute.monitor.sampler import integrate_trapezoid


def main() -> None:
    path = sys.argv[1]
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    times = [p[0] for p in data["polls"]]
    watts = [p[1] / 1000.0 for p in data["polls"]]
    changes = [times[i] for i in range(1, len(watts)) if watts[i] != watts[i - 1]]
    gaps_ms = [(b - a) * 1000 for a, b in itertools.pairwise(changes)]
    print(
        f"{len(times)} polls; power value changes every {statistics.median(gaps_ms):.1f} ms "
        "(median)"
    )
    print("window  format  seconds  counter J  1kHz vs counter  10 Hz vs counter (10 phases)")
    for k, w in enumerate(data["windows"]):
        counter_j = (w["e1_mj"] - w["e0_mj"]) / 1000.0
        full = integrate_trapezoid(times, watts, w["t0"], w["t1"])
        sub = []
        for phase in range(10):
            grid, i = times[0] + phase * 0.01, 0
            ts, ws = [], []
            while grid < times[-1]:
                while i < len(times) and times[i] < grid:
                    i += 1
                if i < len(times):
                    ts.append(times[i])
                    ws.append(watts[i])
                grid += 0.1
            sub.append((integrate_trapezoid(ts, ws, w["t0"], w["t1"]) - counter_j) / counter_j)
        print(
            f"{k:6d}  {w['precision']:6s}  {w['t1'] - w['t0']:7.2f}  {counter_j:9.1f}  "
            f"{(full - counter_j) / counter_j * 100:+14.2f}%  "
            f"{statistics.fmean(sub) * 100:+.2f}% "
            f"(spread {min(sub) * 100:+.2f}..{max(sub) * 100:+.2f})"
        )


if __name__ == "__main__":
    main()
