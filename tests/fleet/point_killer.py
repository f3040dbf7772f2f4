"""A fleet point command that kills the Dask worker running it, once: the first point
to create the marker file SIGKILLs its parent (the worker process, as a host's
out-of-memory killer would) and exits; every other run is tests.cli_with_fakes.

    python -m tests.fleet.point_killer MARKER energy_estimate ...
"""

from __future__ import annotations

import os
import signal
import sys

from ecocompute import cli

from ..fakes import CpuAccelerator, FakeTelemetry, install_fakes


def first_to_claim(marker: str) -> bool:
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


if __name__ == "__main__":
    marker, argv = sys.argv[1], sys.argv[2:]
    if first_to_claim(marker):
        os.kill(os.getppid(), signal.SIGKILL)
        sys.exit(137)
    install_fakes(setattr, FakeTelemetry, CpuAccelerator(sync_s=0.02))
    sys.exit(cli.main(argv))
