"""Does the 10 Hz power sampler slow the decode it measures?

Loads a model at FP16 on cuda:0 and times decode runs with and without the sampler
thread running, interleaved in pairs whose order alternates (ABBA...), and prints each
pair's throughput ratio (with / without) and the median.

    python benchmarks/sampler_overhead.py --model synthetic:tinyllama-1.1b --pairs 12
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time

from probe_models import greedy, load_models

from ecocompute.core.units import mw_to_w
from ecocompute.monitor.sampler import PowerSampler
from ecocompute.telemetry.mapping import match_devices
from ecocompute.telemetry.nvml import open_nvml


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="synthetic:tinyllama-1.1b")
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--pairs", type=int, default=12)
    parser.add_argument("--rate_hz", type=float, default=10.0)
    args = parser.parse_args()

    accel, models, prompt = load_models(args.model, ("FP16",))
    model = models["FP16"]
    telemetry = open_nvml()
    nvml_index = match_devices(accel.devices(), telemetry.devices())[0].nvml.index

    def decode_s(sampling: bool) -> float:
        sampler = PowerSampler(lambda i: mw_to_w(telemetry.power_mw(i)), [nvml_index], args.rate_hz)
        with sampler if sampling else contextlib.nullcontext():
            accel.synchronize()
            t0 = time.perf_counter()
            greedy(model, prompt, args.tokens)
            accel.synchronize()
            return time.perf_counter() - t0

    for _ in range(2):
        decode_s(False)
    ratios = []
    print(
        f"model {args.model}, {args.tokens} tokens, sampler {args.rate_hz:g} Hz on NVML GPU "
        f"{nvml_index}; ratio = throughput with sampler / without"
    )
    for k in range(args.pairs):
        order = (True, False) if k % 2 == 0 else (False, True)
        times = {s: decode_s(s) for s in order}
        ratio = times[False] / times[True]  # throughput ratio = inverse time ratio
        ratios.append(ratio)
        print(
            f"pair {k + 1:2d}: with {args.tokens / times[True]:6.2f} tok/s, without "
            f"{args.tokens / times[False]:6.2f} tok/s, ratio {ratio:.4f}"
        )
    print(
        f"median ratio {statistics.median(ratios):.4f} (min {min(ratios):.4f}, "
        f"max {max(ratios):.4f}, n={len(ratios)})"
    )
    telemetry.close()


if __name__ == "__main__":
    main()
