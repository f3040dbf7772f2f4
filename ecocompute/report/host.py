"""The machine a report was made on, beyond its GPUs: the platform, the host's name, and
its CPU (system_under_test.host_cpu).

The CPU matters to the eager regime: generate() at batch 1 waits on Python between
kernels, so energy per token follows the host's speed. On two H200 hosts FP16 decoded
45.0 and 33.9 tokens/s and NF4 cost +5.9% and +33.1% under the same protocol
(docs/validation/h200-map-whole, third session); the reports then named the GPU, its
board and VBIOS, and nothing that told the two hosts apart. Read from the operating
system when the report is built; every field may be absent where the system does not say.
"""

from __future__ import annotations

import os
import platform
import socket
from typing import TypedDict

from ecocompute.core.printable import printable
from ecocompute.report.model import HostCpu

MAX_MODEL_CHARS = 200  # a model name is a line of text, printed as one


class Host(TypedDict):
    host: str
    hostname: str
    host_cpu: HostCpu


def this_host() -> Host:
    """system_under_test's fields for the machine this process runs on."""
    return Host(host=platform.platform(), hostname=socket.gethostname(), host_cpu=host_cpu())


def host_cpu(cpuinfo: str = "/proc/cpuinfo") -> HostCpu:
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    model = _cpu_model(cpuinfo) or platform.processor()
    return HostCpu(
        model=printable(model)[:MAX_MODEL_CHARS] if model else None,
        logical_cpus=os.cpu_count(),
        usable_cpus=len(usable) if usable is not None else None,
    )


def _cpu_model(cpuinfo: str) -> str | None:
    """The first processor's model name in /proc/cpuinfo (Linux on x86; "Model" on Arm)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("model name", "Model") and value.strip():
                    return value.strip()
    except OSError:
        return None
    return None
