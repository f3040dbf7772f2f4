"""The machine a report was made on, beyond its GPUs: the platform, the host's name, and
its CPU (system_under_test.host_cpu).

The CPU matters to the eager regime: generate() at batch 1 waits on Python between
kernels, so energy per token follows the host's speed. On two H200 hosts FP16 decoded
45.0 and 33.9 tokens/s and NF4 cost +5.9% and +33.1% under the same protocol
(docs/validation/h200-map-whole, third session); the reports then named the GPU, its
board and VBIOS, and nothing that told the two hosts apart. Six H200 units since
(docs/validation/h200-eager-units) decoded FP16 at 29-43 tokens/s, and every host named
its CPU "Intel(R) Xeon(R) Processor": a hypervisor hides the name, so the family, model
and stepping numbers, the clock and the hypervisor flag are kept too. Read from the
operating system when the report is built; every field may be absent where the system
does not say.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from typing import TypedDict

from ecocompute.core.printable import printable
from ecocompute.report.model import CPU_ID_PATTERN, HostCpu

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
    first = _first_processor(cpuinfo)
    model = first.get("model name") or first.get("Model") or platform.processor()
    cpu_id = "family {} model {} stepping {}".format(
        *(first.get(k, "") for k in ("cpu family", "model", "stepping"))
    )
    flags = first.get("flags")
    return HostCpu(
        model=printable(model)[:MAX_MODEL_CHARS] if model else None,
        logical_cpus=os.cpu_count(),
        usable_cpus=len(usable) if usable is not None else None,
        cpu_id=cpu_id if re.fullmatch(CPU_ID_PATTERN, cpu_id) else None,
        clock_mhz=_number(first.get("cpu MHz")),
        hypervisor=None if flags is None else "hypervisor" in flags.split(),
    )


def _first_processor(cpuinfo: str) -> dict[str, str]:
    """The first value of each field in /proc/cpuinfo (Linux): the first processor's,
    and those that follow every processor's ("Model" on Arm); empty without the file.
    Read up to the first processor's end where that names the model (x86): a large
    host's file repeats the block for each of its hundreds of logical CPUs."""
    fields: dict[str, str] = {}
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as lines:
            for line in lines:
                key, sep, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if not key and "model name" in fields:
                    break  # a blank line: the first processor's block has ended
                if sep and value and key not in fields:  # the first processor's comes first
                    fields[key] = value
    except OSError:
        return {}
    return fields


def _number(text: str | None) -> float | None:
    """A clock the system reports, or None where it is missing, not a number, or absurd."""
    try:
        value = float(text or "nan")
    except ValueError:
        return None
    return value if 0 <= value < 1e6 else None
