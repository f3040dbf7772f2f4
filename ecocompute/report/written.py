"""What a command has written when it fails, in words, told from the files themselves.

A sweep writes each point's energy.json as it goes and sweep.json at the end: a failure
after its first point must not say that nothing was written (cli.main appends these
words to a sweep's failure line)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ecocompute.report.atomic import file_identity

SWEEP_NAME = "sweep.json"


def sweep_leaves(output_dir: str) -> Callable[[], str]:
    """Call before the sweep starts; the result, called after a failure, says whether
    sweep.json was replaced meanwhile (a new file has a new identity)."""
    target = Path(output_dir) / SWEEP_NAME
    before = file_identity(target)

    def words() -> str:
        if file_identity(target) != before:
            return f"{target} was written, as was the energy.json of every point that finished"
        return "no sweep.json was written; the energy.json of every point that finished stands"

    return words
