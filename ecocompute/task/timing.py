"""Seconds a measured run spent per stage, on the host's monotonic clock, outside every
measured window: what a session costs in GPU time. And the host's CPU over the measure
stage: the share of its CPU time a hypervisor gave to other guests (steal, from
/proc/stat), read at the stage's two ends, never inside a window.

Why steal: the eager regime waits on Python between kernels, so its energy per token
follows the host's speed; on a shared host (a virtual machine) the speed also follows the
neighbours. The third H200 session's host decoded eager FP16 at 33.9 tokens/s where
another had 45.0, and a format's energy moved by up to 46% from round to round
(docs/validation/h200-map-whole); nothing in those reports said whether the host was
slow or shared."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

PROC_STAT = "/proc/stat"


@dataclass(frozen=True)
class CpuTimes:
    """The host's CPU time so far, all CPUs together, in clock ticks (/proc/stat)."""

    total: int
    steal: int


def read_cpu_times(path: str = PROC_STAT) -> CpuTimes | None:
    """The first line of /proc/stat ("cpu user nice system idle iowait irq softirq steal
    ..."); None where there is none (not Linux) or it does not read as one."""
    try:
        with open(path, encoding="ascii", errors="replace") as stat:
            first = stat.readline().split()
    except OSError:
        return None
    if len(first) < 9 or first[0] != "cpu" or not all(f.isdigit() for f in first[1:]):
        return None
    ticks = [int(f) for f in first[1:]]
    # guest and guest_nice (fields 9 and 10) are already counted in user and nice
    return CpuTimes(total=sum(ticks[:8]), steal=ticks[7])


@dataclass(frozen=True)
class Timing:
    load_s: float  # loading (and quantizing) the models; 0 for models reused
    prepare_s: float  # preparing the regimes (compile, capture and token check)
    measure_s: float  # idle window, warm-ups and every round
    reused_models: bool  # the models were already resident (a sweep's earlier point)
    # of the host's CPU time over the measure stage, the share stolen by the hypervisor
    # (percent); None where /proc/stat did not read or no tick passed
    measure_cpu_steal_pct: float | None = None


class Stopwatch:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"load": 0.0, "prepare": 0.0, "measure": 0.0}
        self.reused = False
        # the measure stage's CPU ticks, all and stolen, summed over its phases
        self._total_ticks = self._steal_ticks = 0
        self._unread = False  # a read of /proc/stat failed at one of the stage's ends

    def add(self, stage: str, since: float) -> None:
        self.seconds[stage] += time.monotonic() - since

    @contextmanager
    def measuring(self) -> Iterator[None]:
        """The block as (a phase of) the measure stage: its seconds, and the host's CPU
        times read at its two ends (outside the block, so outside every window in it)."""
        since, before = time.monotonic(), read_cpu_times()
        yield
        self.add("measure", since)
        self.add_cpu(before, read_cpu_times())

    def add_cpu(self, before: CpuTimes | None, after: CpuTimes | None) -> None:
        """The host's CPU times at the two ends of one measure phase."""
        if before is None or after is None:
            self._unread = True
            return
        self._total_ticks += after.total - before.total
        self._steal_ticks += after.steal - before.steal

    def timing(self) -> Timing:
        s = self.seconds
        total, steal = self._total_ticks, self._steal_ticks
        pct = None if self._unread or total <= 0 else 100.0 * max(steal, 0) / total
        return Timing(s["load"], s["prepare"], s["measure"], self.reused, pct)
