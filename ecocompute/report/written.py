"""What a command has written when it fails, in words, told from the files themselves.

A sweep writes each point's energy.json as it goes and sweep.json at the end: a failure
after its first point must not say that nothing was written (cli.main appends these
words to a sweep's failure line)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from ecocompute.boundary.atomic import file_identity

SWEEP_NAME = "sweep.json"


def sweep_leaves(output_dir: str, folders: Sequence[str] = ("",)) -> Callable[[], str]:
    """Call before the sweep starts; the result, called after a failure, says whether
    sweep.json was replaced meanwhile (a new file has a new identity). folders: where
    under output_dir the sweep writes its sweep.json (a prompt-length axis: one each)."""
    targets = [Path(output_dir) / folder / SWEEP_NAME for folder in folders]
    before = [file_identity(t) for t in targets]

    def words() -> str:
        now = [file_identity(t) for t in targets]
        pairs = list(zip(targets, before, now, strict=True))
        written = [str(t) for t, b, n in pairs if n is not None and n != b]
        removed = [str(t) for t, b, n in pairs if b is not None and n is None]
        if written:
            return (
                f"{', '.join(written)} {'was' if len(written) == 1 else 'were'} written, as "
                "was the energy.json of every point that finished"
            )
        text = "no sweep.json was written; the energy.json of every point that finished stands"
        if removed:  # the sweep measured its points again: the old summary would contradict
            text += (
                f" (the earlier {', '.join(removed)} was removed when the sweep began: "
                "`ecocompute sweep --fit_only` writes one from the reports)"
            )
        return text

    return words
