"""Progress lines on stderr (stdout is kept for the summary and machine output)."""

from __future__ import annotations

import os
import sys
import time
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


def quiet_library_progress_bars() -> None:
    """With --quiet, also silence the bars transformers and huggingface_hub draw on
    stderr themselves ("Loading weights", "Writing model shards"). Works whether or
    not they are imported yet: the environment variable covers a later import."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    hub_utils = sys.modules.get("huggingface_hub.utils")
    if hub_utils is not None:
        hub_utils.disable_progress_bars()
    transformers_logging = sys.modules.get("transformers.utils.logging")
    if transformers_logging is not None:
        transformers_logging.disable_progress_bar()
