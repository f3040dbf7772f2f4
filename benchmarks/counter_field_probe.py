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
import time

import pynvml
from probe_models import load_models, windows_under_polling

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

    def poll_once() -> tuple[float, float, int, int, int, int, int, int]:
        t_before = time.monotonic()
        energy_mj = pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
        avg, inst = pynvml.nvmlDeviceGetFieldValues(handle, [FIELD_AVERAGE, FIELD_INSTANT])
        t_after = time.monotonic()
        return (
            t_before,
            t_after,
            int(energy_mj),
            int(inst.value.uiVal),
            int(inst.timestamp),
            int(inst.nvmlReturn),
            int(avg.value.uiVal),
            int(avg.nvmlReturn),
        )

    polls, windows = windows_under_polling(
        accel, models, prompt, args.tokens, args.windows, poll_once
    )
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
