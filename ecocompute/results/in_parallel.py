"""Reading many report files on every CPU this process may use.

Each report is read and checked on its own (report/read.py: its schema, its numbers,
every figure derived again from its trials), so a large folder's files are shared out
among worker processes, and what comes back is the same list, in the same order, that
reading them one by one gives (tests/results/test_in_parallel.py holds it to that).

Workers are forked, so they start at once with everything this process has imported. They
are used only where that is safe and pays: at least PARALLEL_FROM files, more than one
usable CPU, and a process with no other thread (forking a threaded process can deadlock
the child); otherwise the files are read here, one by one. ECOCOMPUTE_READ_PROCESSES
sets the number of processes (1: never in parallel). A worker ignores SIGINT: an
interrupt reaches this process, which stops the workers and re-raises.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

log = logging.getLogger(__name__)

PARALLEL_FROM = 128  # fewer files read in well under a second here
MOST_PROCESSES = 64  # whatever the environment asks for
ENV = "ECOCOMPUTE_READ_PROCESSES"

Item = TypeVar("Item")
Result = TypeVar("Result")


def processes_for(n_items: int) -> int:
    """How many processes read n_items files (1: this one alone)."""
    wanted = os.environ.get(ENV, "").strip()
    if wanted:
        try:
            count = int(wanted)
        except ValueError:
            log.warning("%s=%r is not a whole number: reading in one process", ENV, wanted)
            return 1
    else:
        if n_items < PARALLEL_FROM:
            return 1
        count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    if count < 2 or n_items < 2 or threading.active_count() > 1:
        return 1
    if "fork" not in multiprocessing.get_all_start_methods():
        return 1
    return min(count, n_items, MOST_PROCESSES)


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def map_files(read: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
    """[read(item) for item in items], in worker processes where processes_for says so.
    read must be a module-level function (it is sent to the workers by name)."""
    processes = processes_for(len(items))
    if processes == 1:
        return [read(item) for item in items]
    chunk = max(1, min(64, len(items) // (processes * 8)))
    pool = ProcessPoolExecutor(
        processes,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_ignore_interrupts,
    )
    try:
        results = list(pool.map(read, items, chunksize=chunk))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results
