"""The real CLI in a process of its own, on two fake GPUs of constant power (GPU 0 at
150 W, GPU 1 at 100 W, energy counters) whose memory the in-memory builder places
models in (tests/fake_gpus.py), with the real model backend: NF4 and LLM.int8() are
quantized by bitsandbytes on the CPU. For the CPU rehearsal of
benchmarks/fewer_gpus_h200x2.sh:

    python -m tests.cli_with_fake_gpus energy_estimate --model synthetic:tiny-in-memory \\
        --precision NF4,INT8 --max_gpu_memory_gib 0.00041 ...

--max_gpu_memory_gib caps each fake GPU's budget as it caps a real one's. Only the
seams of ecocompute.task.run are replaced; everything else is the shipped code.
"""

from __future__ import annotations

import sys

from ecocompute.cli import entry
from ecocompute.llm.loading import ModelBackend
from ecocompute.task.machine import Machine

from .fake_gpus import FakeGpus
from .fakes import FakeTelemetry, fake_devices, scheduled_sampler

WATTS = {0: 150.0, 1: 100.0}


def machine() -> Machine:
    def telemetry() -> FakeTelemetry:
        power = {i: (lambda t, w=w: w) for i, w in WATTS.items()}
        return FakeTelemetry(fake_devices(2), power_w=power, counter_step_s=0.01)

    return Machine(
        open_telemetry=telemetry,
        open_accelerator=lambda count, cap_gib=None: FakeGpus(max_memory_gib=cap_gib, sync_s=0.02),
        backend=ModelBackend(),
        open_sampler=scheduled_sampler,  # reads on schedule, however loaded the CPU
    )


if __name__ == "__main__":
    import ecocompute.task.run as run

    run.this_machine = machine
    sys.exit(entry.main(sys.argv[1:]))
