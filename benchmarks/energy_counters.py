"""Print every GPU's NVML energy counter (mJ), one line, for before/after comparisons.

python benchmarks/energy_counters.py LABEL
"""

from __future__ import annotations

import sys
import time

from ecocompute.telemetry.nvml import open_nvml


def main() -> None:
    telemetry = open_nvml()
    parts = [f"{d.index}:{telemetry.energy_mj(d.index)}" for d in telemetry.devices()]
    label = sys.argv[1] if len(sys.argv) > 1 else ""
    print(f"counters_mj {label} t={time.monotonic():.3f} " + " ".join(parts))
    telemetry.close()


if __name__ == "__main__":
    main()
