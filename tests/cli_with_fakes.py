"""The real CLI in a process of its own, with the fake machine behind it: a fake NVML
device (steady 100 W, an energy counter), the CPU stand-in for CUDA and the stand-in
quantized backend. For tests that must signal or kill a real process:

    python -m tests.cli_with_fakes energy_estimate --model synthetic:tiny-test ...

Only the seams of ecocompute.task.run are replaced; everything else (the entry
point's signal handling, argument parsing, the protocol, the report writer) is the
shipped code. With ECOCOMPUTE_TEST_SIGNAL_AFTER_RENAME=SIGTERM (or another signal's
name), the process sends itself that signal the moment energy.json has been renamed
into place: the narrowest window there is between "written" and "said so". With
ECOCOMPUTE_TEST_COMPILE_FAILS=NF4 (a format's label), the compiled regime's compile of
that format raises, as a format torch.compile cannot hold would (benchmarks' rehearsals).
With ECOCOMPUTE_TEST_THREADED_SAMPLER=1, power is read by the real sampler's thread
(the e2e tests), else on schedule (tests/fakes.py ScheduledSampler).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import sys

from ecocompute.cli import entry
from ecocompute.monitor.sampler import open_power_sampler

from .fakes import CpuAccelerator, FakeTelemetry, fake_devices, install_fakes, scheduled_sampler


def signal_after_rename(name: str) -> None:
    real_replace = os.replace

    def replace_then_signal(src, dst) -> None:
        real_replace(src, dst)
        if os.path.basename(dst) == "energy.json":
            os.kill(os.getpid(), signal.Signals[name])

    os.replace = replace_then_signal


def compile_fails_for(label: str) -> None:
    from ecocompute.llm.compiled import CompiledDecoder

    real_first_call = CompiledDecoder._first_call

    def first_call(self, *, fullgraph):
        if self.label == label:
            raise RuntimeError(f"injected: {label} does not compile here\n(a second line)")
        return real_first_call(self, fullgraph=fullgraph)

    CompiledDecoder._first_call = first_call


if __name__ == "__main__":
    # Each window ends in a 20 ms "queue drain", so trials are long enough to be
    # interrupted in the middle of one.
    # A fleet worker's process sees one GPU (CUDA_VISIBLE_DEVICES=k): the fake NVML device
    # then carries a UUID of its own per k, as the units of a real host do.
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
    telemetry = FakeTelemetry
    if visible.isdigit():
        (device,) = fake_devices(1)
        unit = dataclasses.replace(
            device, uuid=f"GPU-{int(visible):08d}-aaaa-bbbb-cccc-dddddddddddd"
        )
        telemetry = functools.partial(FakeTelemetry, [unit])
    # ECOCOMPUTE_TEST_THREADED_SAMPLER=1 (the e2e signal tests): the real, threaded
    # power sampler; else the one that reads on schedule whatever the load
    threaded = os.environ.get("ECOCOMPUTE_TEST_THREADED_SAMPLER") == "1"
    sampler = open_power_sampler if threaded else scheduled_sampler
    install_fakes(setattr, telemetry, CpuAccelerator(sync_s=0.02), open_sampler=sampler)
    after = os.environ.get("ECOCOMPUTE_TEST_SIGNAL_AFTER_RENAME")
    if after:
        signal_after_rename(after)
    fails = os.environ.get("ECOCOMPUTE_TEST_COMPILE_FAILS")
    if fails:
        compile_fails_for(fails)
    sys.exit(entry.main(sys.argv[1:]))
