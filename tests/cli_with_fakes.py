"""The real CLI in a process of its own, with the fake machine behind it: a fake NVML
device (steady 100 W, an energy counter), the CPU stand-in for CUDA and the stand-in
quantized backend. For tests that must signal or kill a real process:

    python -m tests.cli_with_fakes energy_estimate --model synthetic:tiny-test ...

Only the seams of ecocompute.task.run are replaced; everything else (the entry
point's signal handling, argument parsing, the protocol, the report writer) is the
shipped code. With ECOCOMPUTE_TEST_SIGNAL_AFTER_RENAME=SIGTERM (or another signal's
name), the process sends itself that signal the moment energy.json has been renamed
into place: the narrowest window there is between "written" and "said so".
"""

from __future__ import annotations

import os
import signal
import sys

from ecocompute import entry

from .fakes import CpuAccelerator, FakeTelemetry, install_fakes


def signal_after_rename(name: str) -> None:
    real_replace = os.replace

    def replace_then_signal(src, dst) -> None:
        real_replace(src, dst)
        if os.path.basename(dst) == "energy.json":
            os.kill(os.getpid(), signal.Signals[name])

    os.replace = replace_then_signal


if __name__ == "__main__":
    # Each window ends in a 20 ms "queue drain", so trials are long enough to be
    # interrupted in the middle of one.
    install_fakes(setattr, FakeTelemetry, CpuAccelerator(sync_s=0.02))
    after = os.environ.get("ECOCOMPUTE_TEST_SIGNAL_AFTER_RENAME")
    if after:
        signal_after_rename(after)
    sys.exit(entry.main(sys.argv[1:]))
