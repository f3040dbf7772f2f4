"""The real CLI in a process of its own, with the fake machine behind it: a fake NVML
device (steady 100 W, an energy counter), the CPU stand-in for CUDA and the stand-in
quantized backend. For tests that must signal or kill a real process:

    python -m tests.cli_with_fakes energy_estimate --model synthetic:tiny-test ...

Only the seams of ecocompute.estimate.run are replaced; everything else (argument parsing,
signal handling, the protocol, the report writer) is the shipped code.
"""

from __future__ import annotations

import sys

from ecocompute import cli

from .fakes import CpuAccelerator, FakeTelemetry, install_fakes

if __name__ == "__main__":
    # Each window ends in a 20 ms "queue drain", so trials are long enough to be
    # interrupted in the middle of one.
    install_fakes(setattr, FakeTelemetry, CpuAccelerator(sync_s=0.02))
    sys.exit(cli.main(sys.argv[1:]))
