"""Progress lines on stderr (stdout is kept for the summary and machine output)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from importlib.util import find_spec
from typing import TextIO


class Progress:
    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self._t0 = time.monotonic()

    def __call__(self, message: str) -> None:
        """One progress line. A stream that cannot take it (stderr on a full disk, a
        closed pipe, /dev/full) loses the line, never the run: a measurement must not be
        thrown away because its progress could not be printed."""
        if self.quiet:
            return
        elapsed_s = time.monotonic() - self._t0
        say(f"[{elapsed_s:7.1f}s] {message}", self.stream)


def say(text: str, stream: TextIO | None = None) -> bool:
    """Print one line to stream (default: stderr) and flush; False when the stream could
    not take it (the line is dropped, nothing is raised)."""
    try:
        print(text, file=stream if stream is not None else sys.stderr, flush=True)
    except (OSError, ValueError):  # ValueError: the stream was closed
        return False
    return True


@contextlib.contextmanager
def library_progress_bars_hidden(hidden: bool = True) -> Iterator[None]:
    """With --quiet, also hide the bars huggingface_hub and transformers draw on stderr
    themselves ("Loading weights", "Writing model shards"), for the block only: their
    settings are put back on the way out, whatever ends the block, and a library first
    imported inside it gets the setting it would have had. A user's own
    HF_HUB_DISABLE_PROGRESS_BARS is left to decide, as the hub lets it."""
    if not hidden or find_spec("huggingface_hub") is None:
        yield
        return
    from huggingface_hub import utils as hub

    transformers = sys.modules.get("transformers.utils.logging")
    tf_was_on = transformers is not None and transformers.is_progress_bar_enabled()
    hub_hidden = "HF_HUB_DISABLE_PROGRESS_BARS" not in os.environ
    hub_hidden = hub_hidden and not hub.are_progress_bars_disabled()
    if hub_hidden:
        hub.disable_progress_bars()
    if transformers is not None:
        transformers.disable_progress_bar()
    try:
        yield
    finally:
        if hub_hidden:
            hub.enable_progress_bars()
        now = sys.modules.get("transformers.utils.logging")  # imported meanwhile, maybe
        on = tf_was_on if transformers is not None else not hub.are_progress_bars_disabled()
        if now is not None and on:
            now.enable_progress_bar()
