"""Poll NVML's energy counter and its power fields together at ~1 kHz around decode
windows, to see what the instant-power field is compared with the counter: a short
snapshot of the power, or an average over the counter's 100 ms step.

Every poll records: monotonic time before and after the reads, the energy counter (mJ),
field 186 (instant power, mW) with NVML's own timestamp (us), and field 185 (average
power, mW). Windows are synchronize()-bracketed 256-token decodes, FP16 and NF4
alternating, back to back as in the protocol.

    python benchmarks/counter_field_probe.py --model synthetic:llama-2-7b --out probe.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import threading
import time

import pynvml
from probe_models import greedy, load_models

FIELD_AVERAGE, FIELD_INSTANT = 185, 186


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="synthetic:llama-2-7b")
    parser.add_argument("--windows", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    accel, models, prompt = load_models(args.model)
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByUUID(f"GPU-{accel.devices()[0].uuid}")
    polls: list[tuple[float, float, int, int, int, int, int, int]] = []
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            t_before = time.monotonic()
            energy_mj = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
            avg, inst = pynvml.nvmlDeviceGetFieldValues(handle, [FIELD_AVERAGE, FIELD_INSTANT])
            t_after = time.monotonic()
            polls.append(
                (
                    t_before,
                    t_after,
                    int(energy_mj),
                    int(inst.value.uiVal),
                    int(inst.timestamp),
                    int(inst.nvmlReturn),
                    int(avg.value.uiVal),
                    int(avg.nvmlReturn),
                )
            )
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
        t0 = time.monotonic()
        decode(models[precision])
        accel.synchronize()
        t1 = time.monotonic()
        windows.append({"precision": precision, "t0": t0, "t1": t1})
        print(f"window {k}: {precision} {t1 - t0:.2f} s", flush=True)
    time.sleep(1.0)
    stop.set()
    thread.join()
    columns = [
        "t_before_s",
        "t_after_s",
        "energy_mj",
        "instant_mw",
        "instant_timestamp_us",
        "instant_return",
        "average_mw",
        "average_return",
    ]
    with gzip.open(args.out, "wt") as fh:
        json.dump({"model": args.model, "columns": columns, "polls": polls, "windows": windows}, fh)
    print(f"{len(polls)} polls over {polls[-1][0] - polls[0][0]:.1f} s")


if __name__ == "__main__":
    main()
