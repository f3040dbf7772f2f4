"""A fleet point command: tests.cli_with_fakes, but the fake GPU behind
CUDA_VISIBLE_DEVICES=1 is an H100, so that a fleet's two workers are of two card models.

    python -m tests.fleet.two_cards energy_estimate ...
"""

from __future__ import annotations

import functools
import os
import runpy

from .. import fakes

if __name__ == "__main__":
    if os.environ.get("CUDA_VISIBLE_DEVICES") == "1":
        fakes.fake_devices = functools.partial(fakes.fake_devices, name="NVIDIA H100 80GB HBM3")
    runpy.run_module("tests.cli_with_fakes", run_name="__main__", alter_sys=True)
