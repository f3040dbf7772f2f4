"""Record NVML's instant-power field at ~1 kHz around decode windows, with the energy
counter at each window's edges, to study how 10 Hz sampling compares with the counter.

Writes a JSON trace: every poll (monotonic time, value, NVML's own field timestamp) and
every window (edges in monotonic time, counter mJ at the edges).

    python benchmarks/power_trace_probe.py --out trace.json --windows 8
"""

from __future__ import annotations

import argparse
import json
import threading
import time

import pynvml
from probe_models import greedy, load_models


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
    polls: list[tuple[float, int, int]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            (v,) = pynvml.nvmlDeviceGetFieldValues(handle, [186])
            polls.append((time.monotonic(), int(v.value.uiVal), int(v.timestamp)))
            time.sleep(0.001)

    def decode(model) -> None:
        greedy(model, prompt, args.tokens)

    for model in models.values():
        decode(model)
    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    windows = []
    time.sleep(1.0)
    for k in range(args.windows):
        precision = "FP16" if k % 2 == 0 else "NF4"
        accel.synchronize()
        e0 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        t0 = time.monotonic()
        decode(models[precision])
        accel.synchronize()
        t1 = time.monotonic()
        e1 = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        windows.append({"precision": precision, "t0": t0, "t1": t1, "e0_mj": e0, "e1_mj": e1})
        print(f"window {k}: {precision} {t1 - t0:.2f} s, counter {(e1 - e0) / 1000:.1f} J")
    time.sleep(1.0)
    stop.set()
    thread.join()
    with open(args.out, "w") as fh:
        json.dump({"polls": polls, "windows": windows}, fh)
    print(f"{len(polls)} polls over {polls[-1][0] - polls[0][0]:.1f} s")


if __name__ == "__main__":
    main()
