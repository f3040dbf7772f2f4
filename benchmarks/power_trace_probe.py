"""Record NVML's instant-power field at ~1 kHz around decode windows, with the energy
counter at each window's edges, to study how 10 Hz sampling compares with the counter.

Writes a JSON trace: every poll (monotonic time, value, NVML's own field timestamp) and
every window (edges in monotonic time, counter mJ at the edges).

    python benchmarks/power_trace_probe.py --out trace.json --windows 8
"""

from __future__ import annotations

import argparse
import json
import time

import pynvml
from probe_models import load_models, windows_under_polling


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="synthetic:tinyllama-1.1b")
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    accel, models, prompt = load_models(args.model)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{accel.devices()[0].uuid}")

    def poll_once() -> tuple[float, int, int]:
        (v,) = pynvml.nvmlDeviceGetFieldValues(handle, [186])
        return time.monotonic(), int(v.value.uiVal), int(v.timestamp)

    polls, windows = windows_under_polling(
        accel,
        models,
        prompt,
        args.tokens,
        args.windows,
        poll_once,
        edge_mj=lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(handle),
    )
    with open(args.out, "w") as fh:
        json.dump({"polls": polls, "windows": windows}, fh)
    print(f"{len(polls)} polls over {polls[-1][0] - polls[0][0]:.1f} s")


if __name__ == "__main__":
    main()
